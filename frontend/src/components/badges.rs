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

/// Normal and Elastic, each in its colour of the palette (`components::palette`).
#[component]
pub fn ScheduleTypeBadge(
    /// The job's schedule type.
    schedule_type: ScheduleType,
) -> impl IntoView {
    let i18n = use_i18n();
    let class = crate::components::palette::schedule_badge(schedule_type);
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

/// One colour per phase (`components::palette`); Preempted is dashed as well.
#[component]
pub fn PhaseBadge(
    /// The job's phase.
    phase: JobPhase,
) -> impl IntoView {
    let i18n = use_i18n();
    let class = crate::components::palette::phase_badge(phase);
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

/// Whether a job shows the Borrowing badge: admitted beyond its queue's guarantee
/// (`spec/prequeue.md` §9) and still holding that room — not once it ended, nor while it waits
/// again in the prequeue after a requeue (the flag tells how it was last admitted).
pub fn shows_borrowing(job: &anteroom_shared::api::jobs::Job) -> bool {
    job.borrowing && !job.phase.is_terminal() && job.phase != JobPhase::Prequeue
}

/// "Borrowing": the job runs on another queue's idle guaranteed room and may be reclaimed
/// (purple and dashed, `components::palette`), with the description as a tooltip.
#[component]
pub fn BorrowingBadge() -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <span class=crate::components::palette::BORROWING_BADGE title=move || i18n.t(k!("jobs.borrowingDescription"))
            data-testid="borrowing-badge">
            {move || i18n.t(k!("jobs.borrowing"))}
        </span>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_borrowing_badge_shows_while_the_job_holds_borrowed_room() {
        let mut job: anteroom_shared::api::jobs::Job = serde_json::from_value(serde_json::json!({
            "id": 1, "name": "nlp-5", "owner": "nina", "kind": "custom", "queue": "nlp",
            "scheduleType": "normal", "phase": "Running", "preemptionPolicy": "PreemptLowerPriority",
            "resources": {}, "tasks": [], "nodes": [], "submittedAt": "2026-11-23T08:00:00Z",
            "borrowing": true
        }))
        .expect("a job");
        assert!(shows_borrowing(&job));
        for (phase, shows) in [
            (JobPhase::Pending, true),
            (JobPhase::Prequeue, false),
            (JobPhase::Preempted, false),
            (JobPhase::Completed, false),
        ] {
            job.phase = phase;
            assert_eq!(shows_borrowing(&job), shows, "{phase:?}");
        }
        job.phase = JobPhase::Running;
        job.borrowing = false;
        assert!(!shows_borrowing(&job));
    }
}
