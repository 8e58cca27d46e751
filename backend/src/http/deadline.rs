//! Every route but the event stream and the submissions answers within
//! `request_timeout_seconds` (503 `timeout` after it): a handler stuck on a locked database or
//! a hung cluster call must not hold its connection. A floor below the handlers that keep their
//! own deadline and answer the same way ([`out_of_time`]).

use std::time::Duration;

use axum::http::StatusCode;
use axum::response::IntoResponse;

use crate::error::ApiError;
use crate::state::AppState;

/// The one route that answers for as long as the client listens.
const STREAM_PATH: &str = "/api/v1/jobs/events/stream";
/// The submission, which times its own steps (`jobs::submit`); so does a run again
/// (`/api/v1/jobs/{id}/resubmit`).
const SUBMIT_PATH: &str = "/api/v1/jobs";

/// Every route but the event stream and the submission answers within
/// `request_timeout_seconds`: a handler stuck on a locked database or a hung cluster call must
/// not hold its connection (and the client) for ever. The handler's future is dropped, which
/// rolls back an open transaction.
pub async fn request_deadline(
    axum::extract::State(state): axum::extract::State<AppState>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    // The stream answers for as long as the client listens; a submission keeps its own
    // deadline up to its admission (a job written must be answered as written, never as 503).
    let path = req.uri().path();
    let post = req.method() == axum::http::Method::POST;
    let resubmit = path
        .strip_prefix("/api/v1/jobs/")
        .is_some_and(|rest| rest.ends_with("/resubmit"));
    if path == STREAM_PATH || (post && (path == SUBMIT_PATH || resubmit)) {
        return next.run(req).await;
    }
    within(state.config.http_limits.request_timeout, next.run(req)).await
}

/// 503 `timeout`: the request did not finish within `request_timeout_seconds`.
pub fn out_of_time() -> ApiError {
    let mut e = ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "timeout",
        "the server could not answer in time; try again",
    );
    e.retry_after_seconds = Some(1);
    e
}

/// `answer`, or 503 `timeout` once `limit` has passed (the future is dropped).
async fn within(
    limit: Duration,
    answer: impl std::future::Future<Output = axum::response::Response>,
) -> axum::response::Response {
    match tokio::time::timeout(limit, answer).await {
        Ok(res) => res,
        Err(_) => {
            tracing::warn!(timeout_s = limit.as_secs(), "a request ran out of time");
            out_of_time().into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_request_past_its_deadline_answers_503_timeout_and_a_quick_one_its_answer() {
        let slow = async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            StatusCode::OK.into_response()
        };
        let res = within(Duration::from_secs(30), slow).await;
        assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(res.headers()["retry-after"], "1");
        let bytes = axum::body::to_bytes(res.into_body(), 1 << 16).await.unwrap();
        let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(body["error"]["code"], "timeout");
        let quick = async { StatusCode::NO_CONTENT.into_response() };
        assert_eq!(
            within(Duration::from_secs(30), quick).await.status(),
            StatusCode::NO_CONTENT
        );
    }
}
