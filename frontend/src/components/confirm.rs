//! The confirm dialog before a destructive action: a modal that takes focus (on Cancel, so a
//! repeated Enter does no harm), says what will happen, and does it only on an explicit yes.
//! Escape, Cancel or leaving the page does nothing; focus goes back where it was.

use leptos::html;
use leptos::prelude::*;

use crate::components::{BUTTON_DANGER, BUTTON_SECONDARY};
use crate::i18n::{k, use_i18n};

/// The dialog's state, shared through context.
#[derive(Clone, Copy)]
pub struct Confirm {
    pending: RwSignal<Option<String>>,
    action: StoredValue<Option<Box<dyn FnOnce()>>, LocalStorage>,
    return_focus: StoredValue<Option<web_sys::HtmlElement>, LocalStorage>,
}

impl Confirm {
    /// Creates the context.
    pub fn provide() -> Confirm {
        let c = Confirm {
            pending: RwSignal::new(None),
            action: StoredValue::new_local(None),
            return_focus: StoredValue::new_local(None),
        };
        provide_context(c);
        c
    }

    /// Asks `text`; runs `on_yes` if the person confirms.
    pub fn ask(&self, text: String, on_yes: impl FnOnce() + 'static) {
        use wasm_bindgen::JsCast;
        let focused = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.active_element())
            .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok());
        self.return_focus.set_value(focused);
        self.action.set_value(Some(Box::new(on_yes)));
        self.pending.set(Some(text));
    }

    /// True while the dialog is open (reactive): the page behind it is `inert` meanwhile, so
    /// neither a click nor Tab can reach it.
    pub fn is_open(&self) -> bool {
        self.pending.get().is_some()
    }

    fn answer(&self, yes: bool) {
        let request = self.action.try_update_value(|a| a.take()).flatten();
        self.pending.set(None);
        if let Some(Some(el)) = self.return_focus.try_update_value(|f| f.take()) {
            // After the page behind stops being `inert`, which the next render does.
            set_timeout(
                move || {
                    if el.is_connected() {
                        let _ = el.focus();
                    }
                },
                std::time::Duration::ZERO,
            );
        }
        if yes && let Some(on_yes) = request {
            on_yes();
        }
    }
}

/// The confirm dialog of the app.
pub fn use_confirm() -> Confirm {
    expect_context::<Confirm>()
}

/// The modal, rendered once in the layout.
#[component]
pub fn ConfirmDialog() -> impl IntoView {
    let confirm = use_confirm();
    let i18n = use_i18n();
    let cancel_ref = NodeRef::<html::Button>::new();
    let yes_ref = NodeRef::<html::Button>::new();
    Effect::new(move |_| {
        if confirm.pending.get().is_some()
            && let Some(b) = cancel_ref.get()
        {
            let _ = b.focus();
        }
    });
    // Leaving the page cancels: the action belongs to the page that asked.
    let location = leptos_router::hooks::use_location();
    Effect::new(move |previous: Option<String>| {
        let path = location.pathname.get();
        if previous.is_some_and(|p| p != path) && confirm.pending.get_untracked().is_some() {
            confirm.answer(false);
        }
        path
    });
    view! {
        <Show when=move || confirm.pending.get().is_some()>
            <div class="fixed inset-0 z-40 flex items-center justify-center bg-slate-900/50 p-4"
                on:keydown=move |ev| match ev.key().as_str() {
                    "Escape" => confirm.answer(false),
                    // Tab stays inside the dialog: it moves between its two buttons.
                    "Tab" => {
                        ev.prevent_default();
                        let on_cancel = cancel_ref.get().is_some_and(|c| {
                            web_sys::window()
                                .and_then(|w| w.document())
                                .and_then(|d| d.active_element())
                                .is_some_and(|a| a == **c)
                        });
                        let next = if on_cancel { yes_ref.get().map(|b| (*b).clone()) } else { cancel_ref.get().map(|b| (*b).clone()) };
                        if let Some(b) = next {
                            let _ = b.focus();
                        }
                    }
                    _ => {}
                }>
                <div role="alertdialog" aria-modal="true" aria-labelledby="confirm-title" aria-describedby="confirm-text"
                    class="w-full max-w-md space-y-4 rounded bg-white dark:bg-slate-900 p-5 shadow-lg" data-testid="confirm-dialog">
                    <h2 id="confirm-title" class="text-lg font-semibold">{move || i18n.t(k!("confirm.title"))}</h2>
                    <p id="confirm-text" class="text-slate-700 dark:text-slate-300">{move || confirm.pending.get().unwrap_or_default()}</p>
                    <div class="flex justify-end gap-2">
                        <button type="button" class=BUTTON_SECONDARY node_ref=cancel_ref data-testid="confirm-no" on:click=move |_| confirm.answer(false)>
                            {move || i18n.t(k!("confirm.cancel"))}
                        </button>
                        <button type="button" class=BUTTON_DANGER node_ref=yes_ref data-testid="confirm-yes" on:click=move |_| confirm.answer(true)>
                            {move || i18n.t(k!("confirm.yes"))}
                        </button>
                    </div>
                </div>
            </div>
        </Show>
    }
}
