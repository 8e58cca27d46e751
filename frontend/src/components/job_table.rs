//! The job table of `/jobs` and `/admin/jobs`: search by name, filters of several values by
//! phase, schedule type, kind, queue (and owner for admins), sortable columns and pages, all
//! in the URL; badges, resources, times, and the actions, on a row or on the selected rows
//! (delete after one confirmation; lock for a chosen time and unlock for admins). It refetches
//! for the job events that may change it, and every 15 s while it may show jobs in the cluster
//! (their own phase changes, Pending → Running, write no event).

mod controls;
mod row;
use anteroom_shared::api::jobs::JobSortField;
use anteroom_shared::scheduling::{JobKind, JobPhase, ResourceList, ScheduleType};
use leptos::prelude::*;
use leptos_router::NavigateOptions;
use leptos_router::hooks::{use_location, use_navigate, use_query_map};

use self::controls::{MultiFilter, SortHeader};
use self::row::JobRow;
use crate::api::JobFilter;
use crate::components::badges::{kind_label, phase_label, schedule_label};
use crate::components::confirm::use_confirm;
use crate::components::pager::Pager;
use crate::components::toast::{Toasts, use_toasts};
use crate::components::{BUTTON_DANGER, BUTTON_SECONDARY, Empty, ErrorPanel, INPUT, TABLE, TH, loaded, use_fetch};
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

/// The resources of a job for a table cell, in the reader's language:
/// `8 CPU · 32 Gi memory · 1 × a100`.
pub fn resources_text(i18n: I18n, resources: &ResourceList) -> String {
    resources
        .iter()
        .map(|(name, q)| i18n.resource_amount(name, &q))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// How long a lock from the list lasts, by the admin's choice: (value, label, hours; `None`
/// until unlocked).
const LOCK_DURATIONS: [(&str, Key, Option<i64>); 5] = [
    ("hour", k!("jobs.lockFor.hour"), Some(1)),
    ("day", k!("jobs.lockFor.day"), Some(24)),
    ("week", k!("jobs.lockFor.week"), Some(24 * 7)),
    ("month", k!("jobs.lockFor.month"), Some(24 * 30)),
    ("always", k!("jobs.lockFor.always"), None),
];

/// The end of a lock of the duration `choice` (a [`LOCK_DURATIONS`] value) starting now.
fn lock_until(choice: &str) -> chrono::DateTime<chrono::Utc> {
    let hours = LOCK_DURATIONS
        .iter()
        .find(|(value, ..)| *value == choice)
        .and_then(|(_, _, hours)| *hours);
    // "Until unlocked": ten years, as far as anyone will wait.
    format::now() + chrono::Duration::hours(hours.unwrap_or(24 * 3650))
}

/// What the table area shows.
#[derive(Clone, Debug, PartialEq)]
enum TableState {
    Loading,
    Failed(crate::api::ApiFailure),
    Empty,
    Rows,
}

/// The phases a list filters by, in their life's order.
const FILTER_PHASES: [JobPhase; 9] = [
    JobPhase::Prequeue,
    JobPhase::Pending,
    JobPhase::Running,
    JobPhase::Completed,
    JobPhase::Failed,
    JobPhase::Preempted,
    JobPhase::Aborted,
    JobPhase::Terminated,
    JobPhase::Deleted,
];

/// The toast after a bulk request: what it did, and why it did not do the rest.
fn tell_bulk(i18n: I18n, toasts: Toasts, result: &anteroom_shared::api::jobs::BulkResult, done: (Key, Key)) {
    if !result.done.is_empty() {
        toasts.success(i18n.tp(done.0, done.1, result.done.len() as u64, &[]));
    }
    if !result.failed.is_empty() {
        // Each reason once, in the order first met.
        let mut reasons: Vec<String> = Vec::new();
        for f in &result.failed {
            let text = i18n.error_text(&f.code, &f.message);
            if !reasons.contains(&text) {
                reasons.push(text);
            }
        }
        toasts.error(i18n.tp(
            k!("jobs.bulkRefused.one"),
            k!("jobs.bulkRefused.other"),
            result.failed.len() as u64,
            &[("reasons", &reasons.join(" "))],
        ));
    }
}

/// The table with its filters, search, sort and pages, all kept in the page's URL (Back
/// restores them, a link shares them), and the actions on selected rows. `admin` adds the
/// owner column and filter, the lock actions, and lists everyone's jobs.
#[component]
pub fn JobTable(
    /// Everyone's jobs, with the owner column and filter and the lock action.
    #[prop(default = false)]
    admin: bool,
) -> impl IntoView {
    let i18n = use_i18n();
    let live = use_live();
    let confirm = use_confirm();
    let toasts = use_toasts();
    let query = use_query_map();
    let location = use_location();
    let navigate = StoredValue::new_local(use_navigate());
    // The URL is the list's state: the filters, search, sort and page.
    let from_url = Memo::new(move |_| query.with(|q| JobFilter::from_url(|name| q.get_all(name).unwrap_or_default())));
    let filter = Memo::new(move |_| from_url.get().0);
    let page = Memo::new(move |_| from_url.get().1);
    // A new entry in the history for each change (Back undoes it); `replace` for a correction.
    let go = move |f: JobFilter, p: u64, replace: bool| {
        let url = format!("{}{}", location.pathname.get_untracked(), f.url_query(p));
        navigate.with_value(|n| {
            n(
                &url,
                NavigateOptions {
                    replace,
                    scroll: false,
                    ..Default::default()
                },
            )
        });
    };
    // A filter changed from a control starts again at the first page.
    let set_filter = move |change: &dyn Fn(&mut JobFilter)| {
        let mut f = filter.get_untracked();
        change(&mut f);
        go(f, 1, false);
    };
    // A list refetches for the events that may change it: its owners' jobs (the caller's own
    // list for theirs, as an admin's stream carries everyone's; the admin list for the users it
    // is filtered to) entering or leaving its phases, and any job it shows.
    // Read with `get` (not `track`): a memo never read has not subscribed to what it follows.
    let auth = crate::auth::use_auth();
    let shown: StoredValue<Vec<i64>> = StoredValue::new(Vec::new());
    let changes = live.list_version(
        move || {
            if admin {
                filter.with(|f| f.users.clone())
            } else {
                auth.user().map(|u| vec![u.username]).unwrap_or_default()
            }
        },
        move || filter.with(JobFilter::phases_shown),
        move || shown.get_value(),
    );
    let jobs = use_fetch(move || {
        // Every change of phase a list tells apart writes an event (the cluster's start too):
        // no polling. The short steps on the way out (Completing, Terminating, Aborting,
        // Restarting) write none; the end they lead to does.
        changes.get();
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
    Effect::new(move |_| shown.set_value(rows.with(|r| r.iter().map(|j| j.id).collect())));
    let total = Memo::new(move |_| jobs.get().and_then(|r| r.ok()).map_or(0, |p| p.total));
    let pages = Memo::new(move |_| total.get().div_ceil(crate::api::PAGE_SIZE).max(1));
    // Deleting the last job of the last page leaves that page empty: go back to the last page
    // that has jobs (in place of this one in the history).
    Effect::new(move |_| {
        let last = pages.get();
        if jobs.with(|j| matches!(j, Some(Ok(_)))) && page.get_untracked() > last {
            go(filter.get_untracked(), last, true);
        }
    });
    // The rows selected for a bulk action: only unfinished jobs of this page, forgotten when
    // the page or the filter changes.
    let selected = RwSignal::new(std::collections::BTreeSet::<i64>::new());
    Effect::new(move |_| {
        from_url.track();
        selected.set(Default::default());
    });
    Effect::new(move |_| {
        let here: std::collections::BTreeSet<i64> = rows
            .get()
            .iter()
            .filter(|j| !j.phase.is_terminal())
            .map(|j| j.id)
            .collect();
        if selected.with_untracked(|s| s.iter().any(|id| !here.contains(id))) {
            selected.update(|s| s.retain(|id| here.contains(id)));
        }
    });
    let selectable = Memo::new(move |_| {
        rows.get()
            .iter()
            .filter(|j| !j.phase.is_terminal())
            .map(|j| j.id)
            .collect::<Vec<_>>()
    });
    let lock_for = RwSignal::new("always".to_owned());
    // A bulk request in flight: its buttons wait (a second click would only be refused).
    let busy = RwSignal::new(false);
    let delete_selected = move |_| {
        let ids: Vec<i64> = selected.get_untracked().into_iter().collect();
        let text = i18n.tp(
            k!("jobs.confirmDeleteMany.one"),
            k!("jobs.confirmDeleteMany.other"),
            ids.len() as u64,
            &[],
        );
        confirm.ask(text, move || {
            let ids = ids.clone();
            busy.set(true);
            leptos::task::spawn_local(async move {
                let answer = crate::api::delete_jobs(ids).await;
                busy.try_set(false);
                match answer {
                    Ok(result) => {
                        tell_bulk(
                            i18n,
                            toasts,
                            &result,
                            (k!("jobs.deletedMany.one"), k!("jobs.deletedMany.other")),
                        );
                        selected.set(Default::default());
                    }
                    Err(f) => toasts.error(i18n.failure(&f)),
                }
                live.changed();
            });
        });
    };
    let lock_selected = move |lock: bool| {
        let ids: Vec<i64> = selected.get_untracked().into_iter().collect();
        let until = lock.then(|| lock_until(&lock_for.get_untracked()));
        busy.set(true);
        leptos::task::spawn_local(async move {
            let answer = crate::api::lock_jobs(ids, until).await;
            busy.try_set(false);
            match answer {
                Ok(result) => {
                    let done = if lock {
                        (k!("jobs.lockedMany.one"), k!("jobs.lockedMany.other"))
                    } else {
                        (k!("jobs.unlockedMany.one"), k!("jobs.unlockedMany.other"))
                    };
                    tell_bulk(i18n, toasts, &result, done);
                }
                Err(f) => toasts.error(i18n.failure(&f)),
            }
            live.changed();
        });
    };
    let queues = use_fetch(crate::api::queues);
    let phase_options = Signal::derive(move || {
        FILTER_PHASES
            .iter()
            .map(|p| (p.as_str().to_owned(), i18n.t(phase_label(*p)).to_owned()))
            .collect::<Vec<_>>()
    });
    let type_options = Signal::derive(move || {
        [ScheduleType::Normal, ScheduleType::Backfill]
            .iter()
            .map(|t| (t.as_str().to_owned(), i18n.t(schedule_label(*t)).to_owned()))
            .collect::<Vec<_>>()
    });
    let kind_options = Signal::derive(move || {
        JobKind::ALL
            .iter()
            .map(|k| (k.as_str().to_owned(), i18n.t(kind_label(*k)).to_owned()))
            .collect::<Vec<_>>()
    });
    let queue_options = Signal::derive(move || {
        loaded(queues)
            .into_iter()
            .map(|q| (q.name.clone(), q.name))
            .collect::<Vec<_>>()
    });
    let search = RwSignal::new(String::new());
    Effect::new(move |_| search.set(filter.with(|f| f.search.clone())));
    let owner = RwSignal::new(String::new());
    Effect::new(move |_| owner.set(filter.with(|f| f.users.join(" "))));
    view! {
        <section class="space-y-3" aria-labelledby="jobs-table-title">
            <h2 id="jobs-table-title" class="sr-only">{move || i18n.t(k!("jobs.table"))}</h2>
            <div class="flex flex-wrap items-end gap-3" role="search" data-testid="job-filters">
                <label class="flex flex-col gap-1 text-xs font-medium text-slate-700 dark:text-slate-300" for="filter-search">
                    {move || i18n.t(k!("jobs.search"))}
                    <input id="filter-search" class=format!("{INPUT} w-52") type="search" bind:value=search
                        maxlength="100" on:change=move |_| {
                            let text = search.get_untracked().trim().to_owned();
                            set_filter(&|f| f.search = text.clone());
                        } />
                </label>
                <MultiFilter id="filter-phase" label=k!("jobs.phase") options=phase_options
                    chosen=Signal::derive(move || filter.with(|f| f.phases.clone()))
                    set=Callback::new(move |v: Vec<String>| set_filter(&|f| f.phases = v.clone())) />
                <MultiFilter id="filter-schedule" label=k!("jobs.scheduleType") options=type_options
                    chosen=Signal::derive(move || filter.with(|f| f.schedule_types.clone()))
                    set=Callback::new(move |v: Vec<String>| set_filter(&|f| f.schedule_types = v.clone())) />
                <MultiFilter id="filter-kind" label=k!("jobs.kind") options=kind_options
                    chosen=Signal::derive(move || filter.with(|f| f.kinds.clone()))
                    set=Callback::new(move |v: Vec<String>| set_filter(&|f| f.kinds = v.clone())) />
                <MultiFilter id="filter-queue" label=k!("jobs.queue") options=queue_options
                    chosen=Signal::derive(move || filter.with(|f| f.queues.clone()))
                    set=Callback::new(move |v: Vec<String>| set_filter(&|f| f.queues = v.clone())) />
                {admin.then(|| view! {
                    <label class="flex flex-col gap-1 text-xs font-medium text-slate-700 dark:text-slate-300" for="filter-owner">
                        {move || i18n.t(k!("jobs.owners"))}
                        <input id="filter-owner" class=format!("{INPUT} w-44") type="search" bind:value=owner
                            on:change=move |_| {
                                let names: Vec<String> = owner
                                    .get_untracked()
                                    .split([' ', ','])
                                    .filter(|n| !n.is_empty())
                                    .map(str::to_owned)
                                    .collect();
                                set_filter(&|f| f.users = names.clone());
                            } />
                    </label>
                    <label class="flex flex-col gap-1 text-xs font-medium text-slate-700 dark:text-slate-300" for="lock-for">
                        {move || i18n.t(k!("jobs.lockDuration"))}
                        <select id="lock-for" class=format!("{INPUT} w-40") on:change=move |ev| lock_for.set(event_target_value(&ev))>
                            {LOCK_DURATIONS.iter().map(|(value, key, _)| view! {
                                <option value=*value selected=move || lock_for.get() == *value>{move || i18n.t(*key)}</option>
                            }).collect_view()}
                        </select>
                    </label>
                })}
            </div>
            <Show when=move || selected.with(|s| !s.is_empty())>
                <div class="flex flex-wrap items-center gap-3 rounded border border-violet-200 dark:border-violet-800 bg-violet-50 dark:bg-violet-950 px-3 py-2 text-sm"
                    role="region" aria-label=move || i18n.t(k!("jobs.bulkActions")) data-testid="bulk-actions">
                    <span data-testid="selected-count">{move || {
                        let n = selected.with(|s| s.len()) as u64;
                        i18n.tp(k!("jobs.selected.one"), k!("jobs.selected.other"), n, &[])
                    }}</span>
                    <button type="button" class=BUTTON_DANGER data-testid="delete-selected" on:click=delete_selected disabled=move || busy.get()>
                        {move || i18n.t(k!("jobs.deleteSelected"))}
                    </button>
                    {admin.then(|| view! {
                        <button type="button" class=BUTTON_SECONDARY data-testid="lock-selected" on:click=move |_| lock_selected(true) disabled=move || busy.get()>
                            {move || i18n.t(k!("jobs.lockSelected"))}
                        </button>
                        <button type="button" class=BUTTON_SECONDARY data-testid="unlock-selected" on:click=move |_| lock_selected(false) disabled=move || busy.get()>
                            {move || i18n.t(k!("jobs.unlockSelected"))}
                        </button>
                    })}
                    <button type="button" class=BUTTON_SECONDARY data-testid="clear-selection"
                        on:click=move |_| selected.set(Default::default())>
                        {move || i18n.t(k!("jobs.clearSelection"))}
                    </button>
                </div>
            </Show>
            // The table's frame stays while only its rows change, and rows are keyed by what
            // they show: a live update replaces changed rows only, so keyboard focus on another
            // row's button survives it.
            {move || match state.get() {
                TableState::Loading => view! { <crate::auth::Loading /> }.into_any(),
                TableState::Failed(f) => view! { <ErrorPanel failure=f /> }.into_any(),
                TableState::Empty => view! { <Empty text=k!("jobs.empty") /> }.into_any(),
                TableState::Rows => view! {
                    <div class="overflow-x-auto rounded border border-slate-200 dark:border-slate-700 bg-white dark:bg-slate-900">
                        <table class=TABLE data-testid="jobs-table">
                            <thead class="bg-slate-50 dark:bg-slate-950">
                                <tr>
                                    <th scope="col" class=TH>
                                        <input type="checkbox" data-testid="select-page"
                                            aria-label=move || i18n.t(k!("jobs.selectPage"))
                                            disabled=move || selectable.with(|s| s.is_empty())
                                            prop:checked=move || {
                                                let all = selectable.get();
                                                !all.is_empty() && selected.with(|s| all.iter().all(|id| s.contains(id)))
                                            }
                                            on:change=move |ev| {
                                                let all = selectable.get_untracked();
                                                if event_target_checked(&ev) {
                                                    selected.update(|s| s.extend(all));
                                                } else {
                                                    selected.set(Default::default());
                                                }
                                            } />
                                    </th>
                                    <SortHeader field=JobSortField::Name label=k!("jobs.name") filter=filter go=go />
                                    <SortHeader field=JobSortField::Queue label=k!("jobs.queue") filter=filter go=go />
                                    {admin.then(|| view! { <SortHeader field=JobSortField::Owner label=k!("jobs.owner") filter=filter go=go /> })}
                                    <SortHeader field=JobSortField::Phase label=k!("jobs.status") filter=filter go=go />
                                    <th scope="col" class=TH>{move || i18n.t(k!("jobs.resources"))}</th>
                                    <SortHeader field=JobSortField::SubmittedAt label=k!("jobs.submitted") filter=filter go=go />
                                    <th scope="col" class=TH>{move || i18n.t(k!("jobs.actions"))}</th>
                                </tr>
                            </thead>
                            <tbody class="divide-y divide-slate-100 dark:divide-slate-800">
                                <For each=move || rows.get() key=|j| (j.id, j.phase, j.locked_until, j.started_at) let:job>
                                    <JobRow job=job admin=admin selected=selected lock_for=lock_for />
                                </For>
                            </tbody>
                        </table>
                    </div>
                    <Pager page=Signal::from(page) pages=Signal::from(pages) total=Signal::from(total)
                        go=move |p| go(filter.get_untracked(), p, false) />
                }.into_any(),
            }}
        </section>
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
