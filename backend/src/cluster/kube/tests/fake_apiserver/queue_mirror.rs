//! `mirror_queues` against the fake apiserver: the exact Queue objects sent for a tree, an
//! update, nothing sent for a second identical sync, deletes of Anteroom's mirrors only, an
//! administrator's queue never touched, the queues missing at start created, and nothing
//! written with the setting off.

use serde_json::{Value, json};

use super::eventually;
use super::server::{FakeApiServer, INSTALLATION, Kind, queue, resources, settings};
use crate::cluster::kube::KubeCluster;
use crate::cluster::kube::manifest::ManifestSettings;
use crate::cluster::{Cluster, ClusterError, ClusterQueue};

/// The root `lab` with 8 A100s.
fn lab(gpus: &str) -> ClusterQueue {
    ClusterQueue {
        capability: Some(resources(&[("nvidia.com/a100", gpus)])),
        ..ClusterQueue::new("lab", true)
    }
}

/// `cv` under `lab`, weight 3, no capacity of its own.
fn cv() -> ClusterQueue {
    ClusterQueue {
        parent: Some("lab".into()),
        weight: 3,
        ..ClusterQueue::new("cv", true)
    }
}

fn labels() -> Value {
    json!({"app.kubernetes.io/managed-by": "anteroom", "anteroom.io/installation": INSTALLATION})
}

/// The writes the fake served (`METHOD /path`), reads left out.
fn writes(fake: &FakeApiServer) -> Vec<String> {
    fake.requests().into_iter().filter(|r| !r.starts_with("GET ")).collect()
}

/// A Volcano queue an administrator made: no labels of Anteroom's.
fn admins_queue(name: &str) -> Value {
    json!({"metadata": {"name": name, "uid": format!("uid-{name}"), "annotations": {"team": "vision"}},
           "spec": {"weight": 7, "reclaimable": true, "capability": {"cpu": "4"}},
           "status": {"state": "Open"}})
}

#[tokio::test]
async fn kube_a_queue_tree_is_mirrored_as_volcano_queues_with_exactly_its_fields_and_updated_when_it_changes() {
    let fake = FakeApiServer::start().await;
    let cluster = KubeCluster::start(fake.client(), settings());
    cluster.sync_queue(&lab("8")).await.expect("lab mirrored");
    cluster.sync_queue(&cv()).await.expect("cv mirrored");
    let sent = fake.sent();
    assert_eq!(
        sent,
        [
            (
                "POST lab".to_owned(),
                json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                       "metadata": {"name": "lab", "labels": labels()},
                       "spec": {"parent": "root", "capability": {"nvidia.com/a100": "8"}, "weight": 1,
                                "reclaimable": false}})
            ),
            (
                "POST cv".to_owned(),
                json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                       "metadata": {"name": "cv", "labels": labels()},
                       "spec": {"parent": "lab", "weight": 3, "reclaimable": false}})
            ),
        ]
    );

    // The capacity changes: the mirror is replaced as read, with only Anteroom's fields set
    // (the CRD's default `dequeueStrategy` stays).
    cluster.sync_queue(&lab("16")).await.expect("lab updated");
    let (what, replaced) = fake.sent().pop().expect("a write");
    assert_eq!(what, "PUT lab");
    assert_eq!(
        replaced["spec"],
        json!({"parent": "root", "capability": {"nvidia.com/a100": "16"}, "weight": 1, "reclaimable": false,
               "dequeueStrategy": "traverse"})
    );
    assert_eq!(replaced["metadata"]["labels"], labels());
    assert!(replaced.get("status").is_none(), "status is Volcano's: {replaced}");
    let stored = fake.queue_object("lab").expect("lab");
    assert_eq!(stored["spec"]["capability"], json!({"nvidia.com/a100": "16"}));
    assert_eq!(stored["metadata"]["uid"], "uid-lab", "replaced, not re-created");

    // The same again: nothing is written, whether the cache has caught up or not.
    let before = writes(&fake);
    cluster.sync_queue(&lab("16")).await.expect("unchanged");
    cluster.sync_queue(&cv()).await.expect("unchanged");
    assert_eq!(writes(&fake), before);
    // And what the cluster reports reads back as the tree.
    let want = [cv(), lab("16")];
    eventually("the mirrors in the queue cache", || async {
        let queues = cluster.queues().await.expect("queues");
        (queues == want).then_some(())
    })
    .await;
    cluster.sync_queue(&lab("16")).await.expect("unchanged");
    assert_eq!(writes(&fake), before, "a synced cache answers without a request");
}

#[tokio::test]
async fn kube_deleting_removes_only_anterooms_mirror_and_an_administrators_queue_is_never_modified_or_deleted() {
    let fake = FakeApiServer::start().await;
    fake.apply(Kind::Queues, admins_queue("default"));
    fake.apply(Kind::Queues, admins_queue("vision"));
    // Another Anteroom installation's mirror: cluster-wide, so it is not ours either.
    let mut other = admins_queue("shared");
    other["metadata"]["labels"] =
        json!({"app.kubernetes.io/managed-by": "anteroom", "anteroom.io/installation": "another"});
    fake.apply(Kind::Queues, other);
    let untouched = ["default", "vision", "shared"].map(|n| fake.queue_object(n).expect("there"));
    let cluster = KubeCluster::start(fake.client(), settings());

    for name in ["default", "vision", "shared"] {
        cluster
            .sync_queue(&ClusterQueue {
                capability: Some(resources(&[("nvidia.com/a100", "2")])),
                ..ClusterQueue::new(name, true)
            })
            .await
            .expect("it exists: Ok, as without mirroring");
        cluster.remove_queue(name).await.expect("left alone");
    }
    cluster
        .create_missing_queues(&[ClusterQueue::new("default", true)])
        .await
        .expect("default exists");
    // Only the Elastic jobs' queue, which is Anteroom's, is made.
    let made: Vec<String> = fake.sent().into_iter().map(|(what, _)| what).collect();
    assert_eq!(made, ["POST anteroom-elastic"]);
    assert_eq!(writes(&fake).len(), 1);
    let now = ["default", "vision", "shared"].map(|n| fake.queue_object(n).expect("still there"));
    assert_eq!(now, untouched);

    // Anteroom's own mirror goes with its queue, preconditioned on what was read.
    cluster.sync_queue(&lab("8")).await.expect("mirrored");
    cluster.remove_queue("lab").await.expect("deleted");
    assert!(fake.queue_object("lab").is_none());
    let (what, options) = fake.sent().pop().expect("the delete");
    assert_eq!(what, "DELETE lab");
    assert_eq!(options["preconditions"]["uid"], "uid-lab");
    // Gone already: success, nothing sent.
    let before_gone = writes(&fake);
    cluster.remove_queue("lab").await.expect("nothing to delete");
    assert_eq!(writes(&fake), before_gone);
}

#[tokio::test]
async fn kube_at_start_only_the_queues_volcano_lacks_are_created_parents_first() {
    let fake = FakeApiServer::start().await;
    // Mirrored before, with another capacity since: left to the next write of `lab`.
    let mut stale = json!({"metadata": {"name": "lab", "labels": labels()},
                           "spec": {"parent": "root", "capability": {"nvidia.com/a100": "4"}, "weight": 1,
                                    "reclaimable": false}});
    stale["status"] = json!({"state": "Open"});
    fake.apply(Kind::Queues, stale.clone());
    let cluster = KubeCluster::start(fake.client(), settings());
    // No Volcano `default` in this cluster: Anteroom's is created.
    let tree = [ClusterQueue::new("default", true), lab("8"), cv()];
    cluster.create_missing_queues(&tree).await.expect("created");
    let created: Vec<String> = fake.sent().into_iter().map(|(what, _)| what).collect();
    assert_eq!(created, ["POST default", "POST cv", "POST anteroom-elastic"]);
    // Elastic jobs' queue: a root without capability, so Volcano never holds them on a cap.
    assert_eq!(
        fake.queue_object("anteroom-elastic").expect("made")["spec"],
        json!({"parent": "root", "weight": 1, "reclaimable": false, "dequeueStrategy": "traverse"})
    );
    assert_eq!(
        fake.queue_object("default").expect("default")["spec"],
        json!({"parent": "root", "weight": 1, "reclaimable": false, "dequeueStrategy": "traverse"})
    );
    assert_eq!(fake.queue_object("lab").expect("lab")["spec"], stale["spec"]);
    // Once the cache has them, another start sends nothing.
    eventually("the new queues in the cache", || async {
        (cluster.queues().await.expect("queues").len() == 4).then_some(())
    })
    .await;
    cluster.create_missing_queues(&tree).await.expect("nothing missing");
    assert_eq!(fake.sent().len(), 3);
}

#[tokio::test]
async fn kube_with_mirror_queues_off_nothing_is_written_and_a_missing_queue_is_refused() {
    let fake = FakeApiServer::start().await;
    // Mirrored while the setting was on, with another capacity since: neither updated nor
    // deleted now.
    let mut mirrored = queue("lab", "Open");
    mirrored["metadata"]["labels"] = labels();
    fake.apply(Kind::Queues, mirrored);
    let off = ManifestSettings {
        mirror_queues: false,
        ..settings()
    };
    let cluster = KubeCluster::start(fake.client(), off);
    cluster.sync_queue(&lab("8")).await.expect("Volcano has lab");
    let missing = cluster.sync_queue(&cv()).await;
    assert!(
        matches!(missing, Err(ClusterError::Rejected(ref m)) if m.contains("`cv` does not exist")),
        "{missing:?}"
    );
    cluster
        .create_missing_queues(&[ClusterQueue::new("default", true), cv()])
        .await
        .expect("nothing to do");
    cluster.remove_queue("lab").await.expect("nothing to do");
    assert_eq!(writes(&fake), Vec::<String>::new());
    assert_eq!(fake.queue_object("lab").expect("lab")["spec"], json!({"weight": 1}));
    assert!(
        fake.requests()
            .iter()
            .all(|r| r.starts_with("GET /apis/scheduling.volcano.sh/v1beta1/queues?") || !r.contains("/queues")),
        "no queue read one by one either: {:?}",
        fake.requests()
    );
}
