//! Tests of the kube adapter against fake API servers.

mod api_requests;
mod fake_apiserver;
mod mock_api;
mod status_sync;
