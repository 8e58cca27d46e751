//! A job file: the API's job body written by hand, in YAML (or JSON, which YAML reads too),
//! changed by `--set path=value` for sweeps, and the `Idempotency-Key` that keeps a retried
//! `ar submit` from submitting twice.

use anteroom_shared::api::jobs::JobBody;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Why a job file or a `--set` could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JobFileError {
    /// Not YAML nor JSON.
    #[error("not YAML or JSON: {0}")]
    Syntax(String),
    /// A `--set` without `=`, or with an empty path.
    #[error("--set {0:?}: expected path=value (e.g. tasks.0.resources.cpu=4)")]
    SetSyntax(String),
    /// A `--set` whose path goes through something that is not an object or a list.
    #[error("--set {path:?}: {problem}")]
    SetPath {
        /// The path given.
        path: String,
        /// What is wrong with it.
        problem: String,
    },
    /// Parsed, but not a job body.
    #[error("not a job: {0}")]
    NotAJob(String),
}

/// Parses a job file's text (YAML; JSON is YAML too).
pub fn parse(text: &str) -> Result<Value, JobFileError> {
    serde_norway::from_str::<Value>(text).map_err(|e| JobFileError::Syntax(e.to_string()))
}

/// Applies one `--set path=value`. The path is dotted, with list indexes as numbers
/// (`tasks.0.resources.cpu`); a key that itself holds dots (`nvidia.com/a100`) is found
/// whole when it exists, and taken whole as the last step when it does not. The value is a
/// string where the file has a string or under `resources` (quantities are strings),
/// otherwise read as YAML (`2`, `true`, `[python, train.py]`).
pub fn set(doc: &mut Value, assignment: &str) -> Result<(), JobFileError> {
    // On a copy: a path refused half-way leaves the document as it was.
    let mut copy = doc.clone();
    set_in(&mut copy, assignment)?;
    *doc = copy;
    Ok(())
}

fn set_in(doc: &mut Value, assignment: &str) -> Result<(), JobFileError> {
    let (path, raw) = assignment
        .split_once('=')
        .filter(|(p, _)| !p.trim().is_empty())
        .ok_or_else(|| JobFileError::SetSyntax(assignment.to_owned()))?;
    let segments: Vec<&str> = path.split('.').collect();
    let fail = |problem: String| JobFileError::SetPath {
        path: path.to_owned(),
        problem,
    };
    let mut node = doc;
    let mut rest = &segments[..];
    let mut parent_key = "";
    loop {
        match node {
            Value::Object(map) => {
                // The longest run of segments that names an existing key, else the next one
                // (or, at the end, all that remain).
                let found = (1..=rest.len()).rev().find(|n| map.contains_key(&rest[..*n].join(".")));
                let take = found.unwrap_or(if rest.len() > 1 && !is_index(rest[1]) && parent_key == "resources" {
                    rest.len()
                } else {
                    1
                });
                let key = rest[..take].join(".");
                rest = &rest[take..];
                if rest.is_empty() {
                    let value = value_for(map.get(&key), &key, parent_key == "resources", raw);
                    map.insert(key, value);
                    return Ok(());
                }
                let next_is_index = is_index(rest[0]);
                let child = map.entry(key.clone()).or_insert_with(|| {
                    if next_is_index {
                        Value::Array(Vec::new())
                    } else {
                        Value::Object(Default::default())
                    }
                });
                parent_key = if key == "resources" { "resources" } else { "" };
                node = child;
            }
            Value::Array(items) => {
                let index: usize = rest[0]
                    .parse()
                    .map_err(|_| fail(format!("{:?} is not a list index", rest[0])))?;
                if index > items.len() {
                    return Err(fail(format!("index {index} past the end of a list of {}", items.len())));
                }
                rest = &rest[1..];
                if index == items.len() {
                    items.push(if rest.first().is_some_and(|s| is_index(s)) {
                        Value::Array(Vec::new())
                    } else if rest.is_empty() {
                        Value::Null
                    } else {
                        Value::Object(Default::default())
                    });
                }
                if rest.is_empty() {
                    let value = value_for(Some(&items[index]), "", false, raw);
                    items[index] = value;
                    return Ok(());
                }
                parent_key = "";
                node = &mut items[index];
            }
            other => {
                return Err(fail(format!(
                    "cannot go into {} ({})",
                    segments[..segments.len() - rest.len()].join("."),
                    kind_of(other)
                )));
            }
        }
    }
}

fn is_index(segment: &str) -> bool {
    !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit())
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The body's fields that hold numbers or booleans, also when the file leaves them out;
/// everything else a `--set` writes is text unless it replaces a number or a boolean (the
/// API's quantities, names, commands and env values are all strings, and `0.1` or `4` typed on
/// a command line are meant as such).
const NUMBER_FIELDS: [&str; 3] = ["replicas", "maxRuntimeSeconds", "requeue"];

fn value_for(existing: Option<&Value>, key: &str, quantity: bool, raw: &str) -> Value {
    let text = || Value::String(raw.to_owned());
    if quantity || matches!(existing, Some(Value::String(_))) {
        return text();
    }
    // A list of words (`[python, train.py, --lr, 0.10]`) keeps each word exactly as typed.
    if let Ok(words) = serde_norway::from_str::<Vec<String>>(raw)
        && raw.trim_start().starts_with('[')
    {
        return Value::Array(words.into_iter().map(Value::String).collect());
    }
    let Ok(parsed) = serde_norway::from_str::<Value>(raw) else {
        return text();
    };
    let typed_scalar = NUMBER_FIELDS.contains(&key) || matches!(existing, Some(Value::Number(_) | Value::Bool(_)));
    match parsed {
        Value::Array(_) | Value::Object(_) => scalars_as_text(parsed),
        Value::Bool(_) if typed_scalar => parsed,
        Value::Number(_) if typed_scalar => parsed,
        Value::Null if matches!(raw.trim(), "null" | "~") => parsed,
        _ => text(),
    }
}

/// A list or object typed on the command line: its numbers and booleans become text, except
/// in the fields that hold numbers.
fn scalars_as_text(value: Value) -> Value {
    match value {
        Value::Number(n) => Value::String(n.to_string()),
        Value::Bool(b) => Value::String(b.to_string()),
        Value::Array(items) => Value::Array(items.into_iter().map(scalars_as_text).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let v = if NUMBER_FIELDS.contains(&k.as_str()) {
                        v
                    } else {
                        scalars_as_text(v)
                    };
                    (k, v)
                })
                .collect(),
        ),
        other => other,
    }
}

/// The document as the API's job body (the server checks the rest).
pub fn to_body(doc: Value) -> Result<JobBody, JobFileError> {
    serde_json::from_value(doc).map_err(|e| JobFileError::NotAJob(e.to_string()))
}

/// The default `Idempotency-Key`: the body's hash (after `--set`) and a stamp, the ten-minute
/// window the command runs in ([`window_stamp`]), whatever the body came from. A retry after a
/// lost answer (a timeout, a dropped connection, a script re-run) within the window answers the
/// first job; the same file submitted later on purpose is a new job, and so is an edited file,
/// another `--set`, or `--again`. Not the file's modification time: an unchanged file
/// resubmitted hours later must not silently answer the old (perhaps failed) job.
pub fn default_key(body: &JobBody, stamp: i64) -> String {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let hash: String = Sha256::digest(&bytes)
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("ar-{hash}-{stamp}")
}

/// The stamp of the default key: the ten-minute window of `unix_seconds`.
pub fn window_stamp(unix_seconds: i64) -> i64 {
    unix_seconds.div_euclid(WINDOW_SECONDS)
}

/// The window within which the same body is one job when no key is given.
pub const WINDOW_SECONDS: i64 = 600;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const FILE: &str = "
name: resnet
kind: custom
queue: default
tasks:
  - name: main
    image: pytorch/pytorch:2.4
    replicas: 1
    command: [python, train.py]
    resources:
      cpu: \"2\"
      memory: 4Gi
";

    fn doc() -> Value {
        parse(FILE).unwrap()
    }

    #[test]
    fn a_yaml_file_and_its_json_twin_give_the_same_body() {
        let yaml = to_body(doc()).unwrap();
        let json = to_body(parse(&serde_json::to_string(&doc()).unwrap()).unwrap()).unwrap();
        assert_eq!(yaml, json);
        assert_eq!(yaml.tasks[0].resources.get("memory").to_string(), "4Gi");
    }

    #[test]
    fn set_changes_strings_numbers_lists_and_quantities() {
        let mut d = doc();
        set(&mut d, "name=sweep-1").unwrap();
        set(&mut d, "tasks.0.replicas=2").unwrap();
        set(&mut d, "tasks.0.command=[python, train.py, --lr, 0.1]").unwrap();
        set(&mut d, "tasks.0.resources.cpu=4").unwrap();
        set(&mut d, "tasks.0.resources.nvidia.com/a100=1").unwrap();
        set(&mut d, "tasks.0.env.0.name=LR").unwrap();
        set(&mut d, "tasks.0.env.0.value=0.1").unwrap();
        set(&mut d, "scheduleType=backfill").unwrap();
        set(&mut d, "tasks.0.shmSize=2Gi").unwrap();
        set(&mut d, "tasks.0.nodeNames=[7, node-b]").unwrap();
        set(&mut d, "tasks.0.env.1.name=RESUME").unwrap();
        set(&mut d, "tasks.0.env.1.value=true").unwrap();
        to_body(d.clone()).expect("what --set wrote is a job body");
        assert_eq!(d["name"], "sweep-1");
        assert_eq!(d["tasks"][0]["replicas"], 2);
        assert_eq!(d["tasks"][0]["command"], json!(["python", "train.py", "--lr", "0.1"]));
        assert_eq!(d["tasks"][0]["resources"]["cpu"], "4");
        assert_eq!(d["tasks"][0]["resources"]["nvidia.com/a100"], "1");
        assert_eq!(d["tasks"][0]["env"][0], json!({"name": "LR", "value": "0.1"}));
        assert_eq!(d["scheduleType"], "backfill");
        assert_eq!(d["tasks"][0]["nodeNames"], json!(["7", "node-b"]));
        assert_eq!(d["tasks"][0]["env"][1]["value"], "true");
        set(&mut d, "tasks.0.command=[python, x.py, --lr, 0.10, 1e-3, 0x10, true]").unwrap();
        assert_eq!(
            d["tasks"][0]["command"],
            json!(["python", "x.py", "--lr", "0.10", "1e-3", "0x10", "true"]),
            "each word as typed"
        );
        set(&mut d, "tasks.0.replicas=three").unwrap();
        assert_eq!(
            d["tasks"][0]["replicas"], "three",
            "not a number: kept as text for the server to refuse"
        );
    }

    #[test]
    fn set_writes_the_bodys_numbers_and_booleans_as_such_when_the_file_leaves_them_out() {
        let mut d = doc();
        set(&mut d, "maxRuntimeSeconds=600").unwrap();
        set(&mut d, "requeue=true").unwrap();
        assert_eq!((&d["maxRuntimeSeconds"], &d["requeue"]), (&json!(600), &json!(true)));
        let body = to_body(d).unwrap();
        assert_eq!((body.max_runtime_seconds, body.requeue), (Some(600), Some(true)));
    }

    #[test]
    fn set_replaces_an_existing_dotted_key_whole() {
        let mut d = doc();
        set(&mut d, "tasks.0.resources.nvidia.com/a100=1").unwrap();
        set(&mut d, "tasks.0.resources.nvidia.com/a100=2").unwrap();
        let resources = d["tasks"][0]["resources"].as_object().unwrap();
        assert_eq!(resources.len(), 3, "{resources:?}");
        assert_eq!(resources["nvidia.com/a100"], "2");
    }

    #[test]
    fn set_refuses_what_it_cannot_follow() {
        let mut d = doc();
        assert!(matches!(set(&mut d, "name"), Err(JobFileError::SetSyntax(_))));
        assert!(matches!(set(&mut d, "=x"), Err(JobFileError::SetSyntax(_))));
        assert!(matches!(
            set(&mut d, "tasks.5.name=x"),
            Err(JobFileError::SetPath { .. })
        ));
        assert!(matches!(
            set(&mut d, "tasks.x.name=x"),
            Err(JobFileError::SetPath { .. })
        ));
        assert!(matches!(set(&mut d, "name.first=x"), Err(JobFileError::SetPath { .. })));
        assert!(matches!(set(&mut d, "fresh.3=x"), Err(JobFileError::SetPath { .. })));
        assert_eq!(d, doc(), "a refused --set changed nothing it could not finish");
    }

    #[test]
    fn a_file_that_is_not_a_job_is_named_as_such() {
        assert!(matches!(parse("a: [b"), Err(JobFileError::Syntax(_))));
        assert!(matches!(to_body(json!({"name": "x"})), Err(JobFileError::NotAJob(_))));
        let mut d = doc();
        d["colour"] = json!("blue");
        assert!(matches!(to_body(d), Err(JobFileError::NotAJob(_))));
    }

    #[test]
    fn the_default_key_is_the_same_within_a_window_and_differs_by_body_or_window() {
        let body = to_body(doc()).unwrap();
        let mut other = doc();
        set(&mut other, "name=other").unwrap();
        let other = to_body(other).unwrap();
        let t = 1_800_000_000 - 1_800_000_000 % WINDOW_SECONDS;
        assert_eq!(window_stamp(t), window_stamp(t + WINDOW_SECONDS - 1));
        assert_ne!(window_stamp(t), window_stamp(t + WINDOW_SECONDS));
        assert_eq!(default_key(&body, 7), default_key(&body, 7));
        assert_ne!(default_key(&body, 7), default_key(&body, 8));
        assert_ne!(default_key(&body, 7), default_key(&other, 7));
        let key = default_key(&body, i64::MIN);
        assert!(key.len() <= 255 && key.bytes().all(|b| b.is_ascii_graphic()), "{key}");
    }
}
