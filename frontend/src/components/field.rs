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

/// A fieldset editing a list of `resource = amount` rows (a queue's capacity, guarantee,
/// lending limit, per-job limit): a row per entry with a remove button, an add button, a hint
/// and the list's error. Ids and test ids follow `name`: rows `{name}-row`, inputs
/// `{name}{n}-resource` and `{name}{n}-amount`, `add-{name}`, `queue-{name}-error`,
/// `queue-{name}-hint`.
#[component]
pub fn AmountList(
    /// What the list is, for ids and test ids (`capacity`, `guarantee`…).
    name: &'static str,
    /// The rows as typed.
    rows: AmountRows,
    /// The fieldset's legend.
    legend: Key,
    /// A line under the legend: what the list does, with an example.
    #[prop(default = None)]
    hint: Option<Key>,
    /// The add button's text.
    add: Key,
    /// The resource a new row starts with (empty: the placeholder shows an example).
    #[prop(default = "")]
    new_resource: &'static str,
    /// The list's error, already in the user's language.
    #[prop(into)]
    error: Signal<Option<String>>,
) -> impl IntoView {
    let i18n = use_i18n();
    let error_id = format!("queue-{name}-error");
    let hint_id = format!("queue-{name}-hint");
    let described = if hint.is_some() {
        format!("{error_id} {hint_id}")
    } else {
        error_id.clone()
    };
    let input_described = error_id.clone();
    view! {
        <fieldset class="space-y-2" aria-describedby=described data-testid=format!("{name}-list")>
            <legend class="text-sm font-medium">{move || i18n.t(legend)}</legend>
            {hint.map(|h| view! { <p id=hint_id.clone() class="text-xs text-slate-600 dark:text-slate-300">{move || i18n.t(h)}</p> })}
            <For each=move || rows.get() key=|r| r.id let:r>
                <div class="flex flex-wrap items-end gap-2" data-testid=format!("{name}-row")>
                    <label class="flex flex-col text-xs" for=format!("{name}{}-resource", r.id)>
                        {move || i18n.t(crate::i18n::k!("queue.resource"))}
                        <input id=format!("{name}{}-resource", r.id) class=format!("{} w-56", crate::components::INPUT) type="text" bind:value=r.name placeholder="nvidia.com/a100" />
                    </label>
                    <label class="flex flex-col text-xs" for=format!("{name}{}-amount", r.id)>
                        {move || i18n.t(crate::i18n::k!("queue.amount"))}
                        <input id=format!("{name}{}-amount", r.id) class=format!("{} w-32", crate::components::INPUT) type="text" bind:value=r.amount
                            aria-invalid=move || amount_invalid(&r.amount.get()).to_string() aria-describedby=input_described.clone() />
                    </label>
                    <button type="button" class=crate::components::BUTTON_SECONDARY on:click=move |_| rows.remove(r.id)>
                        {move || i18n.t(crate::i18n::k!("quota.removeRow"))}
                    </button>
                </div>
            </For>
            <p id=error_id class="text-xs font-medium text-red-700 dark:text-red-300" data-testid="field-error">{move || error.get()}</p>
            <button type="button" class=crate::components::BUTTON_SECONDARY on:click=move |_| rows.push(new_resource.into(), String::new()) data-testid=format!("add-{name}")>
                {move || i18n.t(add)}
            </button>
        </fieldset>
    }
}

/// True when an amount as typed is not a quantity of zero or more.
pub fn amount_invalid(typed: &str) -> bool {
    anteroom_shared::scheduling::Quantity::parse(typed.trim()).map_or(true, |q| q.milli() < 0)
}
