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
            "inline-flex rounded-full border border-emerald-300 bg-emerald-50 px-2 py-0.5 text-xs font-medium text-emerald-900"
        }
        ScheduleType::Backfill => {
            "inline-flex rounded-full border border-amber-300 bg-amber-50 px-2 py-0.5 text-xs font-medium text-amber-900"
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
            "inline-flex rounded-full border border-violet-300 bg-violet-100 px-2 py-0.5 text-xs font-medium text-violet-900"
        }
        JobPhase::Activating | JobPhase::Pending => {
            "inline-flex rounded-full border border-yellow-300 bg-yellow-50 px-2 py-0.5 text-xs font-medium text-yellow-900"
        }
        JobPhase::Running => {
            "inline-flex rounded-full border border-sky-300 bg-sky-50 px-2 py-0.5 text-xs font-medium text-sky-900"
        }
        JobPhase::Restarting => {
            "inline-flex rounded-full border border-cyan-300 bg-cyan-50 px-2 py-0.5 text-xs font-medium text-cyan-900"
        }
        JobPhase::Completing => {
            "inline-flex rounded-full border border-teal-300 bg-teal-50 px-2 py-0.5 text-xs font-medium text-teal-900"
        }
        JobPhase::Completed => {
            "inline-flex rounded-full border border-emerald-300 bg-emerald-50 px-2 py-0.5 text-xs font-medium text-emerald-900"
        }
        JobPhase::Aborting | JobPhase::Aborted => {
            "inline-flex rounded-full border border-rose-300 bg-rose-50 px-2 py-0.5 text-xs font-medium text-rose-900"
        }
        JobPhase::Terminating | JobPhase::Terminated => {
            "inline-flex rounded-full border border-stone-300 bg-stone-100 px-2 py-0.5 text-xs font-medium text-stone-800"
        }
        JobPhase::Failed => {
            "inline-flex rounded-full border border-red-300 bg-red-50 px-2 py-0.5 text-xs font-medium text-red-900"
        }
        JobPhase::Preempted => {
            "inline-flex rounded-full border-2 border-dashed border-orange-400 bg-orange-50 px-2 py-0.5 text-xs font-medium text-orange-900"
        }
        _ => {
            "inline-flex rounded-full border border-slate-300 bg-slate-100 px-2 py-0.5 text-xs font-medium text-slate-800"
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
