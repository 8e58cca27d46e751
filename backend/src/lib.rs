//! Anteroom's server: the REST API, the prequeue and its watcher, the store, and the cluster
//! adapters. `main.rs` is a thin CLI over this library so tests can build the real app.

pub mod app;
pub mod auth;
pub mod cli;
pub mod cluster;
pub mod config;
pub mod error;
pub mod etag;
pub mod extract;
pub mod field_rule;
pub mod files;
pub mod forecasts;
pub mod healthcheck;
pub mod http;
pub mod i18n;
pub mod jobs;
pub mod notebooks;
pub mod notifications;
pub mod prequeue;
pub mod queues;
pub mod quotas;
pub mod settings;
pub mod signals;
pub mod slots;
pub mod state;
pub mod store;
pub mod telemetry;
pub mod templates;
#[cfg(test)]
mod test_alloc;
pub mod tolerations;
pub mod usage;
pub mod users;
pub mod volumes;
pub mod watcher;

/// Tests count what they allocate ([`test_alloc`]): bounds on memory are checked, not assumed.
#[cfg(test)]
#[global_allocator]
static ALLOCATOR: test_alloc::Counting = test_alloc::Counting;
