//! The parts of a job's page that answer "why is it Pending" and "why did it die": the one
//! failure line and its pods with the cluster's reasons and events (its logs are in
//! [`super::log_panel`]).

use anteroom_shared::api::pods::{CauseCode, ClusterCause, JobFailure, JobPods, NodeRefusal, RefusalKind};
use leptos::prelude::*;

use crate::components::marked::Marked;
use crate::components::{CARD, Fetched, TABLE, TD, TH, show, use_fetch};
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
        "Failed" => k!("clusterReason.Failed"),
        other => return i18n.tf(k!("clusterReason.other"), &[("reason", other)]),
    };
    i18n.t(key).to_owned()
}

/// A pod's phase (Kubernetes' word) in the reader's language; a word Kubernetes may add later
/// as it is.
fn pod_phase(i18n: crate::i18n::I18n, phase: &str) -> String {
    let key = match phase {
        "Pending" => k!("podPhase.Pending"),
        "Running" => k!("podPhase.Running"),
        "Succeeded" => k!("podPhase.Succeeded"),
        "Failed" => k!("podPhase.Failed"),
        "Unknown" => k!("podPhase.Unknown"),
        other => return other.to_owned(),
    };
    i18n.t(key).to_owned()
}

/// What the cluster's message says, in the reader's language (the server read it into a code
/// and its values: [`ClusterCause`]).
fn cause_sentence(i18n: crate::i18n::I18n, cause: &ClusterCause) -> String {
    let p = |name: &str| cause.params.get(name).cloned().unwrap_or_default();
    match cause.code {
        CauseCode::NoNodeAvailable => {
            let separator = i18n.t(k!("clusterCause.listSeparator"));
            let refusals: Vec<String> = cause.refusals.iter().map(|r| refusal_text(i18n, r)).collect();
            i18n.tf(
                k!("clusterCause.noNodeAvailable"),
                &[("total", &p("total")), ("refusals", &refusals.join(separator))],
            )
        }
        CauseCode::GangDoesNotFit => i18n.tf(
            k!("clusterCause.gangDoesNotFit"),
            &[("fitting", &p("fitting")), ("total", &p("total")), ("task", &p("task"))],
        ),
        CauseCode::GangUnschedulable => i18n.tf(
            k!("clusterCause.gangUnschedulable"),
            &[("pending", &p("pending")), ("minAvailable", &p("minAvailable"))],
        ),
        CauseCode::Scheduled => i18n.tf(k!("clusterCause.scheduled"), &[("node", &p("node"))]),
        CauseCode::PullingImage => i18n.tf(k!("clusterCause.pullingImage"), &[("image", &p("image"))]),
        CauseCode::ContainerCreated => i18n.tf(k!("clusterCause.containerCreated"), &[("container", &p("container"))]),
        CauseCode::ContainerStarted => i18n.tf(k!("clusterCause.containerStarted"), &[("container", &p("container"))]),
        CauseCode::ContainerStopping => {
            i18n.tf(k!("clusterCause.containerStopping"), &[("container", &p("container"))])
        }
        CauseCode::ContainerExited => i18n.tf(k!("clusterCause.containerExited"), &[("exitCode", &p("exitCode"))]),
        CauseCode::RestartBackOff => i18n.t(k!("clusterCause.restartBackOff")).to_owned(),
        CauseCode::DeadlineExceeded => i18n.t(k!("clusterCause.deadlineExceeded")).to_owned(),
        CauseCode::StoppedWithTask => i18n.tf(k!("clusterCause.stoppedWithTask"), &[("task", &p("task"))]),
        CauseCode::DeletedWithGrace => {
            let until = p("until");
            let until = chrono::DateTime::parse_from_rfc3339(&until)
                .map(|t| format::datetime(i18n.locale(), t.with_timezone(&chrono::Utc)))
                .unwrap_or(until);
            i18n.tf(k!("clusterCause.deletedWithGrace"), &[("until", &until)])
        }
    }
}

/// One group of nodes that refused a pod: how many and why.
fn refusal_text(i18n: crate::i18n::I18n, r: &NodeRefusal) -> String {
    let count = r.count.to_string();
    match r.why {
        RefusalKind::NotReady => i18n.tf(k!("clusterCause.refusal.notReady"), &[("count", &count)]),
        RefusalKind::Unschedulable => i18n.tf(k!("clusterCause.refusal.unschedulable"), &[("count", &count)]),
        RefusalKind::NodeSelector => i18n.tf(k!("clusterCause.refusal.nodeSelector"), &[("count", &count)]),
        RefusalKind::Taint if !r.taints.is_empty() => i18n.tf(
            k!("clusterCause.refusal.taintNamed"),
            &[("count", &count), ("taints", &r.taints.join("; "))],
        ),
        RefusalKind::Taint => i18n.tf(k!("clusterCause.refusal.taint"), &[("count", &count)]),
        RefusalKind::Insufficient => {
            let resource = i18n.resource_name(r.resource.as_deref().unwrap_or_default());
            i18n.tf(
                k!("clusterCause.refusal.insufficient"),
                &[("count", &count), ("resource", &resource)],
            )
        }
        RefusalKind::Other => i18n.tf(k!("clusterCause.refusal.other"), &[("count", &count)]),
    }
}

/// Why the job failed, in one line: the reason, the exit code, the pod.
#[component]
pub fn FailureLine(
    /// The failure the API reported.
    failure: JobFailure,
) -> impl IntoView {
    let i18n = use_i18n();
    let data: Vec<String> = std::iter::once(failure.reason.clone())
        .chain(failure.pod.clone())
        .collect();
    let text = Signal::derive(move || {
        let mut line = crate::components::job_table::failure_reason(i18n, &failure);
        if let Some(pod) = &failure.pod {
            line.push(' ');
            line.push_str(&i18n.tf(k!("jobs.failurePod"), &[("pod", pod)]));
        }
        line
    });
    view! {
        <p role="status" class="rounded border border-red-300 dark:border-red-700 bg-red-50 dark:bg-red-950 p-3 text-sm text-red-900 dark:text-red-100" data-testid="failure-line">
            <span class="font-medium">{move || i18n.t(k!("jobs.failure"))}": "</span>
            <Marked text=text data=data />
        </p>
    }
}

/// Reads the job's pods once for the page (the pods panel shows them; the log panel reads a
/// pod's log only while the pod is there).
pub fn read_pods(id: i64, in_cluster: bool) -> Fetched<JobPods> {
    use_fetch(move || async move {
        if in_cluster {
            crate::api::job_pods(id).await
        } else {
            Ok(JobPods::default())
        }
    })
}

/// The job's pods and the cluster's events about them, as the page read them (the page is
/// drawn again when this job changes, so a change of its own reads them again).
#[component]
pub fn PodsPanel(
    /// Its pods, as read (see [`read_pods`]).
    pods: Fetched<JobPods>,
    /// Whether it may be in the cluster (not while prequeued).
    in_cluster: bool,
) -> impl IntoView {
    let i18n = use_i18n();
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
                                                <td class=TD><code class="text-xs" translate="no">{pod.name.clone()}</code></td>
                                                <td class=TD translate="no">{pod.node.clone().unwrap_or_else(|| "—".into())}</td>
                                                <td class=TD>{
                                                    let phase = pod.phase.clone();
                                                    move || pod_phase(i18n, &phase)
                                                }</td>
                                                <td class=TD>
                                                    <span class="font-medium" translate="no">{pod.reason.clone().unwrap_or_default()}</span>
                                                    {pod.reason.clone().map(|r| view! { <p class="text-xs" data-testid="reason-sentence"><Marked text=Signal::derive({ let r = r.clone(); move || reason_sentence(i18n, &r) }) data=vec![r] /></p> })}
                                                    {pod.cause.clone().map(|c| view! { <p class="text-xs" data-testid="cluster-cause">{move || cause_sentence(i18n, &c)}</p> })}
                                                    {pod.message.clone().map(|m| view! { <p class="text-xs text-slate-600 dark:text-slate-300" data-testid="cluster-message" translate="no" lang="en">{m}</p> })}
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
                                                <span translate="no">{e.reason.clone()}</span>
                                            </span>
                                            " "<code class="text-xs" translate="no">{e.object.clone()}</code>
                                            {(count > 1).then(|| view! { " "<span class="text-xs text-slate-600 dark:text-slate-300">{move || i18n.tf(k!("pods.count"), &[("count", &count.to_string())])}</span> })}
                                            " "<span class="text-xs text-slate-600 dark:text-slate-300">{move || last.map(|t| format::datetime(i18n.locale(), t)).unwrap_or_default()}</span>
                                            <p class="text-xs" data-testid="reason-sentence">{
                                                let reason = e.reason.clone();
                                                let data = vec![reason.clone()];
                                                view! { <Marked text=Signal::derive(move || reason_sentence(i18n, &reason)) data=data /> }
                                            }</p>
                                            {e.cause.clone().map(|c| view! { <p class="text-xs" data-testid="cluster-cause">{move || cause_sentence(i18n, &c)}</p> })}
                                            {e.message.clone().map(|m| view! { <p class="text-xs text-slate-700 dark:text-slate-300" data-testid="cluster-message" translate="no" lang="en">{m}</p> })}
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
