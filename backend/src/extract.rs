//! Extractors that answer malformed input with the API's JSON error shape (422 naming the
//! field, 413 for an oversized body) instead of axum's plain-text rejections.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::{ApiError, FieldError};

/// A JSON body, sent as `Content-Type: application/json` (415 `unsupported_media_type`
/// otherwise); the body must parse as `T`.
///
/// The content type is not a formality: a browser sends a `text/plain` or form body to another
/// origin without asking first (no CORS preflight), so a parser that took any type would let a
/// foreign page's form post reach every write of the API.
#[derive(Debug, Clone)]
pub struct ApiJson<T>(pub T);

/// True for `application/json`, with or without parameters (`; charset=utf-8`), in any case.
pub fn is_json_content_type(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

impl<T, S> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        if !is_json_content_type(req.headers()) {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "the request body must be sent as Content-Type: application/json",
            ));
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|rej| {
            if rej.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "payload_too_large",
                    "the request body is over 1 MiB",
                )
            } else {
                ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "invalid_body",
                    "the request body could not be read",
                )
            }
        })?;
        parse_json(&bytes).map(ApiJson)
    }
}

/// Parses a JSON object, naming the path of the first offending field (`tasks[0].replicas`).
///
/// Every body of the API is an object. The check matters because serde's derived structs also
/// accept a JSON array of their fields in order (`["admin", "secret"]` would log in): such a
/// body is refused here, before serde sees it.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first.is_some_and(|&b| b != b'{') {
        return Err(ApiError::validation(vec![FieldError::new(
            "body",
            "the request body must be a JSON object",
        )]));
    }
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        // serde_path_to_error says "?" for a syntax error and "." for the root.
        let field = if path == "." || path == "?" || path.is_empty() {
            "body".to_string()
        } else {
            path
        };
        ApiError::validation(vec![FieldError::new(field, inner.to_string())])
    })
}

/// Query parameters; a parameter that does not parse is named in the 422.
#[derive(Debug, Clone)]
pub struct ApiQuery<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or_default();
        let de = serde_urlencoded::Deserializer::new(form_urlencoded_parse(query));
        serde_path_to_error::deserialize(de).map(ApiQuery).map_err(|err| {
            let path = err.path().to_string();
            let field = if path == "." || path == "?" {
                "query".to_string()
            } else {
                path
            };
            ApiError::validation(vec![FieldError::new(field, err.into_inner().to_string())])
        })
    }
}

fn form_urlencoded_parse(query: &str) -> form_urlencoded::Parse<'_> {
    form_urlencoded::parse(query.as_bytes())
}

/// Path parameters; one that does not parse (e.g. `/jobs/abc`) is a 422 naming it.
#[derive(Debug, Clone)]
pub struct ApiPath<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(v)| ApiPath(v))
            .map_err(|rej| ApiError::validation(vec![FieldError::new("path", rej.body_text())]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Body {
        name: String,
        tasks: Vec<Task>,
    }

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Task {
        replicas: u32,
    }

    #[test]
    fn a_wrong_type_deep_in_the_body_is_named_by_its_path() {
        let err = parse_json::<Body>(br#"{"name":"x","tasks":[{"replicas":"two"}]}"#).unwrap_err();
        assert_eq!(err.status, StatusCode::UNPROCESSABLE_ENTITY);
        let details = err.details.unwrap().to_string();
        assert!(details.contains("tasks[0].replicas"), "{details}");
    }

    #[test]
    fn an_unknown_field_is_a_validation_error() {
        let err = parse_json::<Body>(br#"{"name":"x","tasks":[],"extra":1}"#).unwrap_err();
        assert_eq!(err.code, "validation_failed");
        assert!(err.message.contains("extra"), "{}", err.message);
    }

    #[test]
    fn only_application_json_is_a_json_content_type() {
        let with = |ct: &str| {
            let mut h = axum::http::HeaderMap::new();
            h.insert(axum::http::header::CONTENT_TYPE, ct.parse().unwrap());
            is_json_content_type(&h)
        };
        assert!(with("application/json"));
        assert!(with("Application/JSON; charset=utf-8"));
        for other in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data",
            "application/jsonp",
            "",
        ] {
            assert!(!with(other), "{other}");
        }
        assert!(!is_json_content_type(&axum::http::HeaderMap::new()));
    }

    #[test]
    fn broken_json_is_a_validation_error_on_the_body() {
        let err = parse_json::<Body>(b"{not json").unwrap_err();
        assert_eq!(err.code, "validation_failed");
        assert!(err.details.unwrap().to_string().contains("\"body\""));
    }
}
