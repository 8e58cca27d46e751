//! A form field: its label tied to the input, a hint, and its error marked on the field
//! (`aria-invalid`, `aria-describedby` naming `<id>-error`) before any request is made.

use leptos::prelude::*;

use crate::i18n::{Key, use_i18n};

/// A labelled field around one input whose id is `id`; the input itself is the child (it sets
/// `aria-invalid` from the same error signal).
#[component]
pub fn Field(
    /// The input's id (the label's `for`).
    id: String,
    /// The label.
    label: Key,
    /// A hint under the input (its id is `<id>-hint`).
    #[prop(default = None)]
    hint: Option<Key>,
    /// The error to show, already in the user's language.
    #[prop(into)]
    error: Signal<Option<String>>,
    children: Children,
) -> impl IntoView {
    let i18n = use_i18n();
    let error_id = format!("{id}-error");
    let hint_id = format!("{id}-hint");
    view! {
        <div class="space-y-1">
            <label class="block text-sm font-medium text-slate-800 dark:text-slate-200" for=id.clone()>{move || i18n.t(label)}</label>
            {children()}
            {hint.map(|h| view! { <p id=hint_id.clone() class="text-xs text-slate-600 dark:text-slate-300">{move || i18n.t(h)}</p> })}
            // Always present, so an input's `aria-describedby` never names a missing element.
            <p id=error_id class="text-xs font-medium text-red-700 dark:text-red-300" data-testid="field-error">
                {move || error.get().map(|e| view! { <span aria-hidden="true">"⚠ "</span>{e} })}
            </p>
        </div>
    }
}

/// One row of a list of `resource = amount` a form edits (a quota's accelerators, a queue's
/// capacity), as typed.
#[derive(Clone, Copy, Debug)]
pub struct AmountRow {
    /// Stable id: the key of the row in its `<For>`, and part of its inputs' ids.
    pub id: u64,
    /// The resource name.
    pub name: RwSignal<String>,
    /// The amount, a quantity as typed.
    pub amount: RwSignal<String>,
}

/// The rows of such a list, with the ids handed out so far.
#[derive(Clone, Copy)]
pub struct AmountRows {
    rows: RwSignal<Vec<AmountRow>>,
    next: StoredValue<u64>,
}

impl AmountRows {
    /// A list holding `initial`.
    pub fn new(initial: impl IntoIterator<Item = (String, String)>) -> Self {
        let list = AmountRows {
            rows: RwSignal::new(Vec::new()),
            next: StoredValue::new(0),
        };
        for (name, amount) in initial {
            list.push(name, amount);
        }
        list
    }

    /// Adds a row.
    pub fn push(&self, name: String, amount: String) {
        self.next.update_value(|n| *n += 1);
        let row = AmountRow {
            id: self.next.get_value(),
            name: RwSignal::new(name),
            amount: RwSignal::new(amount),
        };
        self.rows.update(|rs| rs.push(row));
    }

    /// Removes the row `id`.
    pub fn remove(&self, id: u64) {
        self.rows.update(|rs| rs.retain(|r| r.id != id));
    }

    /// The rows (reactive).
    pub fn get(&self) -> Vec<AmountRow> {
        self.rows.get()
    }

    /// The rows, not tracked.
    pub fn get_untracked(&self) -> Vec<AmountRow> {
        self.rows.get_untracked()
    }
}
