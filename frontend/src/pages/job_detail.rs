//! `/jobs/{id}`: the job's details, tasks and nodes, its event timeline and, while it waits in
//! the prequeue, its position and reasons drawn as bars; while it runs on another queue's idle
//! guaranteed room, a Borrowing badge and what that means (it may be reclaimed); why it failed in one line, its pods,
//! the cluster's events and its logs ([`diagnosis`]); **Open** for a running notebook and **Run
//! again**. Updates live.

mod ahead;
mod diagnosis;
mod followed_log;
mod log_panel;
mod timeline;

use anteroom_shared::api::jobs::JobDetail as Detail;
use anteroom_shared::scheduling::{BorrowPolicy, JobPhase, PreemptionPolicy, ScheduleType};
use leptos::prelude::*;
use leptos_router::hooks::{use_navigate, use_params_map};

use crate::components::badges::{BorrowingBadge, PhaseBadge, ScheduleTypeBadge, kind_label, shows_borrowing};
use crate::components::confirm::use_confirm;
use crate::components::job_table::resources_text;
use crate::components::marked::Marked;
use crate::components::reasons::Reasons;
use crate::components::time::Time;
use crate::components::toast::use_toasts;
use crate::components::{
    BUTTON, BUTTON_DANGER, BUTTON_SECONDARY, CARD, ErrorPanel, LINK, TABLE, TD, TH, show, use_fetch,
};
use crate::format;
use crate::i18n::{k, use_i18n};
use crate::live::use_live;

/// The job page.
#[component]
pub fn JobDetail() -> impl IntoView {
    let params = use_params_map();
    let live = use_live();
    let id = move || params.read().get("id").and_then(|s| s.parse::<i64>().ok());
    // Refetched when this job's events arrive, not at every job's; while it waits, at every
    // job's (its position and the usage in its reasons move with the others).
    let version = live.job_version(id);
    let waiting = RwSignal::new(false);
    let detail = use_fetch(move || {
        if waiting.get() {
            live.version();
        } else {
            version.get();
        }
        let id = id();
        async move {
            match id {
                Some(id) => crate::api::job(id).await,
                None => Err(crate::api::ApiFailure {
                    code: "job_not_found".into(),
                    message: "no such job".into(),
                    details: None,
                }),
            }
        }
    });
    Effect::new(move |_| {
        let prequeued = detail.with(|d| matches!(d, Some(Ok(d)) if d.prequeue.is_some()));
        if waiting.get_untracked() != prequeued {
            waiting.set(prequeued);
        }
    });
    let log_choice = log_panel::LogChoice::new();
    view! {
        {move || match detail.get() {
            Some(Err(f)) => view! {
                <section class="space-y-4">
                    <h1 class="text-2xl font-semibold" data-testid="page-title">{move || use_i18n().t(k!("page.jobDetail.title"))}</h1>
                    <ErrorPanel failure=f />
                </section>
            }.into_any(),
            _ => show(detail, move |d: &Detail| view! { <DetailView detail=d.clone() log_choice=log_choice /> }).into_any(),
        }}
    }
}

#[component]
fn DetailView(detail: Detail, log_choice: log_panel::LogChoice) -> impl IntoView {
    let i18n = use_i18n();
    let confirm = use_confirm();
    let toasts = use_toasts();
    let navigate = use_navigate();
    let job = detail.job.clone();
    let id = job.id;
    let finished = job.phase.is_terminal();
    let run_again = {
        let navigate = navigate.clone();
        let busy = RwSignal::new(false);
        move |_| {
            if busy.get_untracked() {
                return;
            }
            busy.set(true);
            let navigate = navigate.clone();
            leptos::task::spawn_local(async move {
                match crate::api::resubmit(id).await {
                    Ok(answer) => {
                        toasts.success(i18n.tf(k!("jobs.ranAgain"), &[("name", &answer.job.name)]));
                        navigate(&format!("/jobs/{}", answer.job.id), Default::default());
                    }
                    Err(f) => toasts.error(i18n.failure(&f)),
                }
                busy.try_set(false);
            });
        }
    };
    let notebook_open = crate::components::notebook::can_open(&job);
    let in_cluster = !matches!(job.phase, JobPhase::Prequeue);
    let pods = diagnosis::read_pods(id, in_cluster);
    let delete = {
        let name = job.name.clone();
        move |_| {
            let navigate = navigate.clone();
            let name = name.clone();
            confirm.ask(i18n.tf(k!("jobs.confirmDelete"), &[("name", &name)]), move || {
                leptos::task::spawn_local(async move {
                    match crate::api::delete_job(id).await {
                        Ok(()) => {
                            toasts.success(i18n.tf(k!("jobs.deleted"), &[("name", &name)]));
                            navigate("/jobs", Default::default());
                        }
                        Err(f) => toasts.error(i18n.failure(&f)),
                    }
                });
            });
        }
    };
    let row = |label: crate::i18n::Key, value: AnyView| {
        view! {
            <div class="grid grid-cols-[12rem_1fr] gap-2 py-1 text-sm">
                <dt class="font-medium text-slate-700 dark:text-slate-300">{move || i18n.t(label)}</dt>
                <dd>{value}</dd>
            </div>
        }
    };
    let time = move |t: Option<chrono::DateTime<chrono::Utc>>| match t {
        Some(t) => view! { <Time at=t /> }.into_any(),
        None => view! { <span>"—"</span> }.into_any(),
    };
    let resources = job.resources.clone();
    let waiting = job.phase == JobPhase::Prequeue;
    let borrowing = shows_borrowing(&job);
    // What a reclaim does to it: back to the prequeue if it asked, else it ends Preempted.
    let borrowing_note = if job.requeue {
        k!("page.jobDetail.borrowingNoteRequeue")
    } else {
        k!("page.jobDetail.borrowingNoteEnd")
    };
    view! {
        <section class="space-y-6" data-testid="job-detail" data-phase=job.phase.as_str()>
            <header class="flex flex-wrap items-center gap-3">
                <h1 class="text-2xl font-semibold" data-testid="page-title">{job.name.clone()}</h1>
                <span class="text-sm text-slate-600 dark:text-slate-300" data-testid="job-id">{move || i18n.tf(k!("page.jobDetail.number"), &[("id", &id.to_string())])}</span>
                <ScheduleTypeBadge schedule_type=job.schedule_type />
                <PhaseBadge phase=job.phase />
                {borrowing.then(|| view! { <BorrowingBadge /> })}
                <div class="ml-auto flex flex-wrap gap-2">
                    {notebook_open.then(|| view! {
                        <crate::components::notebook::OpenNotebook id=id owner=job.owner.clone() class=BUTTON />
                    })}
                    <button type="button" class=BUTTON_SECONDARY on:click=run_again data-testid="run-again">
                        {move || i18n.t(k!("jobs.runAgain"))}
                    </button>
                    <button type="button" class=BUTTON_DANGER disabled=finished on:click=delete data-testid="delete-job">
                        {move || i18n.t(k!("jobs.delete"))}
                    </button>
                </div>
            </header>
            {job.failure.clone().map(|failure| view! { <diagnosis::FailureLine failure=failure /> })}
            {borrowing.then(|| view! {
                <p class=format!("{} p-3 text-sm", crate::components::palette::PANEL) data-testid="borrowing-note">
                    {move || i18n.t(borrowing_note)}
                </p>
            })}
            {waiting.then(|| {
                let standing = detail.prequeue.clone();
                view! {
                    <section class=format!("{CARD} space-y-3 border-fuchsia-300 dark:border-fuchsia-700") aria-labelledby="waiting-title" data-testid="prequeue-standing">
                        <h2 id="waiting-title" class="text-lg font-semibold">{move || i18n.t(k!("page.jobDetail.whyWaiting"))}</h2>
                        {match standing {
                            Some(s) => view! {
                                <p class="text-sm" data-testid="position">{move || i18n.tf(k!("page.jobDetail.position"), &[("position", &format::number(i18n.locale(), s.position as f64, 0))])}</p>
                                <Reasons reasons=s.reasons.clone() />
                                <ahead::Ahead id=id standing=s.clone() />
                            }.into_any(),
                            None => view! { <p class="text-sm text-slate-600 dark:text-slate-300">{move || i18n.t(k!("page.jobDetail.positionUnknown"))}</p> }.into_any(),
                        }}
                    </section>
                }
            })}
            <section class=CARD aria-labelledby="details-title">
                <h2 id="details-title" class="mb-2 text-lg font-semibold">{move || i18n.t(k!("page.jobDetail.details"))}</h2>
                <dl class="divide-y divide-slate-100 dark:divide-slate-800">
                    {row(k!("jobs.kind"), view! { <span>{move || i18n.t(kind_label(job.kind))}</span> }.into_any())}
                    {row(k!("jobs.queue"), view! { <span>{job.queue.clone()}</span> }.into_any())}
                    {row(k!("jobs.owner"), view! { <span>{job.owner.clone()}</span> }.into_any())}
                    {row(k!("jobs.resources"), view! { <span>{move || resources_text(i18n, &resources)}</span> }.into_any())}
                    {row(k!("page.jobDetail.preemption"), view! { <span>{move || i18n.t(match job.preemption_policy {
                        PreemptionPolicy::Never => k!("page.jobDetail.preemptNever"),
                        PreemptionPolicy::PreemptLowerPriority => k!("page.jobDetail.preemptAllowed"),
                    })}</span> }.into_any())}
                    {(job.priority != 0).then(|| row(k!("jobs.priority"), view! {
                        <span data-testid="job-priority">{move || format::number(i18n.locale(), f64::from(job.priority), 0)}</span>
                    }.into_any()))}
                    {(job.schedule_type == ScheduleType::Normal && job.borrow == BorrowPolicy::Never).then(|| row(k!("page.jobDetail.borrow"), view! {
                        <span data-testid="job-borrow">{move || i18n.t(k!("page.jobDetail.borrowNever"))}</span>
                    }.into_any()))}
                    {row(k!("page.jobDetail.tolerance"), view! { <span>{move || job.waiting_tolerance_seconds.map(|s| format::duration(i18n.locale(), s)).unwrap_or_else(|| "—".into())}</span> }.into_any())}
                    {row(k!("page.jobDetail.nodes"), view! { <span>{if job.nodes.is_empty() { "—".to_owned() } else { job.nodes.join(", ") }}</span> }.into_any())}
                    {row(k!("jobs.submitted"), time(Some(job.submitted_at)))}
                    {(job.schedule_type == ScheduleType::Normal).then(|| {
                        let since = job.waiting_since;
                        let tolerance = job.waiting_tolerance_seconds;
                        let now = crate::components::time::ticking_now();
                        // While it waits: how long until its tolerance runs out (then it goes
                        // first and may preempt), or that it has.
                        let left = move || {
                            let (Some(since), Some(tolerance), true) = (since, tolerance, waiting) else {
                                return None;
                            };
                            let left = tolerance - (now.get() - since).num_seconds();
                            Some(if left > 0 {
                                i18n.tf(k!("jobs.toleranceLeft"), &[("left", &format::duration(i18n.locale(), left))])
                            } else {
                                i18n.t(k!("jobs.tolerancePassed")).to_owned()
                            })
                        };
                        row(k!("jobs.waitingSince"), view! {
                            <span data-testid="waiting-since">{match since {
                                Some(t) => view! { <Time at=t /> }.into_any(),
                                None if waiting => view! { <span>{move || i18n.t(k!("jobs.waitingSinceNone"))}</span> }.into_any(),
                                None => "—".into_any(),
                            }}</span>
                            <p class="text-xs text-slate-700 dark:text-slate-300" data-testid="tolerance-left">{left}</p>
                        }.into_any())
                    })}
                    {row(k!("page.jobDetail.activated"), time(job.activated_at))}
                    {row(k!("jobs.started"), time(job.started_at))}
                    {
                        let limit = job.max_runtime_seconds;
                        let started = job.started_at.filter(|_| job.phase == JobPhase::Running);
                        let now = crate::components::time::ticking_now();
                        // While it runs under a limit: how long until the cluster ends it.
                        let left = move || {
                            let (Some(limit), Some(started)) = (limit, started) else { return None };
                            let left = limit - (now.get() - started).num_seconds();
                            Some(i18n.tf(k!("jobs.runtimeLeft"), &[("left", &format::duration(i18n.locale(), left.max(0)))]))
                        };
                        row(k!("jobs.runtimeLimit"), view! {
                            <span data-testid="runtime-limit">{move || limit.map(|s| format::duration(i18n.locale(), s)).unwrap_or_else(|| i18n.t(k!("jobs.noRuntimeLimit")).to_owned())}</span>
                            <p class="text-xs text-slate-700 dark:text-slate-300" data-testid="runtime-left">{left}</p>
                        }.into_any())
                    }
                    {(job.requeue || job.requeues > 0).then(|| row(k!("jobs.requeue"), view! {
                        <span data-testid="requeues">{move || i18n.tf(k!("jobs.requeues"), &[("count", &job.requeues.to_string())])}</span>
                    }.into_any()))}
                    {row(k!("page.jobDetail.finished"), time(job.finished_at))}
                    {row(k!("page.jobDetail.lockedUntil"), time(job.locked_until))}
                </dl>
            </section>
            <section class=CARD aria-labelledby="tasks-title">
                <h2 id="tasks-title" class="mb-2 text-lg font-semibold">{move || i18n.t(k!("page.jobDetail.tasks"))}</h2>
                <div class="overflow-x-auto">
                    <table class=TABLE data-testid="tasks-table">
                        <thead><tr>
                            <th scope="col" class=TH>{move || i18n.t(k!("task.name"))}</th>
                            <th scope="col" class=TH>{move || i18n.t(k!("task.replicas"))}</th>
                            <th scope="col" class=TH>{move || i18n.t(k!("task.image"))}</th>
                            <th scope="col" class=TH>{move || i18n.t(k!("task.command"))}</th>
                            <th scope="col" class=TH>{move || i18n.t(k!("jobs.resources"))}</th>
                            <th scope="col" class=TH>{move || i18n.t(k!("task.nodeNames"))}</th>
                        </tr></thead>
                        <tbody class="divide-y divide-slate-100 dark:divide-slate-800">
                            {job.tasks.iter().map(|t| {
                                let res = t.resources.clone();
                                view! {
                                    <tr>
                                        <td class=TD>{t.name.clone()}</td>
                                        <td class=TD>{t.replicas}</td>
                                        <td class=TD><code class="text-xs" translate="no">{t.image.clone()}</code></td>
                                        <td class=TD><code class="text-xs" translate="no">{anteroom_shared::shell_words::join(&t.command)}</code></td>
                                        <td class=TD>{move || resources_text(i18n, &res)}</td>
                                        <td class=TD>{if t.node_names.is_empty() { "—".to_owned() } else { t.node_names.join(", ") }}</td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                </div>
            </section>
            <diagnosis::PodsPanel pods=pods in_cluster=in_cluster />
            {in_cluster.then(|| view! { <log_panel::LogPanel id=id tasks=job.tasks.clone() pods=pods unfinished=!finished choice=log_choice /> })}
            <section class=CARD aria-labelledby="timeline-title">
                <h2 id="timeline-title" class="mb-2 text-lg font-semibold">{move || i18n.t(k!("page.jobDetail.timeline"))}</h2>
                <ol class="space-y-2 border-l-2 border-slate-200 dark:border-slate-700 pl-4" data-testid="timeline">
                    {detail.events.iter().map(|e| {
                        let e = e.clone();
                        let queue = detail.job.queue.clone();
                        let at = e.created_at;
                        let target = e.details.as_ref().and_then(|d| d.get("jobId").or_else(|| d.get("beneficiary"))).and_then(|v| v.as_i64());
                        view! {
                            <li class="text-sm" data-testid="timeline-event" data-kind=e.kind.clone()>
                                <span class="font-medium">{
                                    let e = e.clone();
                                    move || timeline::event_title(i18n, &e)
                                }</span>
                                <span class="ml-2 text-xs text-slate-600 dark:text-slate-300"><Time at=at /></span>
                                {target.filter(|t| *t != e.job_id).map(|t| view! { " " <a class=LINK href=format!("/jobs/{t}")>{format!("#{t}")}</a> })}
                                <p class="text-xs text-slate-600 dark:text-slate-300" data-testid="timeline-detail">{
                                    let data = timeline::event_data(&e);
                                    let e = e.clone();
                                    let queue = queue.clone();
                                    let text = Signal::derive(move || timeline::event_description(i18n, &queue, &e, |at| format::datetime(i18n.locale(), at)).unwrap_or_default());
                                    view! { <Marked text=text data=data /> }
                                }</p>
                            </li>
                        }
                    }).collect_view()}
                </ol>
            </section>
            <p><a class=LINK href="/jobs">{move || i18n.t(k!("page.notFound.back"))}</a></p>
        </section>
    }
}
