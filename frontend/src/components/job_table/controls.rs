//! The job table's own controls: a filter of several values, and a column header that sorts.

use anteroom_shared::api::jobs::{JobSort, JobSortField};
use leptos::prelude::*;

use crate::api::JobFilter;
use crate::components::{INPUT, TH};
use crate::i18n::{Key, k, use_i18n};

/// One filter of several values: a disclosure button naming what is chosen, opening a group
/// of checkboxes.
#[component]
pub(super) fn MultiFilter(
    /// The element id (`filter-phase`); the checkboxes' group is `{id}-options`.
    id: &'static str,
    /// The filter's name.
    label: Key,
    /// Each choice: its value and its text.
    options: Signal<Vec<(String, String)>>,
    /// The values chosen.
    chosen: Signal<Vec<String>>,
    /// Called with the new choice.
    set: Callback<Vec<String>>,
) -> impl IntoView {
    let i18n = use_i18n();
    let summary = move || {
        let chosen = chosen.get();
        let options = options.get();
        // In the choices' order; a value the choices lack (a link naming a queue not listed
        // here, or before the list came) as written, so a filter never hides behind "All".
        let mut texts: Vec<String> = options
            .iter()
            .filter(|(v, _)| chosen.contains(v))
            .map(|(_, text)| text.clone())
            .collect();
        texts.extend(chosen.iter().filter(|c| !options.iter().any(|(v, _)| v == *c)).cloned());
        match texts.len() {
            0 => i18n.t(k!("filter.all")).to_owned(),
            1 | 2 => texts.join(i18n.t(k!("filter.separator"))),
            n => i18n.tp(k!("filter.chosen.one"), k!("filter.chosen.other"), n as u64, &[]),
        }
    };
    view! {
        <div class="flex flex-col gap-1 text-xs font-medium text-slate-700 dark:text-slate-300">
            <span id=format!("{id}-label")>{move || i18n.t(label)}</span>
            <details class="relative" data-testid=id>
                <summary id=id class=format!("{INPUT} w-44 cursor-pointer truncate") aria-labelledby=format!("{id}-label {id}")
                    data-testid=format!("{id}-summary")>
                    {summary}
                </summary>
                <fieldset class="absolute z-10 mt-1 w-56 space-y-1 rounded border border-slate-300 dark:border-slate-600 bg-white dark:bg-slate-900 p-2 shadow-lg"
                    id=format!("{id}-options")>
                    <legend class="sr-only">{move || i18n.t(label)}</legend>
                    <For each=move || options.get() key=|(v, text)| (v.clone(), text.clone()) let:option>
                        {
                            let (value, text) = option;
                            let v = value.clone();
                            let checked = move || chosen.with(|c| c.contains(&v));
                            let v = value.clone();
                            view! {
                                <label class="flex items-center gap-2 text-sm font-normal text-slate-800 dark:text-slate-200">
                                    <input type="checkbox" value=value.clone() prop:checked=checked on:change=move |ev| {
                                        let on = event_target_checked(&ev);
                                        let mut now = chosen.get_untracked();
                                        now.retain(|c| *c != v);
                                        if on { now.push(v.clone()); }
                                        set.run(now);
                                    } />
                                    {text}
                                </label>
                            }
                        }
                    </For>
                </fieldset>
            </details>
        </div>
    }
}

/// A column header that sorts the list by its field: once ascending (submission: newest
/// first), again the other way; `aria-sort` says which.
#[component]
pub(super) fn SortHeader(
    field: JobSortField,
    label: Key,
    filter: Memo<JobFilter>,
    go: impl Fn(JobFilter, u64, bool) + Copy + 'static,
) -> impl IntoView {
    let i18n = use_i18n();
    let sort = move || filter.with(|f| f.sort);
    let aria = move || {
        let s = sort();
        match (s.field == field, s.descending) {
            (false, _) => "none",
            (true, false) => "ascending",
            (true, true) => "descending",
        }
    };
    let arrow = move || match aria() {
        "ascending" => "▲",
        "descending" => "▼",
        _ => "",
    };
    view! {
        <th scope="col" class=TH aria-sort=aria>
            <button type="button" class="inline-flex items-center gap-1 uppercase hover:text-slate-900 dark:hover:text-slate-100 focus:outline-none focus-visible:ring-2 focus-visible:ring-violet-500"
                data-testid=format!("sort-{}", field.as_str())
                on:click=move |_| {
                    let now = sort();
                    let descending = if now.field == field {
                        !now.descending
                    } else {
                        // Submission: newest first is what people look for first.
                        field == JobSortField::SubmittedAt
                    };
                    let mut f = filter.get_untracked();
                    f.sort = JobSort { field, descending };
                    go(f, 1, false);
                }>
                {move || i18n.t(label)}
                <span aria-hidden="true">{arrow}</span>
            </button>
        </th>
    }
}
