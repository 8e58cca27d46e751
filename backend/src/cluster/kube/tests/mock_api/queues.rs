//! Mirroring a queue when the Volcano queue changes between Anteroom's read and its write: the
//! exact requests, the `409` answered, and the read again that decides — never a blind second
//! write, never an error for a race that settled.

use super::*;
use crate::cluster::ClusterQueue;
use crate::cluster::kube::queue_mirror::{Mirrored, volcano_queue};

const QUEUES: &str = "/apis/scheduling.volcano.sh/v1beta1/queues";

fn lab(gpus: i64) -> ClusterQueue {
    ClusterQueue {
        capability: Some(ResourceList::new().with(
            "nvidia.com/a100",
            anteroom_shared::scheduling::Quantity::from_units(gpus),
        )),
        ..ClusterQueue::new("lab", true)
    }
}

/// The mirror of `lab(gpus)` as the apiserver answers it, at `version`.
fn stored(gpus: i64, version: &str) -> Value {
    let mut queue = serde_json::to_value(volcano_queue(&lab(gpus), INSTALLATION)).expect("json");
    queue["metadata"]["resourceVersion"] = json!(version);
    queue["metadata"]["uid"] = json!("uid-lab");
    queue["status"] = json!({"state": "Open"});
    queue
}

#[tokio::test]
async fn kube_a_replace_that_meets_a_newer_version_reads_again_and_sends_nothing_when_it_is_already_as_wanted() {
    let (api, mut handle) = mock_api();
    let server = async {
        let (_, _, send) = expect(&mut handle, Method::GET, &format!("{QUEUES}/lab")).await;
        respond(send, 200, stored(4, "10"));
        let (body, content_type, send) = expect(
            &mut handle,
            Method::PUT,
            &format!("{QUEUES}/lab?&fieldManager=anteroom"),
        )
        .await;
        assert_eq!(content_type.as_deref(), Some("application/json"));
        assert_eq!(
            body["metadata"]["resourceVersion"], "10",
            "replaces the version it read"
        );
        assert_eq!(body["spec"]["capability"], json!({"nvidia.com/a100": "8"}));
        assert!(body.get("status").is_none(), "{body}");
        // Another replica wrote the same meanwhile.
        respond(send, 409, status(409, "Conflict"));
        let (_, _, send) = expect(&mut handle, Method::GET, &format!("{QUEUES}/lab")).await;
        respond(send, 200, stored(8, "11"));
    };
    let wanted = lab(8);
    let (done, ()) = tokio::join!(api.mirror_queue(&wanted), server);
    assert_eq!(done.expect("settled"), Mirrored::UpToDate);
    assert_no_more_requests(api, handle).await;
}

#[tokio::test]
async fn kube_a_create_that_meets_a_queue_made_meanwhile_reads_it_and_replaces_it_if_ours() {
    let (api, mut handle) = mock_api();
    let server = async {
        let (_, _, send) = expect(&mut handle, Method::GET, &format!("{QUEUES}/lab")).await;
        respond(send, 404, not_found("queues", "lab"));
        let (body, _, send) = expect(&mut handle, Method::POST, &format!("{QUEUES}?&fieldManager=anteroom")).await;
        assert_eq!(
            body,
            serde_json::to_value(volcano_queue(&lab(8), INSTALLATION)).expect("json")
        );
        respond(send, 409, status(409, "AlreadyExists"));
        let (_, _, send) = expect(&mut handle, Method::GET, &format!("{QUEUES}/lab")).await;
        respond(send, 200, stored(4, "12"));
        let (body, _, send) = expect(
            &mut handle,
            Method::PUT,
            &format!("{QUEUES}/lab?&fieldManager=anteroom"),
        )
        .await;
        assert_eq!(body["metadata"]["resourceVersion"], "12");
        respond(send, 200, stored(8, "13"));
    };
    let wanted = lab(8);
    let (done, ()) = tokio::join!(api.mirror_queue(&wanted), server);
    assert_eq!(done.expect("mirrored"), Mirrored::Updated);
    assert_no_more_requests(api, handle).await;
}

#[tokio::test]
async fn kube_a_queue_that_keeps_changing_is_unavailable_after_the_second_try_and_a_webhook_denial_is_rejected() {
    let (api, mut handle) = mock_api();
    let server = async {
        for version in ["20", "21"] {
            let (_, _, send) = expect(&mut handle, Method::GET, &format!("{QUEUES}/lab")).await;
            respond(send, 200, stored(4, version));
            let (_, _, send) = expect(
                &mut handle,
                Method::PUT,
                &format!("{QUEUES}/lab?&fieldManager=anteroom"),
            )
            .await;
            respond(send, 409, status(409, "Conflict"));
        }
        // Volcano's webhook refuses a child under a queue that runs pods.
        let (_, _, send) = expect(&mut handle, Method::GET, &format!("{QUEUES}/lab")).await;
        respond(send, 404, not_found("queues", "lab"));
        let (_, _, send) = expect(&mut handle, Method::POST, &format!("{QUEUES}?&fieldManager=anteroom")).await;
        let mut denial = status(400, "BadRequest");
        denial["message"] = json!(
            "admission webhook \"validatequeue.volcano.sh\" denied the request: queue team cannot be the parent queue of queue lab because it has allocated Pods: 2"
        );
        respond(send, 400, denial);
    };
    let tries = async {
        let busy = api.mirror_queue(&lab(8)).await;
        assert!(
            matches!(busy, Err(ClusterError::Unavailable(ref m)) if m.contains("kept changing")),
            "{busy:?}"
        );
        let denied = api.mirror_queue(&lab(8)).await;
        assert!(
            matches!(denied, Err(ClusterError::Rejected(ref m)) if m.contains("allocated Pods")),
            "{denied:?}"
        );
    };
    tokio::join!(tries, server);
    assert_no_more_requests(api, handle).await;
}
