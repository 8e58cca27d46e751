//! `ar queues` and `ar quota`: where a researcher may submit, and how much room is left.

use anteroom_shared::api::prequeue::ResourceSummary;
use anteroom_shared::api::queues::Queue;
use anteroom_shared::scheduling::Quantity;

use crate::context::Ctx;
use crate::error::CliResult;
use crate::output;

/// `ar queues`.
pub async fn queues(ctx: &Ctx) -> CliResult<()> {
    ctx.require_login()?;
    let queues: Vec<Queue> = ctx.api.get("/api/v1/queues", &[]).await?;
    if ctx.json {
        ctx.print_json(&queues);
        return Ok(());
    }
    let rows = queues.iter().map(|q| QueueRow {
        name: &q.name,
        parent: q.parent.as_deref(),
        open: q.open,
        fourth: output::resources(&q.used),
        capacity: q.capacity.as_ref(),
    });
    print!("{}", queue_table(ctx, "cli.queues.used", rows));
    Ok(())
}

/// One queue as `ar queues` and `ar admin queue ls` show it; the fourth column is the
/// queue's use for users, its members for admins.
pub struct QueueRow<'a> {
    /// The queue.
    pub name: &'a str,
    /// Its parent.
    pub parent: Option<&'a str>,
    /// Open to everyone.
    pub open: bool,
    /// The fourth column's cell.
    pub fourth: String,
    /// Its capacity (absent: unlimited).
    pub capacity: Option<&'a anteroom_shared::scheduling::ResourceList>,
}

/// The table of queues, the fourth column headed by the text of `fourth_header`.
pub fn queue_table<'a>(ctx: &Ctx, fourth_header: &str, queues: impl Iterator<Item = QueueRow<'a>>) -> String {
    let i = &ctx.i18n;
    let headers = [
        i.t("cli.queues.name"),
        i.t("cli.queues.parent"),
        i.t("cli.queues.open"),
        i.t(fourth_header),
        i.t("cli.queues.capacity"),
    ];
    let rows: Vec<Vec<String>> = queues
        .map(|q| {
            vec![
                q.name.to_owned(),
                q.parent.unwrap_or_default().to_owned(),
                i.t(if q.open { "cli.yes" } else { "cli.no" }),
                q.fourth,
                q.capacity
                    .map(output::resources)
                    .unwrap_or_else(|| i.t("cli.queues.unlimited")),
            ]
        })
        .collect();
    output::table(&headers, &rows)
}

/// `ar quota`: the caller's normal jobs in a queue against their quota, and the queue
/// capacities on the way to the root.
pub async fn quota(ctx: &Ctx, queue: &str) -> CliResult<()> {
    ctx.require_login()?;
    let summary: ResourceSummary = ctx
        .api
        .get("/api/v1/me/resource-summary", &[("queue", queue.to_owned())])
        .await?;
    if ctx.json {
        ctx.print_json(&summary);
        return Ok(());
    }
    let i = &ctx.i18n;
    println!(
        "{}",
        i.tf(
            "cli.quota.jobs",
            &[
                ("queue", &summary.queue),
                ("running", &summary.jobs.running.to_string()),
                ("pending", &summary.jobs.pending.to_string()),
                ("prequeued", &summary.jobs.prequeued.to_string()),
            ]
        )
    );
    if !summary.quota_enabled {
        println!("{}", i.t("cli.quota.off"));
    }
    let headers = [
        i.t("cli.quota.resource"),
        i.t("cli.quota.used"),
        i.t("cli.quota.waiting"),
        i.t("cli.quota.limit"),
        String::new(),
    ];
    let value = |q: Quantity| q.milli() as f64 / 1000.0;
    let rows: Vec<Vec<String>> = summary
        .resources
        .iter()
        .map(|r| {
            vec![
                r.resource.clone(),
                r.used.to_string(),
                r.prequeued.to_string(),
                r.limit
                    .map(|l| l.to_string())
                    .unwrap_or_else(|| i.t("cli.queues.unlimited")),
                r.limit
                    .map(|l| output::bar(value(r.used), 0.0, value(l), 20))
                    .unwrap_or_default(),
            ]
        })
        .collect();
    print!("{}", output::table(&headers, &rows));
    for capacity in &summary.queues {
        println!(
            "{}",
            i.tf(
                "cli.quota.capacity",
                &[
                    ("queue", &capacity.queue),
                    ("used", &output::resources(&capacity.used)),
                    ("capacity", &output::resources(&capacity.capacity)),
                ]
            )
        );
    }
    Ok(())
}
