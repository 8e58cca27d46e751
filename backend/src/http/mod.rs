//! The HTTP surface: the API routers of each domain, operations endpoints, the OpenAPI
//! document and its offline UI, and the embedded web UI with its SPA fallback.

pub mod assets;
pub mod csrf;
pub mod deadline;
pub mod health;
pub mod openapi;
pub mod paging;
pub mod security;
pub mod server;

use std::sync::OnceLock;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{Request, StatusCode};
use axum::response::IntoResponse;
use axum_prometheus::metrics_exporter_prometheus::PrometheusHandle;
use axum_prometheus::{EndpointLabel, PrometheusMetricLayer, PrometheusMetricLayerBuilder};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::compression::CompressionLayer;
use tower_http::trace::TraceLayer;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_swagger_ui::SwaggerUi;

use crate::error::ApiError;
use crate::state::AppState;

/// Request bodies above this are refused with 413 (spec/api.md).
pub const BODY_LIMIT_BYTES: usize = 1024 * 1024;

/// The metrics layer installs a process-wide recorder, which may happen only once; tests build
/// the app many times in one process, so both halves live here.
fn metrics() -> &'static (PrometheusMetricLayer<'static>, PrometheusHandle) {
    static METRICS: OnceLock<(PrometheusMetricLayer<'static>, PrometheusHandle)> = OnceLock::new();
    METRICS.get_or_init(|| {
        PrometheusMetricLayerBuilder::new()
            .with_endpoint_label_type(EndpointLabel::MatchedPathWithFallbackFn(unmatched_endpoint_label))
            .with_metrics_from_fn(recorder_with_buckets)
            .build_pair()
    })
}

/// Histogram buckets (seconds) per metric: with buckets, not the exporter's default summaries,
/// `histogram_quantile` works over any window and across replicas (a summary's quantiles can
/// be neither aggregated nor re-windowed). HTTP latency keeps axum-prometheus's buckets.
const BUCKETS: &[(&str, &[f64])] = &[
    (
        axum_prometheus::AXUM_HTTP_REQUESTS_DURATION_SECONDS,
        axum_prometheus::utils::SECONDS_DURATION_BUCKETS,
    ),
    (
        "anteroom_prequeue_round_seconds",
        &[0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0],
    ),
    (
        "anteroom_prequeue_activation_wait_seconds",
        &[
            1.0, 5.0, 15.0, 30.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 14_400.0, 43_200.0, 86_400.0, 259_200.0,
            604_800.0,
        ],
    ),
];

/// The process-wide Prometheus recorder, installed, with [`BUCKETS`] and the exporter's
/// periodic upkeep (as axum-prometheus's default does).
fn recorder_with_buckets() -> PrometheusHandle {
    use axum_prometheus::metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
    let mut builder = PrometheusBuilder::new();
    for (name, buckets) in BUCKETS {
        builder = builder
            .set_buckets_for_metric(Matcher::Full((*name).to_owned()), buckets)
            .expect("bucket lists are not empty");
    }
    let recorder = builder.build_recorder();
    let handle = recorder.handle();
    let upkeep = handle.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(std::time::Duration::from_secs(5)).await;
            upkeep.run_upkeep();
        }
    });
    axum_prometheus::metrics::set_global_recorder(recorder).expect("the metrics recorder is installed once");
    crate::watcher::describe_metrics();
    handle
}

/// Installs the process-wide metrics recorder now (once): a metric counted before the router
/// is built — at start, by the store's checks — is kept, not dropped.
pub fn install_metrics_recorder() {
    metrics();
}

/// The `endpoint` label of a request no route matched. Labelling it with its raw path would
/// let anyone create unbounded metric series (one per URL tried), so such paths fall into a
/// few buckets.
fn unmatched_endpoint_label(path: &str) -> String {
    if path == "/api" || path.starts_with("/api/") {
        "/api/{unmatched}"
    } else if path.starts_with("/pkg/") {
        "/pkg/{asset}"
    } else {
        "/{ui}"
    }
    .to_string()
}

/// The Prometheus handle, for `/metrics`.
pub fn metrics_handle() -> &'static PrometheusHandle {
    &metrics().1
}

/// Operations anyone may call, without a token: health, readiness, login. An operation here
/// has no `security` in the OpenAPI document; a test holds every other one to a 401 without a
/// token.
fn public_routes() -> OpenApiRouter<AppState> {
    health::router().merge(crate::auth::handlers::public_router())
}

/// Operations of every logged-in user; mounted behind [`crate::auth::require_user`].
fn user_routes() -> OpenApiRouter<AppState> {
    crate::auth::handlers::router()
        .merge(crate::cluster::handlers::router())
        .merge(crate::queues::handlers::router())
        .merge(crate::settings::handlers::router())
        .merge(crate::jobs::handlers::router())
        .merge(crate::volumes::handlers::router())
        .merge(crate::templates::handlers::router())
        .merge(crate::usage::handlers::router())
        .merge(crate::notifications::handlers::router())
        .merge(crate::notebooks::handlers::router())
}

/// Operations under `/api/v1/admin`; mounted behind [`crate::auth::require_admin`], so an
/// admin handler is protected by where it is mounted, not by an extractor it must remember.
fn admin_routes() -> OpenApiRouter<AppState> {
    crate::users::handlers::admin_router()
        .merge(crate::cluster::handlers::admin_router())
        .merge(crate::queues::handlers::admin_router())
        .merge(crate::usage::budget_handlers::admin_router())
        .merge(crate::quotas::handlers::admin_router())
        .merge(crate::tolerations::handlers::admin_router())
        .merge(crate::volumes::handlers::admin_router())
        .merge(crate::settings::handlers::admin_router())
        .merge(crate::jobs::handlers::admin_router())
        .merge(crate::notifications::handlers::admin_router())
}

/// The API's routes with their guards (when `state` is given) and the OpenAPI description.
fn assemble(state: Option<&AppState>) -> (Router<AppState>, utoipa::openapi::OpenApi) {
    let (mut user, mut admin) = (user_routes(), admin_routes());
    if let Some(state) = state {
        user = user.route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::auth::require_user,
        ));
        admin = admin.route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::auth::require_admin,
        ));
    }
    debug_assert!(
        admin
            .get_openapi()
            .paths
            .paths
            .keys()
            .all(|p| p.starts_with("/api/v1/admin/")),
        "the admin router holds /api/v1/admin paths only"
    );
    let (router, mut spec) = OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .merge(public_routes())
        .merge(user)
        .merge(admin)
        .split_for_parts();
    document_unavailable(&mut spec);
    document_json_bodies(&mut spec);
    (router, spec)
}

/// Every operation that needs a token reads the caller from the database first, so each can
/// answer 503 `database_unavailable`; the ones that hash a password can also answer `busy`.
/// Said once here rather than on every handler, so no operation can forget it.
fn document_unavailable(spec: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::schema::{Object, Ref, Type};
    use utoipa::openapi::{ContentBuilder, HeaderBuilder, ResponseBuilder};
    let response = ResponseBuilder::new()
        .description(
            "`database_unavailable`: the database does not answer (`busy`: too many passwords \
             being checked at once); retry after `Retry-After` seconds",
        )
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorBody")))
                .build(),
        )
        .header(
            "Retry-After",
            HeaderBuilder::new()
                .schema(Some(Object::with_type(Type::Integer)))
                .description(Some("Seconds to wait"))
                .build(),
        )
        .build();
    for item in spec.paths.paths.values_mut() {
        let operations = [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
        ];
        for op in operations.into_iter().flatten() {
            let secured = op.security.as_ref().is_some_and(|s| !s.is_empty());
            if secured {
                op.responses
                    .responses
                    .entry("503".to_string())
                    .or_insert_with(|| response.clone().into());
            }
        }
    }
}

/// Every operation that takes a body reads it through `ApiJson`, which refuses any other content
/// type than JSON with 415: said once here, so no operation can forget it.
fn document_json_bodies(spec: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{ContentBuilder, ResponseBuilder};
    let response = ResponseBuilder::new()
        .description("`unsupported_media_type`: the body was not sent as `Content-Type: application/json`")
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(utoipa::openapi::schema::Ref::from_schema_name("ErrorBody")))
                .build(),
        )
        .build();
    for item in spec.paths.paths.values_mut() {
        let operations = [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
        ];
        for op in operations.into_iter().flatten() {
            if op.request_body.is_some() {
                op.responses
                    .responses
                    .entry("415".to_string())
                    .or_insert_with(|| response.clone().into());
            }
        }
    }
}

/// The OpenAPI document, without starting a server (`anteroom openapi`).
pub fn openapi_document() -> utoipa::openapi::OpenApi {
    assemble(None).1
}

/// The whole application router.
pub fn router(state: AppState) -> Router {
    let (api, spec) = assemble(Some(&state));
    let docs: Router<AppState> = SwaggerUi::new("/api/docs").url("/api/openapi.json", spec).into();
    let portal = Router::new()
        .merge(api)
        .merge(docs)
        .merge(crate::notebooks::portal_router())
        .method_not_allowed_fallback(method_not_allowed)
        .fallback(assets::fallback)
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(axum::middleware::from_fn_with_state(state.clone(), deadline::request_deadline))
        .layer(DefaultBodyLimit::max(BODY_LIMIT_BYTES))
        .layer(CompressionLayer::new())
        .layer(metrics().0.clone())
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|req: &Request<_>| {
                    tracing::info_span!("http", http.method = %req.method(), http.path = %req.uri().path())
                })
                .on_response(|res: &axum::response::Response, latency: Duration, _span: &tracing::Span| {
                    tracing::debug!(http.status = res.status().as_u16(), duration_ms = latency.as_millis() as u64, "response");
                }),
        )
        // Before routing and extractors: a refused write reaches no handler.
        .layer(axum::middleware::from_fn_with_state(state.clone(), csrf::refuse_cross_site))
        // Outermost, so every answer gets the headers: errors, fallbacks and panics included.
        .layer(axum::middleware::from_fn_with_state(state.clone(), security::headers))
        .with_state(state.clone());
    // Before all of the portal, its routing included: a notebook host's request goes to the
    // notebook origin's router and never sees the portal's routes, session or layers.
    Router::new()
        .fallback_service(portal)
        .layer(axum::middleware::from_fn_with_state(
            (state.clone(), notebook_origin_router(state)),
            crate::notebooks::host::dispatch,
        ))
}

/// The notebook origins' router, with the layers both origins share (panics answered, metrics,
/// tracing); its own headers and cross-site rule are inside it.
fn notebook_origin_router(state: AppState) -> Router {
    crate::notebooks::host::router(state)
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(metrics().0.clone())
        .layer(TraceLayer::new_for_http().make_span_with(|req: &Request<_>| {
            tracing::info_span!("notebook", http.method = %req.method(), http.path = %req.uri().path())
        }))
}

/// A handler that panics answers 500 in the API's error shape (the cause is logged, never
/// sent) instead of dropping the connection.
fn panic_response(panic: Box<dyn std::any::Any + Send + 'static>) -> axum::response::Response {
    let what = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("a panic without a message");
    ApiError::internal(anyhow::anyhow!("handler panicked: {what}")).into_response()
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this method is not allowed on this path",
    )
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::routing::get;
    use tower::ServiceExt;

    use super::*;

    async fn boom() -> &'static str {
        panic!("secret detail")
    }

    #[tokio::test]
    async fn a_panicking_handler_answers_500_in_the_json_shape_without_its_message() {
        let app: Router = Router::new()
            .route("/boom", get(boom))
            .layer(CatchPanicLayer::custom(panic_response));
        let res = app
            .oneshot(Request::get("/boom").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let bytes = axum::body::to_bytes(res.into_body(), 1 << 16).await.unwrap();
        let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(body["error"]["code"], "internal");
        assert!(!String::from_utf8_lossy(&bytes).contains("secret detail"));
    }
}
