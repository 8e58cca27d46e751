//! The job table of `/jobs` and `/admin/jobs`: filters by phase, schedule type, kind, queue
//! (and owner for admins), badges, resources, times, and the actions (delete after
//! confirmation; lock and unlock for admins). It refetches on every job event.

use anteroom_shared::api::jobs::Job;
use anteroom_shared::scheduling::{JobKind, JobPhase, ResourceList, ScheduleType};
use leptos::prelude::*;

use crate::api::JobFilter;
use crate::components::badges::{PhaseBadge, ScheduleTypeBadge, kind_label, phase_label, schedule_label};
use crate::components::confirm::use_confirm;
use crate::components::time::Time;
use crate::components::toast::use_toasts;
use crate::components::{
    BUTTON_DANGER, BUTTON_SECONDARY, Empty, ErrorPanel, INPUT, LINK, TABLE, TD, TH, loaded, use_fetch,
};
use crate::format;
use crate::i18n::{I18n, Key, k, use_i18n};
use crate::live::use_live;

/// Why a job failed, short: the reason and the exit code (`OOMKilled, exit code 137`), for
/// the list and the job page's failure line.
pub fn failure_reason(i18n: crate::i18n::I18n, failure: &anteroom_shared::api::pods::JobFailure) -> String {
    match failure.exit_code {
        Some(code) => i18n.tf(
            k!("jobs.failureCode"),
            &[("reason", &failure.reason), ("code", &code.to_string())],
        ),
        // Anteroom's own causes in words; the cluster's reasons (OOMKilled, Evicted…) stay as
        // Kubernetes writes them, the words people search for.
        None => match failure.reason.as_str() {
            "Vanished" => i18n.t(k!("jobs.failureVanished")).to_owned(),
            "CreateFailed" => i18n.t(k!("jobs.failureCreateFailed")).to_owned(),
            other => other.to_owned(),
        },
    }
}

/// The resources of a job for a table cell: `8 cpu · 32 Gi · 1 a100`.
pub fn resources_text(i18n: I18n, resources: &ResourceList) -> String {
    let l = i18n.locale();
    resources
        .iter()
        .map(|(name, q)| format!("{} {}", format::quantity(l, name, &q), format::resource_short(name)))
        .collect::<Vec<_>>()
        .join(" · ")
}

fn select_filter(
    i18n: I18n,
    id: &'static str,
    label: Key,
    options: Vec<(String, Key)>,
    set: impl Fn(Vec<String>) + 'static,
) -> impl IntoView {
    view! {
        <label class="flex flex-col gap-1 text-xs font-medium text-slate-700" for=id>
            {move || i18n.t(label)}
            <select id=id class=format!("{INPUT} w-44") on:change=move |ev| {
                let v = event_target_value(&ev);
                set(if v.is_empty() { Vec::new() } else { vec![v] });
            }>
                <option value="">{move || i18n.t(k!("filter.all"))}</option>
                {options.into_iter().map(|(value, key)| view! { <option value=value>{move || i18n.t(key)}</option> }).collect_view()}
            </select>
        </label>
    }
}

/// What the table area shows.
#[derive(Clone, Debug, PartialEq)]
enum TableState {
    Loading,
    Failed(crate::api::ApiFailure),
    Empty,
    Rows,
}

/// The table with its filters. `admin` adds the owner column and filter, the lock action, and
/// lists everyone's jobs.
#[component]
pub fn JobTable(
    /// Everyone's jobs, with the owner column and filter and the lock action.
    #[prop(default = false)]
    admin: bool,
) -> impl IntoView {
    let i18n = use_i18n();
    let live = use_live();
    let filter = RwSignal::new(JobFilter::default());
    let owner = RwSignal::new(String::new());
    let page = RwSignal::new(1u64);
    // A new filter starts again at the first page.
    Effect::new(move |previous: Option<JobFilter>| {
        let f = filter.get();
        if previous.is_some_and(|p| p != f) {
            page.set(1);
        }
        f
    });
    let jobs = use_fetch(move || {
        live.version();
        let f = filter.get();
        let p = page.get();
        async move {
            if admin {
                crate::api::all_jobs(&f, p).await
            } else {
                crate::api::my_jobs(&f, p).await
            }
        }
    });
    let state = Memo::new(move |_| match jobs.get() {
        None => TableState::Loading,
        Some(Err(f)) => TableState::Failed(f),
        Some(Ok(p)) if p.total == 0 => TableState::Empty,
        Some(Ok(_)) => TableState::Rows,
    });
    let rows = Memo::new(move |_| jobs.get().and_then(|r| r.ok()).map(|p| p.items).unwrap_or_default());
    let total = Memo::new(move |_| jobs.get().and_then(|r| r.ok()).map_or(0, |p| p.total));
    let pages = Memo::new(move |_| total.get().div_ceil(crate::api::PAGE_SIZE).max(1));
    // Deleting the last job of the last page leaves that page empty: go back to the last page
    // that has jobs.
    Effect::new(move |_| {
        let last = pages.get();
        if page.get_untracked() > last {
            page.set(last);
        }
    });
    let queues = use_fetch(crate::api::queues);
    let phases: Vec<(String, Key)> = [
        JobPhase::Prequeue,
        JobPhase::Pending,
        JobPhase::Running,
        JobPhase::Completed,
        JobPhase::Failed,
        JobPhase::Preempted,
        JobPhase::Aborted,
        JobPhase::Terminated,
        JobPhase::Deleted,
    ]
    .into_iter()
    .map(|p| (p.as_str().to_owned(), phase_label(p)))
    .collect();
    let types: Vec<(String, Key)> = [ScheduleType::Normal, ScheduleType::Backfill]
        .into_iter()
        .map(|t| (t.as_str().to_owned(), schedule_label(t)))
        .collect();
    let kinds: Vec<(String, Key)> = JobKind::ALL
        .iter()
        .map(|k| (k.as_str().to_owned(), kind_label(*k)))
        .collect();
    view! {
        <section class="space-y-3" aria-labelledby="jobs-table-title">
            <h2 id="jobs-table-title" class="sr-only">{move || i18n.t(k!("jobs.table"))}</h2>
            <div class="flex flex-wrap items-end gap-3" role="search" data-testid="job-filters">
                {select_filter(i18n, "filter-phase", k!("jobs.phase"), phases, move |v| filter.update(|f| {
                    // Activating shows as Pending, so the Pending filter takes both.
                    f.phases = v.clone();
                    if v.iter().any(|p| p == "Pending") { f.phases.push("Activating".into()); }
                }))}
                {select_filter(i18n, "filter-schedule", k!("jobs.scheduleType"), types, move |v| filter.update(|f| f.schedule_types = v))}
                {select_filter(i18n, "filter-kind", k!("jobs.kind"), kinds, move |v| filter.update(|f| f.kinds = v))}
                <label class="flex flex-col gap-1 text-xs font-medium text-slate-700" for="filter-queue">
                    {move || i18n.t(k!("jobs.queue"))}
                    <select id="filter-queue" class=format!("{INPUT} w-44") on:change=move |ev| {
                        let v = event_target_value(&ev);
                        filter.update(|f| f.queues = if v.is_empty() { Vec::new() } else { vec![v] });
                    }>
                        <option value="">{move || i18n.t(k!("filter.all"))}</option>
                        {move || loaded(queues).into_iter()
                            .map(|q| view! { <option value=q.name.clone()>{q.name.clone()}</option> }).collect_view()}
                    </select>
                </label>
                {admin.then(|| view! {
                    <label class="flex flex-col gap-1 text-xs font-medium text-slate-700" for="filter-owner">
                        {move || i18n.t(k!("jobs.owner"))}
                        <input id="filter-owner" class=format!("{INPUT} w-44") type="search" bind:value=owner
                            on:change=move |_| {
                                let o = owner.get_untracked().trim().to_owned();
                                filter.update(|f| f.users = if o.is_empty() { Vec::new() } else { vec![o] });
                            } />
                    </label>
                })}
            </div>
            // The table's frame stays while only its rows change, and rows are keyed by what
            // they show: a live update replaces changed rows only, so keyboard focus on another
            // row's button survives it.
            {move || match state.get() {
                TableState::Loading => view! { <crate::auth::Loading /> }.into_any(),
                TableState::Failed(f) => view! { <ErrorPanel failure=f /> }.into_any(),
                TableState::Empty => view! { <Empty text=k!("jobs.empty") /> }.into_any(),
                TableState::Rows => view! {
                    <div class="overflow-x-auto rounded border border-slate-200 bg-white">
                        <table class=TABLE data-testid="jobs-table">
                            <thead class="bg-slate-50">
                                <tr>
                                    <th scope="col" class=TH>{move || i18n.t(k!("jobs.name"))}</th>
                                    <th scope="col" class=TH>{move || i18n.t(k!("jobs.kind"))}</th>
                                    <th scope="col" class=TH>{move || i18n.t(k!("jobs.queue"))}</th>
                                    {admin.then(|| view! { <th scope="col" class=TH>{move || i18n.t(k!("jobs.owner"))}</th> })}
                                    <th scope="col" class=TH>{move || i18n.t(k!("jobs.scheduleType"))}</th>
                                    <th scope="col" class=TH>{move || i18n.t(k!("jobs.phase"))}</th>
                                    <th scope="col" class=TH>{move || i18n.t(k!("jobs.resources"))}</th>
                                    <th scope="col" class=TH>{move || i18n.t(k!("jobs.submitted"))}</th>
                                    <th scope="col" class=TH>{move || i18n.t(k!("jobs.started"))}</th>
                                    <th scope="col" class=TH>{move || i18n.t(k!("jobs.actions"))}</th>
                                </tr>
                            </thead>
                            <tbody class="divide-y divide-slate-100">
                                <For each=move || rows.get() key=|j| (j.id, j.phase, j.locked_until, j.started_at) let:job>
                                    <JobRow job=job admin=admin />
                                </For>
                            </tbody>
                        </table>
                    </div>
                    <nav class="flex items-center gap-3 text-sm" aria-label=move || i18n.t(k!("jobs.pages")) data-testid="pager">
                        <button type="button" class=BUTTON_SECONDARY disabled=move || { page.get() <= 1 }
                            on:click=move |_| page.update(|p| *p = p.saturating_sub(1).max(1))>
                            {move || i18n.t(k!("jobs.previous"))}
                        </button>
                        <span data-testid="page-of">{move || {
                            let (p, pages, total) = (page.get(), pages.get(), total.get());
                            let l = i18n.locale();
                            let of = i18n.tf(k!("jobs.pageOf"), &[
                                ("page", &format::number(l, p as f64, 0)),
                                ("pages", &format::number(l, pages as f64, 0)),
                            ]);
                            format!("{of} · {}", i18n.tp(k!("jobs.total.one"), k!("jobs.total.other"), total, &[]))
                        }}</span>
                        <button type="button" class=BUTTON_SECONDARY disabled=move || { page.get() >= pages.get() }
                            on:click=move |_| page.update(|p| *p += 1)>
                            {move || i18n.t(k!("jobs.next"))}
                        </button>
                    </nav>
                }.into_any(),
            }}
        </section>
    }
}

#[component]
fn JobRow(job: Job, admin: bool) -> impl IntoView {
    let i18n = use_i18n();
    let confirm = use_confirm();
    let toasts = use_toasts();
    let live = use_live();
    let id = job.id;
    let name = job.name.clone();
    let finished = job.phase.is_terminal();
    let resources = job.resources.clone();
    let submitted = job.submitted_at;
    let started = job.started_at;
    let locked = job.locked_until.is_some_and(|t| t > format::now());
    let delete = {
        let name = name.clone();
        move |_| {
            let text = i18n.tf(k!("jobs.confirmDelete"), &[("name", &name)]);
            let name = name.clone();
            confirm.ask(text, move || {
                leptos::task::spawn_local(async move {
                    match crate::api::delete_job(id).await {
                        Ok(()) => toasts.success(i18n.tf(k!("jobs.deleted"), &[("name", &name)])),
                        Err(f) => toasts.error(i18n.failure(&f)),
                    }
                    live.changed();
                });
            });
        }
    };
    let toggle_lock = move |_| {
        leptos::task::spawn_local(async move {
            let until = if locked {
                None
            } else {
                Some(format::now() + chrono::Duration::days(3650))
            };
            match crate::api::lock_job(id, until).await {
                Ok(_) => toasts.success(
                    i18n.t(if locked { k!("jobs.unlocked") } else { k!("jobs.locked") })
                        .to_owned(),
                ),
                Err(f) => toasts.error(i18n.failure(&f)),
            }
            live.changed();
        });
    };
    view! {
        <tr data-testid="job-row" data-job-id=id.to_string() data-name=name.clone()>
            <td class=TD><a class=LINK href=format!("/jobs/{id}")>{name.clone()}</a></td>
            <td class=TD>{move || i18n.t(kind_label(job.kind))}</td>
            <td class=TD>{job.queue.clone()}</td>
            {admin.then(|| view! { <td class=TD data-testid="job-owner">{job.owner.clone()}</td> })}
            <td class=TD><ScheduleTypeBadge schedule_type=job.schedule_type /></td>
            <td class=TD>
                <PhaseBadge phase=job.phase />
                {locked.then(|| view! { <span class="ml-1 text-xs text-slate-700" data-testid="locked">{move || i18n.t(k!("jobs.lockedBadge"))}</span> })}
                {job.failure.clone().map(|f| view! {
                    <p class="mt-1 text-xs text-red-800" data-testid="job-failure">{move || failure_reason(i18n, &f)}</p>
                })}
            </td>
            <td class=TD><span class="whitespace-nowrap">{move || resources_text(i18n, &resources)}</span></td>
            <td class=TD><Time at=submitted /></td>
            <td class=TD>{match started { Some(s) => view! { <Time at=s /> }.into_any(), None => "—".into_any() }}</td>
            <td class=TD>
                <div class="flex gap-2">
                    {admin.then(|| view! {
                        <button type="button" class=BUTTON_SECONDARY data-testid="lock-job" on:click=toggle_lock disabled=finished>
                            {move || i18n.t(if locked { k!("jobs.unlock") } else { k!("jobs.lock") })}
                        </button>
                    })}
                    <button type="button" class=BUTTON_DANGER data-testid="delete-job" on:click=delete disabled=finished
                        aria-label=move || i18n.tf(k!("jobs.deleteNamed"), &[("name", &job.name)])>
                        {move || i18n.t(k!("jobs.delete"))}
                    </button>
                </div>
            </td>
        </tr>
    }
}

#[cfg(test)]
mod tests {
    use anteroom_shared::api::pods::JobFailure;

    use super::failure_reason;
    use crate::i18n::{I18n, Locale};

    fn failure(reason: &str, exit_code: Option<i32>) -> JobFailure {
        JobFailure {
            pod: None,
            reason: reason.to_owned(),
            exit_code,
        }
    }

    #[test]
    fn anteroom_s_own_causes_are_words_and_the_cluster_s_reasons_stay_as_written() {
        let en = I18n::fixed(Locale::En);
        assert_eq!(
            failure_reason(en, &failure("Vanished", None)),
            "it disappeared from the cluster"
        );
        assert_eq!(
            failure_reason(en, &failure("CreateFailed", None)),
            "the cluster refused to create it"
        );
        assert_eq!(failure_reason(en, &failure("Evicted", None)), "Evicted");
        assert_eq!(
            failure_reason(en, &failure("OOMKilled", Some(137))),
            "OOMKilled, exit code 137"
        );
        let ja = I18n::fixed(Locale::Ja);
        assert_eq!(
            failure_reason(ja, &failure("Vanished", None)),
            "クラスターから消えました"
        );
    }
}
