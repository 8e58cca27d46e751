//! Versions of what admins and owners edit as a whole (settings, templates, queues…): a read
//! answers the object's `ETag`, a write may carry it back in `If-Match`, and a write whose
//! `If-Match` no longer names the stored object is refused (412 `precondition_failed`) and
//! changes nothing — two people saving at once cannot silently overwrite each other.
//!
//! The tag is a hash of the object as the API shows it: the same object, the same tag, on every
//! replica and across restarts. Pure; the handlers compare it inside the write's transaction.

use axum::Json;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::error::ApiError;

/// The `ETag` of `object` as the API shows it: a quoted hash of its JSON.
pub fn of(object: &impl Serialize) -> String {
    let json = serde_json::to_vec(object).unwrap_or_default();
    let digest = Sha256::digest(&json);
    let hex: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}

/// The `If-Match` of a request, if it has one (an unreadable one counts as a tag nobody has).
pub fn if_match(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::IF_MATCH)
        .map(|v| v.to_str().map(str::to_owned).unwrap_or_else(|_| "\"\"".to_owned()))
}

/// Whether an `If-Match` value admits the stored object tagged `current`: `*`, or a list of
/// tags one of which is it. The comparison is strong (RFC 9110 §13.1.1): a weak `W/` tag never
/// matches, since a write must be made on exactly the stored object.
pub fn matches(if_match: &str, current: &str) -> bool {
    if_match.trim() == "*" || if_match.split(',').map(str::trim).any(|tag| tag == current)
}

/// 412 `precondition_failed` unless `if_match` (when the request sent one) admits `current`.
pub fn check(if_match: Option<&str>, current: &str) -> Result<(), ApiError> {
    match if_match {
        Some(tag) if !matches(tag, current) => Err(stale(current)),
        _ => Ok(()),
    }
}

/// 412 `precondition_failed`: the object is now tagged `current`, not what the write read.
pub fn stale(current: &str) -> ApiError {
    ApiError::new(
        StatusCode::PRECONDITION_FAILED,
        "precondition_failed",
        "this was changed by someone else since you read it: read it again and redo your change",
    )
    .with_details(serde_json::json!({ "etag": current }))
}

/// The `ETag` header of `tag`.
pub fn header(tag: &str) -> (header::HeaderName, HeaderValue) {
    (
        header::ETAG,
        HeaderValue::from_str(tag).unwrap_or_else(|_| HeaderValue::from_static("\"\"")),
    )
}

/// An answer carrying an object as JSON and its `ETag`.
#[derive(Debug)]
pub struct Tagged<T> {
    tag: String,
    body: T,
}

impl<T: Serialize> Tagged<T> {
    /// `body` tagged by what it shows: for objects shown exactly as stored.
    pub fn new(body: T) -> Self {
        Tagged { tag: of(&body), body }
    }

    /// `body` tagged by a version read with it: for objects shown with what changes without a
    /// write (a queue's usage), whose tag must follow only the writes.
    pub fn versioned(tag: String, body: T) -> Self {
        Tagged { tag, body }
    }
}

impl<T: Serialize> IntoResponse for Tagged<T> {
    fn into_response(self) -> Response {
        ([header(&self.tag)], Json(self.body)).into_response()
    }
}

/// The request's `If-Match`, for a handler that passes it to the write it guards.
#[derive(Debug)]
pub struct IfMatch(pub Option<String>);

impl<S: Send + Sync> FromRequestParts<S> for IfMatch {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(IfMatch(if_match(&parts.headers)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_follows_the_object_and_if_match_admits_only_it() {
        let a = of(&serde_json::json!({"x": 1}));
        assert_eq!(a, of(&serde_json::json!({"x": 1})), "the same object, the same tag");
        let b = of(&serde_json::json!({"x": 2}));
        assert_ne!(a, b);
        assert!(a.starts_with('"') && a.ends_with('"'));
        assert!(matches(&a, &a));
        assert!(!matches(&format!("W/{a}"), &a), "strong comparison");
        assert!(matches(&format!("{b}, {a}"), &a));
        assert!(matches("*", &a));
        assert!(!matches(&b, &a));
        assert!(!matches("", &a));
        assert!(check(None, &a).is_ok(), "no If-Match: no condition");
        let refused = check(Some(&b), &a).unwrap_err();
        assert_eq!(
            (refused.status, refused.code),
            (StatusCode::PRECONDITION_FAILED, "precondition_failed")
        );
    }
}
