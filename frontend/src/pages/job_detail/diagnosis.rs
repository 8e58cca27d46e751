//! The parts of a job's page that answer "why is it Pending" and "why did it die": the one
//! failure line and its pods with the cluster's reasons and events (its logs are in
//! [`super::log_panel`]).

use anteroom_shared::api::pods::{JobFailure, JobPods};
use leptos::prelude::*;

use crate::components::{CARD, TABLE, TD, TH, show, use_fetch};
use crate::format;
use crate::i18n::{k, use_i18n};

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
