//! Previous / "page 2 of 7 · 312 jobs" / Next under a paged list. The page lives in the URL
//! (`?page=2`), so Back returns to it and a link shares it; the pager only asks to go.

use leptos::prelude::*;

use crate::components::BUTTON_SECONDARY;
use crate::format;
use crate::i18n::{k, use_i18n};

/// The pager of a list of `total` jobs shown `pages` pages at a time, at `page` (1-based);
/// `go(n)` shows page `n`.
#[component]
pub fn Pager(
    page: Signal<u64>,
    pages: Signal<u64>,
    total: Signal<u64>,
    go: impl Fn(u64) + Clone + Send + Sync + 'static,
) -> impl IntoView {
    let i18n = use_i18n();
    let previous = go.clone();
    view! {
        <nav class="flex items-center gap-3 text-sm" aria-label=move || i18n.t(k!("jobs.pages")) data-testid="pager">
            <button type="button" class=BUTTON_SECONDARY disabled=move || { page.get() <= 1 }
                on:click=move |_| previous(page.get_untracked().saturating_sub(1).max(1))>
                {move || i18n.t(k!("jobs.previous"))}
            </button>
            <span data-testid="page-of">{move || {
                let (p, pages, total) = (page.get(), pages.get(), total.get());
                let l = i18n.locale();
                let of = i18n.tf(k!("jobs.pageOf"), &[
                    ("page", &format::number(l, p as f64, 0)),
                    ("pages", &format::number(l, pages as f64, 0)),
                ]);
                format!("{of} · {}", i18n.tp(k!("jobs.total.one"), k!("jobs.total.other"), total, &[]))
            }}</span>
            <button type="button" class=BUTTON_SECONDARY disabled=move || { page.get() >= pages.get() }
                on:click=move |_| go(page.get_untracked() + 1)>
                {move || i18n.t(k!("jobs.next"))}
            </button>
        </nav>
    }
}
