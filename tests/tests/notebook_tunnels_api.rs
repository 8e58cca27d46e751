//! Notebook tunnels and requests (issue 40): a WebSocket opens only from the notebook's own
//! origin and closes when the session behind it ends; one user's tunnels and requests in
//! flight are capped apart from the portal's streams, and an idle answer is cut. Against the
//! stub notebook of `notebook_stub`.

mod notebook_stub;

use std::time::Duration;

use anteroom_tests::api::{call, code};
use futures::{SinkExt, StreamExt};
use notebook_stub::*;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

#[tokio::test]
async fn a_websocket_opens_only_from_the_notebook_s_own_pages_and_closes_when_the_session_ends() {
    let World { d, ann, id, seen, .. } = world(|_| {}).await;
    let cookie = open_as(&d, &ann, id, false).await;
    let connect = |origin: &'static str, site: Option<&'static str>| {
        let (url, cookie) = (
            format!("ws://{}/jobs/{id}/open/api/kernels/k1/channels", host(&d, id)),
            cookie.clone(),
        );
        let addr = d.app.addr;
        let own = format!("http://{}", host(&d, id));
        async move {
            let mut request = url.into_client_request().unwrap();
            let headers = request.headers_mut();
            headers.insert("cookie", cookie.parse().unwrap());
            let origin = if origin == "own" { own } else { origin.to_owned() };
            headers.insert("origin", origin.parse().unwrap());
            if let Some(site) = site {
                headers.insert("sec-fetch-site", site.parse().unwrap());
            }
            let tcp = TcpStream::connect(addr).await.unwrap();
            tokio_tungstenite::client_async(request, tcp).await
        }
    };
    // From a foreign page, a sibling notebook, the portal: refused before the notebook.
    for (origin, site) in [
        ("https://evil.example", None),
        ("http://j999.localhost", None),
        ("http://127.0.0.1", None),
        ("own", Some("same-site")),
    ] {
        let refused = connect(origin, site).await;
        assert!(
            matches!(&refused, Err(tokio_tungstenite::tungstenite::Error::Http(r)) if r.status() == 403),
            "{origin} {site:?}: {refused:?}"
        );
    }
    assert!(
        !seen.lock().unwrap().iter().any(|h| h.contains("upgrade: websocket")),
        "no refused handshake reached the notebook"
    );
    // From its own page: frames both ways.
    let (mut ws, response) = connect("own", Some("same-origin")).await.expect("the WebSocket opens");
    assert_eq!(response.status(), 101);
    for text in ["ping", "a longer message to the kernel"] {
        ws.send(Message::text(text)).await.unwrap();
        let echoed = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("an echo within 10 s")
            .unwrap()
            .unwrap();
        assert_eq!(echoed.into_text().unwrap().as_str(), text);
    }
    let handshake = seen.lock().unwrap().last().unwrap().clone();
    assert!(!handshake.contains("anteroom_"), "{handshake}");
    // A logout closes the open tunnel at its next check.
    let (status, _) = call(&d.app, "POST", "/api/v1/auth/logout", &ann, None).await;
    assert_eq!(status, 204);
    let ended = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match ws.next().await {
                Some(Ok(Message::Text(_) | Message::Binary(_))) => {}
                _ => return,
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the tunnel closed after the logout");
}

#[tokio::test]
async fn one_user_s_notebook_tunnels_and_requests_are_capped_and_an_idle_answer_is_cut() {
    let World { d, ann, id, .. } = world(|c| {
        c.notebook_limits.max_tunnels_per_user = 1;
        c.notebook_limits.max_requests_per_user = 1;
        // Long enough that the next request surely comes while the slow answer holds the slot.
        c.notebook_limits.idle_timeout = Duration::from_secs(5);
    })
    .await;
    let cookie = open_as(&d, &ann, id, false).await;
    // One slow answer holds the one request slot until it is cut.
    let slow = notebook_client(&d, id)
        .get(format!("http://{}/jobs/{id}/open/slow", host(&d, id)))
        .header("Cookie", cookie.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(slow.status(), 200);
    let (status, _, body) = get_notebook(&d, id, &cookie, &format!("/jobs/{id}/open/")).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(
        code(&serde_json::from_str(&body).unwrap()),
        "too_many_notebook_requests"
    );
    // The notebook sent 5 of 100 bytes, then nothing: the answer is cut, not held.
    let body = tokio::time::timeout(Duration::from_secs(30), slow.bytes()).await;
    assert!(
        matches!(body, Ok(Err(_))),
        "the idle answer ended in an error: {body:?}"
    );
    let (status, _, _) = get_notebook(&d, id, &cookie, &format!("/jobs/{id}/open/")).await;
    assert_eq!(status, 200, "its slot is free again");

    // One tunnel at a time.
    let open = || {
        let url = format!("ws://{}/jobs/{id}/open/api/kernels/k1/channels", host(&d, id));
        let (cookie, origin, addr) = (cookie.clone(), format!("http://{}", host(&d, id)), d.app.addr);
        async move {
            let mut request = url.into_client_request().unwrap();
            request.headers_mut().insert("cookie", cookie.parse().unwrap());
            request.headers_mut().insert("origin", origin.parse().unwrap());
            tokio_tungstenite::client_async(request, TcpStream::connect(addr).await.unwrap()).await
        }
    };
    let (first, _) = open().await.expect("one tunnel");
    let second = open().await;
    assert!(
        matches!(&second, Err(tokio_tungstenite::tungstenite::Error::Http(r)) if r.status() == 429),
        "{second:?}"
    );
    drop(first);
}
