//! The write half against `tower_test`'s mock service: every request the adapter sends is
//! asserted exactly (method, path and query, content type, body), answered by hand, and no
//! request beyond the expected ones is sent (controller-rs style).

use anteroom_shared::scheduling::{JobKind, PreemptionPolicy, ResourceList, ScheduleType};
use http::{Method, Request, Response};
use kube::Client;
use kube::client::Body;
use serde_json::{Value, json};
use tower_test::mock::{self, Handle, SendResponse};

use crate::cluster::kube::KubeApi;
use crate::cluster::kube::manifest::{ManifestSettings, volcano_job};
use crate::cluster::{ClusterError, JobSpec, TaskSpec};

const JOBS: &str = "/apis/batch.volcano.sh/v1alpha1/namespaces/team-ns/jobs";
const CREATE: &str = "/apis/batch.volcano.sh/v1alpha1/namespaces/team-ns/jobs?&fieldManager=anteroom";
const INSTALLATION: &str = "0d6f2a47-6c1e-4b8a-a7f0-3e9c5b2d1a00";

type ApiHandle = Handle<Request<Body>, Response<Body>>;

pub(super) fn settings() -> ManifestSettings {
    ManifestSettings::new("team-ns", INSTALLATION)
}

fn mock_api() -> (KubeApi, ApiHandle) {
    let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
    (KubeApi::new(Client::new(service, "team-ns"), settings()), handle)
}

pub(super) fn spec(id: i64) -> JobSpec {
    JobSpec {
        id,
        cluster_uid: format!("{id:032x}"),
        kind: JobKind::Custom,
        queue: "default".to_owned(),
        owner: "grace".to_owned(),
        schedule_type: ScheduleType::Normal,
        waiting_tolerance_seconds: Some(300),
        preemption_policy: PreemptionPolicy::PreemptLowerPriority,
        tasks: vec![TaskSpec {
            name: "main".to_owned(),
            replicas: 1,
            image: "busybox:1.36".to_owned(),
            command: vec!["sleep".to_owned(), "60".to_owned()],
            resources: ResourceList::parse_map([("cpu", "1"), ("memory", "1Gi")]).expect("quantities"),
            node_names: Vec::new(),
            tolerations: Vec::new(),
            env: Vec::new(),
            shm: None,
            volumes: Vec::new(),
        }],
        preemptable: false,
        termination_grace_seconds: Some(30),
        active_deadline_seconds: None,
        preempted_before: false,
        run_as_user: None,
    }
}

/// The next request: asserts method and URI (path and query), returns the JSON body (`Null`
/// when empty) and the responder.
async fn expect(
    handle: &mut ApiHandle,
    method: Method,
    uri: &str,
) -> (Value, Option<String>, SendResponse<Response<Body>>) {
    let (request, send) = handle.next_request().await.expect("the adapter sent a request");
    super::api_requests::assert_in_table(request.method().as_str(), &request.uri().to_string());
    assert_eq!(request.method(), method, "method of {}", request.uri());
    assert_eq!(request.uri().to_string(), uri);
    let content_type = request
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let bytes = request.into_body().collect_bytes().await.expect("request body");
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).expect("a JSON body")
    };
    (body, content_type, send)
}

pub(super) fn respond(send: SendResponse<Response<Body>>, code: u16, body: Value) {
    let bytes = serde_json::to_vec(&body).expect("json");
    let response = Response::builder()
        .status(code)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Body::from(bytes))
        .expect("response");
    send.send_response(response);
}

pub(super) fn status(code: u16, reason: &str) -> Value {
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("{reason} (from the mock)"), "reason": reason, "code": code
    })
}

/// The apiserver's answer for a missing object: it names the object in `details`.
fn not_found(kind: &str, name: &str) -> Value {
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("{kind} \"{name}\" not found"), "reason": "NotFound",
        "details": {"name": name, "kind": kind}, "code": 404
    })
}

/// A plain-text answer, as the apiserver gives for a path no API serves (a CRD not installed).
fn respond_text(send: SendResponse<Response<Body>>, code: u16, text: &str) {
    let response = Response::builder()
        .status(code)
        .header(http::header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(Body::from(text.as_bytes().to_vec()))
        .expect("response");
    send.send_response(response);
}

/// After the scenario: the client is gone and nothing else was sent.
async fn assert_no_more_requests(api: KubeApi, mut handle: ApiHandle) {
    drop(api);
    assert!(handle.next_request().await.is_none(), "unexpected extra request");
}

#[tokio::test]
async fn kube_create_posts_the_volcano_job_manifest_to_the_namespace() {
    let (api, mut handle) = mock_api();
    let job = spec(7);
    let server = async {
        let (body, content_type, send) = expect(&mut handle, Method::POST, CREATE).await;
        assert_eq!(content_type.as_deref(), Some("application/json"));
        let manifest = serde_json::to_value(volcano_job(&job, &settings())).expect("json");
        assert_eq!(body, manifest);
        assert_eq!(body["metadata"]["name"], "ar-7");
        assert_eq!(body["spec"]["minAvailable"], 1);
        respond(send, 201, manifest);
    };
    let (result, ()) = tokio::join!(api.create_job(&job), server);
    result.expect("created");
    assert_no_more_requests(api, handle).await;
}

#[tokio::test]
async fn kube_create_that_finds_its_own_job_already_there_is_a_success() {
    let (api, mut handle) = mock_api();
    let job = spec(7);
    let server = async {
        let (_, _, send) = expect(&mut handle, Method::POST, CREATE).await;
        respond(send, 409, status(409, "AlreadyExists"));
        let (body, _, send) = expect(&mut handle, Method::GET, &format!("{JOBS}/ar-7")).await;
        assert_eq!(body, Value::Null);
        let mut existing = serde_json::to_value(volcano_job(&job, &settings())).expect("json");
        existing["metadata"]["resourceVersion"] = json!("12");
        respond(send, 200, existing);
    };
    let (result, ()) = tokio::join!(api.create_job(&job), server);
    result.expect("already there and ours");
    assert_no_more_requests(api, handle).await;
}

/// A create answered `409`, then the GET answered with `existing` (the manifest of `job` as
/// changed by `edit`): what the create returns.
async fn create_finding(job: &JobSpec, edit: impl FnOnce(&mut Value)) -> Result<(), ClusterError> {
    let (api, mut handle) = mock_api();
    let server = async {
        let (_, _, send) = expect(&mut handle, Method::POST, CREATE).await;
        respond(send, 409, status(409, "AlreadyExists"));
        let (_, _, send) = expect(&mut handle, Method::GET, &format!("{JOBS}/ar-7")).await;
        let mut existing = serde_json::to_value(volcano_job(job, &settings())).expect("json");
        existing["metadata"]["resourceVersion"] = json!("12");
        edit(&mut existing);
        respond(send, 200, existing);
    };
    let (result, ()) = tokio::join!(api.create_job(job), server);
    assert_no_more_requests(api, handle).await;
    result
}

#[tokio::test]
async fn kube_create_that_finds_its_own_job_with_its_uid_already_there_is_a_success() {
    let job = spec(7);
    let result = create_finding(&job, |existing| {
        assert_eq!(
            existing["metadata"]["labels"]["anteroom.io/job-uid"],
            json!(job.cluster_uid)
        );
    })
    .await;
    result.expect("already there, ours, this job");
}

#[tokio::test]
async fn kube_create_that_finds_another_job_of_the_same_id_and_installation_refuses_to_adopt_it() {
    // A restored or rolled-back database: same installation, same id, but the `ar-7` there was
    // created for the job 7 that database no longer knows.
    let job = spec(7);
    let mut lost = spec(7);
    lost.cluster_uid = "4b1e0f6a9c2d4e8f8a7b6c5d4e3f2a1b".to_owned();
    create_finding(&lost, |_| {})
        .await
        .expect("the lost job's own retry is a success");
    let result = create_finding(&job, |existing| {
        existing["metadata"]["labels"]["anteroom.io/job-uid"] = json!(lost.cluster_uid);
    })
    .await;
    match result {
        Err(
            ref e @ ClusterError::NameTakenByAnotherJob {
                ref object,
                ref found,
                ref expected,
            },
        ) => {
            assert_eq!(object, "team-ns/ar-7");
            assert_eq!(found, &lost.cluster_uid);
            assert_eq!(expected, &job.cluster_uid);
            assert!(!e.is_transient());
            assert!(e.to_string().contains("another job with the same id"), "{e}");
        }
        other => panic!("expected NameTakenByAnotherJob, got {other:?}"),
    }
}

#[tokio::test]
async fn kube_create_that_finds_its_own_job_id_without_a_uid_label_counts_it_as_created_before_uids() {
    let unlabelled = |existing: &mut Value| {
        let labels = existing["metadata"]["labels"].as_object_mut().expect("labels");
        labels
            .remove("anteroom.io/job-uid")
            .expect("the manifest has the uid label");
    };
    // A job from before uids (`legacy-<id>`): the object is its own, as it was then.
    let mut legacy = spec(7);
    legacy.cluster_uid = "legacy-7".to_owned();
    let result = create_finding(&legacy, unlabelled).await;
    result.expect("an object from before uids is the legacy job's");
    // A job submitted since has a random uid, and its object would carry it: an unlabelled
    // `ar-7` is another job's (a database rolled back past the upgrade reuses ids).
    let result = create_finding(&spec(7), unlabelled).await;
    assert!(
        matches!(result, Err(ClusterError::NameTakenByAnotherJob { .. })),
        "{result:?}"
    );
}

#[tokio::test]
async fn kube_create_that_finds_a_foreign_object_under_the_name_is_a_conflict() {
    let (api, mut handle) = mock_api();
    let job = spec(7);
    let server = async {
        let (_, _, send) = expect(&mut handle, Method::POST, CREATE).await;
        respond(send, 409, status(409, "AlreadyExists"));
        let (_, _, send) = expect(&mut handle, Method::GET, &format!("{JOBS}/ar-7")).await;
        respond(
            send,
            200,
            json!({
                "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                "metadata": {"name": "ar-7", "namespace": "team-ns", "labels": {"team": "b"}},
                "spec": {"tasks": []}
            }),
        );
    };
    let (result, ()) = tokio::join!(api.create_job(&job), server);
    assert!(
        matches!(result, Err(ClusterError::Conflict(ref what)) if what == "team-ns/ar-7"),
        "{result:?}"
    );
    assert_no_more_requests(api, handle).await;
}

#[tokio::test]
async fn kube_create_that_finds_another_anteroom_job_id_under_the_name_is_a_conflict() {
    let (api, mut handle) = mock_api();
    let job = spec(7);
    let server = async {
        let (_, _, send) = expect(&mut handle, Method::POST, CREATE).await;
        respond(send, 409, status(409, "AlreadyExists"));
        let (_, _, send) = expect(&mut handle, Method::GET, &format!("{JOBS}/ar-7")).await;
        let mut other = serde_json::to_value(volcano_job(&spec(8), &settings())).expect("json");
        other["metadata"]["name"] = json!("ar-7");
        respond(send, 200, other);
    };
    let (result, ()) = tokio::join!(api.create_job(&job), server);
    assert!(matches!(result, Err(ClusterError::Conflict(_))), "{result:?}");
    assert_no_more_requests(api, handle).await;
}

#[tokio::test]
async fn kube_create_refused_as_invalid_is_rejected_and_a_server_error_is_unavailable() {
    let (api, mut handle) = mock_api();
    let job = spec(7);
    let server = async {
        let (_, _, send) = expect(&mut handle, Method::POST, CREATE).await;
        respond(send, 422, status(422, "Invalid"));
        let (_, _, send) = expect(&mut handle, Method::POST, CREATE).await;
        respond(send, 503, status(503, "ServiceUnavailable"));
    };
    let ((first, second), ()) = tokio::join!(
        async { (api.create_job(&job).await, api.create_job(&job).await) },
        server
    );
    assert!(matches!(first, Err(ClusterError::Rejected(_))), "{first:?}");
    assert!(
        matches!(second, Err(ref e @ ClusterError::Unavailable(_)) if e.is_transient()),
        "{second:?}"
    );
    assert_no_more_requests(api, handle).await;
}

#[tokio::test]
async fn kube_create_that_finds_its_job_of_another_installation_under_the_name_is_a_conflict() {
    let (api, mut handle) = mock_api();
    let job = spec(7);
    let server = async {
        let (_, _, send) = expect(&mut handle, Method::POST, CREATE).await;
        respond(send, 409, status(409, "AlreadyExists"));
        let (_, _, send) = expect(&mut handle, Method::GET, &format!("{JOBS}/ar-7")).await;
        // Same job id, same labels — but written by another installation (or by this one
        // before its database was reset).
        let other = ManifestSettings::new("team-ns", "another-installation");
        respond(
            send,
            200,
            serde_json::to_value(volcano_job(&job, &other)).expect("json"),
        );
    };
    let (result, ()) = tokio::join!(api.create_job(&job), server);
    assert!(matches!(result, Err(ClusterError::Conflict(_))), "{result:?}");
    assert_no_more_requests(api, handle).await;
}

#[tokio::test]
async fn kube_create_that_finds_its_own_job_being_deleted_asks_to_retry_later_instead_of_adopting_it() {
    let (api, mut handle) = mock_api();
    let job = spec(7);
    let server = async {
        let (_, _, send) = expect(&mut handle, Method::POST, CREATE).await;
        respond(send, 409, status(409, "AlreadyExists"));
        let (_, _, send) = expect(&mut handle, Method::GET, &format!("{JOBS}/ar-7")).await;
        let mut dying = serde_json::to_value(volcano_job(&job, &settings())).expect("json");
        dying["metadata"]["deletionTimestamp"] = json!("2026-11-22T10:00:00Z");
        respond(send, 200, dying);
    };
    let (result, ()) = tokio::join!(api.create_job(&job), server);
    assert!(
        matches!(result, Err(ref e @ ClusterError::Unavailable(ref m)) if e.is_transient() && m.contains("being deleted")),
        "{result:?}"
    );
    assert_no_more_requests(api, handle).await;
}

/// One create answered with `code` and `body`: the error the adapter makes of it.
async fn create_answered(code: u16, body: Value) -> ClusterError {
    let (api, mut handle) = mock_api();
    let job = spec(7);
    let server = async {
        let (_, _, send) = expect(&mut handle, Method::POST, CREATE).await;
        respond(send, code, body);
    };
    let (result, ()) = tokio::join!(api.create_job(&job), server);
    assert_no_more_requests(api, handle).await;
    result.expect_err("the create failed")
}

#[tokio::test]
async fn kube_a_manifest_refused_as_bad_or_invalid_is_rejected() {
    let invalid = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "Job.batch.volcano.sh \"ar-7\" is invalid: spec.tasks[0].replicas: Invalid value: -1",
        "reason": "Invalid", "code": 422,
        "details": {"name": "ar-7", "group": "batch.volcano.sh", "kind": "Job",
                    "causes": [{"reason": "FieldValueInvalid", "field": "spec.tasks[0].replicas"}]}
    });
    let error = create_answered(422, invalid).await;
    assert!(
        matches!(error, ClusterError::Rejected(ref m) if m.starts_with("422 Invalid")),
        "{error:?}"
    );
    let error = create_answered(400, status(400, "BadRequest")).await;
    assert!(matches!(error, ClusterError::Rejected(_)), "{error:?}");
}

#[tokio::test]
async fn kube_an_admission_webhook_denial_is_rejected_whatever_its_code() {
    for code in [400, 403] {
        let denial = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "admission webhook \"validatejob.volcano.sh\" denied the request: unable to find job queue: queues.scheduling.volcano.sh \"nlp\" not found",
            "code": code
        });
        let error = create_answered(code, denial).await;
        assert!(
            matches!(error, ClusterError::Rejected(ref m) if m.contains("denied the request")),
            "{code}: {error:?}"
        );
    }
}

#[tokio::test]
async fn kube_expired_credentials_and_missing_rbac_are_unavailable_not_the_jobs_fault() {
    let unauthorized = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "Unauthorized", "reason": "Unauthorized", "code": 401
    });
    let error = create_answered(401, unauthorized).await;
    assert!(
        matches!(error, ClusterError::Unavailable(_)) && error.is_transient(),
        "{error:?}"
    );
    let forbidden = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "jobs.batch.volcano.sh is forbidden: User \"system:serviceaccount:anteroom:anteroom\" cannot create resource \"jobs\" in API group \"batch.volcano.sh\" in the namespace \"team-ns\"",
        "reason": "Forbidden", "details": {"group": "batch.volcano.sh", "kind": "jobs"}, "code": 403
    });
    let error = create_answered(403, forbidden).await;
    assert!(
        matches!(error, ClusterError::Unavailable(ref m) if m.contains("forbidden")),
        "{error:?}"
    );
}

#[tokio::test]
async fn kube_a_volcano_crd_that_is_not_installed_is_unavailable_for_create_and_delete() {
    // Create: the apiserver serves no such path and answers in plain text.
    let (api, mut handle) = mock_api();
    let job = spec(7);
    let server = async {
        let (_, _, send) = expect(&mut handle, Method::POST, CREATE).await;
        respond_text(send, 404, "404 page not found");
        // Delete: a 404 that does not name ar-7 is not "ar-7 is already gone".
        let (_, _, send) = expect(&mut handle, Method::GET, &format!("{JOBS}/ar-7")).await;
        respond(
            send,
            404,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "the server could not find the requested resource", "reason": "NotFound",
                   "details": {}, "code": 404}),
        );
    };
    let ((created, deleted), ()) = tokio::join!(
        async {
            (
                api.create_job(&job).await,
                api.delete_job(7, &spec(7).cluster_uid, 30, &[]).await,
            )
        },
        server
    );
    assert!(
        matches!(created, Err(ClusterError::Unavailable(ref m)) if m.contains("404")),
        "{created:?}"
    );
    assert!(matches!(deleted, Err(ClusterError::Unavailable(_))), "{deleted:?}");
    assert_no_more_requests(api, handle).await;
}

#[tokio::test]
async fn kube_an_apiserver_that_cannot_be_reached_is_unavailable() {
    let (api, mut handle) = mock_api();
    let job = spec(7);
    let server = async {
        let (_, send) = handle.next_request().await.expect("a request");
        send.send_error(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "connection refused",
        ));
    };
    let (result, ()) = tokio::join!(api.create_job(&job), server);
    assert!(
        matches!(result, Err(ref e @ ClusterError::Unavailable(_)) if e.is_transient()),
        "{result:?}"
    );
    assert_no_more_requests(api, handle).await;
}

mod diagnosis;
mod queues;
mod writes;
