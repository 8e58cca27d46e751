//! Volcano Queues one by one, as the apiserver serves a cluster-scoped custom resource: read
//! (`404 NotFound` naming it when absent), create (`409 AlreadyExists`; the CRD's default
//! `dequeueStrategy: traverse` applied, and `status.state: Open` as Volcano's controller sets
//! it), replace (`409 Conflict` unless the `resourceVersion` sent is the stored one; status
//! kept, as a status subresource's is) and delete (its uid and version preconditions checked).
//! Every write lands in the store and its watch, and its body is kept for the tests
//! ([`FakeApiServer::sent`]).

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::{FakeApiServer, FakeState, Kind, WatchLine, key_of, not_found, push};

fn status(code: StatusCode, reason: &str, name: &str, message: String) -> Response {
    let body = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason,
                      "code": code.as_u16(), "message": message, "details": {"name": name, "kind": "queues"}});
    (code, Json(body)).into_response()
}

/// Stores `object` as queue `name` with a new resourceVersion and streams it to the watches.
fn store(state: &FakeState, mut object: Value, event: &'static str) -> Value {
    let mut inner = state.inner.lock().expect("fake state");
    inner.rv += 1;
    let rv = inner.rv;
    object["apiVersion"] = json!(Kind::Queues.api_version());
    object["kind"] = json!(Kind::Queues.kind());
    object["metadata"]["resourceVersion"] = json!(rv.to_string());
    let collection = inner.collections.get_mut(&Kind::Queues).expect("collection");
    collection.objects.insert(key_of(&object), object.clone());
    push(
        collection,
        WatchLine {
            rv,
            kind: event,
            object: object.clone(),
        },
    );
    object
}

fn stored(state: &FakeState, name: &str) -> Option<Value> {
    let inner = state.inner.lock().expect("fake state");
    inner.collections[&Kind::Queues]
        .objects
        .get(&(String::new(), name.to_owned()))
        .cloned()
}

fn record(state: &FakeState, what: String, body: &Value) {
    state.sent.lock().expect("sent").push((what, body.clone()));
}

pub(super) async fn get_one(State(state): State<Arc<FakeState>>, Path(name): Path<String>) -> Response {
    match stored(&state, &name) {
        Some(queue) => Json(queue).into_response(),
        None => not_found("queues", &name),
    }
}

pub(super) async fn create(State(state): State<Arc<FakeState>>, Json(mut queue): Json<Value>) -> Response {
    let name = queue["metadata"]["name"].as_str().unwrap_or_default().to_owned();
    record(&state, format!("POST {name}"), &queue);
    if stored(&state, &name).is_some() {
        return status(
            StatusCode::CONFLICT,
            "AlreadyExists",
            &name,
            format!("queues.scheduling.volcano.sh \"{name}\" already exists"),
        );
    }
    queue["metadata"]["uid"] = json!(format!("uid-{name}"));
    if queue["spec"]["dequeueStrategy"].is_null() {
        queue["spec"]["dequeueStrategy"] = json!("traverse");
    }
    queue["status"] = json!({"state": "Open"});
    (StatusCode::CREATED, Json(store(&state, queue, "ADDED"))).into_response()
}

pub(super) async fn replace(
    State(state): State<Arc<FakeState>>,
    Path(name): Path<String>,
    Json(mut queue): Json<Value>,
) -> Response {
    record(&state, format!("PUT {name}"), &queue);
    let Some(existing) = stored(&state, &name) else {
        return not_found("queues", &name);
    };
    if queue["metadata"]["resourceVersion"] != existing["metadata"]["resourceVersion"] {
        return status(
            StatusCode::CONFLICT,
            "Conflict",
            &name,
            format!(
                "Operation cannot be fulfilled on queues.scheduling.volcano.sh \"{name}\": the object has been modified"
            ),
        );
    }
    queue["metadata"]["uid"] = existing["metadata"]["uid"].clone();
    queue["status"] = existing["status"].clone();
    Json(store(&state, queue, "MODIFIED")).into_response()
}

pub(super) async fn delete(State(state): State<Arc<FakeState>>, Path(name): Path<String>, body: Bytes) -> Response {
    let options: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    record(&state, format!("DELETE {name}"), &options);
    let Some(existing) = stored(&state, &name) else {
        return not_found("queues", &name);
    };
    let preconditions = &options["preconditions"];
    for (field, at) in [("uid", "uid"), ("resourceVersion", "resourceVersion")] {
        if !preconditions[field].is_null() && preconditions[field] != existing["metadata"][at] {
            return status(
                StatusCode::CONFLICT,
                "Conflict",
                &name,
                format!("Precondition failed: {field} in precondition does not match the object"),
            );
        }
    }
    let mut inner = state.inner.lock().expect("fake state");
    inner.rv += 1;
    let rv = inner.rv;
    let collection = inner.collections.get_mut(&Kind::Queues).expect("collection");
    let mut object = collection
        .objects
        .remove(&(String::new(), name.clone()))
        .expect("stored");
    object["metadata"]["resourceVersion"] = json!(rv.to_string());
    push(
        collection,
        WatchLine {
            rv,
            kind: "DELETED",
            object: object.clone(),
        },
    );
    Json(object).into_response()
}

impl FakeApiServer {
    /// The bodies of the queue writes served so far, in order: `POST <name>`, `PUT <name>` with
    /// the object sent, `DELETE <name>` with the delete options.
    pub(crate) fn sent(&self) -> Vec<(String, Value)> {
        self.state.sent.lock().expect("sent").clone()
    }

    /// The stored Volcano queue `name`, as a read would answer it.
    pub(crate) fn queue_object(&self, name: &str) -> Option<Value> {
        stored(&self.state, name)
    }
}
