//! One row of the job table: the job's name and kind, queue, owner (admins), badges (phase,
//! schedule type, Borrowing while it runs on another queue's idle guaranteed room) with a
//! waiting job's place and short reason or a failed job's cause, resources, times, and the
//! actions its phase allows (Open for a running notebook, Delete while unfinished, Run again
//! once finished, lock for admins).

use anteroom_shared::api::jobs::Job;
use anteroom_shared::scheduling::JobPhase;
use leptos::prelude::*;

use super::{failure_reason, lock_until, resources_text};
use crate::components::badges::{BorrowingBadge, PhaseBadge, ScheduleTypeBadge, kind_label, shows_borrowing};
use crate::components::confirm::use_confirm;
use crate::components::marked::Marked;
use crate::components::notebook::OpenNotebook;
use crate::components::reasons::reason_short_of;
use crate::components::time::Time;
use crate::components::toast::use_toasts;
use crate::components::{BUTTON_DANGER, BUTTON_SECONDARY, BUTTON_SMALL, LINK, TD};
use crate::format;
use crate::i18n::{k, use_i18n};
use crate::live::use_live;

/// A job's row.
#[component]
pub(super) fn JobRow(
    job: Job,
    admin: bool,
    selected: RwSignal<std::collections::BTreeSet<i64>>,
    lock_for: RwSignal<String>,
) -> impl IntoView {
    let i18n = use_i18n();
    let confirm = use_confirm();
    let toasts = use_toasts();
    let live = use_live();
    let id = job.id;
    let name = job.name.clone();
    let finished = job.phase.is_terminal();
    let mine = crate::auth::use_auth().user().is_some_and(|u| u.username == job.owner);
    let resources = job.resources.clone();
    let submitted = job.submitted_at;
    let started = job.started_at;
    let borrowing = shows_borrowing(&job);
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
        let until = (!locked).then(|| lock_until(&lock_for.get_untracked()));
        leptos::task::spawn_local(async move {
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
    let openable = crate::components::notebook::can_open(&job);
    // A waiting job's place and, short, why it waits.
    let waiting = job
        .prequeue
        .as_ref()
        .filter(|_| job.phase == JobPhase::Prequeue)
        .map(|s| {
            // One line per kind of reason: several full queues on the path say "Queue capacity" once.
            let mut kinds: Vec<crate::i18n::Key> = Vec::new();
            for r in &s.reasons {
                let short = reason_short_of(r);
                if !kinds.contains(&short) {
                    kinds.push(short);
                }
            }
            (s.position, kinds)
        });
    let run_again = move |_| {
        leptos::task::spawn_local(async move {
            match crate::api::resubmit(id).await {
                Ok(answer) => toasts.success(i18n.tf(k!("jobs.ranAgain"), &[("name", &answer.job.name)])),
                Err(f) => toasts.error(i18n.failure(&f)),
            }
            live.changed();
        });
    };
    let select_label = {
        let name = name.clone();
        move || i18n.tf(k!("jobs.select"), &[("name", &name)])
    };
    view! {
        <tr data-testid="job-row" data-job-id=id.to_string() data-name=name.clone()>
            <td class=TD>
                <input type="checkbox" data-testid="select-job" disabled=finished
                    aria-label=select_label
                    prop:checked=move || selected.with(|s| s.contains(&id))
                    on:change=move |ev| {
                        let on = event_target_checked(&ev);
                        selected.update(|s| { if on { s.insert(id); } else { s.remove(&id); } });
                    } />
            </td>
            <td class=TD>
                <a class=LINK href=format!("/jobs/{id}")>{name.clone()}</a>
                <p class="text-xs text-slate-600 dark:text-slate-300" data-testid="job-kind">{move || i18n.t(kind_label(job.kind))}</p>
            </td>
            <td class=TD translate="no">{job.queue.clone()}</td>
            {admin.then(|| view! { <td class=TD data-testid="job-owner" translate="no">{job.owner.clone()}</td> })}
            <td class=TD>
                <div class="flex flex-wrap items-center gap-1">
                    <PhaseBadge phase=job.phase />
                    <ScheduleTypeBadge schedule_type=job.schedule_type />
                    {borrowing.then(|| view! { <BorrowingBadge /> })}
                    {locked.then(|| view! { <span class="text-xs text-slate-700 dark:text-slate-300" data-testid="locked">{move || i18n.t(k!("jobs.lockedBadge"))}</span> })}
                </div>
                {waiting.map(|(position, why)| view! {
                    <p class="mt-1 text-xs text-slate-700 dark:text-slate-300" data-testid="job-reason">
                        {move || {
                            let why = why.iter().map(|k| i18n.t(*k)).collect::<Vec<_>>().join(i18n.t(k!("common.listSeparator")));
                            if why.is_empty() {
                                i18n.tf(k!("jobs.positionOnly"), &[("position", &position.to_string())])
                            } else {
                                i18n.tf(k!("jobs.waitingWhy"), &[("position", &position.to_string()), ("why", &why)])
                            }
                        }}
                    </p>
                })}
                {job.failure.clone().map(|f| view! {
                    <p class="mt-1 text-xs text-red-800 dark:text-red-200" data-testid="job-failure">{
                        let data = vec![f.reason.clone()];
                        view! { <Marked text=Signal::derive(move || failure_reason(i18n, &f)) data=data /> }
                    }</p>
                })}
            </td>
            <td class=TD><span class="whitespace-nowrap">{move || resources_text(i18n, &resources)}</span></td>
            <td class=TD>
                <Time at=submitted />
                {started.map(|s| view! {
                    <p class="text-xs text-slate-600 dark:text-slate-300" data-testid="job-started">
                        {move || i18n.t(k!("jobs.startedShort"))}" "<Time at=s />
                    </p>
                })}
            </td>
            <td class=TD>
                <div class="flex flex-wrap gap-2">
                    {openable.then(|| view! { <OpenNotebook id=id owner=job.owner.clone() class=BUTTON_SMALL /> })}
                    {(admin && !finished).then(|| view! {
                        <button type="button" class=BUTTON_SECONDARY data-testid="lock-job" on:click=toggle_lock>
                            {move || i18n.t(if locked { k!("jobs.unlock") } else { k!("jobs.lock") })}
                        </button>
                    })}
                    // Run again makes a job of the caller's own: offered on the caller's jobs only
                    // (an admin's list holds everyone's).
                    {if finished && !mine {
                        ().into_any()
                    } else if finished {
                        view! {
                            <button type="button" class=BUTTON_SECONDARY data-testid="run-again" on:click=run_again
                                aria-label=move || i18n.tf(k!("jobs.runAgainNamed"), &[("name", &job.name)])>
                                {move || i18n.t(k!("jobs.runAgain"))}
                            </button>
                        }.into_any()
                    } else {
                        view! {
                            <button type="button" class=BUTTON_DANGER data-testid="delete-job" on:click=delete
                                aria-label=move || i18n.tf(k!("jobs.deleteNamed"), &[("name", &job.name)])>
                                {move || i18n.t(k!("jobs.delete"))}
                            </button>
                        }.into_any()
                    }}
                </div>
            </td>
        </tr>
    }
}
