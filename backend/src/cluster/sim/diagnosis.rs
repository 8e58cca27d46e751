//! What the simulated cluster says about a job's pods — their states, the events a Kubernetes
//! cluster would record, and their logs — derived from the job and the nodes, pure: the same
//! job at the same instant always reads the same, so tests and demos can rely on every line.
//!
//! The rules follow Kubernetes and Volcano where they can:
//! - a pending job's pods are `Pending`/`Unschedulable`, and the scheduler's `FailedScheduling`
//!   message counts the nodes by why they refuse a pod (`0/5 nodes are available: 2
//!   Insufficient nvidia.com/a100, 3 node(s) had untolerated taint {nvidia.com/gpu: present}.`);
//! - a placed pod was `Scheduled` and `Started` when its job started;
//! - a task that exited non-zero fails its pods (`Error`, the exit code), and the job with
//!   them; the pods still running then are stopped (`Terminated`, 143);
//! - a log has a line when the pod started, its image and command, one every
//!   [`LOG_INTERVAL_SECONDS`] while it runs, and its exit.

use anteroom_shared::api::pods::{ClusterEventView, PodView, pod_name};
use anteroom_shared::scheduling::{NodeSet, TaintEffect};
use chrono::{DateTime, SecondsFormat, Utc};

use super::runtime::{Failing, after, job_outcome, task_outcome};
use super::state::DEADLINE_EXCEEDED;
use super::state::{SimJob, SimPhase};
use crate::cluster::TaskSpec;
use crate::prequeue::{NodeSnapshot, node_accepts};

/// Seconds between two "running" lines of a simulated log.
pub const LOG_INTERVAL_SECONDS: i64 = 10;

/// Exit code of a container stopped by SIGTERM (128 + 15).
const SIGTERM_EXIT: i32 = 143;

/// The pods of `job` at `now`, by task then replica.
pub fn pods(job: &SimJob, nodes: &[NodeSnapshot], now: DateTime<Utc>, default_runtime: u64) -> Vec<PodView> {
    let id = job.spec.id;
    if job.phase == SimPhase::Pending {
        return job
            .spec
            .tasks
            .iter()
            .flat_map(|task| {
                let message = unschedulable_message(task, nodes);
                (0..task.replicas).map(move |replica| PodView {
                    name: pod_name(id, &task.name, replica),
                    task: task.name.clone(),
                    replica,
                    node: None,
                    phase: "Pending".to_owned(),
                    reason: Some("Unschedulable".to_owned()),
                    message: Some(message.clone()),
                    cause: None,
                    exit_code: None,
                    restarts: 0,
                    started_at: None,
                    finished_at: None,
                })
            })
            .collect();
    }
    let mut placed: Vec<&super::state::SimPod> = job.pods.iter().collect();
    let order = |task: &str| job.spec.tasks.iter().position(|t| t.name == task);
    placed.sort_by_key(|p| (order(&p.task), p.replica));
    placed
        .into_iter()
        .map(|pod| {
            let state = pod_state(job, &pod.task, now, default_runtime);
            PodView {
                name: pod_name(id, &pod.task, pod.replica),
                task: pod.task.clone(),
                replica: pod.replica,
                node: Some(pod.node.clone()),
                phase: state.phase.to_owned(),
                reason: state.reason.map(str::to_owned),
                message: state.message,
                cause: None,
                exit_code: state.exit_code,
                restarts: 0,
                started_at: job.started_at,
                finished_at: state.finished_at,
            }
        })
        .collect()
}

/// How one placed pod of `task` stands at `now`.
struct PodState {
    phase: &'static str,
    reason: Option<&'static str>,
    message: Option<String>,
    exit_code: Option<i32>,
    finished_at: Option<DateTime<Utc>>,
}

/// When the job fails, if it does: its failing task's index, the exit code and the instant
/// (its start plus that task's runtime). Fixed by the spec and the start, whatever the phase
/// says yet — a step that lags does not change what a pod showed or a log wrote.
fn failure_at(job: &SimJob, default_runtime: u64) -> Option<(Failing, DateTime<Utc>)> {
    let (runtime, failing) = job_outcome(&job.spec, default_runtime);
    let at = after(job.started_at?, runtime?)?;
    Some((failing?, at))
}

fn pod_state(job: &SimJob, task: &str, now: DateTime<Utc>, default_runtime: u64) -> PodState {
    let spec = job.spec.tasks.iter().find(|t| t.name == task);
    let outcome = spec.map(|t| task_outcome(job.spec.kind, &t.command, default_runtime));
    let own_end = match (job.started_at, outcome.and_then(|o| o.runtime)) {
        (Some(start), Some(secs)) => after(start, secs),
        _ => None,
    };
    let ended = |end: DateTime<Utc>| PodState {
        phase: "Succeeded",
        reason: Some("Completed"),
        message: None,
        exit_code: Some(0),
        finished_at: Some(end),
    };
    if let Some((Failing::Deadline, at)) = failure_at(job, default_runtime)
        && (at <= now || job.phase == SimPhase::Failed)
    {
        return match own_end {
            Some(end) if end <= at => ended(end),
            _ => PodState {
                phase: "Failed",
                reason: Some(DEADLINE_EXCEEDED),
                message: Some("Pod was active on the node longer than the specified deadline".to_owned()),
                exit_code: None,
                finished_at: Some(at),
            },
        };
    }
    if let Some((Failing::Task { index, code }, at)) = failure_at(job, default_runtime)
        && (at <= now || job.phase == SimPhase::Failed)
    {
        let failing_task = job.spec.tasks[index].name.as_str();
        return if failing_task == task {
            PodState {
                phase: "Failed",
                reason: Some("Error"),
                message: None,
                exit_code: Some(code),
                finished_at: Some(at),
            }
        } else {
            match own_end {
                Some(end) if end <= at => ended(end),
                _ => PodState {
                    phase: "Failed",
                    reason: Some("Terminated"),
                    message: Some(format!("stopped when task {failing_task} failed")),
                    exit_code: Some(SIGTERM_EXIT),
                    finished_at: Some(at),
                },
            }
        };
    }
    match job.phase {
        SimPhase::Completed | SimPhase::Failed => ended(own_end.or(job.finishes_at).unwrap_or(now)),
        SimPhase::Terminating => PodState {
            phase: "Running",
            reason: Some("Terminating"),
            message: job
                .gone_at
                .map(|t| format!("deleted; its containers have until {} to exit", stamp(t))),
            exit_code: None,
            finished_at: None,
        },
        SimPhase::Running | SimPhase::Pending => match own_end {
            Some(end) if end <= now => ended(end),
            _ => PodState {
                phase: "Running",
                reason: None,
                message: None,
                exit_code: None,
                finished_at: None,
            },
        },
    }
}

/// The scheduler's word on a task whose pods cannot be placed: `0/N nodes are available: …`
/// with the nodes counted by the first reason each refuses one pod of it, or — when some node
/// has room for one pod — that the gang as a whole does not fit.
pub fn unschedulable_message(task: &TaskSpec, nodes: &[NodeSnapshot]) -> String {
    let allowed = NodeSet::from_names(task.node_names.iter().cloned());
    let mut reasons: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    let mut fitting = 0usize;
    for node in nodes {
        let reason = if !node.ready {
            "node(s) were not ready".to_owned()
        } else if !node.schedulable {
            "node(s) were unschedulable".to_owned()
        } else if !task.node_names.is_empty() && !task.node_names.contains(&node.name) {
            "node(s) didn't match Pod's node affinity/selector".to_owned()
        } else if !node_accepts(node, &allowed, &task.tolerations) {
            let taints: Vec<String> = node
                .taints
                .iter()
                .filter(|t| matches!(t.effect, TaintEffect::NoSchedule | TaintEffect::NoExecute))
                .filter(|t| !task.tolerations.iter().any(|tol| tol.tolerates(t)))
                .map(|t| format!("{}: {}", t.key, t.value.as_deref().unwrap_or_default()))
                .collect();
            format!("node(s) had untolerated taint {{{}}}", taints.join(", "))
        } else if let Some(short) = task
            .resources
            .iter()
            .find(|(name, q)| q.is_positive() && node.free.get(name) < *q)
            .map(|(name, _)| name.to_string())
        {
            format!("Insufficient {short}")
        } else {
            fitting += 1;
            continue;
        };
        *reasons.entry(reason).or_default() += 1;
    }
    if fitting > 0 {
        return format!(
            "{fitting}/{} nodes have room for one pod of task {}, but not for the whole gang at once: waiting \
             for resources",
            nodes.len(),
            task.name
        );
    }
    let parts: Vec<String> = reasons.iter().map(|(why, n)| format!("{n} {why}")).collect();
    format!("0/{} nodes are available: {}.", nodes.len(), parts.join(", "))
}

/// The events a cluster would have recorded about `job` by `now`, oldest first.
pub fn events(job: &SimJob, nodes: &[NodeSnapshot], now: DateTime<Utc>, default_runtime: u64) -> Vec<ClusterEventView> {
    let id = job.spec.id;
    let mut out = Vec::new();
    let event =
        |object: String, warning: bool, reason: &str, message: String, first: Option<DateTime<Utc>>| ClusterEventView {
            object,
            event_type: if warning { "Warning" } else { "Normal" }.to_owned(),
            reason: reason.to_owned(),
            message: Some(message),
            cause: None,
            count: 1,
            first_at: first,
            last_at: first,
        };
    if job.phase == SimPhase::Pending {
        for task in &job.spec.tasks {
            if task.replicas == 0 {
                continue;
            }
            let mut e = event(
                format!("Pod/{}", pod_name(id, &task.name, 0)),
                true,
                "FailedScheduling",
                unschedulable_message(task, nodes),
                Some(job.created_at),
            );
            // The scheduler retries and the cluster folds the repeats into one event.
            let tries = (now - job.created_at).num_seconds().max(0) / LOG_INTERVAL_SECONDS;
            e.count = u32::try_from(tries + 1).unwrap_or(u32::MAX);
            e.last_at = Some(now.max(job.created_at));
            out.push(e);
        }
        out.push(event(
            format!("PodGroup/{}", crate::cluster::cluster_name(id)),
            true,
            "Unschedulable",
            format!(
                "{0}/{0} tasks in gang unschedulable: pod group is not ready, {0} Pending, {0} minAvailable",
                job.spec.min_available()
            ),
            Some(job.created_at),
        ));
        return out;
    }
    for view in pods(job, nodes, now, default_runtime) {
        let object = format!("Pod/{}", view.name);
        let node = view.node.clone().unwrap_or_default();
        out.push(event(
            object.clone(),
            false,
            "Scheduled",
            format!("Successfully assigned {} to {node}", view.name),
            job.started_at,
        ));
        out.push(event(
            object.clone(),
            false,
            "Started",
            format!("Started container {}", view.task),
            job.started_at,
        ));
        match (view.phase.as_str(), view.reason.as_deref()) {
            ("Failed", Some("Error")) => out.push(event(
                object,
                true,
                "Failed",
                format!(
                    "Error: container exited with code {}",
                    view.exit_code.unwrap_or_default()
                ),
                view.finished_at,
            )),
            (_, Some("Terminating" | "Terminated")) => out.push(event(
                object,
                false,
                "Killing",
                format!("Stopping container {}", view.task),
                view.finished_at.or(Some(now)),
            )),
            _ => {}
        }
    }
    out.sort_by(|a, b| a.last_at.cmp(&b.last_at).then_with(|| a.object.cmp(&b.object)));
    out
}

/// The log of one pod of a job, as a function of time: line `i` is always the same text, and
/// lines only ever get added at the end, so following it is re-reading the count.
#[derive(Debug, Clone)]
pub struct PodLog {
    pod: String,
    node: String,
    image: String,
    command: String,
    started: DateTime<Utc>,
    /// When and how it exits; `None`: it runs on (or was deleted before it ended).
    exit: Option<(DateTime<Utc>, i32)>,
    /// It was stopped (deleted or its job failed) without exiting on its own: no line after.
    stopped_at: Option<DateTime<Utc>>,
}

impl PodLog {
    /// The log of the pod named `pod` of `job`; `None` when the job has no such placed pod (a
    /// pending job's pods have not started: they have no log yet, `Some` of an empty log is
    /// not what Kubernetes says either — it refuses).
    pub fn of(job: &SimJob, pod: &str, default_runtime: u64) -> Option<PodLog> {
        let placed = job
            .pods
            .iter()
            .find(|p| pod_name(job.spec.id, &p.task, p.replica) == pod)?;
        let task = job.spec.tasks.iter().find(|t| t.name == placed.task)?;
        let started = job.started_at?;
        let outcome = task_outcome(job.spec.kind, &task.command, default_runtime);
        let own_end = outcome.runtime.and_then(|secs| after(started, secs));
        let mut exit = own_end.map(|end| (end, outcome.exit_code));
        let mut stopped_at = None;
        // The job fails before this pod would end: the failure stops it (fixed by the spec,
        // whatever the phase says yet, so no line written changes).
        if let Some((_, at)) = failure_at(job, default_runtime)
            && exit.is_none_or(|(own, _)| own > at)
        {
            exit = Some((at, SIGTERM_EXIT));
        }
        if job.phase == SimPhase::Terminating {
            // Deleted while running: it says nothing more once stopped.
            stopped_at = job.gone_at;
            exit = exit.filter(|(t, _)| job.gone_at.is_none_or(|g| *t <= g));
        }
        Some(PodLog {
            pod: pod.to_owned(),
            node: placed.node.clone(),
            image: task.image.clone(),
            command: if task.command.is_empty() {
                "(the image's own)".to_owned()
            } else {
                task.command.join(" ")
            },
            started,
            exit,
            stopped_at,
        })
    }

    /// The last instant the log covers at `now`.
    fn horizon(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        let mut t = now;
        if let Some((end, _)) = self.exit {
            t = t.min(end);
        }
        if let Some(stop) = self.stopped_at {
            t = t.min(stop);
        }
        t
    }

    /// How many "running" lines there are at `now`.
    fn running_lines(&self, now: DateTime<Utc>) -> u64 {
        let elapsed = (self.horizon(now) - self.started).num_seconds().max(0);
        // A line at t+10, t+20… strictly before the exit (the exit line says the rest).
        let mut n = elapsed / LOG_INTERVAL_SECONDS;
        if let Some((end, _)) = self.exit
            && end <= now
            && elapsed % LOG_INTERVAL_SECONDS == 0
            && n > 0
        {
            n -= 1;
        }
        u64::try_from(n).unwrap_or(0)
    }

    /// Whether the pod has written its last line by `now`.
    pub fn ended(&self, now: DateTime<Utc>) -> bool {
        self.exit.is_some_and(|(end, _)| end <= now) || self.stopped_at.is_some_and(|t| t <= now)
    }

    /// How many lines it has at `now`.
    pub fn line_count(&self, now: DateTime<Utc>) -> u64 {
        let exit_line = u64::from(self.exit.is_some_and(|(end, _)| end <= now));
        2 + self.running_lines(now) + exit_line
    }

    /// Line `i` (0-based, with its newline), for `i < line_count(now)`.
    pub fn line(&self, i: u64, now: DateTime<Utc>) -> String {
        let running = self.running_lines(now);
        let text = match i {
            0 => format!(
                "{} [anteroom-sim] pod {} started on node {}",
                stamp(self.started),
                self.pod,
                self.node
            ),
            1 => format!(
                "{} [anteroom-sim] image {}, command: {}",
                stamp(self.started),
                self.image,
                self.command
            ),
            i if i < 2 + running => {
                let k = i64::try_from(i - 1).unwrap_or(i64::MAX / 2);
                let secs = k.saturating_mul(LOG_INTERVAL_SECONDS);
                let at = after(self.started, u64::try_from(secs).unwrap_or(0)).unwrap_or(self.started);
                format!("{} [anteroom-sim] running for {secs}s", stamp(at))
            }
            _ => {
                let (end, code) = self.exit.unwrap_or((self.started, 0));
                format!("{} [anteroom-sim] exited with code {code}", stamp(end))
            }
        };
        text + "\n"
    }

    /// Lines `from..` at `now`, at most `tail` of them (the last ones) and at most `limit_bytes`
    /// (the last ones that fit), as one text.
    pub fn text(&self, from: u64, now: DateTime<Utc>, tail: Option<u32>, limit_bytes: u64) -> String {
        let count = self.line_count(now);
        let mut first = from.min(count);
        if let Some(tail) = tail {
            first = first.max(count.saturating_sub(u64::from(tail)));
        }
        let mut lines: Vec<String> = Vec::new();
        let mut bytes = 0u64;
        for i in (first..count).rev() {
            let line = self.line(i, now);
            bytes += line.len() as u64;
            if bytes > limit_bytes {
                break;
            }
            lines.push(line);
        }
        lines.reverse();
        lines.concat()
    }
}

impl PodLog {
    /// Lines `from..` at `now` in order, as many whole lines as fit in `limit_bytes`, and the
    /// line to go on from: what a follower sends next (never a line skipped, never one twice).
    pub fn next_lines(&self, from: u64, now: DateTime<Utc>, limit_bytes: u64) -> (String, u64) {
        let count = self.line_count(now);
        let mut out = String::new();
        let mut next = from;
        while next < count {
            let line = self.line(next, now);
            if (out.len() + line.len()) as u64 > limit_bytes {
                break;
            }
            out.push_str(&line);
            next += 1;
        }
        (out, next)
    }
}

fn stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests;
