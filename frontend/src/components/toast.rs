//! Toasts: a short message after a save or a submit. A success is announced politely and goes
//! after six seconds; a failure is announced at once (`role=alert`) and stays until dismissed,
//! so that nobody misses why something did not happen (the newest few are kept), or until the
//! user leaves the page it happened on.

use std::time::Duration;

use leptos::prelude::*;

use crate::i18n::{k, use_i18n};

/// Success or failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    /// Something was saved or done.
    Success,
    /// It failed.
    Error,
}

#[derive(Clone, Debug, PartialEq)]
struct Toast {
    id: u64,
    tone: Tone,
    text: String,
}

/// The toasts of the app, shared through context.
#[derive(Clone, Copy)]
pub struct Toasts {
    list: RwSignal<Vec<Toast>>,
    next: StoredValue<u64>,
}

impl Toasts {
    /// Creates the context.
    pub fn provide() -> Toasts {
        let t = Toasts {
            list: RwSignal::new(Vec::new()),
            next: StoredValue::new(0),
        };
        provide_context(t);
        t
    }

    /// Shows a message.
    pub fn show(&self, tone: Tone, text: String) {
        self.next.update_value(|n| *n += 1);
        let id = self.next.get_value();
        self.list.update(|l| {
            l.push(Toast { id, tone, text });
            // Failures stay until dismissed, the newest few.
            let errors = l.iter().filter(|t| t.tone == Tone::Error).count();
            let mut drop = errors.saturating_sub(KEPT_ERRORS);
            l.retain(|t| {
                let gone = drop > 0 && t.tone == Tone::Error;
                drop -= usize::from(gone);
                !gone
            });
        });
        if tone == Tone::Success {
            let list = self.list;
            set_timeout(
                move || list.update(|l| l.retain(|t| t.id != id)),
                Duration::from_secs(6),
            );
        }
    }

    /// Shows a success message.
    pub fn success(&self, text: String) {
        self.show(Tone::Success, text);
    }

    /// Shows a failure.
    pub fn error(&self, text: String) {
        self.show(Tone::Error, text);
    }
}

/// How many failures stay on screen at most (the oldest go first).
const KEPT_ERRORS: usize = 3;

/// The toasts of the app.
pub fn use_toasts() -> Toasts {
    expect_context::<Toasts>()
}

/// Where toasts appear (bottom right): successes in a polite live region, failures in an
/// assertive one.
#[component]
pub fn ToastRegion() -> impl IntoView {
    // A failure belongs to the page it happened on: leaving the page clears it.
    let toasts = use_toasts();
    let path = leptos_router::hooks::use_location().pathname;
    Effect::new(move |previous: Option<String>| {
        let now = path.get();
        if previous.is_some_and(|p| p != now) {
            toasts.list.update(|l| l.retain(|t| t.tone != Tone::Error));
        }
        now
    });
    view! {
        <div class="pointer-events-none fixed bottom-4 right-4 z-50 flex w-96 max-w-full flex-col gap-2">
            <ToastList tone=Tone::Success />
            <ToastList tone=Tone::Error />
        </div>
    }
}

/// The toasts of one tone, in their live region.
#[component]
fn ToastList(tone: Tone) -> impl IntoView {
    let toasts = use_toasts();
    let i18n = use_i18n();
    let (role, live, testid) = match tone {
        Tone::Success => ("status", "polite", "toasts-success"),
        Tone::Error => ("alert", "assertive", "toasts-error"),
    };
    let shown = move || {
        toasts
            .list
            .get()
            .into_iter()
            .filter(|t| t.tone == tone)
            .collect::<Vec<_>>()
    };
    view! {
        <div class="flex flex-col gap-2" role=role aria-live=live data-testid=testid>
            <For each=shown key=|t| t.id let:toast>
                {
                    let class = match toast.tone {
                        Tone::Success => "pointer-events-auto flex items-start gap-3 rounded border border-emerald-300 dark:border-emerald-700 bg-emerald-50 dark:bg-emerald-950 p-3 text-sm text-emerald-950 dark:text-emerald-50 shadow",
                        Tone::Error => "pointer-events-auto flex items-start gap-3 rounded border border-red-300 dark:border-red-700 bg-red-50 dark:bg-red-950 p-3 text-sm text-red-950 dark:text-red-50 shadow",
                    };
                    let icon = match toast.tone {
                        Tone::Success => "✓",
                        Tone::Error => "✕",
                    };
                    let id = toast.id;
                    view! {
                        <div class=class data-testid="toast" data-tone=match toast.tone { Tone::Success => "success", Tone::Error => "error" }>
                            <span aria-hidden="true">{icon}</span>
                            <span class="flex-1" data-testid="toast-text">{toast.text.clone()}</span>
                            <button type="button" class="rounded px-1 focus:outline-none focus-visible:ring-2 focus-visible:ring-violet-500"
                                aria-label=move || i18n.t(k!("common.dismiss"))
                                on:click=move |_| toasts.list.update(|l| l.retain(|t| t.id != id))>"×"</button>
                        </div>
                    }
                }
            </For>
        </div>
    }
}
