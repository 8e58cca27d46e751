//! What the notebook tests share: a stub notebook server on 127.0.0.1 that echoes what it was
//! sent (the simulated cluster's `sim_notebook_upstream` points at it), and the way through
//! the portal's handoff to a notebook's own origin.
#![allow(dead_code)] // each test file uses its part

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anteroom_tests::api::call;
use anteroom_tests::driven::*;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The request heads the stub received, lowercased.
pub type Seen = Arc<Mutex<Vec<String>>>;

/// A stub notebook: a WebSocket handshake gets an echo of every message; `/slow` sends its
/// headers and then nothing; any other request a JSON of its method, path and headers, with a
/// cookie of the notebook's own and attempts to set Anteroom's cookies.
pub async fn stub_notebook() -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen: Seen = Arc::default();
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            tokio::spawn(serve(stream, log.clone()));
        }
    });
    (base, seen)
}

pub async fn serve(mut stream: TcpStream, seen: Seen) {
    // Look at the head without taking it: a WebSocket handshake is tungstenite's to read.
    let mut peeked = vec![0u8; 8192];
    let head = loop {
        let n = stream.peek(&mut peeked).await.unwrap();
        let text = String::from_utf8_lossy(&peeked[..n]).to_lowercase();
        if text.contains("\r\n\r\n") || n == peeked.len() {
            break text;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let head = head[..head.find("\r\n\r\n").unwrap_or(head.len())].to_owned();
    seen.lock().unwrap().push(head.clone());
    if head.contains("upgrade: websocket") {
        let Ok(mut ws) = tokio_tungstenite::accept_async(stream).await else {
            return;
        };
        while let Some(Ok(message)) = ws.next().await {
            if message.is_text() || message.is_binary() {
                ws.send(message).await.unwrap();
            }
        }
        return;
    }
    let mut buf = vec![0u8; head.len() + 4];
    stream.read_exact(&mut buf).await.unwrap();
    let mut lines = head.lines();
    let request_line = lines.next().unwrap_or_default().to_owned();
    if request_line.contains("/slow") {
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\nstart")
            .await;
        // Then nothing, for longer than any test waits.
        tokio::time::sleep(Duration::from_secs(300)).await;
        return;
    }
    let headers: Vec<String> = lines.map(str::to_owned).collect();
    let body = json!({"requestLine": request_line, "headers": headers}).to_string();
    let answer = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Set-Cookie: anteroom_session=planted; Path=/\r\nSet-Cookie: anteroom_notebook=planted; Path=/\r\n\
         Set-Cookie: _xsrf=notebook\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(answer.as_bytes()).await.unwrap();
}

pub fn notebook(name: &str, kind: &str) -> Value {
    json!({"name": name, "kind": kind, "tasks": [{"name": "main", "replicas": 1,
        "image": "quay.io/jupyter/base-notebook", "resources": {"cpu": "1", "memory": "2Gi"}}]})
}

/// Job `id`'s notebook host, as the server names it.
pub fn host(d: &Driven, id: i64) -> String {
    format!("j{id}.localhost:{}", d.app.addr.port())
}

/// A client that reaches job `id`'s notebook origin (its name resolved to the test server).
pub fn notebook_client(d: &Driven, id: i64) -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .resolve(&format!("j{id}.localhost"), d.app.addr)
        .build()
        .unwrap()
}

/// `POST /api/v1/jobs/{id}/notebook` as `token`.
pub async fn handoff(d: &Driven, token: &str, id: i64, body: Value) -> (u16, Value) {
    let (status, answer) = call(
        &d.app,
        "POST",
        &format!("/api/v1/jobs/{id}/notebook"),
        token,
        Some(body),
    )
    .await;
    (status.as_u16(), answer)
}

/// Follows a handoff link: status, `Set-Cookie`, `Location`, body.
pub async fn arrive(d: &Driven, id: i64, url: &str) -> (u16, Vec<String>, Option<String>, String) {
    let res = notebook_client(d, id)
        .get(url)
        .header("Accept", "text/html")
        .header("Sec-Fetch-Mode", "navigate")
        .header("Sec-Fetch-Site", "cross-site")
        .header("Sec-Fetch-Dest", "document")
        .send()
        .await
        .unwrap();
    let cookies = res
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect();
    let location = res.headers().get("location").map(|v| v.to_str().unwrap().to_owned());
    (res.status().as_u16(), cookies, location, res.text().await.unwrap())
}

/// The notebook cookie (`name=value`) a handoff for `token` sets.
pub async fn open_as(d: &Driven, token: &str, id: i64, as_admin: bool) -> String {
    let (status, answer) = handoff(d, token, id, json!({"asAdmin": as_admin})).await;
    assert_eq!(status, 201, "{answer}");
    let url = answer["url"].as_str().unwrap().to_owned();
    let (status, cookies, _, body) = arrive(d, id, &url).await;
    assert_eq!(status, 303, "{body}");
    cookies[0].split(';').next().unwrap().to_owned()
}

/// `GET path` on job `id`'s notebook origin with `cookie`: status, `Set-Cookie`s, body.
pub async fn get_notebook(d: &Driven, id: i64, cookie: &str, path: &str) -> (u16, Vec<String>, String) {
    let res = notebook_client(d, id)
        .get(format!("http://{}{path}", host(d, id)))
        .header("Cookie", format!("{cookie}; _xsrf=abc"))
        .send()
        .await
        .unwrap();
    let cookies = res
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect();
    (res.status().as_u16(), cookies, res.text().await.unwrap())
}

/// The headers the stub notebook says it was sent.
pub fn sent_headers(body: &str) -> Vec<String> {
    let echo: Value = serde_json::from_str(body).unwrap_or_else(|_| panic!("an echo: {body}"));
    echo["headers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap().to_owned())
        .collect()
}

/// A running notebook of `ann`'s behind the stub, with the app, tokens and the stub's log.
pub struct World {
    pub d: Driven,
    pub ann: String,
    pub bob: String,
    pub admin: String,
    pub id: i64,
    pub seen: Seen,
}

pub async fn world(configure: impl FnOnce(&mut anteroom::config::Config) + Send + 'static) -> World {
    let (upstream, seen) = stub_notebook().await;
    let d = Driven::start_configured(None, "", move |c| {
        c.sim_notebook_upstream = Some(upstream);
        configure(c);
    })
    .await;
    let ann = d.app.user_token("ann").await;
    let bob = d.app.user_token("bob").await;
    let admin = d.app.admin_token().await;
    let (id, _) = submit(&d, &ann, notebook("lab", "jupyter")).await;
    d.settle().await;
    assert_eq!(phase(&d, &ann, id).await, "Running");
    World {
        d,
        ann,
        bob,
        admin,
        id,
        seen,
    }
}
