//! Opening a notebook through Anteroom (issue 24, point 3): `/jobs/{id}/open/` proxies HTTP and
//! WebSocket to the notebook for its owner and admins only, and Anteroom's session never reaches
//! the notebook nor can be set by it. The notebook here is a stub on 127.0.0.1 that echoes what
//! it was sent (the simulated cluster's `sim_notebook_upstream` points at it).

use std::sync::{Arc, Mutex};

use anteroom_tests::api::{call, code};
use anteroom_tests::driven::*;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// The request heads the stub received, lowercased.
type Seen = Arc<Mutex<Vec<String>>>;

/// A stub notebook: a WebSocket handshake gets an echo of every message; any other request a
/// JSON of its method, path and headers, with a cookie of the notebook's own and an attempt to
/// set Anteroom's session cookie.
async fn stub_notebook() -> (String, Seen) {
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

async fn serve(mut stream: TcpStream, seen: Seen) {
    // Look at the head without taking it: a WebSocket handshake is tungstenite's to read.
    let mut peeked = vec![0u8; 8192];
    let head = loop {
        let n = stream.peek(&mut peeked).await.unwrap();
        let text = String::from_utf8_lossy(&peeked[..n]).to_lowercase();
        if text.contains("\r\n\r\n") || n == peeked.len() {
            break text;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
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
    let headers: Vec<String> = lines.map(str::to_owned).collect();
    let body = json!({"requestLine": request_line, "headers": headers}).to_string();
    let answer = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Set-Cookie: anteroom_session=planted; Path=/\r\nSet-Cookie: _xsrf=notebook\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(answer.as_bytes()).await.unwrap();
}

/// `GET path` with a session cookie (and the notebook's own cookie): status, `Set-Cookie`s,
/// the body.
async fn open(d: &Driven, token: Option<&str>, path: &str) -> (u16, Vec<String>, String) {
    let mut req = d
        .app
        .client
        .get(d.app.url(path))
        .header("Accept-Language", "ja,en;q=0.5");
    if let Some(token) = token {
        req = req.header("Cookie", format!("anteroom_session={token}; _xsrf=abc"));
    }
    let res = req.send().await.unwrap();
    let cookies = res
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect();
    (res.status().as_u16(), cookies, res.text().await.unwrap())
}

/// `GET path` as a browser loads a page (`Sec-Fetch-Dest: document`), in Japanese: status
/// and body.
async fn open_page(d: &Driven, token: Option<&str>, path: &str) -> (u16, String) {
    let mut req = d
        .app
        .client
        .get(d.app.url(path))
        .header("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
        .header("Sec-Fetch-Dest", "document")
        .header("Accept-Language", "ja,en;q=0.5");
    if let Some(token) = token {
        req = req.header("Cookie", format!("anteroom_session={token}"));
    }
    let res = req.send().await.unwrap();
    let html = res
        .headers()
        .get("content-type")
        .is_some_and(|v| v.to_str().unwrap().starts_with("text/html"));
    let status = res.status().as_u16();
    let body = res.text().await.unwrap();
    assert!(html, "a page, not JSON: {body}");
    (status, body)
}

fn notebook(name: &str, kind: &str) -> Value {
    json!({"name": name, "kind": kind, "tasks": [{"name": "main", "replicas": 1,
        "image": "quay.io/jupyter/base-notebook", "resources": {"cpu": "1", "memory": "2Gi"}}]})
}

#[tokio::test]
async fn a_notebook_opens_through_the_proxy_for_its_owner_only() {
    let (upstream, seen) = stub_notebook().await;
    let d = Driven::start_configured(None, "", move |c| c.sim_notebook_upstream = Some(upstream)).await;
    let ann = d.app.user_token("ann").await;
    let bob = d.app.user_token("bob").await;
    let admin = d.app.admin_token().await;
    let (id, _) = submit(&d, &ann, notebook("lab", "jupyter")).await;
    d.settle().await;
    assert_eq!(phase(&d, &ann, id).await, "Running");

    let (status, cookies, body) = open(&d, Some(&ann), &format!("/jobs/{id}/open/lab?x=1")).await;
    assert_eq!(status, 200, "{body}");
    let echo: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(echo["requestLine"], format!("get /jobs/{id}/open/lab?x=1 http/1.1"));
    let sent: Vec<&str> = echo["headers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap())
        .collect();
    assert!(
        sent.contains(&"cookie: _xsrf=abc"),
        "the notebook's own cookie goes through: {sent:?}"
    );
    assert!(
        !sent.iter().any(|h| h.contains("anteroom_session")),
        "the session never leaves: {sent:?}"
    );
    assert!(!sent.iter().any(|h| h.starts_with("authorization")), "{sent:?}");
    assert!(
        sent.contains(&format!("x-forwarded-prefix: /jobs/{id}/open/").as_str()),
        "{sent:?}"
    );
    assert_eq!(
        cookies,
        ["_xsrf=notebook"],
        "a notebook cannot set the portal's session"
    );
    // Not even an admin opens someone else's notebook: its scripts would run with the admin's
    // session on Anteroom's origin.
    let (status, _, _) = open(&d, Some(&admin), &format!("/jobs/{id}/open/")).await;
    assert_eq!(status, 404);
    // A path that would leave this notebook's base path never reaches it.
    let (status, _, _) = open(&d, Some(&ann), &format!("/jobs/{id}/open/%2e%2e/%2e%2e/9/open/")).await;
    assert_eq!(status, 404);

    // Anyone else: the job does not exist for them; nobody without a session gets in.
    let (status, _, body) = open(&d, Some(&bob), &format!("/jobs/{id}/open/")).await;
    assert_eq!(status, 404, "{body}");
    let (status, _, _) = open(&d, None, &format!("/jobs/{id}/open/")).await;
    assert_eq!(status, 401);
    let before = seen.lock().unwrap().len();
    assert_eq!(before, 1, "refused requests never reached the notebook");

    // Without the slash: redirected, so the notebook's relative links resolve under it.
    let res = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(d.app.url(&format!("/jobs/{id}/open?lab=1")))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 308);
    assert_eq!(res.headers()["location"], format!("/jobs/{id}/open/?lab=1"));

    // A WebSocket through the proxy, with real frames both ways.
    let ws_url = d
        .app
        .url(&format!("/jobs/{id}/open/api/kernels/k1/channels"))
        .replacen("http", "ws", 1);
    let mut request = ws_url.clone().into_client_request().unwrap();
    request
        .headers_mut()
        .insert("cookie", format!("anteroom_session={ann}; _xsrf=abc").parse().unwrap());
    let (mut ws, response) = tokio_tungstenite::connect_async(request)
        .await
        .expect("the WebSocket opens");
    assert_eq!(response.status(), 101);
    for text in ["ping", "a longer message to the kernel"] {
        ws.send(Message::text(text)).await.unwrap();
        let echoed = tokio::time::timeout(std::time::Duration::from_secs(10), ws.next())
            .await
            .expect("an echo within 10 s")
            .unwrap()
            .unwrap();
        assert_eq!(echoed.into_text().unwrap().as_str(), text);
    }
    ws.close(None).await.unwrap();
    let handshake = seen.lock().unwrap().last().unwrap().clone();
    assert!(handshake.contains("upgrade: websocket"), "{handshake}");
    assert!(
        !handshake.contains("anteroom_session"),
        "the session never leaves: {handshake}"
    );
    // Another user's WebSocket handshake is refused before the notebook.
    let mut request = ws_url.into_client_request().unwrap();
    request
        .headers_mut()
        .insert("cookie", format!("anteroom_session={bob}").parse().unwrap());
    let refused = tokio_tungstenite::connect_async(request).await;
    assert!(
        matches!(&refused, Err(tokio_tungstenite::tungstenite::Error::Http(r)) if r.status() == 404),
        "{refused:?}"
    );
}

#[tokio::test]
async fn only_running_notebooks_open_and_a_simulated_one_says_so_in_the_viewer_s_language() {
    let d = Driven::start(None, "").await;
    let ann = d.app.user_token("ann").await;
    let (id, _) = submit(&d, &ann, notebook("ide", "webide")).await;
    // Created in the cluster, not placed yet.
    let (status, _, body) = open(&d, Some(&ann), &format!("/jobs/{id}/open/")).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["error"]["code"],
        "notebook_not_running"
    );
    // A person opening it (the Open button, a bookmark) gets a page in their language with
    // the way on, not the API's JSON: the job's page, or the login page without a session.
    let (status, page) = open_page(&d, Some(&ann), &format!("/jobs/{id}/open/")).await;
    assert_eq!(status, 409, "{page}");
    assert!(page.contains("<html lang=\"ja\">"), "{page}");
    assert!(page.contains("ノートブックはジョブの実行後に開けます。"), "{page}");
    assert!(
        page.contains(&format!("<a href=\"/jobs/{id}\">ジョブに戻る</a>")),
        "{page}"
    );
    let (status, page) = open_page(&d, None, &format!("/jobs/{id}/open/tree")).await;
    assert_eq!(status, 401, "{page}");
    assert!(page.contains(&format!("<a href=\"/login?next=/jobs/{id}\">")), "{page}");
    // A browser that sends no Sec-Fetch-Dest is judged by its Accept; a script's fetch
    // (Sec-Fetch-Dest: empty) and a POST get the API's JSON.
    for (method, dest, accept) in [
        ("GET", None, "text/html"),
        ("GET", Some("empty"), "text/html"),
        ("POST", Some("document"), "text/html"),
    ] {
        let mut req = d
            .app
            .client
            .request(method.parse().unwrap(), d.app.url(&format!("/jobs/{id}/open/")))
            .header("Accept", accept)
            .header("Origin", d.app.url("").trim_end_matches('/'))
            .header("Cookie", format!("anteroom_session={ann}"));
        if let Some(dest) = dest {
            req = req.header("Sec-Fetch-Dest", dest);
        }
        let res = req.send().await.unwrap();
        let kind = res.headers()["content-type"].to_str().unwrap().to_owned();
        let page = dest.is_none();
        assert_eq!(kind.starts_with("text/html"), page, "{method} {dest:?}: {kind}");
        assert_eq!(res.status(), 409, "{method} {dest:?}");
        if page {
            assert_eq!(res.headers()["cache-control"], "no-store");
        }
    }
    d.settle().await;
    let (status, _, page) = open(&d, Some(&ann), &format!("/jobs/{id}/open/")).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("<html lang=\"ja\">"), "{page}");
    assert!(page.contains("シミュレーション"), "{page}");
    assert!(page.contains("ide"), "names the job: {page}");
    assert!(
        !page.contains("ANTEROOM_SIM_NOTEBOOK_UPSTREAM"),
        "the setting is for admins: {page}"
    );

    // A batch job is no notebook.
    let (batch, _) = submit(&d, &ann, timed_job("batch", json!({"cpu": "1"}), None)).await;
    let (status, body) = call(&d.app, "GET", &format!("/jobs/{batch}/open/"), &ann, None).await;
    assert_eq!((status.as_u16(), code(&body)), (404, "not_a_notebook"), "{body}");
}
