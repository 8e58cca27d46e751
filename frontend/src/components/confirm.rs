//! The confirm dialog before a destructive action: a modal that takes focus, says what will
//! happen, and does it only on an explicit yes (Escape or Cancel does nothing).

use leptos::html;
use leptos::prelude::*;

use crate::components::{BUTTON_DANGER, BUTTON_SECONDARY};
use crate::i18n::{k, use_i18n};

struct Request {
    text: String,
    on_yes: Box<dyn FnOnce()>,
}

/// The dialog's state, shared through context.
#[derive(Clone, Copy)]
pub struct Confirm {
    pending: RwSignal<Option<String>>,
    action: StoredValue<Option<Request>, LocalStorage>,
}

impl Confirm {
    /// Creates the context.
    pub fn provide() -> Confirm {
        let c = Confirm {
            pending: RwSignal::new(None),
            action: StoredValue::new_local(None),
        };
        provide_context(c);
        c
    }

    /// Asks `text`; runs `on_yes` if the person confirms.
    pub fn ask(&self, text: String, on_yes: impl FnOnce() + 'static) {
        self.action.set_value(Some(Request {
            text: text.clone(),
            on_yes: Box::new(on_yes),
        }));
        self.pending.set(Some(text));
    }

    fn answer(&self, yes: bool) {
        let request = self.action.try_update_value(|a| a.take()).flatten();
        self.pending.set(None);
        if yes && let Some(r) = request {
            let _ = r.text;
            (r.on_yes)();
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
    let yes_ref = NodeRef::<html::Button>::new();
    Effect::new(move |_| {
        if confirm.pending.get().is_some()
            && let Some(b) = yes_ref.get()
        {
            let _ = b.focus();
        }
    });
    view! {
        <Show when=move || confirm.pending.get().is_some()>
            <div class="fixed inset-0 z-40 flex items-center justify-center bg-slate-900/50 p-4"
                on:keydown=move |ev| if ev.key() == "Escape" { confirm.answer(false) }>
                <div role="alertdialog" aria-modal="true" aria-labelledby="confirm-title" aria-describedby="confirm-text"
                    class="w-full max-w-md space-y-4 rounded bg-white p-5 shadow-lg" data-testid="confirm-dialog">
                    <h2 id="confirm-title" class="text-lg font-semibold">{move || i18n.t(k!("confirm.title"))}</h2>
                    <p id="confirm-text" class="text-slate-700">{move || confirm.pending.get().unwrap_or_default()}</p>
                    <div class="flex justify-end gap-2">
                        <button type="button" class=BUTTON_SECONDARY data-testid="confirm-no" on:click=move |_| confirm.answer(false)>
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
