//! `ar again ID`: the job run again as a new job (`POST /api/v1/jobs/{id}/resubmit`), with the
//! API's changes — another name, queue, schedule type, policy or volumes, and its tasks changed
//! by `--set tasks.…` — under an `Idempotency-Key`, so running the command again soon does not
//! run the job twice.

use anteroom_shared::api::jobs::{Job, ResubmitBody};
use reqwest::Method;
use sha2::{Digest, Sha256};

use crate::args::AgainArgs;
use crate::client::Repeat;
use crate::context::Ctx;
use crate::error::{CliError, CliResult};
use crate::jobfile;

/// `ar again`.
pub async fn again(ctx: &Ctx, args: AgainArgs) -> CliResult<()> {
    ctx.require_login()?;
    let mut changes = ResubmitBody {
        name: args.name.clone(),
        queue: args.queue.clone(),
        schedule_type: parse("--type", &args.schedule_type)?,
        preemption_policy: parse("--policy", &args.policy)?,
        tasks: None,
        volumes: (!args.volumes.is_empty()).then(|| args.volumes.iter().filter(|v| !v.is_empty()).cloned().collect()),
    };
    if !args.set.is_empty() {
        // The tasks as they are, changed: sent whole, as the API takes them.
        if let Some(bad) = args.set.iter().find(|s| !s.starts_with("tasks.")) {
            return Err(CliError::Usage(format!(
                "--set {bad}: only the tasks change this way (name, queue, type, policy and volumes have their flags)"
            )));
        }
        let job: Job = ctx.api.get(&format!("/api/v1/jobs/{}", args.id), &[]).await?;
        let mut doc = serde_json::json!({ "tasks": job.tasks });
        for assignment in &args.set {
            jobfile::set(&mut doc, assignment).map_err(|e| CliError::Usage(format!("--set {assignment}: {e}")))?;
        }
        changes.tasks = Some(
            serde_json::from_value(doc["tasks"].take())
                .map_err(|e| CliError::Usage(format!("--set: the tasks are no longer valid: {e}")))?,
        );
    }
    let key = match &args.idempotency_key {
        Some(key) => key.clone(),
        None => default_key(
            args.id,
            &changes,
            jobfile::window_stamp(super::submit::now().timestamp()),
        ),
    };
    let path = format!("/api/v1/jobs/{}/resubmit", args.id);
    // Keyed, so safe to send again when no answer came: the server answers the first new job.
    let response = ctx
        .api
        .send(Repeat::Safe, || {
            ctx.api
                .request(Method::POST, &path)
                .header("Idempotency-Key", &key)
                .json(&changes)
        })
        .await?;
    super::submit::print_submitted(ctx, response, args.quiet).await
}

/// A flag's value as its type, or a usage error naming it.
fn parse<T: std::str::FromStr>(what: &str, value: &Option<String>) -> CliResult<Option<T>> {
    value
        .as_deref()
        .map(|v| {
            v.parse()
                .map_err(|_| CliError::Usage(format!("{what}: unknown value {v:?}")))
        })
        .transpose()
}

/// The default `Idempotency-Key` of a run again: the job, the changes and the ten-minute window.
fn default_key(id: i64, changes: &ResubmitBody, window: i64) -> String {
    let bytes = serde_json::to_vec(&(id, changes)).unwrap_or_default();
    let hash: String = Sha256::digest(&bytes)
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("ar-again-{hash}-{window}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_run_again_in_one_window_has_one_key() {
        let none = ResubmitBody::default();
        let queue = ResubmitBody {
            queue: Some("team".into()),
            ..ResubmitBody::default()
        };
        assert_eq!(default_key(7, &none, 100), default_key(7, &none, 100));
        assert_ne!(default_key(7, &none, 100), default_key(8, &none, 100), "another job");
        assert_ne!(default_key(7, &none, 100), default_key(7, &queue, 100), "other changes");
        assert_ne!(default_key(7, &none, 100), default_key(7, &none, 101), "a later window");
    }
}
