//! `/healthz` (the process is up), `/readyz` (its dependencies answer), `/metrics`.

use anteroom_shared::api::Readiness;
use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::state::AppState;
use crate::store;

/// The operations routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(healthz))
        .routes(routes!(readyz))
        .routes(routes!(metrics))
}

/// Liveness: answers while the process serves requests.
#[utoipa::path(get, path = "/healthz", tag = "operations", responses((status = 200, description = "Up", body = String)))]
async fn healthz() -> &'static str {
    "ok"
}

/// Readiness: the database answers, migrations are applied, the cluster answers.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "operations",
    responses(
        (status = 200, description = "Ready", body = Readiness),
        (status = 503, description = "A dependency is not ready", body = Readiness),
    )
)]
async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    // The read pool only: on SQLite the writer is one connection, and a long write holding
    // it would make a ping wait, turning the pod unready for being busy.
    let database = store::ping(&state.db_read).await;
    let migrations = database && store::migrations_applied(&state.db_read).await.unwrap_or(false);
    let cluster = state.cluster.is_reachable().await;
    let ready = database && migrations && cluster;
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        Json(Readiness {
            ready,
            database,
            migrations,
            cluster,
        }),
    )
}

/// Prometheus text exposition.
#[utoipa::path(get, path = "/metrics", tag = "operations", responses((status = 200, description = "Prometheus text format", body = String, content_type = "text/plain")))]
async fn metrics() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        crate::http::metrics_handle().render(),
    )
}
