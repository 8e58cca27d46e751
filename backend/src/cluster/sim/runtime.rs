//! How long a simulated job runs, and time arithmetic that cannot overflow: the ticker adds
//! these runtimes to the clock on every step, so a runtime that leaves the calendar would kill
//! it (a `sleep 1e13` once did, and again after every restart).

use anteroom_shared::scheduling::JobKind;
use chrono::{DateTime, Duration, Utc};

use crate::cluster::JobSpec;

/// The longest a simulated task runs: ten years. A `sleep 1e13` would otherwise put its end
/// past the last date chrono can hold, and the arithmetic would overflow in the ticker.
pub const MAX_RUNTIME_SECONDS: u64 = 10 * 365 * 24 * 60 * 60;

/// How one task of a simulated job ends: after how long, and with which exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskOutcome {
    /// Seconds after the job started; `None`: runs until deleted (jupyter, webide).
    pub runtime: Option<u64>,
    /// Its containers' exit code (0: succeeded).
    pub exit_code: i32,
}

/// How a task of a job of `spec` ends: a task `["sleep", "N"]` takes N seconds and exits 0;
/// `["exit", "N"]` (or `["sh", "-c", "exit N"]`) exits N at once, so a test or a demo can make
/// a job fail; any other batch task takes the default runtime and exits 0; jupyter and webide
/// run until deleted.
///
/// Every runtime is capped at [`MAX_RUNTIME_SECONDS`] (`sleep 1e13` or `sleep inf` run ten
/// years, not past the end of the calendar); a negative or unreadable N (`NaN`, `forever`)
/// runs the default, as a typo should not make a job eternal.
pub fn task_outcome(kind: JobKind, command: &[String], default_runtime_seconds: u64) -> TaskOutcome {
    let interactive = matches!(kind, JobKind::Jupyter | JobKind::Webide);
    let exit_code = exit_code_of(command);
    if let Some(code) = exit_code {
        return TaskOutcome {
            runtime: Some(0),
            exit_code: code,
        };
    }
    if interactive {
        return TaskOutcome {
            runtime: None,
            exit_code: 0,
        };
    }
    let runtime = match command {
        [cmd, secs] if cmd == "sleep" => sleep_seconds(secs).unwrap_or(default_runtime_seconds),
        _ => default_runtime_seconds,
    };
    TaskOutcome {
        runtime: Some(runtime.min(MAX_RUNTIME_SECONDS)),
        exit_code: 0,
    }
}

/// The code of `exit N` / `sh -c "exit N"`; `None` for any other command or a code that is
/// not a number of 0–255.
fn exit_code_of(command: &[String]) -> Option<i32> {
    let text = match command {
        [cmd, code] if cmd == "exit" => code.clone(),
        [sh, flag, script] if matches!(sh.as_str(), "sh" | "bash" | "/bin/sh" | "/bin/bash") && flag == "-c" => {
            script.trim().strip_prefix("exit ")?.to_owned()
        }
        _ => return None,
    };
    text.trim().parse::<u8>().ok().map(i32::from)
}

/// Why a simulated job fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failing {
    /// A task exited non-zero: its index and exit code.
    Task {
        /// Index in the spec's tasks.
        index: usize,
        /// The exit code.
        code: i32,
    },
    /// It ran past its runtime limit ([`JobSpec::active_deadline_seconds`]), as a pod's
    /// `activeDeadlineSeconds` ends it in Kubernetes.
    Deadline,
}

/// How a whole job ends: after how long (`None`: until deleted) and, if it fails, why.
///
/// A failing task ends the job when it exits (the earliest failing task, ties by task order),
/// as Volcano's `PodFailed → AbortJob`-style policies do; otherwise the job completes when its
/// longest task ends. A runtime limit ends it `Deadline` when it would run longer (a job
/// ending exactly at its limit completes).
pub fn job_outcome(spec: &JobSpec, default_runtime_seconds: u64) -> (Option<u64>, Option<Failing>) {
    let (runtime, failing) = natural_outcome(spec, default_runtime_seconds);
    match spec.active_deadline_seconds {
        Some(limit) if runtime.is_none_or(|r| r > limit) => {
            (Some(limit.min(MAX_RUNTIME_SECONDS)), Some(Failing::Deadline))
        }
        _ => (runtime, failing),
    }
}

/// [`job_outcome`] without the runtime limit.
fn natural_outcome(spec: &JobSpec, default_runtime_seconds: u64) -> (Option<u64>, Option<Failing>) {
    let outcomes: Vec<TaskOutcome> = spec
        .tasks
        .iter()
        .map(|t| task_outcome(spec.kind, &t.command, default_runtime_seconds))
        .collect();
    let failing = outcomes
        .iter()
        .enumerate()
        .filter(|(_, o)| o.exit_code != 0)
        .min_by_key(|(i, o)| (o.runtime, *i));
    if let Some((index, outcome)) = failing {
        return (
            outcome.runtime,
            Some(Failing::Task {
                index,
                code: outcome.exit_code,
            }),
        );
    }
    if outcomes.is_empty() {
        return (
            (!matches!(spec.kind, JobKind::Jupyter | JobKind::Webide)).then_some(default_runtime_seconds),
            None,
        );
    }
    // A job runs until deleted as soon as one task does.
    let runtime = outcomes
        .iter()
        .map(|o| o.runtime)
        .try_fold(0u64, |max, r| r.map(|r| max.max(r)));
    (runtime, None)
}

/// How long a job runs once placed ([`job_outcome`]); `None` until deleted.
pub fn runtime_seconds(spec: &JobSpec, default_runtime_seconds: u64) -> Option<u64> {
    job_outcome(spec, default_runtime_seconds).0
}

/// The seconds of `sleep N`, capped; `None` for what is not a non-negative number.
fn sleep_seconds(text: &str) -> Option<u64> {
    let s = text.trim().parse::<f64>().ok().filter(|s| !s.is_nan() && *s >= 0.0)?;
    // `as` saturates (inf → u64::MAX); the cap then applies.
    Some((s.ceil() as u64).min(MAX_RUNTIME_SECONDS))
}

/// `t + secs`, or `None` when that is past what a date can hold: time arithmetic that cannot
/// panic.
pub fn after(t: DateTime<Utc>, secs: u64) -> Option<DateTime<Utc>> {
    let secs = i64::try_from(secs).ok()?;
    t.checked_add_signed(Duration::try_seconds(secs)?)
}
