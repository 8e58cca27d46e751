//! Webhook notifications over real HTTP (issue 27, point 6): subscriptions only to the hosts
//! the admins allow, deliveries signed, at least once and in order per job, retried with
//! backoff, written in the transaction of what happened. A receiver runs in the test.

use std::sync::{Arc, Mutex};

use anteroom::cluster::clock::Clock;
use anteroom::notifications::sender::{NetworkRules, deliver_due};
use anteroom_tests::api::{call, settings};
use anteroom_tests::both_driven;
use anteroom_tests::driven::*;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

/// One call the receiver got: its signature and delivery headers, its body as text and as
/// JSON.
type Call = (String, String, String, Value);

/// What the receiver got, in arrival order.
#[derive(Clone, Default)]
struct Received {
    calls: Arc<Mutex<Vec<Call>>>,
    /// Answer 500 to this many calls first.
    fail_first: Arc<Mutex<usize>>,
}

impl Received {
    fn events(&self) -> Vec<(i64, String)> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .map(|(_, _, _, body)| {
                (
                    body["jobId"].as_i64().unwrap(),
                    body["event"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }
}

/// A receiver on 127.0.0.1: answers 500 while `fail_first` lasts, then 204.
async fn receiver() -> (String, Received) {
    use axum::http::HeaderMap;
    let received = Received::default();
    let state = received.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: String| {
            let state = state.clone();
            async move {
                let header = |n: &str| {
                    headers
                        .get(n)
                        .map(|v| v.to_str().unwrap().to_owned())
                        .unwrap_or_default()
                };
                let mut fail = state.fail_first.lock().unwrap();
                let json: Value = serde_json::from_str(&body).unwrap();
                state.calls.lock().unwrap().push((
                    header("x-anteroom-signature"),
                    header("x-anteroom-delivery"),
                    body.clone(),
                    json,
                ));
                if *fail > 0 {
                    *fail -= 1;
                    axum::http::StatusCode::INTERNAL_SERVER_ERROR
                } else {
                    axum::http::StatusCode::NO_CONTENT
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{address}/hook"), received)
}

/// `t=…,v1=…` checked with the secret, apart from the server's code.
fn signed_by(signature: &str, secret: &str, body: &str) -> bool {
    let Some((t, v1)) = signature.strip_prefix("t=").and_then(|rest| rest.split_once(",v1=")) else {
        return false;
    };
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.{body}").as_bytes());
    let hex: String = mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
    hex == v1
}

async fn waited(d: &Driven) -> u64 {
    anteroom::notifications::enqueue_waited(&d.app.state.db, d.clock.now())
        .await
        .unwrap()
}

async fn pass(d: &Driven) -> anteroom::notifications::sender::Sent {
    deliver_due(&d.app.state.db, &NetworkRules::default(), d.clock.now())
        .await
        .expect("a pass")
}

/// `host:port` of a receiver's URL.
fn host_of(url: &str) -> String {
    url.trim_start_matches("http://").split('/').next().unwrap().to_owned()
}

async fn allow(d: &Driven, admin: &str, hosts: Value) -> (u16, Value) {
    let (status, body) = call(
        &d.app,
        "PUT",
        "/api/v1/admin/webhook-destinations",
        admin,
        Some(json!({"hosts": hosts})),
    )
    .await;
    (status.as_u16(), body)
}

async fn a_subscription_is_told_in_order_signed_and_again_until_it_answers(db: Option<String>) {
    let d = Driven::start(db, "").await;
    let admin = d.app.admin_token().await;
    let (ann, bob) = (d.app.user_token("ann").await, d.app.user_token("bob").await);
    let (url, received) = receiver().await;

    // Nowhere is allowed at first; the admins' list refuses what is not a host.
    let (status, body) = call(
        &d.app,
        "POST",
        "/api/v1/webhooks",
        &ann,
        Some(json!({"url": url, "events": ["started"]})),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["error"]["details"]["fields"][0]["code"], "destinationNotAllowed",
        "{body}"
    );
    let (status, body) = allow(&d, &admin, json!(["127.0.0.1", "http://x.org", "*.corp.example"])).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["details"]["fields"][0]["field"], "hosts[1]", "{body}");
    let here = host_of(&url);
    let (status, body) = allow(&d, &admin, json!([here, "*.Corp.example", here])).await;
    assert_eq!((status, body["hosts"].clone()), (200, json!(["*.corp.example", here])));
    let (status, _) = call(&d.app, "GET", "/api/v1/admin/webhook-destinations", &ann, None).await;
    assert_eq!(status, 403, "admins only");

    // Bad subscriptions.
    for (bad, field) in [
        (json!({"url": "ftp://127.0.0.1/x", "events": ["started"]}), "url"),
        (json!({"url": "http://10.1.2.3/x", "events": ["started"]}), "url"),
        // The address is listed with its port: another port of it is not.
        (json!({"url": "http://127.0.0.1/x", "events": ["started"]}), "url"),
        (json!({"url": url, "events": []}), "events"),
        (json!({"url": url, "events": ["waited"]}), "waitedSeconds"),
        (
            json!({"url": url, "events": ["started"], "waitedSeconds": 600}),
            "waitedSeconds",
        ),
        (
            json!({"url": url, "events": ["waited"], "waitedSeconds": 5}),
            "waitedSeconds",
        ),
    ] {
        let (status, body) = call(&d.app, "POST", "/api/v1/webhooks", &ann, Some(bad.clone())).await;
        assert_eq!(status, 422, "{bad}: {body}");
        assert_eq!(body["error"]["details"]["fields"][0]["field"], field, "{bad}: {body}");
    }
    let (status, created) = call(
        &d.app,
        "POST",
        "/api/v1/webhooks",
        &ann,
        Some(json!({"url": url, "events": ["finished", "started", "failed", "started"]})),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let secret = created["secret"].as_str().unwrap().to_owned();
    let hook = created["webhook"]["id"].as_i64().unwrap();
    assert_eq!(created["webhook"]["events"], json!(["started", "failed", "finished"]));
    let listed = d.app.get_json("/api/v1/webhooks", Some(&ann)).await;
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert!(listed[0].get("secret").is_none(), "the secret is shown once: {listed}");
    assert_eq!(
        d.app.get_json("/api/v1/webhooks", Some(&bob)).await,
        json!([]),
        "another user's"
    );
    let (status, _) = call(&d.app, "DELETE", &format!("/api/v1/webhooks/{hook}"), &bob, None).await;
    assert_eq!(status, 404);

    // Ann's job starts and ends; Bob's is nobody's business here.
    let (job, _) = submit(&d, &ann, timed_job("quick", json!({"cpu": "1"}), Some(30))).await;
    submit(&d, &bob, timed_job("bobs", json!({"cpu": "1"}), Some(30))).await;
    d.settle().await;
    // The receiver fails twice: `started` is tried again after 10 s, then 20 s; `finished`,
    // written meanwhile, waits for it.
    *received.fail_first.lock().unwrap() = 2;
    let first = pass(&d).await;
    assert_eq!((first.delivered.len(), first.retried.len()), (0, 1), "{first:?}");
    d.advance(30).await;
    assert_eq!(phase(&d, &ann, job).await, "Completed");
    let second = pass(&d).await;
    assert_eq!(second.retried.len(), 1, "started again, finished held back: {second:?}");
    d.advance(20).await;
    let third = pass(&d).await;
    assert_eq!(
        (third.delivered.len(), third.retried.len()),
        (1, 0),
        "started: {third:?}"
    );
    // `finished` was not even read while `started` was pending: the next pass sends it.
    let fourth = pass(&d).await;
    assert_eq!(
        (fourth.delivered.len(), fourth.retried.len()),
        (1, 0),
        "finished: {fourth:?}"
    );
    assert_eq!(
        received.events(),
        [
            (job, "started".to_owned()),
            (job, "started".to_owned()),
            (job, "started".to_owned()),
            (job, "finished".to_owned())
        ]
    );
    for (signature, delivery, body, json) in received.calls.lock().unwrap().iter() {
        assert!(signed_by(signature, &secret, body), "{signature} {body}");
        assert!(!signed_by(signature, "another secret", body));
        assert_eq!(json["deliveryId"].to_string(), *delivery);
        assert_eq!(json["jobName"], "quick");
    }
    assert!(pass(&d).await.delivered.is_empty(), "nothing twice");

    let (status, deliveries) = call(&d.app, "GET", "/api/v1/webhooks/deliveries", &ann, None).await;
    assert_eq!(status, 200);
    let shown: Vec<(String, i64, bool)> = deliveries
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["event"].as_str().unwrap().to_owned(),
                x["attempts"].as_i64().unwrap(),
                x["deliveredAt"].is_string(),
            )
        })
        .collect();
    assert_eq!(
        shown,
        [("finished".to_owned(), 1, true), ("started".to_owned(), 3, true)]
    );
    assert_eq!(
        d.app.get_json("/api/v1/webhooks/deliveries", Some(&bob)).await,
        json!([])
    );

    // A host taken off the list: the next delivery is given up, not sent.
    let (failing, _) = submit(&d, &ann, {
        let mut body = timed_job("crash", json!({"cpu": "1"}), None);
        body["tasks"][0]["command"] = json!(["sh", "-c", "exit 3"]);
        body
    })
    .await;
    allow(&d, &admin, json!([])).await;
    d.settle().await;
    d.advance(1).await;
    assert_eq!(phase(&d, &ann, failing).await, "Failed");
    let given = pass(&d).await;
    assert!(given.delivered.is_empty() && !given.given_up.is_empty(), "{given:?}");
    assert_eq!(received.events().len(), 4);

    // Ended: its pending deliveries go with it.
    let (status, _) = call(&d.app, "DELETE", &format!("/api/v1/webhooks/{hook}"), &ann, None).await;
    assert_eq!(status, 204);
    assert_eq!(
        d.app.get_json("/api/v1/webhooks/deliveries", Some(&ann)).await,
        json!([])
    );
}
both_driven!(
    webhooks,
    a_subscription_is_told_in_order_signed_and_again_until_it_answers
);

async fn a_job_waiting_longer_than_asked_is_told_once_and_preemption_too(db: Option<String>) {
    let d = Driven::start(db, GPU_NODES).await;
    let admin = d.app.admin_token().await;
    let (url, received) = receiver().await;
    allow(&d, &admin, json!([host_of(&url)])).await;
    // Eli's notebooks on the GPU node, a normal job behind them (this makes Eli).
    let (victims, _) =
        node_with_three_elastic_jobs_and_a_waiting_normal_job(&d, gpu_job("train", "custom", 4, "normal")).await;
    let eli = d.app.token("eli", anteroom_tests::USER_PASSWORD).await;
    let (status, body) = call(
        &d.app,
        "POST",
        "/api/v1/webhooks",
        &eli,
        Some(json!({"url": url, "events": ["preempted", "waited"], "waitedSeconds": 60})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    // A queue with room for one of Eli's CPU jobs: the second waits.
    settings(&d.app, &admin, json!({"queueQuotaEnabled": true})).await;
    anteroom_tests::api::queue(
        &d.app,
        &admin,
        json!({"name": "lab", "open": true, "capacity": {"cpu": "1"}}),
    )
    .await;
    let lab = |name: &str| {
        let mut body = timed_job(name, json!({"cpu": "1"}), None);
        body["queue"] = json!("lab");
        body
    };
    submit(&d, &eli, lab("first")).await;
    let (waiting, a) = submit(&d, &eli, lab("second")).await;
    assert_eq!(a["admission"]["decision"], "prequeued", "{a}");
    d.advance(30).await;
    assert_eq!(waited(&d).await, 0, "not a minute yet");
    d.advance(31).await;
    assert_eq!(waited(&d).await, 1);
    assert_eq!(waited(&d).await, 0, "once a job");
    pass(&d).await;
    assert_eq!(received.events(), [(waiting, "waited".to_owned())]);

    // Preempted (the normal job has waited past its minute): told.
    assert_eq!(d.round().await.preempted, [victims[2]]);
    pass(&d).await;
    assert_eq!(received.events()[1..], [(victims[2], "preempted".to_owned())]);
}
both_driven!(
    preempted_and_waited,
    a_job_waiting_longer_than_asked_is_told_once_and_preemption_too
);

/// A subscription of `token`'s to `url`, told when jobs start.
async fn subscribe(d: &Driven, token: &str, url: &str) -> i64 {
    let (status, created) = call(
        &d.app,
        "POST",
        "/api/v1/webhooks",
        token,
        Some(json!({"url": url, "events": ["started"]})),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    created["webhook"]["id"].as_i64().unwrap()
}

async fn a_name_that_resolves_inside_is_reached_only_when_its_address_is_listed(db: Option<String>) {
    let d = Driven::start(db, "").await;
    let admin = d.app.admin_token().await;
    let ann = d.app.user_token("ann").await;
    let (url, received) = receiver().await;
    let port = host_of(&url).split(':').nth(1).unwrap().to_owned();
    // `localhost` is allowed by name; it resolves to loopback, which nobody listed.
    allow(&d, &admin, json!([format!("localhost:{port}")])).await;
    subscribe(&d, &ann, &format!("http://localhost:{port}/hook")).await;
    submit(&d, &ann, timed_job("first", json!({"cpu": "1"}), None)).await;
    d.settle().await;
    let refused = pass(&d).await;
    assert_eq!((refused.delivered.len(), refused.given_up.len()), (0, 1), "{refused:?}");
    assert!(received.events().is_empty(), "the receiver was never called");
    let (_, deliveries) = call(&d.app, "GET", "/api/v1/webhooks/deliveries", &ann, None).await;
    assert_eq!(deliveries[0]["lastStatus"], Value::Null, "{deliveries}");
    assert!(
        deliveries[0]["lastError"].as_str().unwrap().contains("did not list"),
        "says why, not what answered: {deliveries}"
    );
    // Listed by address and port: reached.
    allow(
        &d,
        &admin,
        json!([format!("localhost:{port}"), format!("127.0.0.1:{port}")]),
    )
    .await;
    let (second, _) = submit(&d, &ann, timed_job("second", json!({"cpu": "1"}), None)).await;
    d.settle().await;
    let sent = pass(&d).await;
    assert_eq!(sent.delivered.len(), 1, "{sent:?}");
    assert_eq!(received.events(), [(second, "started".to_owned())]);
}
both_driven!(
    resolved_addresses,
    a_name_that_resolves_inside_is_reached_only_when_its_address_is_listed
);

async fn a_dead_receiver_costs_one_try_a_pass_and_delays_no_one_else(db: Option<String>) {
    let d = Driven::start(db, "").await;
    let admin = d.app.admin_token().await;
    let (ann, bob) = (d.app.user_token("ann").await, d.app.user_token("bob").await);
    let (live, received) = receiver().await;
    // A port nothing listens on: connections are refused.
    let dead = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/hook", listener.local_addr().unwrap())
    };
    allow(&d, &admin, json!([host_of(&live), host_of(&dead)])).await;
    subscribe(&d, &ann, &dead).await;
    subscribe(&d, &bob, &live).await;
    for n in 0..5 {
        submit(&d, &ann, timed_job(&format!("a{n}"), json!({"cpu": "1"}), None)).await;
        submit(&d, &bob, timed_job(&format!("b{n}"), json!({"cpu": "1"}), None)).await;
    }
    d.settle().await;
    // Ann's receiver: one try, then nothing more this pass. Bob's: a few, the rest next pass.
    let first = pass(&d).await;
    assert_eq!(first.retried.len(), 1, "{first:?}");
    assert_eq!(
        first.delivered.len() as u64,
        anteroom::notifications::sender::PER_SUBSCRIPTION,
        "{first:?}"
    );
    // Backing off: Ann's subscription is not tried at all; Bob's gets the rest.
    let second = pass(&d).await;
    assert_eq!((second.retried.len(), second.delivered.len()), (0, 2), "{second:?}");
    assert_eq!(received.events().len(), 5);
    // Once its back-off is over, one try again.
    d.advance(10).await;
    let third = pass(&d).await;
    assert_eq!((third.retried.len(), third.delivered.len()), (1, 0), "{third:?}");

    // Deleting Ann deletes her subscription and its deliveries with her.
    let ann_id = d.app.get_json("/api/v1/auth/me", Some(&ann)).await["id"]
        .as_i64()
        .unwrap();
    let (status, _) = call(&d.app, "DELETE", &format!("/api/v1/admin/users/{ann_id}"), &admin, None).await;
    assert_eq!(status, 204);
    assert_eq!(anteroom_tests::api::count(&d.app, "webhooks").await, 1);
    assert_eq!(
        anteroom_tests::api::count(&d.app, &format!("webhook_deliveries WHERE owner_id = {ann_id}")).await,
        0
    );
}
both_driven!(fairness, a_dead_receiver_costs_one_try_a_pass_and_delays_no_one_else);
