//! `ar watch`: the job event stream (Server-Sent Events), one line per event, resumed after
//! the newest event seen when the connection drops or goes silent. The server may start a
//! resumed stream a little earlier (to catch events committed late, with lower ids), so the
//! ids printed are remembered and none is printed twice.

use std::collections::BTreeSet;
use std::time::Duration;

use anteroom_shared::api::jobs::JobEventItem;
use reqwest::Method;

use crate::args::WatchArgs;
use crate::client::Repeat;
use crate::context::Ctx;
use crate::error::{CliError, CliResult};
use crate::{output, sse};

/// The longest pause between two reconnections.
const MAX_PAUSE: Duration = Duration::from_secs(10);

/// Silence after which a stream is taken for dead: the server sends a heartbeat every 15 s, so
/// nothing for this long means a connection that died without a word (a NAT, a suspended
/// laptop).
const SILENCE: Duration = Duration::from_secs(45);

/// The events already printed: the newest [`Seen::KEEP`] ids, and a floor at or below which
/// every id counts as printed (`--since`, and the ids forgotten to keep memory bounded).
#[derive(Debug, Default)]
pub struct Seen {
    ids: BTreeSet<i64>,
    floor: Option<i64>,
}

impl Seen {
    /// How many ids are remembered: far more than a resumed stream repeats.
    pub const KEEP: usize = 10_000;

    /// Resuming after `id`: it and everything before it count as printed.
    pub fn after(id: i64) -> Self {
        Self {
            ids: BTreeSet::new(),
            floor: Some(id),
        }
    }

    /// True the first time an id comes (and remembers it).
    pub fn first_time(&mut self, id: i64) -> bool {
        if self.floor.is_some_and(|floor| id <= floor) || !self.ids.insert(id) {
            return false;
        }
        while self.ids.len() > Self::KEEP {
            let forgotten = self.ids.pop_first();
            self.floor = self.floor.max(forgotten);
        }
        true
    }

    /// The `Last-Event-ID` to resume from: the newest id seen (or the floor).
    pub fn resume(&self) -> Option<String> {
        self.ids.last().copied().or(self.floor).map(|id| id.to_string())
    }
}

/// `ar watch`.
pub async fn watch(ctx: &Ctx, args: WatchArgs) -> CliResult<()> {
    ctx.require_login()?;
    let mut seen = match &args.since {
        Some(since) => Seen::after(
            since
                .parse()
                .map_err(|_| CliError::Usage(format!("--since {since:?}: expected an event id (a number)")))?,
        ),
        None => Seen::default(),
    };
    let mut printed = 0u64;
    let mut pause = Duration::from_millis(500);
    loop {
        let outcome = follow(ctx, &args, &mut seen, &mut printed).await;
        if args.count.is_some_and(|n| printed >= n) {
            return Ok(());
        }
        match outcome {
            // Too many streams open (the previous one may still count): wait, then again.
            Err(CliError::Api { status: 429, .. }) => pause = pause.max(Duration::from_secs(5)),
            // Refused (401, 403, 404…): reconnecting would not help.
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
async fn follow(ctx: &Ctx, args: &WatchArgs, seen: &mut Seen, printed: &mut u64) -> CliResult<bool> {
    let resume = seen.resume();
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
        let unreachable = |reason: String| CliError::Unreachable {
            url: ctx.api.base().to_owned(),
            reason,
        };
        let chunk = match tokio::time::timeout(SILENCE, response.chunk()).await {
            Ok(Ok(Some(chunk))) => chunk,
            Ok(Ok(None)) => return Ok(any),
            Ok(Err(e)) => return Err(unreachable(e.to_string())),
            Err(_) => return Err(unreachable(format!("nothing for {} s", SILENCE.as_secs()))),
        };
        for event in parser.feed(&chunk) {
            if event.kind != "job" {
                continue;
            }
            let Ok(item) = serde_json::from_str::<JobEventItem>(&event.data) else {
                continue;
            };
            any = true;
            if !seen.first_time(item.id) {
                continue;
            }
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
    // The event's id last, dimmed: `--since` resumes after it.
    println!(
        "{}  {}  {}  {}  {}",
        ctx.style.dim(&output::local_time(item.created_at)),
        ctx.style.bold(&format!("#{}", item.job_id)),
        kind,
        item.message,
        ctx.style.dim(&format!("[{}]", item.id))
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_printed_once_whatever_order_and_repeats_come_in() {
        let mut seen = Seen::default();
        assert!(seen.first_time(10));
        assert!(seen.first_time(12));
        // Committed late, with a lower id: new, printed, and the resume point stays the newest.
        assert!(seen.first_time(11));
        assert_eq!(seen.resume().as_deref(), Some("12"));
        // A resumed stream that starts earlier repeats them.
        for id in [10, 11, 12] {
            assert!(!seen.first_time(id), "{id} twice");
        }
        assert!(seen.first_time(13));
    }

    #[test]
    fn since_counts_what_came_before_as_printed() {
        let mut seen = Seen::after(100);
        assert!(!seen.first_time(99));
        assert!(!seen.first_time(100));
        assert!(seen.first_time(101));
        // Once later events came, a late one between them is still new.
        assert!(seen.first_time(103));
        assert!(seen.first_time(102));
        assert!(!seen.first_time(99), "still before --since");
        assert_eq!(seen.resume().as_deref(), Some("103"));
    }

    #[test]
    fn memory_is_bounded() {
        let mut seen = Seen::default();
        for id in 0..(Seen::KEEP as i64 + 500) {
            assert!(seen.first_time(id));
        }
        assert_eq!(seen.ids.len(), Seen::KEEP);
        assert!(!seen.first_time(3), "forgotten, but older than all remembered");
    }
}
