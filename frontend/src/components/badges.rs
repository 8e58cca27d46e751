//! The schedule-type and phase badges: a colour and always a word, with the description as a
//! tooltip (colour is never the only signal).

use anteroom_shared::scheduling::{JobKind, JobPhase, ScheduleType};
use leptos::prelude::*;

use crate::i18n::{Key, k, use_i18n};

/// The label of a schedule type: Normal, Elastic.
pub fn schedule_label(t: ScheduleType) -> Key {
    match t {
        ScheduleType::Normal => k!("scheduleType.normal"),
        ScheduleType::Backfill => k!("scheduleType.backfill"),
    }
}

/// The description of a schedule type (tooltip, form help).
pub fn schedule_description(t: ScheduleType) -> Key {
    match t {
        ScheduleType::Normal => k!("scheduleType.normalDescription"),
        ScheduleType::Backfill => k!("scheduleType.backfillDescription"),
    }
}

/// Normal in emerald, Elastic in amber.
#[component]
pub fn ScheduleTypeBadge(
    /// The job's schedule type.
    schedule_type: ScheduleType,
) -> impl IntoView {
    let i18n = use_i18n();
    let class = match schedule_type {
        ScheduleType::Normal => {
            "inline-flex rounded-full border border-emerald-300 dark:border-emerald-700 bg-emerald-50 dark:bg-emerald-950 px-2 py-0.5 text-xs font-medium text-emerald-900 dark:text-emerald-100"
        }
        ScheduleType::Backfill => {
            "inline-flex rounded-full border border-amber-300 dark:border-amber-700 bg-amber-50 dark:bg-amber-950 px-2 py-0.5 text-xs font-medium text-amber-900 dark:text-amber-100"
        }
    };
    view! {
        <span class=class title=move || i18n.t(schedule_description(schedule_type))
            data-testid="schedule-badge" data-value=schedule_type.as_str()>
            {move || i18n.t(schedule_label(schedule_type))}
        </span>
    }
}

/// The label of a phase; `Activating` reads as Pending (it is on its way to the cluster).
pub fn phase_label(phase: JobPhase) -> Key {
    match phase {
        JobPhase::Prequeue => k!("phase.Prequeue"),
        JobPhase::Activating | JobPhase::Pending => k!("phase.Pending"),
        JobPhase::Running => k!("phase.Running"),
        JobPhase::Completed => k!("phase.Completed"),
        JobPhase::Failed => k!("phase.Failed"),
        JobPhase::Aborting => k!("phase.Aborting"),
        JobPhase::Aborted => k!("phase.Aborted"),
        JobPhase::Restarting => k!("phase.Restarting"),
        JobPhase::Completing => k!("phase.Completing"),
        JobPhase::Terminating => k!("phase.Terminating"),
        JobPhase::Terminated => k!("phase.Terminated"),
        JobPhase::Deleted => k!("phase.Deleted"),
        JobPhase::Preempted => k!("phase.Preempted"),
    }
}

fn phase_description(phase: JobPhase) -> Key {
    match phase {
        JobPhase::Prequeue => k!("phase.description.Prequeue"),
        JobPhase::Activating | JobPhase::Pending => k!("phase.description.Pending"),
        JobPhase::Running => k!("phase.description.Running"),
        JobPhase::Preempted => k!("phase.description.Preempted"),
        _ => k!("phase.description.finished"),
    }
}

/// One colour per phase; Prequeue violet ("Waiting to Queue"), Preempted marked apart.
#[component]
pub fn PhaseBadge(
    /// The job's phase.
    phase: JobPhase,
) -> impl IntoView {
    let i18n = use_i18n();
    let class = match phase {
        JobPhase::Prequeue => {
            "inline-flex rounded-full border border-violet-300 dark:border-violet-700 bg-violet-100 dark:bg-violet-900 px-2 py-0.5 text-xs font-medium text-violet-900 dark:text-violet-100"
        }
        JobPhase::Activating | JobPhase::Pending => {
            "inline-flex rounded-full border border-yellow-300 dark:border-yellow-700 bg-yellow-50 dark:bg-yellow-950 px-2 py-0.5 text-xs font-medium text-yellow-900 dark:text-yellow-100"
        }
        JobPhase::Running => {
            "inline-flex rounded-full border border-sky-300 dark:border-sky-700 bg-sky-50 dark:bg-sky-950 px-2 py-0.5 text-xs font-medium text-sky-900 dark:text-sky-100"
        }
        JobPhase::Restarting => {
            "inline-flex rounded-full border border-cyan-300 dark:border-cyan-700 bg-cyan-50 dark:bg-cyan-950 px-2 py-0.5 text-xs font-medium text-cyan-900 dark:text-cyan-100"
        }
        JobPhase::Completing => {
            "inline-flex rounded-full border border-teal-300 dark:border-teal-700 bg-teal-50 dark:bg-teal-950 px-2 py-0.5 text-xs font-medium text-teal-900 dark:text-teal-100"
        }
        JobPhase::Completed => {
            "inline-flex rounded-full border border-emerald-300 dark:border-emerald-700 bg-emerald-50 dark:bg-emerald-950 px-2 py-0.5 text-xs font-medium text-emerald-900 dark:text-emerald-100"
        }
        JobPhase::Aborting | JobPhase::Aborted => {
            "inline-flex rounded-full border border-rose-300 dark:border-rose-700 bg-rose-50 dark:bg-rose-950 px-2 py-0.5 text-xs font-medium text-rose-900 dark:text-rose-100"
        }
        JobPhase::Terminating | JobPhase::Terminated => {
            "inline-flex rounded-full border border-stone-300 dark:border-stone-600 bg-stone-100 dark:bg-stone-800 px-2 py-0.5 text-xs font-medium text-stone-800 dark:text-stone-100"
        }
        JobPhase::Failed => {
            "inline-flex rounded-full border border-red-300 dark:border-red-700 bg-red-50 dark:bg-red-950 px-2 py-0.5 text-xs font-medium text-red-900 dark:text-red-100"
        }
        JobPhase::Preempted => {
            "inline-flex rounded-full border-2 border-dashed border-orange-400 bg-orange-50 dark:bg-orange-950 px-2 py-0.5 text-xs font-medium text-orange-900 dark:text-orange-100"
        }
        _ => {
            "inline-flex rounded-full border border-slate-300 dark:border-slate-600 bg-slate-100 dark:bg-slate-800 px-2 py-0.5 text-xs font-medium text-slate-800 dark:text-slate-200"
        }
    };
    view! {
        <span class=class title=move || i18n.t(phase_description(phase)) data-testid="phase-badge" data-value=phase.as_str()>
            {move || i18n.t(phase_label(phase))}
        </span>
    }
}

/// The label of a job kind.
pub fn kind_label(kind: JobKind) -> Key {
    match kind {
        JobKind::Jupyter => k!("kind.jupyter"),
        JobKind::Webide => k!("kind.webide"),
        JobKind::Custom => k!("kind.custom"),
        JobKind::Pytorch => k!("kind.pytorch"),
        JobKind::Tensorflow => k!("kind.tensorflow"),
    }
}
