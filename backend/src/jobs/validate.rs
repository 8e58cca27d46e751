//! Step 1 of a submission (`spec/prequeue.md` §4): the body's own rules — names, the kind's
//! task layout, bounds on every list and string — checked before anything is read or written,
//! every offending field named at once. Quantities are checked by the core (negative requests,
//! sums out of range) and node names against the cluster's nodes.

use anteroom_shared::api::jobs::{JobBody, MAX_RUNTIME_LIMIT_SECONDS, MIN_RUNTIME_LIMIT_SECONDS, TaskBody};
use anteroom_shared::scheduling::{DefaultRequests, JobKind, ScheduleType};

use serde_json::json;

use crate::field_rule::Rule;
use crate::queues::{dns_label_problem, resource_name_problem};

/// Tasks in one job.
pub const MAX_TASKS: usize = 64;
/// Pods of one task, and of a whole job.
pub const MAX_REPLICAS: u32 = 1000;
/// Characters of an image reference.
pub const MAX_IMAGE_LEN: usize = 512;
/// Arguments of a command.
pub const MAX_COMMAND_ARGS: usize = 256;
/// Bytes of a command, all arguments together.
pub const MAX_COMMAND_BYTES: usize = 64 * 1024;
/// Resource names one task may request.
pub const MAX_RESOURCES: usize = 32;
/// Host names one task may be pinned to.
pub const MAX_NODE_NAMES: usize = 64;

/// At most this many environment variables per task.
pub const MAX_ENV_VARS: usize = 64;
/// The longest value of one variable.
pub const MAX_ENV_VALUE_BYTES: usize = 4096;
/// Names and values of one task's variables together.
pub const MAX_ENV_BYTES: usize = 32 * 1024;

/// What is wrong with the environment of task `i`, as (field, problem). Names are what a
/// shell and Kubernetes both take; values are plain text (a secret reference is not a value:
/// a job must not read secrets the cluster holds for others). The variables Anteroom itself
/// sets are not the user's to override.
pub fn env_problems(i: usize, env: &[anteroom_shared::api::jobs::EnvVar]) -> Vec<(String, Rule)> {
    let mut out = Vec::new();
    if env.len() > MAX_ENV_VARS {
        out.push((
            format!("tasks[{i}].env"),
            Rule::with("envTooMany", "at most 64 variables", json!({ "max": MAX_ENV_VARS })),
        ));
    }
    let total: usize = env.iter().map(|v| v.name.len() + v.value.len()).sum();
    if total > MAX_ENV_BYTES {
        out.push((
            format!("tasks[{i}].env"),
            Rule::with(
                "envTooLarge",
                "at most 32 KiB of names and values in all",
                json!({ "kib": MAX_ENV_BYTES / 1024 }),
            ),
        ));
    }
    for (j, var) in env.iter().enumerate() {
        let name = var.name.as_bytes();
        let valid_name = !name.is_empty()
            && name.len() <= 128
            && (name[0].is_ascii_alphabetic() || name[0] == b'_')
            && name
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
        if !valid_name {
            out.push((
                format!("tasks[{i}].env[{j}].name"),
                Rule::fixed(
                    "envName",
                    "must be 1 to 128 letters, digits, '_', '.' or '-', starting with a letter or '_'",
                ),
            ));
        } else if var.name.starts_with("ANTEROOM_") || var.name.starts_with("NVIDIA_") {
            // NVIDIA_*: the container toolkit reads these (visible devices, and MOFED,
            // NVSwitch, GDS… which mount host devices), outside any quota.
            out.push((
                format!("tasks[{i}].env[{j}].name"),
                Rule::fixed("envReserved", "is set by Anteroom itself"),
            ));
        } else if env[..j].iter().any(|other| other.name == var.name) {
            out.push((
                format!("tasks[{i}].env[{j}].name"),
                Rule::fixed("envTwice", "is set twice"),
            ));
        }
        if var.value.len() > MAX_ENV_VALUE_BYTES {
            out.push((
                format!("tasks[{i}].env[{j}].value"),
                Rule::with(
                    "valueTooLong",
                    "at most 4 KiB",
                    json!({ "kib": MAX_ENV_VALUE_BYTES / 1024 }),
                ),
            ));
        } else if var.value.contains('\0') {
            out.push((format!("tasks[{i}].env[{j}].value"), NO_NUL));
        }
    }
    out
}

/// One offending field: (`tasks[0].replicas`, what is wrong).
pub type Problem = (String, Rule);

const NO_NUL: Rule = Rule::fixed("noNul", "must not contain NUL");

/// The body with the kind's default CPU and memory (`defaultRequests`) in every task that
/// names none: what is validated, decided, stored and asked of the cluster. A resource the body
/// names, even as zero, is left for [`problems`] to judge.
pub fn with_default_requests(body: &JobBody, defaults: &DefaultRequests) -> JobBody {
    let mut body = body.clone();
    let kind = defaults.of(body.kind);
    for task in &mut body.tasks {
        if task.resources.get_named("cpu").is_none() {
            task.resources.insert("cpu", kind.cpu.value());
        }
        if task.resources.get_named("memory").is_none() {
            task.resources.insert("memory", kind.memory.value());
        }
    }
    body
}

/// Every problem of the body; empty when it is valid.
pub fn problems(body: &JobBody) -> Vec<Problem> {
    let mut out: Vec<Problem> = Vec::new();
    let mut push = |field: String, rule: Rule| out.push((field, rule));
    if let Some(p) = dns_label_problem(&body.name) {
        push("name".into(), p);
    }
    if body.queue.is_empty() || body.queue.len() > 63 {
        push("queue".into(), crate::field_rule::Rule::length_between(1, 63));
    }
    if body.schedule_type == ScheduleType::Backfill && body.preemption_policy.is_some() {
        push(
            "preemptionPolicy".into(),
            Rule::fixed(
                "backfillNeverPreempts",
                "applies to normal jobs only (a backfill job never preempts)",
            ),
        );
    }
    if let Some(limit) = body.max_runtime_seconds
        && !(MIN_RUNTIME_LIMIT_SECONDS..=MAX_RUNTIME_LIMIT_SECONDS).contains(&limit)
    {
        push(
            "maxRuntimeSeconds".into(),
            Rule::fixed(
                "runtimeLimitRange",
                "a runtime limit is 60 to 31,536,000 seconds (a year)",
            ),
        );
    }
    if body.tasks.is_empty() || body.tasks.len() > MAX_TASKS {
        push(
            "tasks".into(),
            Rule::with(
                "tasksCount",
                "must hold 1 to 64 tasks",
                json!({ "min": 1, "max": MAX_TASKS }),
            ),
        );
        return out;
    }
    let total: u64 = body.tasks.iter().map(|t| u64::from(t.replicas)).sum();
    if total > u64::from(MAX_REPLICAS) {
        push(
            "tasks".into(),
            Rule::with(
                "replicasTotal",
                "at most 1,000 replicas in all",
                json!({ "max": MAX_REPLICAS }),
            ),
        );
    }
    for (i, task) in body.tasks.iter().enumerate() {
        task_problems(i, task, &mut push);
        if body.tasks[..i].iter().any(|t| t.name == task.name) {
            push(
                format!("tasks[{i}].name"),
                Rule::fixed("taskNameTwice", "task names must be unique"),
            );
        }
    }
    if let Some((field, problem)) = layout_problem(body.kind, &body.tasks) {
        push(field, problem);
    }
    out
}

fn task_problems(i: usize, task: &TaskBody, push: &mut impl FnMut(String, Rule)) {
    if let Some(p) = dns_label_problem(&task.name) {
        push(format!("tasks[{i}].name"), p);
    }
    if task.replicas == 0 || task.replicas > MAX_REPLICAS {
        push(
            format!("tasks[{i}].replicas"),
            Rule::with(
                "between",
                "must be between 1 and 1,000",
                json!({ "min": 1, "max": MAX_REPLICAS }),
            ),
        );
    }
    let image_ok = !task.image.is_empty()
        && task.image.chars().count() <= MAX_IMAGE_LEN
        && !task.image.chars().any(|c| c.is_whitespace() || c.is_control());
    if !image_ok {
        push(
            format!("tasks[{i}].image"),
            Rule::with(
                "image",
                "must be 1 to 512 characters without spaces or control characters",
                json!({ "max": MAX_IMAGE_LEN }),
            ),
        );
    }
    let bytes: usize = task.command.iter().map(String::len).sum();
    if task.command.len() > MAX_COMMAND_ARGS || bytes > MAX_COMMAND_BYTES {
        push(
            format!("tasks[{i}].command"),
            Rule::with(
                "commandTooLong",
                "at most 256 arguments and 64 KiB in all",
                json!({ "args": MAX_COMMAND_ARGS, "kib": MAX_COMMAND_BYTES / 1024 }),
            ),
        );
    }
    if let Some(j) = task.command.iter().position(|a| a.contains('\0')) {
        push(format!("tasks[{i}].command[{j}]"), NO_NUL);
    }
    if task.resources.len() > MAX_RESOURCES {
        push(
            format!("tasks[{i}].resources"),
            Rule::with(
                "resourcesTooMany",
                "at most 32 resources",
                json!({ "max": MAX_RESOURCES }),
            ),
        );
    }
    for (field, rule) in env_problems(i, &task.env) {
        push(field, rule);
    }
    if let Some(shm) = task.shm_size {
        if shm.milli() < 0 {
            push(
                format!("tasks[{i}].shmSize"),
                Rule::fixed("notNegative", "must be zero (none) or more"),
            );
        } else if shm > task.resources.get("memory") {
            push(
                format!("tasks[{i}].shmSize"),
                Rule::fixed(
                    "shmOverMemory",
                    "must not exceed the task's memory, which it is part of",
                ),
            );
        }
    }
    for (name, _) in task.resources.iter() {
        if let Some(p) = resource_name_problem(name) {
            push(format!("tasks[{i}].resources.{name}"), p);
        }
    }
    // A request of nothing would pass every quota, capacity and placement check, and its pods
    // would run BestEffort: CPU and memory are always asked for (defaults fill them in first).
    for name in ["cpu", "memory"] {
        if task.resources.get(name).milli() <= 0 {
            push(
                format!("tasks[{i}].resources.{name}"),
                Rule::fixed(
                    "aboveZeroOrDefault",
                    "must be above zero (leave it out for the default of this kind of job)",
                ),
            );
        }
    }
    if task.node_names.len() > MAX_NODE_NAMES {
        push(
            format!("tasks[{i}].nodeNames"),
            Rule::with("nodeNamesTooMany", "at most 64 nodes", json!({ "max": MAX_NODE_NAMES })),
        );
    }
    for (j, node) in task.node_names.iter().enumerate() {
        let ok =
            !node.is_empty() && node.len() <= 253 && node.split('.').all(|label| dns_label_problem(label).is_none());
        if !ok {
            push(
                format!("tasks[{i}].nodeNames[{j}]"),
                Rule::fixed("nodeName", "must be a node's host name"),
            );
        }
    }
}

/// The tasks whose image starts with none of the `allowed` prefixes (`allowed_images`); none
/// when the list is empty (any image). Compared as written: `pytorch/pytorch` is not taken
/// for `docker.io/pytorch/pytorch`, so the setting lists references the way users write them.
pub fn image_problems(body: &JobBody, allowed: &[String]) -> Vec<Problem> {
    if allowed.is_empty() {
        return Vec::new();
    }
    body.tasks
        .iter()
        .enumerate()
        .filter(|(_, task)| !allowed.iter().any(|prefix| task.image.starts_with(prefix.as_str())))
        .map(|(i, _)| {
            (
                format!("tasks[{i}].image"),
                Rule::with(
                    "imageNotAllowed",
                    format!("must start with one of: {}", allowed.join(", ")),
                    json!({ "prefixes": allowed.join(", ") }),
                ),
            )
        })
        .collect()
}

/// [`image_problems`] as the submission's refusal (422 `image_not_allowed`).
pub fn check_images(body: &JobBody, allowed: &[String]) -> Result<(), super::JobError> {
    let problems = image_problems(body, allowed);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(super::JobError::ImageNotAllowed(problems))
    }
}

/// The task layout each kind requires (`spec/prequeue.md` §1).
fn layout_problem(kind: JobKind, tasks: &[TaskBody]) -> Option<Problem> {
    let named = |name: &str| tasks.iter().find(|t| t.name == name);
    let problem = |rule: Rule| Some(("tasks".to_string(), rule));
    match kind {
        JobKind::Jupyter | JobKind::Webide => {
            if tasks.len() != 1 || tasks[0].replicas != 1 {
                return problem(Rule::fixed(
                    "layoutNotebook",
                    "a jupyter or webide job has exactly one task with one replica",
                ));
            }
        }
        JobKind::Custom => {
            if tasks.len() != 1 {
                return problem(Rule::fixed("layoutCustom", "a custom job has exactly one task"));
            }
        }
        JobKind::Pytorch => {
            let master_ok = named("master").is_some_and(|t| t.replicas == 1);
            let others_ok = tasks.iter().all(|t| t.name == "master" || t.name == "worker");
            if !master_ok || !others_ok {
                return problem(Rule::fixed(
                    "layoutPytorch",
                    "a pytorch job has a task master with one replica and optionally a task worker",
                ));
            }
        }
        JobKind::Tensorflow => {
            let ok = tasks.len() == 2 && named("ps").is_some() && named("worker").is_some();
            if !ok {
                return problem(Rule::fixed(
                    "layoutTensorflow",
                    "a tensorflow job has the tasks ps and worker",
                ));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests;
