//! Every Volcano Job and Queue Anteroom sends, checked against Volcano's own
//! CustomResourceDefinitions (`volcano-crds/`, copied from Volcano): what a real API server does
//! with them. A field the schema does not know would be pruned silently by the API server (the
//! job would run without it, the queue without its cap), so here it is an error; so is a wrong
//! type, a value outside an enum or a range, a quantity the pattern refuses, a missing required
//! field.
//!
//! The Jobs checked: every manifest snapshot of `tests.rs` (each kind, as committed) and the
//! variants the snapshots do not show (a queue's non-root user, a runtime limit, a requeued run,
//! the normal priority class). The Queues: the mirrors of several trees (a root with a
//! capacity, a child with a weight, queues without a capacity, the largest weight, zero and
//! fractional quantities).

use std::path::PathBuf;

use anteroom_shared::scheduling::ResourceList;
use serde_json::Value;

use super::tests::{every_kind, settings};
use super::*;
use crate::cluster::ClusterQueue;
use crate::cluster::kube::queue_mirror::volcano_queue;

/// The `openAPIV3Schema` of `version` in the CRD file `file` of `volcano-crds/`.
fn crd_schema(file: &str, version: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("src/cluster/kube/manifest/volcano-crds")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let crd: Value = serde_norway::from_str(&text).expect("the CRD parses");
    let found = crd["spec"]["versions"]
        .as_array()
        .expect("versions")
        .iter()
        .find(|v| v["name"] == version)
        .unwrap_or_else(|| panic!("{file}: the {version} version Anteroom sends"));
    found["schema"]["openAPIV3Schema"].clone()
}

/// The Job CRD's schema of the version Anteroom sends.
fn job_schema() -> Value {
    crd_schema("batch.volcano.sh_jobs.yaml", "v1alpha1")
}

/// The Queue CRD's schema of the version Anteroom sends.
fn queue_schema() -> Value {
    crd_schema("scheduling.volcano.sh_queues.yaml", "v1beta1")
}

/// What the API server would refuse or prune in `value` under `schema` (OpenAPI v3 as CRDs
/// use it: types, properties, additionalProperties, required, items, enum, pattern, minimum,
/// maximum, maxLength, minItems, int32, `x-kubernetes-int-or-string`,
/// `x-kubernetes-preserve-unknown-fields`).
fn problems(schema: &Value, value: &Value, path: &str, out: &mut Vec<String>) {
    // An absent field and a null one are the same to the API server.
    if value.is_null() {
        return;
    }
    if schema["x-kubernetes-int-or-string"] == true {
        match value {
            Value::Number(n) if n.is_i64() || n.is_u64() => {}
            // The pattern (a quantity's) sits beside `anyOf`.
            Value::String(s) => check_string(schema, s, path, out),
            other => out.push(format!("{path}: {other} is neither an integer nor a string")),
        }
        return;
    }
    let preserve = schema["x-kubernetes-preserve-unknown-fields"] == true;
    match schema["type"].as_str() {
        Some("object") => {
            let Some(map) = value.as_object() else {
                out.push(format!("{path}: {value} is not an object"));
                return;
            };
            for (key, v) in map {
                let at = format!("{path}.{key}");
                if let Some(s) = schema["properties"].get(key) {
                    problems(s, v, &at, out);
                } else if schema["additionalProperties"].is_object() {
                    problems(&schema["additionalProperties"], v, &at, out);
                } else if !(preserve || schema["additionalProperties"] == true) {
                    out.push(format!("{at}: not in the schema (the API server would prune it)"));
                }
            }
            for required in schema["required"].as_array().into_iter().flatten() {
                let key = required.as_str().unwrap_or_default();
                if !map.contains_key(key) {
                    out.push(format!("{path}: the required field {key} is missing"));
                }
            }
        }
        Some("array") => {
            let Some(items) = value.as_array() else {
                out.push(format!("{path}: {value} is not an array"));
                return;
            };
            if let Some(min) = schema["minItems"].as_u64()
                && (items.len() as u64) < min
            {
                out.push(format!("{path}: fewer than {min} items"));
            }
            for (i, item) in items.iter().enumerate() {
                problems(&schema["items"], item, &format!("{path}[{i}]"), out);
            }
        }
        Some("string") => match value.as_str() {
            Some(s) => check_string(schema, s, path, out),
            None => out.push(format!("{path}: {value} is not a string")),
        },
        Some("integer") => match value.as_i64() {
            Some(n) => {
                if schema["format"] == "int32" && i32::try_from(n).is_err() {
                    out.push(format!("{path}: {n} does not fit an int32"));
                }
                if let Some(min) = schema["minimum"].as_i64()
                    && n < min
                {
                    out.push(format!("{path}: {n} is below the minimum {min}"));
                }
                if let Some(max) = schema["maximum"].as_i64()
                    && n > max
                {
                    out.push(format!("{path}: {n} is above the maximum {max}"));
                }
            }
            None => out.push(format!("{path}: {value} is not an integer")),
        },
        Some("number") if !value.is_number() => out.push(format!("{path}: {value} is not a number")),
        Some("boolean") if !value.is_boolean() => out.push(format!("{path}: {value} is not a boolean")),
        Some("number" | "boolean") => {}
        Some(other) => out.push(format!("{path}: the schema's type {other} is not known to this check")),
        None if preserve => {}
        None => out.push(format!("{path}: a schema without a type (nothing checks {value})")),
    }
}

fn check_string(schema: &Value, s: &str, path: &str, out: &mut Vec<String>) {
    if let Some(allowed) = schema["enum"].as_array()
        && !allowed.iter().any(|a| a == s)
    {
        out.push(format!("{path}: {s:?} is not one of {allowed:?}"));
    }
    if let Some(max) = schema["maxLength"].as_u64()
        && s.chars().count() as u64 > max
    {
        out.push(format!("{path}: longer than {max}"));
    }
    if let Some(pattern) = schema["pattern"].as_str() {
        let re = regex::Regex::new(pattern).unwrap_or_else(|e| panic!("{path}: the pattern {pattern:?}: {e}"));
        if !re.is_match(s) {
            out.push(format!("{path}: {s:?} does not match {pattern}"));
        }
    }
}

/// The first container of the first task of a Job.
fn container(job: &mut Value) -> &mut Value {
    &mut job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]
}

/// What the API server would refuse or prune in an object of a custom resource.
fn object_problems(schema: &Value, object: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let Some(map) = object.as_object() else {
        return vec![format!("{object} is not an object")];
    };
    for (key, v) in map {
        match key.as_str() {
            // The top-level metadata is an ObjectMeta, checked by the API server itself.
            "metadata" => {}
            "apiVersion" | "kind" => {}
            _ => match schema["properties"].get(key) {
                Some(s) => problems(s, v, key, &mut out),
                None => out.push(format!("{key}: not in the schema")),
            },
        }
    }
    out
}

/// What the API server would refuse or prune in a Job.
fn job_problems(schema: &Value, job: &Value) -> Vec<String> {
    assert_eq!(job["apiVersion"], "batch.volcano.sh/v1alpha1");
    assert_eq!(job["kind"], "Job");
    object_problems(schema, job)
}

/// What the API server would refuse or prune in a Queue.
fn queue_problems(schema: &Value, queue: &Value) -> Vec<String> {
    assert_eq!(queue["apiVersion"], "scheduling.volcano.sh/v1beta1");
    assert_eq!(queue["kind"], "Queue");
    object_problems(schema, queue)
}

/// The committed manifest snapshots: the body after insta's header.
fn snapshots() -> Vec<(String, Value)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/cluster/kube/manifest/snapshots");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("an entry").path();
        let text = std::fs::read_to_string(&path).expect("a snapshot");
        // `---\n<header>\n---\n<body>`
        let body = text
            .splitn(3, "---\n")
            .nth(2)
            .unwrap_or_else(|| panic!("{}: no body", path.display()));
        let value: Value = serde_norway::from_str(body).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        out.push((path.file_name().unwrap().to_string_lossy().into_owned(), value));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn every_volcano_job_anteroom_sends_is_accepted_by_volcanos_crd_with_nothing_pruned() {
    let schema = job_schema();
    let mut checked = Vec::new();
    for (name, job) in snapshots() {
        let found = job_problems(&schema, &job);
        assert!(found.is_empty(), "{name}:\n{}", found.join("\n"));
        checked.push(name);
    }
    assert_eq!(checked.len(), 5, "a snapshot of each kind: {checked:?}");
    // What the snapshots do not show.
    let mut normal_class = settings();
    normal_class.priority_class_normal = Some("anteroom-normal".to_owned());
    for (i, mut spec) in every_kind().into_iter().enumerate() {
        spec.run_as_user = Some(1000);
        spec.active_deadline_seconds = Some(86_400);
        spec.preempted_before = i % 2 == 0;
        spec.preemptable = i % 2 == 1;
        let job = serde_json::to_value(volcano_job(&spec, &normal_class)).expect("serialises");
        let found = job_problems(&schema, &job);
        assert!(found.is_empty(), "{:?}:\n{}", spec.kind, found.join("\n"));
    }
}

#[test]
fn the_crd_check_refuses_an_unknown_field_a_wrong_type_and_a_quantity_the_pattern_refuses() {
    let schema = job_schema();
    let (_, good) = snapshots().into_iter().next().expect("a snapshot");
    assert!(job_problems(&schema, &good).is_empty());
    let broken = |change: &dyn Fn(&mut Value)| {
        let mut job = good.clone();
        change(&mut job);
        job_problems(&schema, &job)
    };
    let unknown = broken(&|j| container(j)["gpuCount"] = 1.into());
    assert!(
        unknown.iter().any(|p| p.contains("gpuCount") && p.contains("prune")),
        "{unknown:?}"
    );
    let wrong_type = broken(&|j| j["spec"]["minAvailable"] = "two".into());
    assert!(wrong_type.iter().any(|p| p.contains("minAvailable")), "{wrong_type:?}");
    let negative = broken(&|j| j["spec"]["minAvailable"] = (-1).into());
    assert!(negative.iter().any(|p| p.contains("below the minimum")), "{negative:?}");
    let bad_quantity = broken(&|j| container(j)["resources"]["limits"]["memory"] = "16 GiB".into());
    assert!(
        bad_quantity.iter().any(|p| p.contains("does not match")),
        "{bad_quantity:?}"
    );
    let missing = broken(&|j| {
        container(j).as_object_mut().unwrap().remove("name");
    });
    assert!(missing.iter().any(|p| p.contains("required field name")), "{missing:?}");
}

fn capacity(entries: &[(&str, &str)]) -> Option<ResourceList> {
    Some(ResourceList::parse_map(entries.iter().copied()).expect("quantities"))
}

/// The queues of several trees, as Anteroom stores them: a root with a capacity and its
/// children (one weighted, one capped below it, one without a capacity), a grandchild, a queue
/// of the largest weight, the default queue, zero and fractional quantities.
fn queue_trees() -> Vec<ClusterQueue> {
    let queue = |name: &str, parent: Option<&str>, weight: u32, cap: Option<ResourceList>| ClusterQueue {
        parent: parent.map(str::to_owned),
        capability: cap,
        weight,
        ..ClusterQueue::new(name, true)
    };
    vec![
        ClusterQueue::new("default", true),
        // Elastic jobs' queue, made at start while queues are mirrored.
        ClusterQueue::new(crate::cluster::ELASTIC_QUEUE, true),
        queue("lab", None, 1, capacity(&[("nvidia.com/a100", "8")])),
        queue("cv", Some("lab"), 3, None),
        queue(
            "nlp",
            Some("lab"),
            2,
            capacity(&[("nvidia.com/a100", "4"), ("cpu", "500m"), ("memory", "256Gi")]),
        ),
        queue("nlp-small", Some("nlp"), 1, capacity(&[("nvidia.com/a100", "0")])),
        queue(
            "heavy",
            None,
            anteroom_shared::scheduling::MAX_QUEUE_WEIGHT,
            capacity(&[("nvidia.com/mig-1g.10gb", "7"), ("ephemeral-storage", "1.5Ti")]),
        ),
    ]
}

#[test]
fn every_volcano_queue_anteroom_mirrors_its_queues_as_is_accepted_by_volcanos_crd_with_nothing_pruned() {
    let schema = queue_schema();
    for queue in queue_trees() {
        let mirrored = serde_json::to_value(volcano_queue(&queue, "inst")).expect("serialises");
        let found = queue_problems(&schema, &mirrored);
        assert!(found.is_empty(), "{}: {mirrored}\n{}", queue.name, found.join("\n"));
        assert_eq!(mirrored["spec"]["reclaimable"], false, "{mirrored}");
    }
}

#[test]
fn the_crd_check_refuses_an_unknown_field_and_a_wrong_type_in_a_queue() {
    let schema = queue_schema();
    let good = serde_json::to_value(volcano_queue(&queue_trees()[2], "inst")).expect("serialises");
    assert!(queue_problems(&schema, &good).is_empty());
    let broken = |change: &dyn Fn(&mut Value)| {
        let mut queue = good.clone();
        change(&mut queue);
        queue_problems(&schema, &queue)
    };
    // A queue's state is its status, not its spec: there it would be pruned.
    let unknown = broken(&|q| q["spec"]["state"] = "Open".into());
    assert!(
        unknown.iter().any(|p| p.contains("spec.state") && p.contains("prune")),
        "{unknown:?}"
    );
    let wrong_type = broken(&|q| q["spec"]["weight"] = "3".into());
    assert!(
        wrong_type
            .iter()
            .any(|p| p.contains("spec.weight") && p.contains("not an integer")),
        "{wrong_type:?}"
    );
    let not_a_boolean = broken(&|q| q["spec"]["reclaimable"] = "false".into());
    assert!(
        not_a_boolean.iter().any(|p| p.contains("reclaimable")),
        "{not_a_boolean:?}"
    );
    let too_heavy = broken(&|q| q["spec"]["weight"] = 70_000.into());
    assert!(
        too_heavy.iter().any(|p| p.contains("above the maximum")),
        "{too_heavy:?}"
    );
    let bad_quantity = broken(&|q| q["spec"]["capability"]["nvidia.com/a100"] = "8 GPUs".into());
    assert!(
        bad_quantity.iter().any(|p| p.contains("does not match")),
        "{bad_quantity:?}"
    );
    let bad_parent = broken(&|q| q["spec"]["parent"] = "Lab".into());
    assert!(bad_parent.iter().any(|p| p.contains("spec.parent")), "{bad_parent:?}");
}
