//! A moment as people read it: how long ago ("3 min. ago", updated as time passes), with the
//! exact date, time and time zone in a tooltip on hover and on keyboard focus.

use std::cell::{Cell, RefCell};
use std::time::Duration;

use chrono::{DateTime, Utc};
use leptos::prelude::*;

use crate::format;
use crate::i18n::use_i18n;

thread_local! {
    /// The clock relative times are measured against, moved every 30 s (one timer for the app).
    /// Reference-counted, not owned by the first component that asked: it outlives them all.
    static NOW: RefCell<Option<ArcRwSignal<DateTime<Utc>>>> = const { RefCell::new(None) };
    /// Numbers the tooltips' ids.
    static NEXT_ID: Cell<u64> = const { Cell::new(0) };
}

/// Now, as a signal that moves every 30 seconds (for anything on screen that ages).
pub fn ticking_now() -> ArcRwSignal<DateTime<Utc>> {
    NOW.with(|now| {
        now.borrow_mut()
            .get_or_insert_with(|| {
                let signal = ArcRwSignal::new(format::now());
                let ticking = signal.clone();
                let _ = set_interval_with_handle(move || ticking.set(format::now()), Duration::from_secs(30));
                signal
            })
            .clone()
    })
}

/// `at` as "3 min. ago", its exact moment in a tooltip.
#[component]
pub fn Time(
    /// The moment.
    at: DateTime<Utc>,
) -> impl IntoView {
    let i18n = use_i18n();
    let now = ticking_now();
    let id = NEXT_ID.with(|n| {
        n.set(n.get() + 1);
        format!("time-{}", n.get())
    });
    let described_by = id.clone();
    view! {
        <span class="group relative inline-block whitespace-nowrap rounded focus:outline-none focus-visible:ring-2 focus-visible:ring-violet-500"
            tabindex="0" aria-describedby=described_by data-testid="time">
            <time datetime=at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true) class="underline decoration-dotted underline-offset-2">
                {move || format::relative(i18n.locale(), at, now.get())}
            </time>
            <span id=id role="tooltip" data-testid="time-exact"
                class="pointer-events-none invisible absolute left-0 top-full z-20 mt-1 rounded bg-slate-900 px-2 py-1 text-xs text-white shadow group-hover:visible group-focus:visible">
                {move || format::datetime_with_zone(i18n.locale(), at)}
            </span>
        </span>
    }
}
