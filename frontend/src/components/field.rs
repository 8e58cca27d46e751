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
            <label class="block text-sm font-medium text-slate-800" for=id.clone()>{move || i18n.t(label)}</label>
            {children()}
            {hint.map(|h| view! { <p id=hint_id.clone() class="text-xs text-slate-600">{move || i18n.t(h)}</p> })}
            // Always present, so an input's `aria-describedby` never names a missing element.
            <p id=error_id class="text-xs font-medium text-red-700" data-testid="field-error">
                {move || error.get().map(|e| view! { <span aria-hidden="true">"⚠ "</span>{e} })}
            </p>
        </div>
    }
}
