//! The parts of a job's page that answer "why is it Pending" and "why did it die": the one
//! failure line, its pods with the cluster's reasons and events, and its logs (followed by
//! re-reading the tail every two seconds while "Follow" is on).

use anteroom_shared::api::jobs::TaskBody;
use anteroom_shared::api::pods::{JobFailure, JobPods};
use leptos::prelude::*;

use crate::components::{CARD, INPUT, LINK, TABLE, TD, TH, show, use_fetch};
use crate::format;
use crate::i18n::{k, use_i18n};

/// Lines of a log shown on the page (the whole log is a download).
const SHOWN_LINES: u32 = 1000;

/// How often a followed log is read again, in milliseconds.
const FOLLOW_EVERY_MS: u64 = 2000;

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
        <p role="status" class="rounded border border-red-300 bg-red-50 p-3 text-sm text-red-900" data-testid="failure-line">
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
                        view! { <p class="text-sm text-slate-600" data-testid="no-pods">{move || i18n.t(if in_cluster { k!("pods.none") } else { k!("pods.notInCluster") })}</p> }.into_any()
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
                                    <tbody class="divide-y divide-slate-100">
                                        {p.pods.iter().map(|pod| view! {
                                            <tr data-testid="pod-row" data-phase=pod.phase.clone()>
                                                <td class=TD><code class="text-xs">{pod.name.clone()}</code></td>
                                                <td class=TD>{pod.node.clone().unwrap_or_else(|| "—".into())}</td>
                                                <td class=TD>{pod.phase.clone()}</td>
                                                <td class=TD>
                                                    <span class="font-medium">{pod.reason.clone().unwrap_or_default()}</span>
                                                    {pod.message.clone().map(|m| view! { <p class="text-xs text-slate-600">{m}</p> })}
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
                        view! { <p class="text-sm text-slate-600">{move || i18n.t(k!("pods.eventsNone"))}</p> }.into_any()
                    } else {
                        view! {
                            <ul class="space-y-1 text-sm" data-testid="cluster-events">
                                {p.events.iter().map(|e| {
                                    let warning = e.event_type == "Warning";
                                    let last = e.last_at;
                                    let count = e.count;
                                    view! {
                                        <li data-testid="cluster-event" data-reason=e.reason.clone()>
                                            <span class=if warning { "font-medium text-red-800" } else { "font-medium" }>
                                                {warning.then(|| view! { <span aria-hidden="true">"⚠ "</span><span class="sr-only">{move || i18n.t(k!("pods.warning"))}" "</span> })}
                                                {e.reason.clone()}
                                            </span>
                                            " "<code class="text-xs">{e.object.clone()}</code>
                                            {(count > 1).then(|| view! { " "<span class="text-xs text-slate-600">{move || i18n.tf(k!("pods.count"), &[("count", &count.to_string())])}</span> })}
                                            " "<span class="text-xs text-slate-600">{move || last.map(|t| format::datetime(i18n.locale(), t)).unwrap_or_default()}</span>
                                            <p class="text-xs text-slate-700">{e.message.clone()}</p>
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
        async move { crate::api::job_log(id, &task, replica, SHOWN_LINES).await }
    });
    let pre: NodeRef<leptos::html::Pre> = NodeRef::new();
    // A followed log shows its end.
    Effect::new(move |_| {
        log.track();
        if follow.get_untracked()
            && let Some(pre) = pre.get()
        {
            pre.set_scroll_top(pre.scroll_height());
        }
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
            <p class="text-xs text-slate-600">{move || i18n.tf(k!("logs.lines"), &[("count", &SHOWN_LINES.to_string())])}</p>
            {show(log, move |text: &String| {
                if text.is_empty() {
                    view! { <p class="text-sm text-slate-600" data-testid="log-empty">{move || i18n.t(k!("logs.empty"))}</p> }.into_any()
                } else {
                    view! {
                        <pre node_ref=pre tabindex="0" class="max-h-96 overflow-auto whitespace-pre-wrap break-all rounded bg-slate-900 p-3 font-mono text-xs text-slate-100" data-testid="log">{text.clone()}</pre>
                    }.into_any()
                }
            })}
        </section>
    }
}
