//! [`API_REQUESTS`] against the requests the adapter really sends: every request a mock or
//! fake-apiserver test sees must be a row of the table (checked where they see it), and one
//! test here drives every code path — the reflectors and the queue mirror against the fake
//! apiserver, every other write against the mock — and must see every row. `backend/tests/deploy_rbac.rs` derives the RBAC
//! grants from the same table, so the grants follow the requests.

use std::collections::BTreeSet;

use futures::StreamExt;
use http::{Method, Request, Response};
use kube::Client;
use kube::client::Body;
use serde_json::json;
use tower_test::mock;

use super::fake_apiserver::eventually;
use super::fake_apiserver::server::{FakeApiServer, resources, settings};
use super::mock_api::{respond, spec, status};
use crate::cluster::kube::diagnosis::KnownJob;
use crate::cluster::kube::manifest::volcano_job;
use crate::cluster::kube::{API_REQUESTS, ApiRequest, KubeApi, KubeCluster, PermissionScope};
use crate::cluster::{Cluster, ClusterQueue, LogRequest};

/// (verb, group, resource, scope): a row of the table without its `sent_by`.
type Key = (&'static str, String, String, PermissionScope);

fn key_of(row: &ApiRequest) -> Key {
    (row.verb, row.api_group.to_owned(), row.resource.to_owned(), row.scope)
}

/// The RBAC reading of a request, as the apiserver's authorizer makes it; `None` for a
/// non-resource path (`/version`, which every authenticated client may read).
pub(super) fn classify(method: &str, uri: &str) -> Option<Key> {
    let (path, query) = uri.split_once('?').unwrap_or((uri, ""));
    let (group, rest) = if let Some(rest) = path.strip_prefix("/api/v1/") {
        (String::new(), rest)
    } else {
        let rest = path.strip_prefix("/apis/")?;
        let mut parts = rest.splitn(3, '/');
        let group = parts.next()?.to_owned();
        let _version = parts.next()?;
        (group, parts.next()?)
    };
    let segments: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    let (scope, resource, name) = match segments.as_slice() {
        ["namespaces", _, resource, name @ ..] => (PermissionScope::Namespace, *resource, name),
        [resource, name @ ..] => (PermissionScope::Cluster, *resource, name),
        [] => return None,
    };
    // A subresource (`pods/<name>/log`) is a resource of its own to RBAC: `pods/log`.
    let (resource, name) = match name {
        [name, subresource, ..] => (format!("{resource}/{subresource}"), Some(*name)),
        _ => (resource.to_owned(), name.first().copied()),
    };
    let watch = query.split('&').any(|p| p == "watch=true" || p == "watch=1");
    let verb = match (method, name.is_some()) {
        ("GET", true) => "get",
        ("GET", false) if watch => "watch",
        ("GET", false) => "list",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        (other, _) => panic!("unexpected method {other} for {uri}"),
    };
    Some((verb, group, resource, scope))
}

/// Panics unless `method uri` is a request of the table (or a non-resource path).
pub(super) fn assert_in_table(method: &str, uri: &str) {
    if let Some(key) = classify(method, uri) {
        assert!(
            API_REQUESTS.iter().any(|row| key_of(row) == key),
            "{method} {uri} is {key:?}, which is not in API_REQUESTS (and so not granted by deploy/base/20-rbac.yaml)"
        );
    }
}

#[test]
fn kube_requests_read_as_the_apiservers_authorizer_reads_them() {
    let ns = PermissionScope::Namespace;
    let cluster = PermissionScope::Cluster;
    let cases = [
        (
            "GET",
            "/api/v1/pods?&watch=true&resourceVersion=7",
            Some(("watch", "", "pods", cluster)),
        ),
        ("GET", "/api/v1/nodes?", Some(("list", "", "nodes", cluster))),
        (
            "PATCH",
            "/api/v1/nodes/gpu-0?&fieldManager=anteroom",
            Some(("patch", "", "nodes", cluster)),
        ),
        (
            "DELETE",
            "/api/v1/namespaces/team-ns/pods/ar-7-main-0?",
            Some(("delete", "", "pods", ns)),
        ),
        (
            "GET",
            "/apis/batch.volcano.sh/v1alpha1/namespaces/team-ns/jobs/ar-7",
            Some(("get", "batch.volcano.sh", "jobs", ns)),
        ),
        (
            "POST",
            "/apis/batch.volcano.sh/v1alpha1/namespaces/team-ns/jobs?&fieldManager=anteroom",
            Some(("create", "batch.volcano.sh", "jobs", ns)),
        ),
        (
            "GET",
            "/apis/scheduling.volcano.sh/v1beta1/queues?&limit=500",
            Some(("list", "scheduling.volcano.sh", "queues", cluster)),
        ),
        (
            "PUT",
            "/apis/scheduling.volcano.sh/v1beta1/queues/lab?&fieldManager=anteroom",
            Some(("update", "scheduling.volcano.sh", "queues", cluster)),
        ),
        (
            "GET",
            "/api/v1/namespaces/team-ns/pods/ar-7-main-0/log?&container=main&follow=true",
            Some(("get", "", "pods/log", ns)),
        ),
        (
            "GET",
            "/api/v1/namespaces/team-ns/events?&fieldSelector=involvedObject.name%3Dar-7",
            Some(("list", "", "events", ns)),
        ),
        ("GET", "/version", None),
    ];
    for (method, uri, expected) in cases {
        let expected = expected.map(|(v, g, r, s)| (v, g.to_owned(), r.to_owned(), s));
        assert_eq!(classify(method, uri), expected, "{method} {uri}");
    }
}

#[tokio::test]
async fn kube_the_request_table_is_exactly_what_the_adapter_sends() {
    let mut seen: BTreeSet<Key> = BTreeSet::new();

    // Reads: the reflectors against the fake apiserver, until every cache has synced and
    // every watch is open.
    let fake = FakeApiServer::start().await;
    let cluster = KubeCluster::start(fake.client(), settings());
    eventually("synced caches and four open watches", || async {
        (cluster.is_reachable().await && fake.open_watches() == 4).then_some(())
    })
    .await;
    // Queue mirroring, against the same fake: a create, a replace and a delete, each after a
    // read.
    let lab = |gpus: &str| ClusterQueue {
        capability: Some(resources(&[("nvidia.com/a100", gpus)])),
        ..ClusterQueue::new("lab", true)
    };
    cluster.sync_queue(&lab("8")).await.expect("created");
    cluster.sync_queue(&lab("16")).await.expect("replaced");
    cluster.remove_queue("lab").await.expect("deleted");
    drop(cluster);
    for line in fake.requests() {
        let (method, uri) = line.split_once(' ').expect("METHOD uri");
        seen.extend(classify(method, uri));
    }

    // Writes, and the reads about one job: every path against the mock, each answered as a
    // cluster would.
    let (service, mut handle) = mock::pair::<Request<Body>, Response<Body>>();
    let api = KubeApi::new(Client::new(service, "team-ns"), settings());
    let job = spec(7);
    let mut ours = serde_json::to_value(volcano_job(&job, api.settings())).expect("json");
    ours["metadata"]["uid"] = json!("uid-7");
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "ar-7-main-0", "namespace": "team-ns",
                     "labels": {"volcano.sh/job-name": "ar-7", "anteroom.io/job-id": "7",
                                "anteroom.io/installation": api.settings().installation, "anteroom.io/job-uid": job.cluster_uid}},
        "spec": {"containers": [{"name": "main"}]},
        "status": {"phase": "Running"}
    });
    let server = async {
        while let Some((request, send)) = handle.next_request().await {
            let (method, uri) = (request.method().clone(), request.uri().to_string());
            seen.extend(classify(method.as_str(), &uri));
            let list = |kind: &str, items: Vec<serde_json::Value>| json!({"apiVersion": "v1", "kind": format!("{kind}List"), "metadata": {}, "items": items});
            match method {
                // An earlier attempt got through: the adapter reads it back.
                Method::POST => respond(send, 409, status(409, "AlreadyExists")),
                Method::GET if uri.starts_with("/api/v1/namespaces/team-ns/pods?") => {
                    respond(send, 200, list("Pod", vec![pod.clone()]));
                }
                Method::GET if uri.starts_with("/api/v1/namespaces/team-ns/events?") => {
                    respond(send, 200, list("Event", Vec::new()));
                }
                Method::GET if uri.contains("/log?") => respond(send, 200, json!("a line")),
                Method::GET if uri.starts_with("/api/v1/namespaces/team-ns/pods/") => respond(send, 200, pod.clone()),
                Method::GET => respond(send, 200, ours.clone()),
                Method::PATCH if uri.contains("/pods/") => respond(
                    send,
                    200,
                    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ar-7-main-0"}}),
                ),
                Method::PATCH => respond(
                    send,
                    200,
                    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-0"}}),
                ),
                _ => respond(send, 200, status(200, "Success")),
            }
        }
    };
    let writes = async {
        api.create_job(&job).await.expect("already there and ours");
        api.delete_job(7, &spec(7).cluster_uid, 30, &["ar-7-main-0".to_owned()])
            .await
            .expect("deleted");
        api.set_node_schedulable("gpu-0", false).await.expect("cordoned");
        api.set_pods_preemptable(&["ar-7-main-0".to_owned()], true)
            .await
            .expect("marked");
        let known = KnownJob {
            uid: Some("uid-7".to_owned()),
            tasks: vec!["main".to_owned()],
        };
        let pods = api.job_pods(7, &job.cluster_uid, Some(&known)).await.expect("pods");
        assert_eq!(pods.pods.len(), 1);
        let log = LogRequest {
            pod: "ar-7-main-0".to_owned(),
            tail_lines: Some(10),
            limit_bytes: 1024,
        };
        api.pod_log(7, &job.cluster_uid, &log).await.expect("a log");
        let followed = api
            .follow_pod_log(7, &job.cluster_uid, &log)
            .await
            .expect("a followed log");
        followed.collect::<Vec<_>>().await;
        drop(api);
    };
    tokio::join!(writes, server);

    let table: BTreeSet<Key> = API_REQUESTS.iter().map(key_of).collect();
    assert_eq!(table.len(), API_REQUESTS.len(), "a row is listed twice");
    assert_eq!(seen, table, "the adapter's requests and API_REQUESTS differ");
}
