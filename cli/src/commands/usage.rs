//! `ar usage`: what jobs used per period, queue and user (`GET /api/v1/usage`), as a table,
//! JSON (`--json`) or CSV (`--csv`, the server's columns, written by the same shared code).

use anteroom_shared::api::usage::{FairShare, UsageReport};
use chrono::{DateTime, NaiveDate, Utc};

use crate::args::UsageArgs;
use crate::context::Ctx;
use crate::error::{CliError, CliResult};
use crate::output;

/// A day (`2026-11-01`, its UTC midnight) or an RFC 3339 instant, as the API's RFC 3339.
fn instant(flag: &str, text: &str) -> CliResult<String> {
    if let Ok(at) = text.parse::<DateTime<Utc>>() {
        return Ok(at.to_rfc3339());
    }
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc().to_rfc3339())
        .ok_or_else(|| {
            CliError::Usage(format!(
                "--{flag} {text:?}: expected a day (2026-11-01) or an RFC 3339 time"
            ))
        })
}

/// Hours with one decimal, per resource: `nvidia.com/a100 12.5h, cpu 40.0h`.
fn hours(list: &std::collections::BTreeMap<String, f64>) -> String {
    list.iter()
        .map(|(name, h)| format!("{name} {h:.1}h"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `ar usage --fair-share`.
async fn fair_share(ctx: &Ctx) -> CliResult<()> {
    let share: FairShare = ctx.api.get("/api/v1/me/fair-share", &[]).await?;
    if ctx.json {
        ctx.print_json(&share);
        return Ok(());
    }
    let i = &ctx.i18n;
    let key = if share.in_effect {
        "cli.usage.fairShareInEffect"
    } else {
        "cli.usage.fairShareNotInEffect"
    };
    println!(
        "{}",
        i.tf(key, &[("halfLife", &output::duration(share.half_life_seconds))])
    );
    if share.queues.is_empty() {
        println!("{}", i.t("cli.usage.none"));
        return Ok(());
    }
    let headers = [
        i.t("cli.usage.queue"),
        i.t("cli.usage.factor"),
        i.t("cli.usage.decayed"),
        i.t("cli.usage.share"),
        i.t("cli.usage.drivers"),
    ];
    let rows: Vec<Vec<String>> = share
        .queues
        .iter()
        .map(|q| {
            vec![
                q.queue.clone(),
                format!("{:.2}", q.factor),
                format!("{:.1} ({:.0}%)", q.decayed_usage, q.usage_fraction * 100.0),
                format!("{:.0}%", q.share * 100.0),
                q.drivers
                    .iter()
                    .map(|(name, units)| format!("{name} {units:.1}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            ]
        })
        .collect();
    print!("{}", output::table(&headers, &rows));
    Ok(())
}

/// `ar usage`.
pub async fn usage(ctx: &Ctx, args: UsageArgs) -> CliResult<()> {
    ctx.require_login()?;
    if args.fair_share {
        return fair_share(ctx).await;
    }
    let mut query = vec![("by", args.by.clone())];
    if let Some(from) = &args.from {
        query.push(("from", instant("from", from)?));
    }
    if let Some(to) = &args.to {
        query.push(("to", instant("to", to)?));
    }
    if let Some(user) = args.user {
        query.push(("user", user));
    }
    if let Some(queue) = args.queue {
        query.push(("queue", queue));
    }
    let report: UsageReport = ctx.api.get("/api/v1/usage", &query).await?;
    if ctx.json {
        ctx.print_json(&report);
        return Ok(());
    }
    if args.csv {
        print!("{}", report.to_csv());
        return Ok(());
    }
    let i = &ctx.i18n;
    if report.rows.is_empty() {
        println!("{}", i.t("cli.usage.none"));
        return Ok(());
    }
    let headers = [
        i.t("cli.usage.period"),
        i.t("cli.usage.queue"),
        i.t("cli.usage.user"),
        i.t("cli.usage.used"),
        i.t("cli.usage.elastic"),
        i.t("cli.usage.jobs"),
        i.t("cli.usage.waitMedian"),
        i.t("cli.usage.waitP90"),
        i.t("cli.usage.preempted"),
        i.t("cli.usage.reclaimed"),
    ];
    let seconds = |s: Option<f64>| s.map(|s| output::duration(s.round() as i64)).unwrap_or_default();
    let rows: Vec<Vec<String>> = report
        .rows
        .iter()
        .map(|r| {
            vec![
                r.period.clone(),
                r.queue.clone(),
                r.user.clone(),
                hours(&r.used),
                hours(&r.backfill),
                r.jobs.to_string(),
                seconds(r.wait_median_seconds),
                seconds(r.wait_p90_seconds),
                r.preempted.to_string(),
                r.reclaimed.to_string(),
            ]
        })
        .collect();
    print!("{}", output::table(&headers, &rows));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_day_or_an_instant_is_sent_as_rfc3339() {
        assert_eq!(instant("from", "2026-11-01").expect("day"), "2026-11-01T00:00:00+00:00");
        assert_eq!(
            instant("to", "2026-11-01T12:30:00+02:00").expect("instant"),
            "2026-11-01T10:30:00+00:00"
        );
        assert!(matches!(instant("from", "yesterday"), Err(CliError::Usage(_))));
    }

    #[test]
    fn hours_read_per_resource() {
        let list = std::collections::BTreeMap::from([("cpu".to_owned(), 40.0), ("nvidia.com/a100".to_owned(), 12.34)]);
        assert_eq!(hours(&list), "cpu 40.0h, nvidia.com/a100 12.3h");
    }
}
