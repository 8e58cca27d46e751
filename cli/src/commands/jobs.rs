//! `ar ls` (squeue), `ar why`, `ar cancel` (scancel).

use anteroom_shared::api::Page;
use anteroom_shared::api::jobs::{EstimateBasis, Job, JobDetail, PrequeueStanding};
use anteroom_shared::api::pods::JobFailure;
use anteroom_shared::scheduling::JobPhase;
use chrono::{DateTime, Utc};

use crate::args::ListArgs;
use crate::context::Ctx;
use crate::error::CliResult;
use crate::i18n::I18n;
use crate::output::{self, Format};
use crate::reasons;

/// The query of a list request from the flags.
pub fn list_query(args: &ListArgs) -> Vec<(&'static str, String)> {
    let mut query = vec![
        ("page", args.page.to_string()),
        ("pageSize", args.page_size.to_string()),
        // Each waiting job with its position, reasons and estimate: one request for the table.
        ("standing", "true".to_owned()),
    ];
    let mut phases = args.phase.clone();
    if args.active {
        phases.extend(
            JobPhase::ALL
                .iter()
                .filter(|p| !p.is_terminal())
                .map(|p| p.as_str().to_owned()),
        );
    }
    // `Activating` reads as `Pending` (as in the UI), so asking for one asks for both.
    if phases.iter().any(|p| p == "Pending") && !phases.iter().any(|p| p == "Activating") {
        phases.push("Activating".to_owned());
    }
    phases.sort();
    phases.dedup();
    query.extend(phases.into_iter().map(|p| ("phase", p)));
    query.extend(args.queue.iter().map(|q| ("queue", q.clone())));
    query.extend(args.kind.iter().map(|k| ("kind", k.clone())));
    query.extend(args.schedule_type.iter().map(|t| ("scheduleType", t.clone())));
    query.extend(args.user.iter().map(|u| ("user", u.clone())));
    query
}

/// `ar ls`.
pub async fn list(ctx: &Ctx, args: ListArgs) -> CliResult<()> {
    ctx.require_login()?;
    let path = if args.all || !args.user.is_empty() {
        "/api/v1/admin/jobs"
    } else {
        "/api/v1/jobs"
    };
    let page: Page<Job> = ctx.api.get(path, &list_query(&args)).await?;
    let format = if ctx.json { Format::Json } else { args.output };
    match format {
        Format::Json => ctx.print_json(&page),
        Format::Yaml => print!("{}", serde_norway::to_string(&page).unwrap_or_default()),
        Format::Table | Format::Wide => {
            print!("{}", job_table(ctx, &page.items, format == Format::Wide));
            if page.total > page.items.len() as u64 {
                eprintln!(
                    "{}",
                    ctx.style.dim(&ctx.i18n.tf(
                        "cli.ls.more",
                        &[
                            ("shown", &page.items.len().to_string()),
                            ("total", &page.total.to_string()),
                            ("page", &page.page.to_string()),
                        ]
                    ))
                );
            }
        }
    }
    Ok(())
}

/// The squeue-like table: a waiting job's position, the jobs ahead of it and its likely start;
/// a failed job's reason.
fn job_table(ctx: &Ctx, jobs: &[Job], wide: bool) -> String {
    let i = &ctx.i18n;
    let mut headers = vec![
        i.t("cli.ls.id"),
        i.t("cli.ls.name"),
        i.t("cli.ls.queue"),
        i.t("cli.ls.type"),
        i.t("cli.ls.phase"),
        i.t("cli.ls.waited"),
    ];
    if wide {
        headers.extend([i.t("cli.ls.owner"), i.t("cli.ls.resources"), i.t("cli.ls.submitted")]);
    }
    headers.extend([
        i.t("cli.ls.position"),
        i.t("cli.ls.ahead"),
        i.t("cli.ls.start"),
        i.t("cli.ls.reason"),
    ]);
    let now = Utc::now();
    let rows = jobs
        .iter()
        .map(|job| {
            let phase = i.t(&output::phase_key(job.phase));
            let mut kind = i.t(&format!("scheduleType.{}", job.schedule_type.as_str()));
            if job.borrowing {
                kind.push(' ');
                kind.push_str(&i.t("cli.ls.borrowing"));
            }
            let mut row = vec![
                job.id.to_string(),
                job.name.clone(),
                job.queue.clone(),
                kind,
                ctx.style.phase(job.phase, &phase),
                waited(job, now),
            ];
            if wide {
                row.extend([
                    job.owner.clone(),
                    output::resources(&job.resources),
                    output::local_time(job.submitted_at),
                ]);
            }
            match &job.prequeue {
                Some(p) => {
                    let reason = if wide {
                        p.reasons
                            .first()
                            .map(|r| reasons::text(ctx.i18n, r))
                            .unwrap_or_default()
                    } else {
                        p.reasons.iter().map(|r| r.code.as_str()).collect::<Vec<_>>().join(",")
                    };
                    row.extend([
                        format!("#{}", p.position),
                        p.position.saturating_sub(1).to_string(),
                        start_short(*i, p, now),
                        reason,
                    ]);
                }
                None => row.extend([String::new(), String::new(), String::new(), ended_why(*i, job)]),
            }
            row
        })
        .collect::<Vec<_>>();
    if rows.is_empty() {
        return format!("{}\n", i.t("cli.ls.empty"));
    }
    output::table(&headers, &rows)
}

/// A waiting job's likely start for a table cell: `in 25m00s`, `now`, `unknown` (a job it
/// waits for has no runtime limit), or `-` (not forecast yet).
fn start_short(i: I18n, standing: &PrequeueStanding, now: DateTime<Utc>) -> String {
    match (standing.estimated_start_at, standing.basis) {
        (Some(at), _) if at <= now => i.t("cli.start.now"),
        (Some(at), _) => i.tf("cli.start.in", &[("in", &output::duration((at - now).num_seconds()))]),
        (None, Some(EstimateBasis::Unknown)) => i.t("cli.start.unknown"),
        (None, _) => "-".to_owned(),
    }
}

/// A waiting job's likely start in a sentence (`ar why`), or why there is none.
fn start_long(i: I18n, standing: &PrequeueStanding, now: DateTime<Utc>) -> String {
    match (standing.estimated_start_at, standing.basis) {
        (Some(at), _) => i.tf(
            "cli.why.estimate",
            &[
                ("time", &output::local_time(at)),
                ("start", &start_short(i, standing, now)),
            ],
        ),
        (None, Some(EstimateBasis::Unknown)) => i.t("cli.why.estimateUnknown"),
        (None, _) => i.t("cli.why.estimateNone"),
    }
}

/// Why a finished job ended badly, in one line: its failure (`main-0: OOMKilled, exit code
/// 137`); empty for the others.
fn ended_why(i: I18n, job: &Job) -> String {
    match &job.failure {
        Some(failure) if job.phase == JobPhase::Failed => failure_text(i, failure),
        _ => String::new(),
    }
}

/// A failure as the UI says it: the reason and exit code, Anteroom's own causes in words.
pub fn failure_text(i: I18n, failure: &JobFailure) -> String {
    let what = match (failure.exit_code, failure.reason.as_str()) {
        (Some(code), reason) => i.tf("jobs.failureCode", &[("reason", reason), ("code", &code.to_string())]),
        (None, "Vanished") => i.t("jobs.failureVanished"),
        (None, "CreateFailed") => i.t("jobs.failureCreateFailed"),
        (None, reason) => reason.to_owned(),
    };
    match &failure.pod {
        Some(pod) => format!("{pod}: {what}"),
        None => what,
    }
}

/// How long a waiting job has waited (from `waitingSince`, else its submission); blank for
/// the others.
fn waited(job: &Job, now: chrono::DateTime<Utc>) -> String {
    if job.phase != JobPhase::Prequeue {
        return String::new();
    }
    let since = job.waiting_since.unwrap_or(job.submitted_at);
    output::duration((now - since).num_seconds())
}

/// `ar why ID`.
pub async fn why(ctx: &Ctx, id: i64) -> CliResult<()> {
    ctx.require_login()?;
    let detail: JobDetail = ctx.api.get(&format!("/api/v1/jobs/{id}"), &[]).await?;
    if ctx.json {
        ctx.print_json(&serde_json::json!({
            "job": detail.job,
            "prequeue": detail.prequeue,
        }));
        return Ok(());
    }
    let i = &ctx.i18n;
    let job = &detail.job;
    let phase = i.t(&output::phase_key(job.phase));
    println!(
        "{} {}  ·  {}  ·  {}  ·  {}",
        ctx.style.bold(&format!("#{}", job.id)),
        job.name,
        job.queue,
        i.t(&format!("scheduleType.{}", job.schedule_type.as_str())),
        ctx.style.phase(job.phase, &phase),
    );
    if job.borrowing && !job.phase.is_terminal() {
        println!("{}", i.t("cli.why.borrowing"));
    }
    let Some(standing) = &detail.prequeue else {
        println!("{}", i.tf("cli.why.notWaiting", &[("phase", &phase)]));
        let why = ended_why(*i, job);
        if !why.is_empty() {
            println!("{}", i.tf("cli.why.failed", &[("why", &why)]));
        }
        return Ok(());
    };
    let now = Utc::now();
    let mut line = i.tf(
        "cli.why.position",
        &[
            ("position", &standing.position.to_string()),
            ("queue", &job.queue),
            ("ahead", &standing.position.saturating_sub(1).to_string()),
        ],
    );
    match job.waiting_since {
        Some(since) => {
            line.push_str("  ·  ");
            line.push_str(&i.tf(
                "cli.why.waited",
                &[("waited", &output::duration((now - since).num_seconds()))],
            ));
            if let Some(tolerance) = job.waiting_tolerance_seconds {
                line.push_str("  ·  ");
                line.push_str(&i.tf("cli.why.tolerance", &[("tolerance", &output::duration(tolerance))]));
            }
        }
        None => {
            line.push_str("  ·  ");
            line.push_str(&i.t("cli.why.heldPrivately"));
        }
    }
    println!("{line}");
    println!("{}", start_long(*i, standing, now));
    print!("{}", reasons::render(ctx.i18n, ctx.style, &standing.reasons));
    Ok(())
}

/// `ar cancel ID…`: every id is tried; each failure is printed, the last one decides the exit
/// code.
pub async fn cancel(ctx: &Ctx, ids: &[i64]) -> CliResult<()> {
    ctx.require_login()?;
    let mut last_error = None;
    for &id in ids {
        match ctx.api.delete(&format!("/api/v1/jobs/{id}")).await {
            // (a repeat of a cancel whose answer was lost counts as done: see `Repeat::Delete`)
            Ok(()) => {
                if !ctx.json {
                    println!("{}", ctx.i18n.tf("cli.cancel.done", &[("id", &id.to_string())]));
                }
            }
            Err(e) => {
                if let Some(previous) = last_error.replace(e) {
                    crate::error::report(&previous, ctx.i18n, ctx.json);
                }
            }
        }
    }
    match last_error {
        None => Ok(()),
        Some(e) => Err(e),
    }
}
