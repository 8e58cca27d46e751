//! The submit form's sharing inputs (`spec/prequeue.md` §9): the "May borrow idle GPUs"
//! switch of a normal job, and the priority inside the queue where the chosen queue allows
//! priorities.

use anteroom_shared::scheduling::PriorityRange;
use leptos::prelude::*;

use crate::components::INPUT;
use crate::components::field::Field;
use crate::i18n::{k, use_i18n};

/// On (the default): beyond its queue's guarantee the job may start on other queues' idle
/// guaranteed room, and may be reclaimed; off: it waits for guaranteed room.
#[component]
pub(super) fn BorrowSwitch(
    /// Whether the job may borrow.
    may_borrow: RwSignal<bool>,
) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <label class="flex items-start gap-2 text-sm" for="may-borrow">
            <input type="checkbox" role="switch" id="may-borrow" data-testid="may-borrow" bind:checked=may_borrow
                aria-describedby="may-borrow-help" />
            <span>
                <span class="font-medium">{move || i18n.t(k!("newJob.mayBorrow"))}</span>
                <span id="may-borrow-help" class="block text-xs text-slate-600 dark:text-slate-300">{move || i18n.t(k!("newJob.mayBorrowHelp"))}</span>
            </span>
        </label>
    }
}

/// The job's priority inside its queue, shown only while the chosen queue allows more than
/// priority 0; limited to the queue's range.
#[component]
pub(super) fn PriorityField(
    /// The priority as typed.
    priority: RwSignal<String>,
    /// The chosen queue's range, when it allows priorities.
    #[prop(into)]
    range: Signal<Option<PriorityRange>>,
    /// The field's error, in the user's language.
    #[prop(into)]
    error: Signal<Option<String>>,
) -> impl IntoView {
    let i18n = use_i18n();
    move || {
        range.get().map(|r| {
            view! {
                <Field id="job-priority".into() label=k!("newJob.priority") error=error>
                    <input id="job-priority" class=INPUT type="number" inputmode="numeric" step="1" min=r.min max=r.max
                        placeholder="0" bind:value=priority data-testid="job-priority"
                        aria-invalid=move || error.get().is_some().to_string()
                        aria-describedby="job-priority-help job-priority-error" />
                    <p id="job-priority-help" class="text-xs text-slate-600 dark:text-slate-300">
                        {move || i18n.tf(k!("newJob.priorityHelp"), &[("min", &r.min.to_string()), ("max", &r.max.to_string())])}
                    </p>
                </Field>
            }
        })
    }
}
