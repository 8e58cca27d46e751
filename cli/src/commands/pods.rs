//! `ar pods ID`: a job's pods (where each runs, its state, why, its exit code and restarts)
//! and their latest cluster events — what `kubectl get pods` and `kubectl describe` would tell,
//! without cluster access. An owner reads the cluster's reason words; its messages are for
//! admins (they may name other teams' nodes).

use anteroom_shared::api::pods::JobPods;

use crate::context::Ctx;
use crate::error::CliResult;
use crate::output;

/// `ar pods`.
pub async fn pods(ctx: &Ctx, id: i64) -> CliResult<()> {
    ctx.require_login()?;
    let pods: JobPods = ctx.api.get(&format!("/api/v1/jobs/{id}/pods"), &[]).await?;
    if ctx.json {
        ctx.print_json(&pods);
        return Ok(());
    }
    let i = &ctx.i18n;
    if pods.pods.is_empty() {
        println!("{}", i.t("pods.none"));
    } else {
        let headers = [
            i.t("cli.pods.name"),
            i.t("cli.pods.node"),
            i.t("cli.pods.state"),
            i.t("cli.pods.reason"),
            i.t("cli.pods.exitCode"),
            i.t("cli.pods.restarts"),
        ];
        let rows: Vec<Vec<String>> = pods
            .pods
            .iter()
            .map(|p| {
                vec![
                    p.name.clone(),
                    p.node.clone().unwrap_or_default(),
                    p.phase.clone(),
                    one_line(p.reason.as_deref().unwrap_or_default()),
                    p.exit_code.map(|c| c.to_string()).unwrap_or_default(),
                    p.restarts.to_string(),
                ]
            })
            .collect();
        print!("{}", output::table(&headers, &rows));
    }
    if pods.events.is_empty() {
        return Ok(());
    }
    println!();
    let headers = [
        i.t("cli.pods.lastSeen"),
        i.t("cli.pods.object"),
        i.t("cli.pods.type"),
        i.t("cli.pods.reason"),
        i.t("cli.pods.count"),
        i.t("cli.pods.message"),
    ];
    let rows: Vec<Vec<String>> = pods
        .events
        .iter()
        .map(|e| {
            vec![
                e.last_at.or(e.first_at).map(output::local_time).unwrap_or_default(),
                one_line(&e.object),
                one_line(&e.event_type),
                one_line(&e.reason),
                e.count.to_string(),
                // (admins only: the cluster's own words; owners read the reason)
                one_line(e.message.as_deref().unwrap_or_default()),
            ]
        })
        .collect();
    print!("{}", output::table(&headers, &rows));
    Ok(())
}

/// The cluster's text for one table cell: no escape or control sequences (the cluster repeats
/// what containers and controllers wrote), on one line.
fn one_line(text: &str) -> String {
    String::from_utf8_lossy(&crate::terminal::clean_all(text.as_bytes()))
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}
