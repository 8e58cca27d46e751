//! A pod's log on the job's page: its last lines read once, or followed through the API's
//! stream (`follow=true`) — every line the pod writes arrives as it is written, nothing is
//! polled, a dropped connection is taken up again where it stopped ([`FollowedLog`]), and the
//! reader always sees which of these is happening. The whole log is a download, streamed by
//! the server.

use std::time::Duration;

use anteroom_shared::api::jobs::TaskBody;
use anteroom_shared::api::pods::JobPods;
use leptos::prelude::*;

use super::followed_log::{FollowedLog, GAP_LINE, REPEAT_LINE};
use crate::api::ApiFailure;
use crate::components::{CARD, Fetched, INPUT, LINK, show, use_fetch};
use crate::i18n::{k, use_i18n};

/// Lines of a log shown on the page when not following (the whole log is a download). Only
/// the lines in view are in the document (see [`LogLines`]), so this bounds the transfer, not
/// the rendering.
const SHOWN_LINES: u32 = 10_000;

/// The lines a followed connection starts with: the first shows them, one after a drop matches
/// them against what is shown (a drop of fewer new lines loses none).
const FOLLOWED_TAIL: u32 = 1000;

/// The most lines a followed log keeps on the page (the oldest go first; the download has
/// them all).
const FOLLOWED_CAP: usize = 50_000;

/// The height of one log line, in CSS pixels: fixed, so a line's position is its index times
/// this, and the viewer never measures the document.
const LINE_PX: f64 = 16.0;

/// The viewer's height, in CSS pixels (24 lines).
const VIEW_PX: f64 = 384.0;

/// Lines rendered above and below the view, so a fast scroll rarely shows a gap.
const OVERSCAN: usize = 30;

/// The first wait before taking a stream up again when the last one brought nothing new; it
/// doubles up to [`RETRY_MAX`] while connections bring nothing new (one that did is taken up
/// again at once).
const RETRY_FIRST: Duration = Duration::from_secs(1);

/// The longest wait between two attempts.
const RETRY_MAX: Duration = Duration::from_secs(30);

/// What a followed log is doing, shown beside "Follow".
#[derive(Clone, Debug, PartialEq)]
pub enum FollowState {
    /// Not following.
    Off,
    /// Opening the stream.
    Connecting,
    /// The stream is open: new lines show as they are written.
    Following,
    /// The stream dropped; taken up again after a wait.
    Reconnecting,
    /// The pod's log ended (it stopped running).
    Ended,
    /// The API refused (the pod is gone, too many streams open…): not retried.
    Refused(ApiFailure),
}

/// Which log the page shows and whether it follows it: owned by the page, so drawing the job
/// again (a live change of its phase) keeps the reader's choice and the lines followed so far.
#[derive(Clone, Copy)]
pub struct LogChoice {
    /// The task (empty: the job's first).
    pub task: RwSignal<String>,
    /// The replica.
    pub replica: RwSignal<u32>,
    /// Following.
    pub follow: RwSignal<bool>,
    /// The lines followed so far.
    followed: RwSignal<FollowedLog>,
    /// The pod they are of, and whether they are being followed (a new choice starts afresh).
    followed_pod: StoredValue<Option<(String, u32)>>,
    /// What the stream is doing.
    state: RwSignal<FollowState>,
}

impl LogChoice {
    /// The first task's first replica, not followed.
    pub fn new() -> Self {
        LogChoice {
            task: RwSignal::new(String::new()),
            replica: RwSignal::new(0),
            follow: RwSignal::new(false),
            followed: RwSignal::new(FollowedLog::new(FOLLOWED_CAP, FOLLOWED_TAIL as usize)),
            followed_pod: StoredValue::new(None),
            state: RwSignal::new(FollowState::Off),
        }
    }
}

/// Waits `delay` (the browser's timer).
async fn sleep(delay: Duration) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(window) = web_sys::window() {
            let _ = window.set_timeout_with_callback_and_timeout_and_arguments_0(
                &resolve,
                i32::try_from(delay.as_millis()).unwrap_or(i32::MAX),
            );
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

/// Follows the chosen pod's log until `abort` fires: connects, feeds the lines to `followed`,
/// and after a drop connects again (waiting longer each time nothing new came), until the log
/// ends with the job finished (`unfinished` false) or the API refuses.
async fn follow_log(
    id: i64,
    task: String,
    replica: u32,
    unfinished: bool,
    choice: LogChoice,
    abort: web_sys::AbortSignal,
) {
    let LogChoice { followed, state, .. } = choice;
    let mut wait = RETRY_FIRST;
    let mut first = true;
    loop {
        followed.update(|log| log.reconnect());
        state.set(if first {
            FollowState::Connecting
        } else {
            FollowState::Reconnecting
        });
        first = false;
        let before = followed.with_untracked(FollowedLog::received);
        let result = crate::api::follow_job_log(id, &task, replica, FOLLOWED_TAIL, &abort, |bytes| {
            if state.get_untracked() != FollowState::Following {
                state.set(FollowState::Following);
            }
            followed.update(|log| log.push(bytes));
        })
        .await;
        if abort.aborted() {
            return;
        }
        match result {
            // The log ended: the pod stopped. While the job is not finished, the end was the
            // server's (its byte limit per read) or a proxy's: take it up again.
            Ok(()) if !unfinished => {
                state.set(FollowState::Ended);
                return;
            }
            Ok(()) => {}
            // Refusals that a wait does not change; the others (the connection, the cluster
            // unavailable for a while, a pod not created yet, every stream slot taken) are
            // tried again while the job is not finished.
            Err(failure) if !unfinished || final_refusal(&failure.code) => {
                state.set(FollowState::Refused(failure));
                return;
            }
            Err(_) => {}
        }
        // New lines came: taken up at once (a read cut at the server's limit loses nothing);
        // none: a longer wait each time (a pod that ended while its job runs on).
        let grew = followed.with_untracked(FollowedLog::received) != before;
        wait = if grew {
            Duration::ZERO
        } else {
            (wait * 2).clamp(RETRY_FIRST, RETRY_MAX)
        };
        state.set(FollowState::Reconnecting);
        sleep(wait).await;
        if abort.aborted() {
            return;
        }
    }
}

/// Whether an API refusal of a followed log stays the same however long one waits: the
/// session is gone, the job is not the reader's, the request is wrong.
fn final_refusal(code: &str) -> bool {
    matches!(
        code,
        "unauthorized" | "forbidden" | "job_not_found" | "validation_failed"
    )
}

/// A pod's log: task and replica to choose, the last lines in monospace, "Follow" to keep
/// reading it as it is written, and the whole log as a download.
#[component]
pub fn LogPanel(
    /// The job.
    id: i64,
    /// Its tasks (names and replicas).
    tasks: Vec<TaskBody>,
    /// Its pods, as the page read them: a log is read only while its pod is there.
    pods: Fetched<JobPods>,
    /// Whether the job is not finished yet (a followed log that ends before then is taken up
    /// again: the end was a dropped connection or the server's limit per read, not the pod's).
    unfinished: bool,
    /// What the reader chose.
    choice: LogChoice,
) -> impl IntoView {
    let i18n = use_i18n();
    let LogChoice {
        task,
        replica,
        follow,
        followed,
        followed_pod,
        state,
    } = choice;
    if task.get_untracked().is_empty() {
        task.set(tasks.first().map(|t| t.name.clone()).unwrap_or_default());
    }
    let replicas = {
        let tasks = tasks.clone();
        move || {
            let name = task.get();
            tasks.iter().find(|t| t.name == name).map_or(1, |t| t.replicas)
        }
    };
    // Whether the chosen pod is in the cluster: `None` until the pods are read. A finished
    // job's pods may be gone (preempted, deleted): there is no log to read then.
    let pod_there = Memo::new(move |_| {
        let (name, r) = (task.get(), replica.get());
        pods.with(|p| match p {
            Some(Ok(p)) => Some(p.pods.iter().any(|pod| pod.task == name && pod.replica == r)),
            Some(Err(_)) => Some(true),
            None => None,
        })
    });
    // Following: one stream per choice, ended when the choice changes or the panel goes.
    Effect::new(move |_| {
        let (following, name, r) = (follow.get(), task.get(), replica.get());
        if pod_there.get() != Some(true) {
            state.set(FollowState::Off);
            return;
        }
        if !following {
            followed_pod.set_value(None);
            state.set(FollowState::Off);
            return;
        }
        // The same pod as before (the page drawn again): what was followed is taken up again;
        // another pod, or Follow switched on: from its last lines.
        if followed_pod.get_value().as_ref() != Some(&(name.clone(), r)) {
            followed.set(FollowedLog::new(FOLLOWED_CAP, FOLLOWED_TAIL as usize));
            followed_pod.set_value(Some((name.clone(), r)));
        }
        let Ok(controller) = web_sys::AbortController::new() else {
            return;
        };
        let abort = controller.signal();
        leptos::task::spawn_local(follow_log(id, name, r, unfinished, choice, abort));
        on_cleanup(move || controller.abort());
    });
    let log = use_fetch(move || {
        let (following, task, replica) = (follow.get(), task.get(), replica.get());
        let there = pod_there.get() == Some(true);
        async move {
            if following || !there {
                return Ok(String::new());
            }
            crate::api::job_log(id, &task, replica, SHOWN_LINES).await
        }
    });
    let download = move || crate::api::job_log_path(id, &task.get(), replica.get(), None, true);
    let state_text = move || match state.get() {
        FollowState::Off => i18n.tp(
            k!("logs.lines.one"),
            k!("logs.lines.other"),
            u64::from(SHOWN_LINES),
            &[],
        ),
        FollowState::Connecting => i18n.t(k!("logs.state.connecting")).to_owned(),
        FollowState::Following => i18n.t(k!("logs.state.following")).to_owned(),
        FollowState::Reconnecting => i18n.t(k!("logs.state.reconnecting")).to_owned(),
        FollowState::Ended => i18n.t(k!("logs.state.ended")).to_owned(),
        FollowState::Refused(failure) => i18n.failure(&failure),
    };
    let state_name = move || match state.get() {
        FollowState::Off => "off",
        FollowState::Connecting => "connecting",
        FollowState::Following => "following",
        FollowState::Reconnecting => "reconnecting",
        FollowState::Ended => "ended",
        FollowState::Refused(_) => "refused",
    };
    let dropped = move || followed.with(|log| log.dropped());
    // A memo: the view below is drawn again when this changes, not with every line.
    let followed_empty = Memo::new(move |_| followed.with(FollowedLog::is_empty));
    view! {
        <section class=format!("{CARD} space-y-3") aria-labelledby="logs-title" data-testid="log-panel">
            <h2 id="logs-title" class="text-lg font-semibold">{move || i18n.t(k!("logs.title"))}</h2>
            <div class="flex flex-wrap items-end gap-4 text-sm">
                <label class="space-y-1">
                    <span class="block font-medium">{move || i18n.t(k!("logs.task"))}</span>
                    <select class=INPUT data-testid="log-task" prop:value=move || task.get() on:change=move |ev| { task.set(event_target_value(&ev)); replica.set(0); }>
                        {tasks.iter().map(|t| view! { <option value=t.name.clone()>{t.name.clone()}</option> }).collect_view()}
                    </select>
                </label>
                <label class="space-y-1">
                    <span class="block font-medium">{move || i18n.t(k!("logs.replica"))}</span>
                    <select class=INPUT data-testid="log-replica" prop:value=move || replica.get().to_string()
                        on:change=move |ev| replica.set(event_target_value(&ev).parse().unwrap_or(0))>
                        {move || (0..replicas()).map(|r| view! { <option value=r.to_string()>{r}</option> }).collect_view()}
                    </select>
                </label>
                <label class="flex items-center gap-2">
                    <input type="checkbox" data-testid="log-follow" prop:checked=move || follow.get()
                        on:change=move |ev| follow.set(event_target_checked(&ev)) />
                    <span>{move || i18n.t(k!("logs.follow"))}</span>
                </label>
                <a class=LINK href=download data-testid="log-download">{move || i18n.t(k!("logs.download"))}</a>
            </div>
            <p class="text-xs text-slate-600 dark:text-slate-300" role="status" data-testid="log-state" data-state=state_name>
                {move || (state_name() == "following").then(|| view! { <span aria-hidden="true" class="mr-1 inline-block h-2 w-2 rounded-full bg-emerald-500"></span> })}
                {state_text}
                {move || (follow.get() && dropped() > 0).then(|| view! {
                    " " {move || i18n.tp(k!("logs.dropped.one"), k!("logs.dropped.other"), dropped(), &[])}
                })}
            </p>
            {move || if pod_there.get() == Some(false) {
                view! { <p class="text-sm text-slate-600 dark:text-slate-300" data-testid="log-gone">{move || i18n.t(k!("logs.gone"))}</p> }.into_any()
            } else if follow.get() {
                if followed_empty.get() {
                    view! { <p class="text-sm text-slate-600 dark:text-slate-300" data-testid="log-empty">{move || i18n.t(k!("logs.empty"))}</p> }.into_any()
                } else {
                    view! { <LogLines source=LogSource::Followed(followed) follow=follow /> }.into_any()
                }
            } else {
                show(log, move |text: &String| {
                    if text.is_empty() {
                        view! { <p class="text-sm text-slate-600 dark:text-slate-300" data-testid="log-empty">{move || i18n.t(k!("logs.empty"))}</p> }.into_any()
                    } else {
                        let lines: Vec<String> = text.lines().map(str::to_owned).collect();
                        view! { <LogLines source=LogSource::Read(StoredValue::new(lines)) follow=follow /> }.into_any()
                    }
                }).into_any()
            }}
        </section>
    }
}

/// The lines a viewer draws: read once, or followed (growing).
#[derive(Clone, Copy)]
enum LogSource {
    /// The last lines, read once.
    Read(StoredValue<Vec<String>>),
    /// A followed log.
    Followed(RwSignal<FollowedLog>),
}

impl LogSource {
    fn len(self) -> usize {
        match self {
            LogSource::Read(lines) => lines.with_value(Vec::len),
            LogSource::Followed(log) => log.with(FollowedLog::len),
        }
    }

    fn window(self, first: usize, last: usize) -> Vec<String> {
        match self {
            LogSource::Read(lines) => lines.with_value(|l| l[first.min(l.len())..last.min(l.len())].to_vec()),
            LogSource::Followed(log) => log.with(|l| l.window(first, last)),
        }
    }
}

/// The lines `first..last` to render when the view's top is `scroll_top` pixels down a log of
/// `total` lines: those in view and [`OVERSCAN`] on each side.
fn visible_window(scroll_top: f64, total: usize) -> (usize, usize) {
    let top_line = (scroll_top.max(0.0) / LINE_PX) as usize;
    let first = top_line.saturating_sub(OVERSCAN).min(total);
    let last = (top_line + (VIEW_PX / LINE_PX).ceil() as usize + OVERSCAN).min(total);
    (first, last)
}

/// A log as a virtualised list: a box as tall as every line, with only the lines in view
/// (and a margin) in the document, so ten thousand lines cost what a hundred do. Lines do not
/// wrap (each is one [`LINE_PX`] high); long ones scroll sideways. A followed log stays at its
/// end while the reader is there (scrolling up stops that; scrolling back to the end resumes).
#[component]
fn LogLines(
    /// The lines.
    source: LogSource,
    /// Whether the reader follows its end.
    follow: RwSignal<bool>,
) -> impl IntoView {
    let i18n = use_i18n();
    let total = Memo::new(move |_| source.len());
    let scroll_top = RwSignal::new(0.0_f64);
    let at_end = StoredValue::new(true);
    let viewport: NodeRef<leptos::html::Div> = NodeRef::new();
    // The box may be the one the previous log was drawn in (same place, same kind of view),
    // scrolled: the window follows where it is, or, while following and at the end, it goes
    // to the end as lines arrive (also when Follow is switched on).
    Effect::new(move |_| {
        let following = follow.get();
        total.track();
        if let Some(el) = viewport.get() {
            if following && at_end.get_value() {
                el.set_scroll_top(el.scroll_height());
            }
            scroll_top.set(f64::from(el.scroll_top()));
        }
    });
    let rows = move || {
        let (first, last) = visible_window(scroll_top.get(), total.get());
        source
            .window(first, last)
            .into_iter()
            .enumerate()
            .map(|(i, line)| {
                let number = (first + i + 1).to_string();
                if line == REPEAT_LINE {
                    view! {
                        <div class="whitespace-pre px-3 italic text-amber-300" style:height=format!("{LINE_PX}px") style:line-height=format!("{LINE_PX}px")
                            data-line=number data-testid="log-repeat">{move || i18n.t(k!("logs.repeat"))}</div>
                    }
                    .into_any()
                } else if line == GAP_LINE {
                    view! {
                        <div class="whitespace-pre px-3 italic text-amber-300" style:height=format!("{LINE_PX}px") style:line-height=format!("{LINE_PX}px")
                            data-line=number data-testid="log-gap">{move || i18n.t(k!("logs.gap"))}</div>
                    }
                    .into_any()
                } else {
                    view! {
                        <div class="whitespace-pre px-3" style:height=format!("{LINE_PX}px") style:line-height=format!("{LINE_PX}px")
                            data-line=number>{line}</div>
                    }
                    .into_any()
                }
            })
            .collect_view()
    };
    let offset = move || format!("{}px", visible_window(scroll_top.get(), total.get()).0 as f64 * LINE_PX);
    view! {
        <div node_ref=viewport tabindex="0" role="region" aria-label=move || i18n.t(k!("logs.title")) translate="no"
            class="overflow-auto rounded bg-slate-900 py-2 font-mono text-xs text-slate-100"
            style:max-height=format!("{VIEW_PX}px") style:min-height=format!("{}px", LINE_PX * 2.0)
            data-testid="log" data-lines=move || total.get().to_string()
            on:scroll=move |ev| {
                let el = event_target::<web_sys::Element>(&ev);
                at_end.set_value(el.scroll_top() + el.client_height() >= el.scroll_height() - LINE_PX as i32);
                scroll_top.set(f64::from(el.scroll_top()));
            }>
            <div class="relative" style:height=move || format!("{}px", total.get() as f64 * LINE_PX)>
                <div class="absolute left-0 min-w-full" style:top=offset>{rows}</div>
            </div>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_is_the_lines_in_view_and_a_margin_within_the_log() {
        let in_view = (VIEW_PX / LINE_PX) as usize;
        assert_eq!(visible_window(0.0, 10_000), (0, in_view + OVERSCAN));
        // 100 lines down: 30 above, the 24 in view, 30 below.
        assert_eq!(
            visible_window(100.0 * LINE_PX, 10_000),
            (100 - OVERSCAN, 100 + in_view + OVERSCAN)
        );
        // Half a line down still starts at the line partly in view.
        assert_eq!(visible_window(LINE_PX * 0.5, 10_000).0, 0);
        // Near the end, and past it (an old scroll position after the log shrank).
        assert_eq!(visible_window(9_990.0 * LINE_PX, 10_000), (9_990 - OVERSCAN, 10_000));
        assert_eq!(visible_window(50_000.0 * LINE_PX, 10), (10, 10));
        assert_eq!(visible_window(-5.0, 3), (0, 3));
    }
}
