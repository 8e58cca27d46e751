//! `ar watch`: the job event stream (Server-Sent Events), one line per event, resumed from the
//! last event seen when the connection drops — nothing missed, nothing printed twice.

use std::time::Duration;

use anteroom_shared::api::jobs::JobEventItem;
use reqwest::Method;

use crate::args::WatchArgs;
use crate::client::Repeat;
use crate::error::{CliError, CliResult};
use crate::{Ctx, output, sse};

/// The longest pause between two reconnections.
const MAX_PAUSE: Duration = Duration::from_secs(10);

/// `ar watch`.
pub async fn watch(ctx: &Ctx, args: WatchArgs) -> CliResult<()> {
    ctx.require_login()?;
    let mut last_id = args.since.clone();
    let mut printed = 0u64;
    let mut pause = Duration::from_millis(500);
    loop {
        let outcome = follow(ctx, &args, &mut last_id, &mut printed).await;
        if args.count.is_some_and(|n| printed >= n) {
            return Ok(());
        }
        match outcome {
            // The server refused (401, 403, 429): reconnecting would not help.
            Err(e @ CliError::Api { status: 400..=499, .. }) | Err(e @ CliError::NotLoggedIn) => return Err(e),
            Ok(got_events) if got_events => pause = Duration::from_millis(500),
            _ => {}
        }
        eprintln!("{}", ctx.style.dim(&ctx.i18n.t("cli.watch.reconnecting")));
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(MAX_PAUSE);
    }
}

/// One connection: prints its events until it ends. True when it carried at least one.
async fn follow(ctx: &Ctx, args: &WatchArgs, last_id: &mut Option<String>, printed: &mut u64) -> CliResult<bool> {
    let resume = last_id.clone();
    let mut response = ctx
        .api
        .send(Repeat::Once, || {
            let request = ctx
                .api
                .request(Method::GET, "/api/v1/jobs/events/stream")
                .header("Accept", "text/event-stream");
            match &resume {
                Some(id) => request.header("Last-Event-ID", id.as_str()),
                None => request,
            }
        })
        .await?;
    let mut parser = sse::Parser::default();
    let mut any = false;
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => return Ok(any),
            Err(e) => {
                return Err(CliError::Unreachable {
                    url: ctx.api.base().to_owned(),
                    reason: e.to_string(),
                });
            }
        };
        for event in parser.feed(&chunk) {
            if event.id.is_some() {
                last_id.clone_from(&event.id);
            }
            if event.kind != "job" {
                continue;
            }
            let Ok(item) = serde_json::from_str::<JobEventItem>(&event.data) else {
                continue;
            };
            any = true;
            if args.job.is_some_and(|job| job != item.job_id) {
                continue;
            }
            print_event(ctx, &item);
            *printed += 1;
            if args.count.is_some_and(|n| *printed >= n) {
                return Ok(any);
            }
        }
    }
}

fn print_event(ctx: &Ctx, item: &JobEventItem) {
    if ctx.json {
        println!("{}", serde_json::to_string(item).unwrap_or_default());
        return;
    }
    let kind = ctx
        .i18n
        .lookup(&format!("event.{}", item.kind))
        .unwrap_or_else(|| item.kind.clone());
    println!(
        "{}  {}  {}  {}",
        ctx.style.dim(&output::local_time(item.created_at)),
        ctx.style.bold(&format!("#{}", item.job_id)),
        kind,
        item.message
    );
}
