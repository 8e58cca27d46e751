//! Anteroom's web UI: a client-side-rendered Leptos app. The server embeds the compiled WASM
//! and serves `index.html` for every page path; routing happens here, data comes from the same
//! REST API every client uses.

pub mod api;
pub mod app;
pub mod auth;
pub mod components;
pub mod format;
pub mod i18n;
pub mod layout;
pub mod live;
pub mod locale;
pub mod pages;
pub mod theme;

use wasm_bindgen::prelude::wasm_bindgen;

/// Entry point called by the generated JS glue once the module is instantiated.
#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(app::App);
}
