//! Types both sides of Anteroom use: the server (`anteroom`) and the WASM client
//! (`anteroom-web`). Everything here compiles to `wasm32-unknown-unknown`, so it
//! holds no I/O; server-only derives (OpenAPI schemas) sit behind the `openapi`
//! feature.

pub mod api;
pub mod i18n;
pub mod names;
pub mod scheduling;
pub mod shell_words;
