//! The parts of a job's page that answer "why is it Pending" and "why did it die": the one
//! failure line, its pods with the cluster's reasons and events, and its logs (followed by
//! re-reading the tail every two seconds while "Follow" is on).

use anteroom_shared::api::jobs::TaskBody;
use anteroom_shared::api::pods::{JobFailure, JobPods};
use leptos::prelude::*;

use crate::components::{CARD, INPUT, LINK, TABLE, TD, TH, show, use_fetch};
use crate::format;
use crate::i18n::{k, use_i18n};

/// Lines of a log shown on the page when not following (the whole log is a download). Only
/// the lines in view are in the document (see [`LogLines`]), so this bounds the transfer, not
/// the rendering.
const SHOWN_LINES: u32 = 10_000;

/// The height of one log line, in CSS pixels: fixed, so a line's position is its index times
/// this, and the viewer never measures the document.
const LINE_PX: f64 = 16.0;

/// The viewer's height, in CSS pixels (24 lines).
const VIEW_PX: f64 = 384.0;

/// Lines rendered above and below the view, so a fast scroll rarely shows a gap.
const OVERSCAN: usize = 30;

/// Lines of a followed log (re-read every [`FOLLOW_EVERY_MS`], so kept small: the reader is
/// watching its end).
const FOLLOWED_LINES: u32 = 1000;

/// How often a followed log is read again, in milliseconds.
const FOLLOW_EVERY_MS: u64 = 2000;

/// What a Kubernetes reason word means, in the reader's language: owners see this instead of
/// the cluster's own message (which names other teams' nodes and objects); admins see both.
fn reason_sentence(i18n: crate::i18n::I18n, reason: &str) -> String {
    let key = match reason {
        "ImagePullBackOff" => k!("clusterReason.ImagePullBackOff"),
        "ErrImagePull" => k!("clusterReason.ErrImagePull"),
        "InvalidImageName" => k!("clusterReason.InvalidImageName"),
        "CrashLoopBackOff" => k!("clusterReason.CrashLoopBackOff"),
        "OOMKilled" => k!("clusterReason.OOMKilled"),
        "Error" => k!("clusterReason.Error"),
        "Completed" => k!("clusterReason.Completed"),
        "Evicted" => k!("clusterReason.Evicted"),
        "Unschedulable" => k!("clusterReason.Unschedulable"),
        "FailedScheduling" => k!("clusterReason.FailedScheduling"),
        "DeadlineExceeded" => k!("clusterReason.DeadlineExceeded"),
        "Terminating" => k!("clusterReason.Terminating"),
        "ContainerCreating" => k!("clusterReason.ContainerCreating"),
        "CreateContainerConfigError" => k!("clusterReason.CreateContainerConfigError"),
        "Scheduled" => k!("clusterReason.Scheduled"),
        "Pulling" => k!("clusterReason.Pulling"),
        "Pulled" => k!("clusterReason.Pulled"),
        "Created" => k!("clusterReason.Created"),
        "Started" => k!("clusterReason.Started"),
        "Killing" => k!("clusterReason.Killing"),
        "BackOff" => k!("clusterReason.BackOff"),
        "FailedMount" => k!("clusterReason.FailedMount"),
        "Preempted" => k!("clusterReason.Preempted"),
        other => return i18n.tf(k!("clusterReason.other"), &[("reason", other)]),
    };
    i18n.t(key).to_owned()
}

/// Why the job failed, in one line: the reason, the exit code, the pod.
#[component]
pub fn FailureLine(
    /// The failure the API reported.
    failure: JobFailure,
) -> impl IntoView {
    let i18n = use_i18n();
    let text = move || {
        let mut line = crate::components::job_table::failure_reason(i18n, &failure);
        if let Some(pod) = &failure.pod {
            line.push(' ');
            line.push_str(&i18n.tf(k!("jobs.failurePod"), &[("pod", pod)]));
        }
        line
    };
    view! {
        <p role="status" class="rounded border border-red-300 dark:border-red-700 bg-red-50 dark:bg-red-950 p-3 text-sm text-red-900 dark:text-red-100" data-testid="failure-line">
            <span class="font-medium">{move || i18n.t(k!("jobs.failure"))}": "</span>
            {text}
        </p>
    }
}

/// The job's pods and the cluster's events about them; read when the page shows the job (the
/// page is drawn again when this job changes, so a change of its own re-reads them).
#[component]
pub fn PodsPanel(
    /// The job.
    id: i64,
    /// Whether it may be in the cluster (not while prequeued).
    in_cluster: bool,
) -> impl IntoView {
    let i18n = use_i18n();
    let pods = use_fetch(move || async move {
        if in_cluster {
            crate::api::job_pods(id).await
        } else {
            Ok(JobPods::default())
        }
    });
    view! {
        <section class=format!("{CARD} space-y-3") aria-labelledby="pods-title" data-testid="pods-panel">
            <h2 id="pods-title" class="text-lg font-semibold">{move || i18n.t(k!("pods.title"))}</h2>
            {show(pods, move |p: &JobPods| {
                let p = p.clone();
                view! {
                    {if p.pods.is_empty() {
                        view! { <p class="text-sm text-slate-600 dark:text-slate-300" data-testid="no-pods">{move || i18n.t(if in_cluster { k!("pods.none") } else { k!("pods.notInCluster") })}</p> }.into_any()
                    } else {
                        view! {
                            <div class="overflow-x-auto">
                                <table class=TABLE data-testid="pods-table">
                                    <thead><tr>
                                        <th scope="col" class=TH>{move || i18n.t(k!("pods.name"))}</th>
                                        <th scope="col" class=TH>{move || i18n.t(k!("pods.node"))}</th>
                                        <th scope="col" class=TH>{move || i18n.t(k!("pods.phase"))}</th>
                                        <th scope="col" class=TH>{move || i18n.t(k!("pods.reason"))}</th>
                                        <th scope="col" class=TH>{move || i18n.t(k!("pods.exitCode"))}</th>
                                        <th scope="col" class=TH>{move || i18n.t(k!("pods.restarts"))}</th>
                                    </tr></thead>
                                    <tbody class="divide-y divide-slate-100 dark:divide-slate-800">
                                        {p.pods.iter().map(|pod| view! {
                                            <tr data-testid="pod-row" data-phase=pod.phase.clone()>
                                                <td class=TD><code class="text-xs">{pod.name.clone()}</code></td>
                                                <td class=TD>{pod.node.clone().unwrap_or_else(|| "—".into())}</td>
                                                <td class=TD>{pod.phase.clone()}</td>
                                                <td class=TD>
                                                    <span class="font-medium">{pod.reason.clone().unwrap_or_default()}</span>
                                                    {pod.reason.clone().map(|r| view! { <p class="text-xs" data-testid="reason-sentence">{move || reason_sentence(i18n, &r)}</p> })}
                                                    {pod.message.clone().map(|m| view! { <p class="text-xs text-slate-600 dark:text-slate-300" data-testid="cluster-message">{m}</p> })}
                                                </td>
                                                <td class=TD>{pod.exit_code.map(|c| c.to_string()).unwrap_or_else(|| "—".into())}</td>
                                                <td class=TD>{pod.restarts}</td>
                                            </tr>
                                        }).collect_view()}
                                    </tbody>
                                </table>
                            </div>
                        }.into_any()
                    }}
                    <h3 class="text-sm font-semibold">{move || i18n.t(k!("pods.events"))}</h3>
                    {if p.events.is_empty() {
                        view! { <p class="text-sm text-slate-600 dark:text-slate-300">{move || i18n.t(k!("pods.eventsNone"))}</p> }.into_any()
                    } else {
                        view! {
                            <ul class="space-y-1 text-sm" data-testid="cluster-events">
                                {p.events.iter().map(|e| {
                                    let warning = e.event_type == "Warning";
                                    let last = e.last_at;
                                    let count = e.count;
                                    view! {
                                        <li data-testid="cluster-event" data-reason=e.reason.clone()>
                                            <span class=if warning { "font-medium text-red-800 dark:text-red-200" } else { "font-medium" }>
                                                {warning.then(|| view! { <span aria-hidden="true">"⚠ "</span><span class="sr-only">{move || i18n.t(k!("pods.warning"))}" "</span> })}
                                                {e.reason.clone()}
                                            </span>
                                            " "<code class="text-xs">{e.object.clone()}</code>
                                            {(count > 1).then(|| view! { " "<span class="text-xs text-slate-600 dark:text-slate-300">{move || i18n.tf(k!("pods.count"), &[("count", &count.to_string())])}</span> })}
                                            " "<span class="text-xs text-slate-600 dark:text-slate-300">{move || last.map(|t| format::datetime(i18n.locale(), t)).unwrap_or_default()}</span>
                                            <p class="text-xs" data-testid="reason-sentence">{
                                                let reason = e.reason.clone();
                                                move || reason_sentence(i18n, &reason)
                                            }</p>
                                            {e.message.clone().map(|m| view! { <p class="text-xs text-slate-700 dark:text-slate-300" data-testid="cluster-message">{m}</p> })}
                                        </li>
                                    }
                                }).collect_view()}
                            </ul>
                        }.into_any()
                    }}
                }
            })}
        </section>
    }
}

/// Which log the page shows and whether it follows it: owned by the page, so drawing the job
/// again (a live change of its phase) keeps the reader's choice.
#[derive(Clone, Copy)]
pub struct LogChoice {
    /// The task (empty: the job's first).
    pub task: RwSignal<String>,
    /// The replica.
    pub replica: RwSignal<u32>,
    /// Following.
    pub follow: RwSignal<bool>,
}

impl LogChoice {
    /// The first task's first replica, not followed.
    pub fn new() -> Self {
        LogChoice {
            task: RwSignal::new(String::new()),
            replica: RwSignal::new(0),
            follow: RwSignal::new(false),
        }
    }
}

/// A pod's log: task and replica to choose, the last lines in monospace, "Follow" to keep
/// reading it, and the whole log as a download.
#[component]
pub fn LogPanel(
    /// The job.
    id: i64,
    /// Its tasks (names and replicas).
    tasks: Vec<TaskBody>,
    /// What the reader chose.
    choice: LogChoice,
) -> impl IntoView {
    let i18n = use_i18n();
    let LogChoice { task, replica, follow } = choice;
    if task.get_untracked().is_empty() {
        task.set(tasks.first().map(|t| t.name.clone()).unwrap_or_default());
    }
    let tick = RwSignal::new(0u64);
    let replicas = {
        let tasks = tasks.clone();
        move || {
            let name = task.get();
            tasks.iter().find(|t| t.name == name).map_or(1, |t| t.replicas)
        }
    };
    // While following, read the tail again every two seconds.
    Effect::new(move |_| {
        if follow.get() {
            let handle = set_interval_with_handle(
                move || tick.update(|t| *t += 1),
                std::time::Duration::from_millis(FOLLOW_EVERY_MS),
            );
            if let Ok(handle) = handle {
                on_cleanup(move || handle.clear());
            }
        }
    });
    let log = use_fetch(move || {
        tick.get();
        let (task, replica) = (task.get(), replica.get());
        let lines = if follow.get() { FOLLOWED_LINES } else { SHOWN_LINES };
        async move { crate::api::job_log(id, &task, replica, lines).await }
    });
    let download = move || crate::api::job_log_path(id, &task.get(), replica.get(), None, true);
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
            <p class="text-xs text-slate-600 dark:text-slate-300">{move || {
                let lines = if follow.get() { FOLLOWED_LINES } else { SHOWN_LINES };
                i18n.tp(k!("logs.lines.one"), k!("logs.lines.other"), lines as u64, &[])
            }}</p>
            {show(log, move |text: &String| {
                if text.is_empty() {
                    view! { <p class="text-sm text-slate-600 dark:text-slate-300" data-testid="log-empty">{move || i18n.t(k!("logs.empty"))}</p> }.into_any()
                } else {
                    view! { <LogLines text=text.clone() follow=follow /> }.into_any()
                }
            })}
        </section>
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
/// wrap (each is one [`LINE_PX`] high); long ones scroll sideways. A followed log opens at its
/// end.
#[component]
fn LogLines(
    /// The log.
    text: String,
    /// Whether the reader follows its end.
    follow: RwSignal<bool>,
) -> impl IntoView {
    let i18n = use_i18n();
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let total = lines.len();
    let lines = StoredValue::new(lines);
    let scroll_top = RwSignal::new(0.0_f64);
    let viewport: NodeRef<leptos::html::Div> = NodeRef::new();
    // The box may be the one the previous log was drawn in (same place, same kind of view),
    // scrolled: the window follows where it is, or, while following, it goes to the end
    // (also when Follow is switched on over an unchanged log).
    Effect::new(move |_| {
        let following = follow.get();
        if let Some(el) = viewport.get() {
            if following {
                el.set_scroll_top(el.scroll_height());
            }
            scroll_top.set(f64::from(el.scroll_top()));
        }
    });
    let rows = move || {
        let (first, last) = visible_window(scroll_top.get(), total);
        lines.with_value(|lines| {
            lines[first..last]
                .iter()
                .enumerate()
                .map(|(i, line)| {
                    view! {
                        <div class="whitespace-pre px-3" style:height=format!("{LINE_PX}px") style:line-height=format!("{LINE_PX}px")
                            data-line=(first + i + 1).to_string()>{line.clone()}</div>
                    }
                })
                .collect_view()
        })
    };
    let offset = move || format!("{}px", visible_window(scroll_top.get(), total).0 as f64 * LINE_PX);
    view! {
        <div node_ref=viewport tabindex="0" role="region" aria-label=move || i18n.t(k!("logs.title"))
            class="overflow-auto rounded bg-slate-900 py-2 font-mono text-xs text-slate-100"
            style:max-height=format!("{VIEW_PX}px")
            data-testid="log" data-lines=total.to_string()
            on:scroll=move |ev| scroll_top.set(f64::from(event_target::<web_sys::Element>(&ev).scroll_top()))>
            <div class="relative" style:height=format!("{}px", total as f64 * LINE_PX)>
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
