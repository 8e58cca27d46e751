//! A side panel for editing one object of a catalogue while its table stays in view: the admin
//! pages show their objects as a table or tree first and open the form here. Escape, the close
//! button or a click beside it closes it; it takes the focus when it opens and gives it back
//! to what had it when it closes.

use leptos::prelude::*;

use crate::i18n::{k, use_i18n};

/// Tab past the last control comes back to the first (Shift+Tab the other way): a modal keeps
/// the focus inside it.
fn keep_focus_inside(panel: NodeRef<leptos::html::Aside>, ev: &leptos::ev::KeyboardEvent) {
    use wasm_bindgen::JsCast;
    let Some(panel) = panel.get_untracked() else { return };
    let Ok(list) = panel.query_selector_all(
        "a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled])",
    ) else {
        return;
    };
    let controls: Vec<web_sys::HtmlElement> = (0..list.length())
        .filter_map(|i| list.item(i))
        .filter_map(|n| n.dyn_into::<web_sys::HtmlElement>().ok())
        .collect();
    let (Some(first), Some(last)) = (controls.first(), controls.last()) else {
        return;
    };
    let active = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.active_element());
    let at = |el: &web_sys::HtmlElement| {
        active
            .as_ref()
            .is_some_and(|a| a == el.unchecked_ref::<web_sys::Element>())
    };
    let panel_itself = active
        .as_ref()
        .is_some_and(|a| a == panel.unchecked_ref::<web_sys::Element>());
    if ev.shift_key() && (at(first) || panel_itself) {
        ev.prevent_default();
        let _ = last.focus();
    } else if !ev.shift_key() && at(last) {
        ev.prevent_default();
        let _ = first.focus();
    }
}

/// The panel, shown while `open` holds.
#[component]
pub fn Drawer(
    /// Whether it is shown.
    #[prop(into)]
    open: Signal<bool>,
    /// Its title (what is being edited).
    #[prop(into)]
    title: Signal<String>,
    /// Asked to close (Escape, the close button, the backdrop).
    on_close: Callback<()>,
    /// The form.
    children: ChildrenFn,
) -> impl IntoView {
    let i18n = use_i18n();
    let panel: NodeRef<leptos::html::Aside> = NodeRef::new();
    // Who had the focus before: it gets it back when the panel closes.
    let return_focus = StoredValue::new_local(None::<web_sys::HtmlElement>);
    Effect::new(move |was_open: Option<bool>| {
        use wasm_bindgen::JsCast;
        let now_open = open.get();
        if now_open && was_open != Some(true) {
            return_focus.set_value(
                web_sys::window()
                    .and_then(|w| w.document())
                    .and_then(|d| d.active_element())
                    .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok()),
            );
        }
        if !now_open && was_open == Some(true) {
            // Back where it was; a control no longer in the page (its row was rebuilt) leaves
            // the focus on the page's title rather than nowhere.
            let target = return_focus.get_value().filter(|el| el.is_connected()).or_else(|| {
                web_sys::window()
                    .and_then(|w| w.document())
                    .and_then(|d| d.query_selector("[data-testid=page-title]").ok().flatten())
                    .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok())
            });
            if let Some(el) = target {
                if !el.has_attribute("tabindex") && el.tag_name() == "H1" {
                    let _ = el.set_attribute("tabindex", "-1");
                }
                let _ = el.focus();
            }
        }
        now_open
    });
    Effect::new(move |_| {
        if let Some(p) = panel.get() {
            let _ = p.focus();
        }
    });
    let children = StoredValue::new(children);
    view! {
        <Show when=move || open.get()>
            <div class="fixed inset-0 z-30 bg-slate-950/40" aria-hidden="true" on:click=move |_| on_close.run(())></div>
            <aside node_ref=panel role="dialog" aria-modal="true" aria-labelledby="drawer-title" tabindex="-1"
                class="fixed inset-y-0 right-0 z-30 flex w-full max-w-2xl flex-col overflow-y-auto bg-white p-5 shadow-2xl focus:outline-none dark:bg-slate-900"
                data-testid="drawer"
                on:keydown=move |ev: leptos::ev::KeyboardEvent| match ev.key().as_str() {
                    "Escape" => on_close.run(()),
                    "Tab" => keep_focus_inside(panel, &ev),
                    _ => {}
                }>
                <div class="mb-4 flex items-center gap-3">
                    <h2 id="drawer-title" class="text-lg font-semibold">{move || title.get()}</h2>
                    <button type="button" class="ml-auto rounded px-2 py-1 text-slate-600 hover:bg-slate-100 focus:outline-none focus-visible:ring-2 focus-visible:ring-violet-500 dark:text-slate-300 dark:hover:bg-slate-800"
                        data-testid="drawer-close" on:click=move |_| on_close.run(())>
                        <span aria-hidden="true">"✕"</span>
                        <span class="sr-only">{move || i18n.t(k!("common.close"))}</span>
                    </button>
                </div>
                {move || children.with_value(|c| c())}
            </aside>
        </Show>
    }
}
