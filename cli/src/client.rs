//! The REST API over HTTP: the bearer token on every request, the API's error shape turned into
//! [`CliError::Api`], and requests that are safe to repeat (reads, and a submission carrying an
//! `Idempotency-Key`) retried when the server did not answer or answered 502–504.

use std::time::Duration;

use anteroom_shared::api::ErrorBody;
use reqwest::{Method, RequestBuilder, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{CliError, CliResult};

/// How many times a repeat-safe request is sent at most.
pub const ATTEMPTS: u32 = 3;

/// A client of one server, as one user (or nobody, before login).
#[derive(Clone)]
pub struct Api {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
    /// The pause before the second attempt (doubled each time); short in tests.
    backoff: Duration,
}

/// Whether a request may be sent again when no answer came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repeat {
    /// Reads, deletes and keyed submissions: the server does it once whatever the count.
    Safe,
    /// Deletes: safe to repeat, and a repeat answered 404 or 409 (gone, already finished)
    /// means the attempt whose answer was lost did it.
    Delete,
    /// Anything else: one attempt.
    Once,
}

impl Api {
    /// A client of `base` (`http://host:8080`, with or without a trailing slash).
    pub fn new(base: &str, token: Option<String>) -> CliResult<Self> {
        Self::trusting(base, token, None)
    }

    /// A client that also trusts `extra_root` (an internal certificate authority, PEM), beside
    /// the usual public roots.
    pub fn trusting(base: &str, token: Option<String>, extra_root: Option<&[u8]>) -> CliResult<Self> {
        let base = normalise(base);
        let parsed =
            reqwest::Url::parse(&base).map_err(|e| CliError::Usage(format!("the server URL {base:?}: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
            return Err(CliError::Usage(format!(
                "the server URL must be http:// or https:// and name a host, not {base:?}"
            )));
        }
        let mut builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("ar/", env!("CARGO_PKG_VERSION")));
        if let Some(pem) = extra_root {
            let roots = reqwest::Certificate::from_pem_bundle(pem)
                .map_err(|e| CliError::Usage(format!("--cacert: not PEM certificates: {e}")))?;
            if roots.is_empty() {
                return Err(CliError::Usage("--cacert: no certificate in the file".into()));
            }
            for root in roots {
                builder = builder.add_root_certificate(root);
            }
        }
        let http = builder.build().map_err(|e| CliError::Usage(e.to_string()))?;
        Ok(Self {
            http,
            base,
            token,
            backoff: Duration::from_millis(500),
        })
    }

    /// The same client without the token (to log in).
    pub fn without_token(&self) -> Self {
        Self {
            token: None,
            ..self.clone()
        }
    }

    /// The same client with another pause between attempts.
    pub fn with_backoff(mut self, backoff: Duration) -> Self {
        self.backoff = backoff;
        self
    }

    /// The server's URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// A request to `path` (`/api/v1/jobs`), with the token when there is one.
    pub fn request(&self, method: Method, path: &str) -> RequestBuilder {
        let builder = self.http.request(method, format!("{}{path}", self.base));
        match &self.token {
            Some(token) => builder.bearer_auth(token),
            None => builder,
        }
    }

    /// Sends what `make` builds; a 2xx answer is returned, any other becomes an error. A
    /// repeat-safe request is sent again (up to [`ATTEMPTS`] times, pausing between) when no
    /// answer came or the answer was 502, 503 or 504.
    pub async fn send(&self, repeat: Repeat, make: impl Fn() -> RequestBuilder) -> CliResult<Response> {
        let attempts = if repeat == Repeat::Once { 1 } else { ATTEMPTS };
        let mut pause = self.backoff;
        let mut attempt = 1;
        loop {
            let request = make()
                .build()
                .map_err(|e| CliError::Usage(format!("cannot build the request: {}", describe(&e))))?;
            let error = match self.http.execute(request).await {
                Ok(response) if response.status().is_success() => return Ok(response),
                Ok(response)
                    if repeat == Repeat::Delete && attempt > 1 && matches!(response.status().as_u16(), 404 | 409) =>
                {
                    return Ok(response);
                }
                Ok(response) => self.error_of(response).await,
                Err(e) => CliError::Unreachable {
                    url: self.base.clone(),
                    reason: describe(&e),
                },
            };
            let transient = matches!(
                &error,
                CliError::Unreachable { .. } | CliError::Api { status: 502..=504, .. }
            );
            if !transient || attempt >= attempts {
                return Err(error);
            }
            tokio::time::sleep(pause).await;
            pause *= 2;
            attempt += 1;
        }
    }

    /// `GET path?query` as JSON.
    pub async fn get<T: DeserializeOwned>(&self, path: &str, query: &[(&str, String)]) -> CliResult<T> {
        let response = self
            .send(Repeat::Safe, || self.request(Method::GET, path).query(query))
            .await?;
        self.json(response).await
    }

    /// A JSON body sent with `method`, a JSON answer read.
    pub async fn send_json<B: Serialize, T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: &B,
        repeat: Repeat,
    ) -> CliResult<T> {
        let response = self
            .send(repeat, || self.request(method.clone(), path).json(body))
            .await?;
        self.json(response).await
    }

    /// `DELETE path`.
    pub async fn delete(&self, path: &str) -> CliResult<()> {
        self.send(Repeat::Delete, || self.request(Method::DELETE, path))
            .await
            .map(drop)
    }

    /// The answer's JSON body.
    pub async fn json<T: DeserializeOwned>(&self, response: Response) -> CliResult<T> {
        let bytes = response.bytes().await.map_err(|e| CliError::Unreachable {
            url: self.base.clone(),
            reason: describe(&e),
        })?;
        // Not what an Anteroom answers: a proxy's page or another server, so "failing" (3).
        serde_json::from_slice(&bytes).map_err(|e| CliError::Api {
            status: 502,
            code: "unexpected_answer".into(),
            message: format!(
                "the server's answer is not what ar expects ({e}); is {} an Anteroom?",
                self.base
            ),
            details: None,
        })
    }

    /// An error answer as [`CliError::Api`]: the API's code and sentence, or the status.
    pub async fn error_of(&self, response: Response) -> CliError {
        let status = response.status();
        let bytes = response.bytes().await.unwrap_or_default();
        match serde_json::from_slice::<ErrorBody>(&bytes) {
            Ok(body) => CliError::Api {
                status: status.as_u16(),
                code: body.error.code,
                message: body.error.message,
                details: body.error.details,
            },
            Err(_) => CliError::Api {
                status: status.as_u16(),
                code: format!("http_{}", status.as_u16()),
                message: status.canonical_reason().unwrap_or("unexpected answer").to_owned(),
                details: None,
            },
        }
    }
}

/// A server URL as compared and saved: without trailing slashes.
pub fn normalise(url: &str) -> String {
    url.trim().trim_end_matches('/').to_owned()
}

/// One path segment, percent-encoded (a queue named `../x` stays one segment).
pub fn segment(text: &str) -> String {
    let dots = text == "." || text == "..";
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        let plain = b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'~') || (b == b'.' && !dots);
        if plain {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// True for a plain-HTTP URL to a host other than this machine: the password and the token
/// would cross the network readable.
pub fn is_cleartext_remote(url: &str) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return false;
    };
    let host = parsed.host_str().unwrap_or_default();
    let loopback = host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    parsed.scheme() == "http" && !loopback
}

/// The HTTP client's error with its causes, which carry the useful part ("Connection refused").
fn describe(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::net::TcpListener;

    /// A server that hangs up on the first `drops` connections without answering, then
    /// answers `200 {}`; it hands back every request's head.
    async fn flaky_server(drops: usize) -> (String, tokio::task::JoinHandle<Vec<String>>) {
        server(drops, "200 OK", "{}").await
    }

    /// As [`flaky_server`], answering `status` and `body` in the end.
    async fn server(
        drops: usize,
        status: &'static str,
        body: &'static str,
    ) -> (String, tokio::task::JoinHandle<Vec<String>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            let mut heads = Vec::new();
            for n in 0.. {
                let Ok(Ok((mut socket, _))) = tokio::time::timeout(Duration::from_secs(2), listener.accept()).await
                else {
                    break;
                };
                let mut buf = vec![0u8; 64 * 1024];
                let mut len = 0;
                while !buf[..len].windows(4).any(|w| w == b"\r\n\r\n") {
                    let read = socket.read(&mut buf[len..]).await.unwrap();
                    if read == 0 {
                        break;
                    }
                    len += read;
                }
                heads.push(String::from_utf8_lossy(&buf[..len]).to_lowercase());
                if n < drops {
                    drop(socket);
                    continue;
                }
                let answer = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                socket.write_all(answer.as_bytes()).await.unwrap();
                break;
            }
            heads
        });
        (url, task)
    }

    #[tokio::test]
    async fn a_keyed_request_is_sent_again_with_the_same_key_when_no_answer_came() {
        let (url, server) = flaky_server(2).await;
        let api = Api::new(&url, Some("t".into()))
            .unwrap()
            .with_backoff(Duration::from_millis(1));
        let answer = api
            .send(Repeat::Safe, || {
                api.request(Method::POST, "/api/v1/jobs")
                    .header("Idempotency-Key", "k-1")
                    .json(&serde_json::json!({}))
            })
            .await;
        assert!(answer.is_ok(), "{:?}", answer.err());
        let heads = server.await.unwrap();
        assert_eq!(heads.len(), 3, "two dropped attempts and the answered one");
        for head in &heads {
            assert!(head.contains("idempotency-key: k-1"), "{head}");
            assert!(head.contains("authorization: bearer t"), "{head}");
        }
    }

    #[tokio::test]
    async fn a_request_not_safe_to_repeat_is_sent_once() {
        let (url, server) = flaky_server(1).await;
        let api = Api::new(&url, None).unwrap().with_backoff(Duration::from_millis(1));
        let answer = api
            .send(Repeat::Once, || api.request(Method::POST, "/api/v1/auth/login"))
            .await;
        assert!(matches!(answer, Err(CliError::Unreachable { .. })), "{answer:?}");
        // The server waits for a second connection that never comes.
        let heads = server.await.unwrap();
        assert_eq!(heads.len(), 1);
    }

    #[tokio::test]
    async fn an_unanswered_safe_request_gives_up_after_its_attempts() {
        let (url, server) = flaky_server(usize::MAX).await;
        let api = Api::new(&url, None).unwrap().with_backoff(Duration::from_millis(1));
        let answer = api.send(Repeat::Safe, || api.request(Method::GET, "/x")).await;
        assert!(matches!(answer, Err(CliError::Unreachable { .. })), "{answer:?}");
        assert_eq!(server.await.unwrap().len(), ATTEMPTS as usize);
    }

    #[test]
    fn segments_are_encoded_and_cleartext_to_another_host_is_noticed() {
        assert_eq!(segment("gpu-a100_x.y"), "gpu-a100_x.y");
        assert_eq!(segment("../queue-quotas/3"), "..%2Fqueue-quotas%2F3");
        assert_eq!(segment(".."), "%2E%2E");
        assert_eq!(segment("a b"), "a%20b");
        assert!(is_cleartext_remote("http://cluster.example:8080"));
        assert!(is_cleartext_remote("http://10.0.0.5"));
        assert!(!is_cleartext_remote("http://127.0.0.1:8080"));
        assert!(!is_cleartext_remote("http://localhost:8080"));
        assert!(!is_cleartext_remote("http://[::1]:8080"));
        assert!(!is_cleartext_remote("https://cluster.example"));
    }

    #[tokio::test]
    async fn a_delete_whose_answer_was_lost_is_done_when_the_repeat_finds_it_gone() {
        const FINISHED: &str = r#"{"error":{"code":"already_finished","message":"job 1 already finished"}}"#;
        // No answer, then 409 on the repeat: the lost attempt did it.
        let (url, lost) = server(1, "409 Conflict", FINISHED).await;
        let api = Api::new(&url, None).unwrap().with_backoff(Duration::from_millis(1));
        assert!(api.delete("/api/v1/jobs/1").await.is_ok());
        assert_eq!(lost.await.unwrap().len(), 2);
        // A 409 to the first attempt is a real refusal.
        let (url, first) = server(0, "409 Conflict", FINISHED).await;
        let api = Api::new(&url, None).unwrap().with_backoff(Duration::from_millis(1));
        let refused = api.delete("/api/v1/jobs/1").await;
        assert_eq!(
            refused.as_ref().err().and_then(CliError::code),
            Some("already_finished"),
            "{refused:?}"
        );
        assert_eq!(first.await.unwrap().len(), 1);
    }

    #[test]
    fn an_extra_authority_must_be_a_certificate() {
        let refused = Api::trusting("https://h", None, Some(b"not a certificate"));
        assert!(matches!(refused, Err(CliError::Usage(_))), "{:?}", refused.err());
    }

    #[test]
    fn a_url_without_a_scheme_is_a_usage_mistake() {
        assert!(matches!(Api::new("http://", None), Err(CliError::Usage(_))));
        assert!(matches!(Api::new("http://h:99999", None), Err(CliError::Usage(_))));
        assert!(matches!(Api::new("ftp://h", None), Err(CliError::Usage(_))));
        assert!(matches!(Api::new("127.0.0.1:8080", None), Err(CliError::Usage(_))));
        assert_eq!(Api::new("http://h:1/", None).unwrap().base(), "http://h:1");
    }
}
