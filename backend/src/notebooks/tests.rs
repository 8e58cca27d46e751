//! What the notebook proxy forwards and answers, header by header.

use axum::http::{HeaderMap, HeaderValue};

use super::*;

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(*k, HeaderValue::from_str(v).unwrap());
    }
    h
}

const SESSION: [&str; 2] = ["anteroom_session", "__Host-anteroom_session"];

#[test]
fn a_setting_names_an_http_server_and_nothing_else() {
    assert_eq!(upstream_base("http://127.0.0.1:8888").unwrap(), "http://127.0.0.1:8888");
    assert_eq!(
        upstream_base(" http://lab.local:8888/ ").unwrap(),
        "http://lab.local:8888"
    );
    for bad in [
        "https://lab:8888",
        "lab:8888",
        "http://lab:8888/jobs/1/open/",
        "http://lab:8888/?token=x",
        "http://user:pw@lab:8888",
        "not a url",
    ] {
        assert!(upstream_base(bad).is_err(), "{bad}");
    }
}

#[test]
fn the_notebook_never_gets_the_portal_s_credentials_nor_made_up_forwarding() {
    let incoming = headers(&[
        ("host", "portal.example"),
        ("authorization", "Bearer t"),
        ("cookie", "anteroom_session=t; _xsrf=abc; _oauth2_proxy=sso"),
        ("cookie", "__Host-anteroom_session=t"),
        ("x-forwarded-for", "1.2.3.4"),
        ("forwarded", "for=1.2.3.4"),
        ("connection", "keep-alive"),
        ("accept", "text/html"),
    ]);
    let out = forwarded_headers(&incoming, &SESSION, true, 7);
    assert_eq!(out.get_all("cookie").iter().collect::<Vec<_>>(), ["_xsrf=abc"]);
    assert!(out.get("authorization").is_none());
    assert!(out.get("x-forwarded-for").is_none() && out.get("forwarded").is_none());
    assert!(out.get("connection").is_none(), "hop-by-hop");
    assert_eq!(out["host"], "portal.example", "kept: Jupyter compares Origin with it");
    assert_eq!(out["x-forwarded-proto"], "https");
    assert_eq!(out["x-forwarded-prefix"], "/jobs/7/open/");
    assert_eq!(out["accept"], "text/html");
}

#[test]
fn a_websocket_handshake_keeps_its_upgrade() {
    let incoming = headers(&[("connection", "keep-alive, Upgrade"), ("upgrade", "websocket")]);
    assert!(is_websocket(&incoming));
    let out = forwarded_headers(&incoming, &SESSION, false, 1);
    assert_eq!(out["connection"], "Upgrade");
    assert_eq!(out["upgrade"], "websocket");
    assert!(
        !is_websocket(&headers(&[("upgrade", "websocket")])),
        "no Connection: Upgrade"
    );
}

#[test]
fn a_notebook_cannot_set_the_portal_s_session_cookie() {
    let upstream = headers(&[
        ("set-cookie", "anteroom_session=planted; Path=/jobs/7/open/"),
        ("set-cookie", "__HOST-anteroom_session=planted; Path=/; Secure"),
        // Nameless: a browser sends it as `anteroom_session=…` to the API.
        ("set-cookie", "=anteroom_session=planted; Path=/api"),
        ("set-cookie", "garbage-without-a-pair"),
        ("set-cookie", "_xsrf=portal; Path=/"),
        ("set-cookie", "_xsrf=other-job; Path=/jobs/8/open/"),
        ("set-cookie", "_xsrf=sibling; Path=/jobs/7/open/; Domain=example.org"),
        ("set-cookie", "_xsrf=ok; Path=/jobs/7/open/"),
        ("set-cookie", "username-x=ok"),
        ("service-worker-allowed", "/"),
        ("clear-site-data", "\"cookies\""),
        ("transfer-encoding", "chunked"),
        ("content-type", "text/html"),
    ]);
    let out = answered_headers(&upstream, &SESSION, false, 7);
    assert_eq!(
        out.get_all("set-cookie").iter().collect::<Vec<_>>(),
        ["_xsrf=ok; Path=/jobs/7/open/", "username-x=ok"]
    );
    assert!(out.get("transfer-encoding").is_none());
    assert!(out.get("service-worker-allowed").is_none() && out.get("clear-site-data").is_none());
    assert_eq!(out["content-type"], "text/html");
    let switching = answered_headers(
        &headers(&[("connection", "Upgrade"), ("upgrade", "websocket")]),
        &SESSION,
        true,
        7,
    );
    assert_eq!(switching["upgrade"], "websocket");
}

#[test]
fn a_path_that_would_leave_the_job_s_base_is_refused() {
    assert!(path_is_plain("/jobs/5/open/lab/tree/a.b/c..d"));
    for bad in [
        "/jobs/5/open/../../7/open/api",
        "/jobs/5/open/%2e%2e/%2E%2E/7/open/",
        "/jobs/5/open/./x",
        "/jobs/5/open/a%2f..%2f..%2f7",
        "/jobs/5/open/a\\..",
    ] {
        assert!(!path_is_plain(bad), "{bad}");
    }
}
