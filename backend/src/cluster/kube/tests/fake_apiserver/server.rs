//! The fake apiserver itself: an in-memory store of nodes, pods, Volcano Jobs and Queues served
//! as lists and `?watch=true` streams on `127.0.0.1:0`, events as lists, a pod by name, pod
//! logs the test writes as it goes, and Volcano Queues read, created, replaced and deleted one
//! by one ([`queue_writes`]); plus builders for the objects the tests put in it.

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anteroom_shared::scheduling::ResourceList;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::broadcast;

mod queue_writes;

/// The collections the adapter watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    Nodes,
    Pods,
    Jobs,
    Queues,
    Events,
}

impl Kind {
    fn api_version(self) -> &'static str {
        match self {
            Kind::Nodes | Kind::Pods | Kind::Events => "v1",
            Kind::Jobs => "batch.volcano.sh/v1alpha1",
            Kind::Queues => "scheduling.volcano.sh/v1beta1",
        }
    }

    fn kind(self) -> &'static str {
        match self {
            Kind::Nodes => "Node",
            Kind::Pods => "Pod",
            Kind::Jobs => "Job",
            Kind::Queues => "Queue",
            Kind::Events => "Event",
        }
    }
}

/// One watch event as the apiserver streams it.
#[derive(Debug, Clone)]
struct WatchLine {
    rv: u64,
    kind: &'static str,
    object: Value,
}

struct Collection {
    objects: BTreeMap<(String, String), Value>,
    log: Vec<WatchLine>,
    live: broadcast::Sender<WatchLine>,
}

impl Collection {
    fn new() -> Self {
        Self {
            objects: BTreeMap::new(),
            log: Vec::new(),
            live: broadcast::channel(256).0,
        }
    }
}

struct Inner {
    rv: u64,
    collections: HashMap<Kind, Collection>,
}

/// What a pod's log route answers: the lines the test sends, until it drops the sender.
type LogFeed = tokio::sync::mpsc::UnboundedReceiver<Bytes>;

struct FakeState {
    inner: Mutex<Inner>,
    logs: Mutex<HashMap<String, LogFeed>>,
    /// Pods whose log is `lines` lines of `line_len` bytes, made as they are sent.
    generated_logs: Mutex<HashMap<String, (u64, usize)>>,
    requests: Mutex<Vec<String>>,
    /// The bodies of the writes it served (`queue_writes`), as `METHOD name` and the body.
    sent: Mutex<Vec<(String, Value)>>,
    open_watches: AtomicUsize,
    down: AtomicBool,
    no_volcano: AtomicBool,
}

/// Decrements the open-watch count when a watch response stream is dropped (the client went
/// away).
struct WatchGuard(Arc<FakeState>);

impl Drop for WatchGuard {
    fn drop(&mut self) {
        self.0.open_watches.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A fake apiserver serving lists and watches from an in-memory store.
pub(crate) struct FakeApiServer {
    state: Arc<FakeState>,
    url: String,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for FakeApiServer {
    /// Stops the server, and holds what it saw to the request table: every request of every
    /// fake-apiserver test must be one the RBAC grants (not checked while a test already
    /// panics, which would abort instead of reporting).
    fn drop(&mut self) {
        self.server.abort();
        if !std::thread::panicking() {
            for line in self.requests() {
                let (method, uri) = line.split_once(' ').expect("METHOD uri");
                super::super::api_requests::assert_in_table(method, uri);
            }
        }
    }
}

impl FakeApiServer {
    pub(crate) async fn start() -> Self {
        let state = Arc::new(FakeState {
            inner: Mutex::new(Inner {
                rv: 100,
                collections: [Kind::Nodes, Kind::Pods, Kind::Jobs, Kind::Queues, Kind::Events]
                    .into_iter()
                    .map(|k| (k, Collection::new()))
                    .collect(),
            }),
            logs: Mutex::new(HashMap::new()),
            generated_logs: Mutex::new(HashMap::new()),
            requests: Mutex::new(Vec::new()),
            sent: Mutex::new(Vec::new()),
            open_watches: AtomicUsize::new(0),
            down: AtomicBool::new(false),
            no_volcano: AtomicBool::new(false),
        });
        let router = Router::new()
            .route("/version", get(version))
            .route(
                "/api/v1/nodes",
                get(|s: State<Arc<FakeState>>, q: Query<HashMap<String, String>>| collection(s, q, Kind::Nodes, None)),
            )
            .route(
                "/api/v1/pods",
                get(|s: State<Arc<FakeState>>, q: Query<HashMap<String, String>>| collection(s, q, Kind::Pods, None)),
            )
            .route(
                "/api/v1/namespaces/{ns}/pods",
                get(
                    |s: State<Arc<FakeState>>, q: Query<HashMap<String, String>>, Path(ns): Path<String>| {
                        collection(s, q, Kind::Pods, Some(ns))
                    },
                ),
            )
            .route("/api/v1/namespaces/{ns}/pods/{name}", get(one_pod))
            .route("/api/v1/namespaces/{ns}/pods/{name}/log", get(pod_log))
            .route(
                "/api/v1/namespaces/{ns}/events",
                get(
                    |s: State<Arc<FakeState>>, q: Query<HashMap<String, String>>, Path(ns): Path<String>| {
                        collection(s, q, Kind::Events, Some(ns))
                    },
                ),
            )
            .route(
                "/apis/batch.volcano.sh/v1alpha1/namespaces/{ns}/jobs",
                get(
                    |s: State<Arc<FakeState>>, q: Query<HashMap<String, String>>, Path(ns): Path<String>| {
                        collection(s, q, Kind::Jobs, Some(ns))
                    },
                ),
            )
            .route(
                "/apis/scheduling.volcano.sh/v1beta1/queues",
                get(|s: State<Arc<FakeState>>, q: Query<HashMap<String, String>>| collection(s, q, Kind::Queues, None))
                    .post(queue_writes::create),
            )
            .route(
                "/apis/scheduling.volcano.sh/v1beta1/queues/{name}",
                get(queue_writes::get_one)
                    .put(queue_writes::replace)
                    .delete(queue_writes::delete),
            )
            .fallback(|| async {
                (
                    StatusCode::NOT_FOUND,
                    axum::Json(json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                      "reason": "NotFound", "code": 404, "message": "not served by the fake"})),
                )
            })
            // Outermost, so it sees every request — including those axum answers itself (405 for
            // a method no route takes, 404 from the fallback) — before anything can answer.
            .layer(middleware::from_fn_with_state(state.clone(), record_every_request))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let server = tokio::spawn(async move {
            axum::serve(listener, router).await.expect("fake apiserver");
        });
        Self { state, url, server }
    }

    /// A real client for this server.
    pub(crate) fn client(&self) -> kube::Client {
        let uri: http::Uri = self.url.parse().expect("url");
        kube::Client::try_from(kube::Config::new(uri)).expect("client")
    }

    /// Adds or replaces an object (ADDED / MODIFIED), stamping a new resourceVersion.
    pub(crate) fn apply(&self, kind: Kind, mut object: Value) {
        let mut inner = self.state.inner.lock().expect("fake state");
        inner.rv += 1;
        let rv = inner.rv;
        object["apiVersion"] = json!(kind.api_version());
        object["kind"] = json!(kind.kind());
        object["metadata"]["resourceVersion"] = json!(rv.to_string());
        let key = key_of(&object);
        let collection = inner.collections.get_mut(&kind).expect("collection");
        let event = if collection.objects.contains_key(&key) {
            "MODIFIED"
        } else {
            "ADDED"
        };
        collection.objects.insert(key, object.clone());
        push(
            collection,
            WatchLine {
                rv,
                kind: event,
                object,
            },
        );
    }

    /// Removes an object (DELETED).
    pub(crate) fn delete(&self, kind: Kind, namespace: &str, name: &str) {
        let mut inner = self.state.inner.lock().expect("fake state");
        inner.rv += 1;
        let rv = inner.rv;
        let collection = inner.collections.get_mut(&kind).expect("collection");
        let mut object = collection
            .objects
            .remove(&(namespace.to_owned(), name.to_owned()))
            .expect("object to delete");
        object["metadata"]["resourceVersion"] = json!(rv.to_string());
        push(
            collection,
            WatchLine {
                rv,
                kind: "DELETED",
                object,
            },
        );
    }

    /// From now on every request is answered `500` (still recorded): the apiserver is there
    /// but cannot serve, as during an etcd outage. (Not 503: kube retries that one with backoff,
    /// which would only make the test slower.)
    pub(crate) fn go_down(&self) {
        self.state.down.store(true, Ordering::SeqCst);
    }

    /// From now on the Volcano APIs are not served, as on a cluster without Volcano's CRDs:
    /// every `/apis/…` path is a plain-text `404 page not found`.
    pub(crate) fn without_volcano(&self) {
        self.state.no_volcano.store(true, Ordering::SeqCst);
    }

    /// The log of pod `name` (any namespace): what is sent is written, and the log ends when
    /// the sender is dropped. Until this is called, the pod's log answers `400 … is waiting to
    /// start`, as for a container that has not started.
    pub(crate) fn log_feed(&self, name: &str) -> tokio::sync::mpsc::UnboundedSender<Bytes> {
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        self.state.logs.lock().expect("logs").insert(name.to_owned(), receiver);
        sender
    }

    /// The log of pod `name` (any namespace) is `lines` lines of `line_len` bytes each (the
    /// line's number, padding, a newline), made as it is sent and never held: a log as large as
    /// the test likes. `tailLines` and `limitBytes` are honoured as the apiserver does (the
    /// limit keeps the beginning of the tail, cutting a line).
    pub(crate) fn generated_log(&self, name: &str, lines: u64, line_len: usize) {
        self.state
            .generated_logs
            .lock()
            .expect("generated logs")
            .insert(name.to_owned(), (lines, line_len));
    }

    /// Every request so far as `METHOD /path?query`, in order.
    pub(crate) fn requests(&self) -> Vec<String> {
        self.state.requests.lock().expect("requests").clone()
    }

    pub(crate) fn open_watches(&self) -> usize {
        self.state.open_watches.load(Ordering::SeqCst)
    }
}

fn push(collection: &mut Collection, line: WatchLine) {
    collection.log.push(line.clone());
    // No receiver is fine: nobody watches yet.
    let _ = collection.live.send(line);
}

fn key_of(object: &Value) -> (String, String) {
    let meta = &object["metadata"];
    (
        meta["namespace"].as_str().unwrap_or_default().to_owned(),
        meta["name"].as_str().unwrap_or_default().to_owned(),
    )
}

/// Records `METHOD /path?query` of every request, then answers 500 if the server is down or
/// lets the routes answer.
async fn record_every_request(State(state): State<Arc<FakeState>>, request: Request, next: Next) -> Response {
    let line = format!("{} {}", request.method(), request.uri());
    state.requests.lock().expect("requests").push(line);
    if state.no_volcano.load(Ordering::SeqCst) && request.uri().path().starts_with("/apis/") {
        return (StatusCode::NOT_FOUND, "404 page not found\n").into_response();
    }
    if state.down.load(Ordering::SeqCst) {
        let body = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                          "reason": "InternalError", "code": 500, "message": "the fake is down"});
        return (StatusCode::INTERNAL_SERVER_ERROR, axum::Json(body)).into_response();
    }
    next.run(request).await
}

async fn version() -> axum::Json<Value> {
    axum::Json(json!({
        "major": "1", "minor": "33", "gitVersion": "v1.33.0-fake", "gitCommit": "0", "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.24", "compiler": "gc", "platform": "linux/amd64"
    }))
}

/// Whether an object is in the namespace (if any) and matches a `k=v,k2=v2` label selector
/// and a `path.to.field=v` field selector.
fn selected(object: &Value, namespace: Option<&str>, selector: Option<&str>, fields: Option<&str>) -> bool {
    if let Some(ns) = namespace
        && object["metadata"]["namespace"].as_str() != Some(ns)
    {
        return false;
    }
    let labels_match = selector.into_iter().flat_map(|s| s.split(',')).all(|term| {
        let (key, value) = term.split_once('=').expect("only k=v selectors are used");
        object["metadata"]["labels"][key].as_str() == Some(value)
    });
    labels_match
        && fields.into_iter().flat_map(|s| s.split(',')).all(|term| {
            let (path, value) = term.split_once('=').expect("only path=v field selectors are used");
            path.split('.').fold(object, |v, key| &v[key]).as_str() == Some(value)
        })
}

fn not_found(kind: &str, name: &str) -> Response {
    let body = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404,
                      "message": format!("{kind} \"{name}\" not found"), "details": {"name": name, "kind": kind}});
    (StatusCode::NOT_FOUND, axum::Json(body)).into_response()
}

async fn one_pod(State(state): State<Arc<FakeState>>, Path((ns, name)): Path<(String, String)>) -> Response {
    let inner = state.inner.lock().expect("fake state");
    match inner.collections[&Kind::Pods].objects.get(&(ns, name.clone())) {
        Some(pod) => axum::Json(pod.clone()).into_response(),
        None => not_found("pods", &name),
    }
}

/// Line `n` of a generated log, `len` bytes with its newline.
pub(crate) fn generated_line(n: u64, len: usize) -> Vec<u8> {
    let mut line = format!("{n:010} ").into_bytes();
    line.resize(len.saturating_sub(1).max(line.len()), b'x');
    line.push(b'\n');
    line
}

/// The pod's log as the test feeds it (streamed as written) or generates it, or `400 … is
/// waiting to start`.
async fn pod_log(
    State(state): State<Arc<FakeState>>,
    Path((ns, name)): Path<(String, String)>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if !state.inner.lock().expect("fake state").collections[&Kind::Pods]
        .objects
        .contains_key(&(ns, name.clone()))
    {
        return not_found("pods", &name);
    }
    let generated = state.generated_logs.lock().expect("generated logs").get(&name).copied();
    if let Some((lines, line_len)) = generated {
        let tail: u64 = query.get("tailLines").and_then(|t| t.parse().ok()).unwrap_or(lines);
        let limit: u64 = query.get("limitBytes").and_then(|l| l.parse().ok()).unwrap_or(u64::MAX);
        let first = lines.saturating_sub(tail);
        // 64 KiB a chunk, the limit cutting the last one.
        let stream = futures::stream::unfold((first, 0u64), move |(next, sent)| async move {
            if next >= lines || sent >= limit {
                return None;
            }
            let mut chunk = Vec::with_capacity(64 * 1024);
            let mut n = next;
            while n < lines && chunk.len() < 64 * 1024 {
                chunk.extend(generated_line(n, line_len));
                n += 1;
            }
            let room = usize::try_from(limit - sent).unwrap_or(usize::MAX);
            chunk.truncate(room);
            let len = chunk.len() as u64;
            Some((Ok::<Bytes, Infallible>(Bytes::from(chunk)), (n, sent + len)))
        });
        return Response::builder()
            .header("content-type", "text/plain")
            .body(Body::from_stream(stream))
            .expect("log response");
    }
    let Some(feed) = state.logs.lock().expect("logs").remove(&name) else {
        let body = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "BadRequest", "code": 400,
                          "message": format!("container \"main\" in pod \"{name}\" is waiting to start: ContainerCreating")});
        return (StatusCode::BAD_REQUEST, axum::Json(body)).into_response();
    };
    let stream = futures::stream::unfold(feed, |mut feed| async move {
        let chunk = feed.recv().await?;
        Some((Ok::<Bytes, Infallible>(chunk), feed))
    });
    Response::builder()
        .header("content-type", "text/plain")
        .body(Body::from_stream(stream))
        .expect("log response")
}

async fn collection(
    State(state): State<Arc<FakeState>>,
    Query(query): Query<HashMap<String, String>>,
    kind: Kind,
    namespace: Option<String>,
) -> Response {
    let selector = query.get("labelSelector").cloned();
    let fields = query.get("fieldSelector").cloned();
    let ns = namespace.as_deref();
    if query.get("watch").map(String::as_str) != Some("true") {
        let inner = state.inner.lock().expect("fake state");
        let items: Vec<Value> = inner.collections[&kind]
            .objects
            .values()
            .filter(|o| selected(o, ns, selector.as_deref(), fields.as_deref()))
            .cloned()
            .collect();
        let body = json!({
            "apiVersion": kind.api_version(),
            "kind": format!("{}List", kind.kind()),
            "metadata": {"resourceVersion": inner.rv.to_string()},
            "items": items,
        });
        return axum::Json(body).into_response();
    }
    let since: u64 = query.get("resourceVersion").and_then(|v| v.parse().ok()).unwrap_or(0);
    let bookmarks = query.get("allowWatchBookmarks").map(String::as_str) == Some("true");
    // Backlog and subscription under one lock: no event is missed or sent twice.
    let (backlog, receiver) = {
        let inner = state.inner.lock().expect("fake state");
        let collection = &inner.collections[&kind];
        let backlog: Vec<WatchLine> = collection
            .log
            .iter()
            .filter(|l| l.rv > since && selected(&l.object, ns, selector.as_deref(), fields.as_deref()))
            .cloned()
            .collect();
        (backlog, collection.live.subscribe())
    };
    state.open_watches.fetch_add(1, Ordering::SeqCst);
    let guard = WatchGuard(state.clone());
    let last_rv = backlog.last().map_or(since, |l| l.rv);
    let namespace = namespace.clone();
    let live = futures::stream::unfold(
        (receiver, guard, last_rv, namespace, selector),
        move |(mut receiver, guard, mut last_rv, namespace, selector)| async move {
            loop {
                let heartbeat = tokio::time::sleep(Duration::from_millis(200));
                tokio::select! {
                    line = receiver.recv() => match line {
                        Ok(line) if selected(&line.object, namespace.as_deref(), selector.as_deref(), None) => {
                            last_rv = line.rv;
                            return Some((line_bytes(&line), (receiver, guard, last_rv, namespace, selector)));
                        }
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(broadcast::error::RecvError::Closed) => return None,
                    },
                    // A bookmark now and then, as the apiserver sends: it also makes a write
                    // fail soon after the client has gone, so the stream ends.
                    () = heartbeat, if bookmarks => {
                        let mark = json!({"type": "BOOKMARK", "object": {
                            "apiVersion": kind.api_version(), "kind": kind.kind(),
                            "metadata": {"resourceVersion": last_rv.to_string()}}});
                        return Some((json_line(&mark), (receiver, guard, last_rv, namespace, selector)));
                    }
                }
            }
        },
    );
    let stream = futures::stream::iter(backlog.into_iter().map(|l| line_bytes(&l)))
        .chain(live)
        .map(Ok::<Bytes, Infallible>);
    Response::builder()
        .header("content-type", "application/json")
        .body(Body::from_stream(stream))
        .expect("watch response")
}

fn json_line(value: &Value) -> Bytes {
    let mut bytes = serde_json::to_vec(value).expect("json");
    bytes.push(b'\n');
    Bytes::from(bytes)
}

fn line_bytes(line: &WatchLine) -> Bytes {
    json_line(&json!({"type": line.kind, "object": line.object}))
}

// ---- fixtures ----

pub(crate) const NS: &str = "team-ns";
/// The installation id of the adapter under test.
pub(crate) const INSTALLATION: &str = "7b1e9f5c-2a4d-4e8b-9c3f-6d0a1b2c3d4e";

/// The adapter's settings for the fake's namespace and installation.
pub(crate) fn settings() -> crate::cluster::kube::manifest::ManifestSettings {
    crate::cluster::kube::manifest::ManifestSettings::new(NS, INSTALLATION)
}

pub(crate) fn node(name: &str, allocatable: Value, unschedulable: bool) -> Value {
    json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {"unschedulable": unschedulable},
        "status": {"allocatable": allocatable, "conditions": [{"type": "Ready", "status": "True"}]}
    })
}

pub(crate) fn pod(namespace: &str, name: &str, node: Option<&str>, phase: &str, requests: Value) -> Value {
    json!({
        "metadata": {"name": name, "namespace": namespace, "labels": {}},
        "spec": {"nodeName": node, "containers": [{"name": "main", "resources": {"requests": requests}}]},
        "status": {"phase": phase}
    })
}

pub(crate) fn job_pod(id: i64, index: u32, node: Option<&str>) -> Value {
    let mut p = pod(
        NS,
        &format!("ar-{id}-main-{index}"),
        node,
        "Running",
        json!({"cpu": "1"}),
    );
    p["metadata"]["labels"] = json!({
        "volcano.sh/job-name": format!("ar-{id}"),
        "anteroom.io/job-id": id.to_string(),
        "anteroom.io/installation": INSTALLATION,
        "app.kubernetes.io/managed-by": "anteroom"
    });
    p
}

pub(crate) fn volcano_job(id: i64, phase: Option<&str>) -> Value {
    let mut job = json!({
        "metadata": {"name": format!("ar-{id}"), "namespace": NS,
                     "labels": {"app.kubernetes.io/managed-by": "anteroom", "anteroom.io/job-id": id.to_string(),
                                "anteroom.io/installation": INSTALLATION}},
        "spec": {"schedulerName": "volcano", "minAvailable": 1, "queue": "default", "tasks": []}
    });
    if let Some(phase) = phase {
        job["status"] = json!({"state": {"phase": phase}});
    }
    job
}

pub(crate) fn queue(name: &str, state: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {"weight": 1}, "status": {"state": state}})
}

pub(crate) fn resources(entries: &[(&str, &str)]) -> ResourceList {
    ResourceList::parse_map(entries.iter().copied()).expect("quantities")
}
