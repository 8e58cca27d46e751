//! Components shared by the pages: badges, bars, tables, form fields, toasts, the confirm
//! dialog, the reasons of a waiting job, sharing between queues as bars, and the loading / error / empty states every page
//! shows the same way.

pub mod badges;
pub mod bars;
pub mod capacity;
pub mod confirm;
pub mod drawer;
pub mod field;
pub mod job_table;
pub mod marked;
pub mod notebook;
pub mod pager;
pub mod palette;
pub mod reasons;
pub mod sharing;
pub mod summary;
pub mod time;
pub mod toast;

use std::future::Future;

use leptos::prelude::*;

use crate::api::ApiFailure;
use crate::i18n::{Key, use_i18n};

/// What a fetch holds: nothing yet, the data, or why it failed.
pub type Fetched<T> = RwSignal<Option<Result<T, ApiFailure>>>;

/// Runs `source` now and again whenever a signal it reads before its first `.await` changes
/// (filters, the live version); keeps showing the last answer while the next one loads, drops
/// answers that arrive after a newer request was made, and changes nothing when the answer is
/// the same as the one shown (a live event about another job rebuilds no view, so keyboard
/// focus stays where it is).
pub fn use_fetch<T, Fut>(source: impl Fn() -> Fut + 'static) -> Fetched<T>
where
    T: PartialEq + Send + Sync + 'static,
    Fut: Future<Output = Result<T, ApiFailure>> + 'static,
{
    let data: Fetched<T> = RwSignal::new(None);
    let generation = StoredValue::new(0u64);
    Effect::new(move |_| {
        let fut = source();
        generation.update_value(|g| *g += 1);
        let mine = generation.get_value();
        leptos::task::spawn_local(async move {
            let answer = fut.await;
            // The page may be gone by now (its owner disposed): then nobody wants the answer.
            if generation.try_get_value() == Some(mine)
                && data.try_with_untracked(|d| d.as_ref() != Some(&answer)) == Some(true)
            {
                data.try_set(Some(answer));
            }
        });
    });
    data
}

/// Renders a fetch: loading, the error in the user's language, or `view` of the data.
pub fn show<T, V>(data: Fetched<T>, view: impl Fn(&T) -> V + Send + Sync + 'static) -> impl IntoView
where
    T: Send + Sync + 'static,
    V: IntoView + 'static,
{
    move || {
        data.with(|d| match d {
            None => view! { <crate::auth::Loading /> }.into_any(),
            Some(Err(f)) => view! { <ErrorPanel failure=f.clone() /> }.into_any(),
            Some(Ok(t)) => view(t).into_any(),
        })
    }
}

/// A failed call, in the user's language.
#[component]
pub fn ErrorPanel(
    /// The failure to tell.
    failure: ApiFailure,
) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <p role="alert" class="rounded border border-red-300 dark:border-red-700 bg-red-50 dark:bg-red-950 p-3 text-sm text-red-800 dark:text-red-200" data-testid="error">
            {move || i18n.failure(&failure)}
        </p>
    }
}

/// An empty list, said in words.
#[component]
pub fn Empty(
    /// What the empty list means, and what to do about it.
    text: Key,
) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <p class="rounded border border-dashed border-slate-300 dark:border-slate-600 bg-white dark:bg-slate-900 p-6 text-center text-sm text-slate-600 dark:text-slate-300" data-testid="empty">
            {move || i18n.t(text)}
        </p>
    }
}

/// A page's heading and a line on what it is for.
#[component]
pub fn PageHeader(
    /// The page's title (`data-testid=page-title`).
    title: Key,
    /// A line on what the page is for.
    description: Key,
    /// Actions on the right (a button, a link).
    #[prop(optional)]
    children: Option<Children>,
) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <header class="flex flex-wrap items-end justify-between gap-4">
            <div class="space-y-1">
                <h1 class="text-2xl font-semibold" data-testid="page-title">{move || i18n.t(title)}</h1>
                <p class="text-slate-600 dark:text-slate-300" data-testid="page-description">{move || i18n.t(description)}</p>
            </div>
            {children.map(|c| c())}
        </header>
    }
}

/// The classes of a primary button (focus ring visible for keyboard users).
pub const BUTTON: &str = "inline-flex items-center gap-2 whitespace-nowrap rounded bg-violet-700 px-4 py-2 text-sm font-medium text-white hover:bg-violet-800 focus:outline-none focus-visible:ring-2 focus-visible:ring-violet-500 focus-visible:ring-offset-2 dark:focus-visible:ring-offset-slate-900 disabled:opacity-60";
/// The classes of a primary button in a table row (the size of the row's other buttons).
pub const BUTTON_SMALL: &str = "inline-flex items-center gap-2 whitespace-nowrap rounded bg-violet-700 px-3 py-1.5 text-sm font-medium text-white hover:bg-violet-800 focus:outline-none focus-visible:ring-2 focus-visible:ring-violet-500 focus-visible:ring-offset-2 dark:focus-visible:ring-offset-slate-900 disabled:opacity-60";
/// The classes of a secondary button.
pub const BUTTON_SECONDARY: &str = "inline-flex items-center gap-2 whitespace-nowrap rounded border border-slate-300 dark:border-slate-600 bg-white dark:bg-slate-900 px-3 py-1.5 text-sm text-slate-800 dark:text-slate-200 hover:bg-slate-100 dark:hover:bg-slate-800 focus:outline-none focus-visible:ring-2 focus-visible:ring-violet-500 disabled:opacity-60";
/// The classes of a destructive button.
pub const BUTTON_DANGER: &str = "inline-flex items-center gap-2 whitespace-nowrap rounded border border-red-300 dark:border-red-700 bg-white dark:bg-slate-900 px-3 py-1.5 text-sm text-red-800 dark:text-red-200 hover:bg-red-50 dark:hover:bg-red-950 focus:outline-none focus-visible:ring-2 focus-visible:ring-red-500 disabled:opacity-60";
/// The classes of a text input or select.
pub const INPUT: &str = "w-full rounded border border-slate-400 dark:border-slate-500 bg-white dark:bg-slate-900 px-3 py-2 text-sm focus:outline-none focus:ring-2 focus:ring-violet-500 aria-[invalid=true]:border-red-600 dark:aria-[invalid=true]:border-red-400";
/// The classes of a card.
pub const CARD: &str = "rounded border border-slate-200 dark:border-slate-700 bg-white dark:bg-slate-900 p-4 shadow-sm";
/// The classes of a data table.
pub const TABLE: &str = "min-w-full divide-y divide-slate-200 dark:divide-slate-700 text-sm";
/// The classes of a table's header cell.
pub const TH: &str = "whitespace-nowrap px-3 py-2 text-left text-xs font-semibold uppercase tracking-wide text-slate-600 dark:text-slate-300";
/// The classes of a table's cell.
pub const TD: &str = "px-3 py-2 align-top";
/// The classes of a link in text.
pub const LINK: &str = "text-violet-800 dark:text-violet-200 underline hover:text-violet-950 dark:hover:text-violet-50 focus:outline-none focus-visible:ring-2 focus-visible:ring-violet-500";

/// The data of a fetch (reactive), or its empty value while it loads or when it failed: for
/// what only decorates a page (a select's options), whose failure the page shows elsewhere or
/// not at all.
pub fn loaded<T: Clone + Default + Send + Sync + 'static>(data: Fetched<T>) -> T {
    data.with(|d| d.as_ref().and_then(|r| r.as_ref().ok()).cloned().unwrap_or_default())
}

/// The accelerator models among the cluster's resources (reactive; empty until they came).
pub fn accelerator_names(resources: Fetched<Vec<anteroom_shared::api::ClusterResource>>) -> Vec<String> {
    loaded(resources)
        .into_iter()
        .filter(|r| r.accelerator)
        .map(|r| r.name)
        .collect()
}
