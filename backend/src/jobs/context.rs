//! The jobs service's handles taken from the application state, for the HTTP handlers (single
//! and bulk) that call it. A floor below both, so neither imports the other.

use super::Context;
use crate::state::AppState;

/// What the jobs service needs of `state`.
pub fn context(state: &AppState) -> Context<'_> {
    Context {
        db: &state.db,
        db_read: &state.db_read,
        cluster: &state.cluster,
        settings: &state.settings,
        signals: &state.signals,
        sequencer: &state.sequencer,
        activator: &state.activator,
        clock: &state.clock,
        allowed_images: &state.config.allowed_images,
        request_timeout: state.config.http_limits.request_timeout,
    }
}
