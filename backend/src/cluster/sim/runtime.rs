//! How long a simulated job runs, and time arithmetic that cannot overflow: the ticker adds
//! these runtimes to the clock on every step, so a runtime that leaves the calendar would kill
//! it (a `sleep 1e13` once did, and again after every restart).

use anteroom_shared::scheduling::JobKind;
use chrono::{DateTime, Duration, Utc};

use crate::cluster::JobSpec;

/// The longest a simulated task runs: ten years. A `sleep 1e13` would otherwise put its end
/// past the last date chrono can hold, and the arithmetic would overflow in the ticker.
pub const MAX_RUNTIME_SECONDS: u64 = 10 * 365 * 24 * 60 * 60;

/// How long a job runs once placed: jupyter and webide until deleted; otherwise its longest
/// task, where a task `["sleep", "N"]` takes N seconds and any other the default runtime.
///
/// Every runtime is capped at [`MAX_RUNTIME_SECONDS`] (`sleep 1e13` or `sleep inf` run ten
/// years, not past the end of the calendar); a negative or unreadable N (`NaN`, `forever`)
/// runs the default, as a typo should not make a job eternal.
pub fn runtime_seconds(spec: &JobSpec, default_runtime_seconds: u64) -> Option<u64> {
    if matches!(spec.kind, JobKind::Jupyter | JobKind::Webide) {
        return None;
    }
    let runtime = spec
        .tasks
        .iter()
        .map(|t| match t.command.as_slice() {
            [cmd, secs] if cmd == "sleep" => sleep_seconds(secs).unwrap_or(default_runtime_seconds),
            _ => default_runtime_seconds,
        })
        .max()
        .unwrap_or(default_runtime_seconds);
    Some(runtime.min(MAX_RUNTIME_SECONDS))
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
