//! Writes other than creating a job, against the mocked apiserver: deleting a job and its pods
//! (and leaving other installations' and other jobs' objects alone), marking pods
//! `volcano.sh/preemptable`, cordoning nodes.

use super::*;

#[tokio::test]
async fn kube_delete_removes_the_job_in_the_foreground_then_its_pods_with_the_grace_period() {
    let (api, mut handle) = mock_api();
    let pods = vec!["ar-7-main-0".to_owned(), "ar-7-main-1".to_owned()];
    let server = async {
        let (_, _, send) = expect(&mut handle, Method::GET, &format!("{JOBS}/ar-7")).await;
        let mut ours = serde_json::to_value(volcano_job(&spec(7), &settings())).expect("json");
        ours["metadata"]["uid"] = json!("uid-7");
        respond(send, 200, ours);
        let (body, content_type, send) = expect(&mut handle, Method::DELETE, &format!("{JOBS}/ar-7?")).await;
        assert_eq!(content_type.as_deref(), Some("application/json"));
        assert_eq!(
            body,
            json!({"gracePeriodSeconds": 30, "propagationPolicy": "Foreground", "preconditions": {"uid": "uid-7"}})
        );
        respond(send, 200, status(200, "Success"));
        let (body, _, send) = expect(
            &mut handle,
            Method::DELETE,
            "/api/v1/namespaces/team-ns/pods/ar-7-main-0?",
        )
        .await;
        assert_eq!(body, json!({"gracePeriodSeconds": 30}));
        respond(
            send,
            200,
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ar-7-main-0"}}),
        );
        // Already gone (the garbage collector was faster): fine.
        let (body, _, send) = expect(
            &mut handle,
            Method::DELETE,
            "/api/v1/namespaces/team-ns/pods/ar-7-main-1?",
        )
        .await;
        assert_eq!(body, json!({"gracePeriodSeconds": 30}));
        respond(send, 404, not_found("pods", "ar-7-main-1"));
    };
    let uid = spec(7).cluster_uid;
    let (result, ()) = tokio::join!(api.delete_job(7, &uid, 30, &pods), server);
    result.expect("deleted");
    assert_no_more_requests(api, handle).await;
}

#[tokio::test]
async fn kube_delete_of_a_job_that_is_not_there_is_a_success() {
    let (api, mut handle) = mock_api();
    let server = async {
        let (_, _, send) = expect(&mut handle, Method::GET, &format!("{JOBS}/ar-9")).await;
        respond(send, 404, not_found("jobs.batch.volcano.sh", "ar-9"));
    };
    let uid = spec(9).cluster_uid;
    let (result, ()) = tokio::join!(api.delete_job(9, &uid, 0, &[]), server);
    result.expect("absent counts as deleted");
    assert_no_more_requests(api, handle).await;
}

#[tokio::test]
async fn kube_delete_answered_with_a_server_error_is_unavailable_and_stops_there() {
    let (api, mut handle) = mock_api();
    let pods = vec!["ar-9-main-0".to_owned()];
    let server = async {
        let (_, _, send) = expect(&mut handle, Method::GET, &format!("{JOBS}/ar-9")).await;
        respond(send, 500, status(500, "InternalError"));
    };
    let uid = spec(9).cluster_uid;
    let (result, ()) = tokio::join!(api.delete_job(9, &uid, 30, &pods), server);
    assert!(
        matches!(result, Err(ClusterError::Unavailable(ref m)) if m.contains("500")),
        "{result:?}"
    );
    assert_no_more_requests(api, handle).await;
}

#[tokio::test]
async fn kube_cordon_and_uncordon_patch_the_node_spec() {
    let (api, mut handle) = mock_api();
    let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-0"}});
    let server = async {
        for unschedulable in [true, false] {
            let (body, content_type, send) =
                expect(&mut handle, Method::PATCH, "/api/v1/nodes/gpu-0?&fieldManager=anteroom").await;
            assert_eq!(content_type.as_deref(), Some("application/merge-patch+json"));
            assert_eq!(body, json!({"spec": {"unschedulable": unschedulable}}));
            respond(send, 200, node.clone());
        }
        let (_, _, send) = expect(&mut handle, Method::PATCH, "/api/v1/nodes/nope?&fieldManager=anteroom").await;
        respond(send, 404, not_found("nodes", "nope"));
    };
    let (results, ()) = tokio::join!(
        async {
            (
                api.set_node_schedulable("gpu-0", false).await,
                api.set_node_schedulable("gpu-0", true).await,
                api.set_node_schedulable("nope", true).await,
            )
        },
        server
    );
    results.0.expect("cordoned");
    results.1.expect("uncordoned");
    assert!(
        matches!(results.2, Err(ClusterError::NodeNotFound(ref n)) if n == "nope"),
        "{:?}",
        results.2
    );
    assert_no_more_requests(api, handle).await;
}

#[tokio::test]
async fn kube_marking_pods_preemptable_merge_patches_label_and_annotation_of_each_pod() {
    let (api, mut handle) = mock_api();
    let pods = vec!["ar-7-main-0".to_owned(), "ar-7-main-1".to_owned()];
    let server = async {
        for (pod, code) in [("ar-7-main-0", 200), ("ar-7-main-1", 404)] {
            let (body, content_type, send) = expect(
                &mut handle,
                Method::PATCH,
                &format!("/api/v1/namespaces/team-ns/pods/{pod}?&fieldManager=anteroom"),
            )
            .await;
            assert_eq!(content_type.as_deref(), Some("application/merge-patch+json"));
            assert_eq!(
                body,
                json!({"metadata": {
                    "labels": {"volcano.sh/preemptable": "false"},
                    "annotations": {"volcano.sh/preemptable": "false"},
                }})
            );
            match code {
                // Gone meanwhile: nothing left to protect, not an error.
                404 => respond(send, 404, not_found("pods", pod)),
                _ => respond(
                    send,
                    200,
                    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod}}),
                ),
            }
        }
        let (_, _, send) = expect(
            &mut handle,
            Method::PATCH,
            "/api/v1/namespaces/team-ns/pods/ar-8-main-0?&fieldManager=anteroom",
        )
        .await;
        respond(send, 503, status(503, "ServiceUnavailable"));
    };
    let (results, ()) = tokio::join!(
        async {
            (
                api.set_pods_preemptable(&pods, false).await,
                api.set_pods_preemptable(&["ar-8-main-0".to_owned()], false).await,
            )
        },
        server
    );
    results.0.expect("marked, the missing pod skipped");
    assert!(
        matches!(results.1, Err(ClusterError::Unavailable(_))),
        "{:?}",
        results.1
    );
    assert_no_more_requests(api, handle).await;
}

#[tokio::test]
async fn kube_delete_leaves_an_object_of_another_installation_under_the_name_alone() {
    let (api, mut handle) = mock_api();
    let server = async move {
        let (_, _, send) = expect(&mut handle, Method::GET, &format!("{JOBS}/ar-7")).await;
        let other = ManifestSettings::new("team-ns", "another-installation");
        respond(
            send,
            200,
            serde_json::to_value(volcano_job(&spec(7), &other)).expect("json"),
        );
        // Gone: a DELETE after this fails at once instead of waiting for an answer.
        drop(handle);
    };
    // A pod named like the job's: it is the other installation's too, and stays.
    let pods = ["ar-7-main-0".to_string()];
    let uid = spec(7).cluster_uid;
    let (result, ()) = tokio::join!(api.delete_job(7, &uid, 30, &pods), server);
    result.expect("nothing of ours to delete, and no further request");
}

#[tokio::test]
async fn kube_delete_leaves_another_jobs_object_of_the_same_id_alone() {
    let (api, mut handle) = mock_api();
    let server = async move {
        let (_, _, send) = expect(&mut handle, Method::GET, &format!("{JOBS}/ar-7")).await;
        // This installation's `ar-7`, but of the job 7 a restored database forgot (its uid).
        let mut lost = spec(7);
        lost.cluster_uid = "0a1b2c3d4e5f60718293a4b5c6d7e8f9".to_owned();
        respond(
            send,
            200,
            serde_json::to_value(volcano_job(&lost, &settings())).expect("json"),
        );
        drop(handle);
    };
    let pods = ["ar-7-main-0".to_string()];
    let uid = spec(7).cluster_uid;
    let (result, ()) = tokio::join!(api.delete_job(7, &uid, 30, &pods), server);
    result.expect("nothing of this job's to delete, and no further request");
}
