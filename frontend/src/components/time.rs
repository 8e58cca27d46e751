//! A moment as people read it: how long ago ("3 min. ago", "just now", updated as time passes),
//! with the exact date, time and time zone in a tooltip on hover and on keyboard focus — one
//! tooltip for the app, fixed to the viewport, so no table grows a scrollbar for a hidden one.

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

/// The tooltip on screen: its text and where (viewport pixels). One for the whole app, drawn by
/// [`TooltipLayer`] outside every scroll box, so a tooltip never makes a table scroll.
#[derive(Clone, Debug, PartialEq)]
struct Tip {
    text: String,
    left: f64,
    top: f64,
}

thread_local! {
    static TIP: RefCell<Option<ArcRwSignal<Option<Tip>>>> = const { RefCell::new(None) };
}

fn tip() -> ArcRwSignal<Option<Tip>> {
    TIP.with(|t| t.borrow_mut().get_or_insert_with(|| ArcRwSignal::new(None)).clone())
}

/// Shows `text` under the element an event happened on.
fn show_tip(ev: &web_sys::Event, text: String) {
    use wasm_bindgen::JsCast;
    let Some(el) = ev.current_target().and_then(|t| t.dyn_into::<web_sys::Element>().ok()) else {
        return;
    };
    let rect = el.get_bounding_client_rect();
    tip().set(Some(Tip {
        text,
        left: rect.left(),
        top: rect.bottom() + 4.0,
    }));
}

/// The one tooltip of the app, fixed to the viewport (rendered once, in the layout). Hidden
/// from screen readers: the element it describes carries the same text.
#[component]
pub fn TooltipLayer() -> impl IntoView {
    let tip = tip();
    let shown = tip.clone();
    view! {
        <Show when=move || shown.with(Option::is_some)>
            {
                let tip = tip.clone();
                move || tip.get().map(|t| view! {
                    <div class="pointer-events-none fixed z-50 max-w-sm rounded bg-slate-900 px-2 py-1 text-xs text-white shadow dark:bg-slate-700"
                        aria-hidden="true" data-testid="tooltip"
                        style:left=format!("{}px", t.left) style:top=format!("{}px", t.top)>
                        {t.text}
                    </div>
                })
            }
        </Show>
    }
}

/// `at` as "3 min. ago", its exact moment in the tooltip on hover and keyboard focus (and, for
/// screen readers, as the element's description).
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
    let exact = move || format::datetime_with_zone(i18n.locale(), at);
    let show = move |ev: web_sys::Event| show_tip(&ev, exact());
    let hide = move || tip().set(None);
    on_cleanup(move || tip().set(None));
    view! {
        <span class="relative inline-block whitespace-nowrap rounded focus:outline-none focus-visible:ring-2 focus-visible:ring-violet-500"
            tabindex="0" aria-describedby=described_by data-testid="time"
            on:mouseenter=move |ev| show(ev.into()) on:focus=move |ev| show(ev.into())
            on:mouseleave=move |_| hide() on:blur=move |_| hide()>
            <time datetime=at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true) class="underline decoration-dotted underline-offset-2">
                {move || {
                    // The shared clock moves every 30 s: a moment newer than its last tick
                    // (a job submitted since) is measured against the real now.
                    let now = now.get().max(format::now());
                    if format::just_past(at, now) {
                        i18n.t(crate::i18n::k!("time.justNow")).to_owned()
                    } else {
                        format::relative(i18n.locale(), at, now)
                    }
                }}
            </time>
            <span id=id class="sr-only" data-testid="time-exact">{exact}</span>
        </span>
    }
}
