//! Test fixtures as builders (`JobBuilder::normal(1).gpus("nvidia.com/a100", 2)`), shared by the
//! unit tests of every prequeue module and the property tests.

use anteroom_shared::scheduling::{
    JobKind, JobPhase, NodeSet, PreemptionPolicy, Quantity, ResourceList, ScheduleType, TaskResources,
};
use chrono::{DateTime, Duration, TimeZone, Utc};

use crate::prequeue::snapshot::{JobId, JobSnapshot, NodeSnapshot, QueueSpec, UsageRow, UserId};

/// A fixed origin of time: job `id` is submitted `id` seconds after it.
pub fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).single().expect("valid date")
}

/// Shuffles deterministically from `seed` (xorshift), so a failing property case replays: the
/// determinism properties feed the core its input in another order.
pub fn shuffle<T>(items: &mut [T], mut seed: u64) {
    seed |= 1;
    for i in (1..items.len()).rev() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        items.swap(i, (seed % (i as u64 + 1)) as usize);
    }
}

/// A resource list from literal entries.
pub fn rl(entries: &[(&str, &str)]) -> ResourceList {
    ResourceList::parse_map(entries.iter().copied()).expect("valid fixture quantities")
}

/// A queue spec.
pub fn queue(name: &str, parent: Option<&str>, capacity: Option<ResourceList>) -> QueueSpec {
    QueueSpec {
        name: name.into(),
        parent: parent.map(Into::into),
        capacity,
        sharing: Default::default(),
        budget_hold: None,
    }
}

/// A queue spec with a guarantee and, optionally, a lending limit (sharing, §9).
pub fn shared_queue(
    name: &str,
    parent: Option<&str>,
    guarantee: Option<&[(&str, &str)]>,
    lending_limit: Option<&[(&str, &str)]>,
) -> QueueSpec {
    let mut spec = queue(name, parent, None);
    spec.sharing.guarantee = guarantee.map(rl);
    spec.sharing.lending_limit = lending_limit.map(rl);
    spec
}

/// A usage row.
pub fn usage(owner: UserId, queue: &str, resources: &[(&str, &str)], active_jobs: u32) -> UsageRow {
    UsageRow {
        owner,
        queue: queue.into(),
        resources: rl(resources),
        active_jobs,
    }
}

/// A ready, schedulable, empty node.
pub fn node(name: &str, allocatable: &[(&str, &str)]) -> NodeSnapshot {
    NodeSnapshot {
        name: name.into(),
        ready: true,
        schedulable: true,
        allocatable: rl(allocatable),
        free: rl(allocatable),
        labels: Default::default(),
        taints: Vec::new(),
    }
}

/// A task.
pub fn task(name: &str, replicas: u32, requests: &[(&str, &str)]) -> TaskResources {
    TaskResources {
        name: name.into(),
        replicas,
        requests: rl(requests),
        node_names: Vec::new(),
    }
}

/// Builds a [`JobSnapshot`]: a prequeued single-node custom job of user 1 in `default`, whose
/// waiting clock (`waitingSince`) runs from its submission unless set otherwise.
pub struct JobBuilder {
    job: JobSnapshot,
    /// `waitingSince` set by hand (else: the submission time).
    waiting_since: Option<Option<chrono::DateTime<chrono::Utc>>>,
}

impl JobBuilder {
    /// A normal prequeued job without tolerance.
    pub fn normal(id: JobId) -> Self {
        JobBuilder {
            job: JobSnapshot {
                id,
                owner: 1,
                queue: "default".into(),
                kind: JobKind::Custom,
                schedule_type: ScheduleType::Normal,
                phase: JobPhase::Prequeue,
                preemption_policy: PreemptionPolicy::PreemptLowerPriority,
                submitted_at: t0() + Duration::seconds(id),
                started_at: None,
                waiting_tolerance_seconds: None,
                waiting_since: None,
                resources: ResourceList::new(),
                explicit_nodes: NodeSet::Any,
                single_node: true,
                nodes: Vec::new(),
                locked_until: None,
                tolerations: Vec::new(),
                max_runtime_seconds: None,
                sharing: Default::default(),
            },
            waiting_since: None,
        }
    }

    /// `waitingSince`, in seconds after [`t0`]; `None`: held only privately so far.
    pub fn waiting_since(mut self, seconds: Option<i64>) -> Self {
        self.waiting_since = Some(seconds.map(|s| t0() + Duration::seconds(s)));
        self
    }

    /// A backfill prequeued job.
    pub fn backfill(id: JobId) -> Self {
        let mut b = JobBuilder::normal(id);
        b.job.schedule_type = ScheduleType::Backfill;
        b
    }

    /// Owner.
    pub fn owner(mut self, owner: UserId) -> Self {
        self.job.owner = owner;
        self
    }

    /// Queue.
    pub fn queue(mut self, queue: &str) -> Self {
        self.job.queue = queue.into();
        self
    }

    /// Sets one resource.
    pub fn res(mut self, name: &str, quantity: &str) -> Self {
        self.job
            .resources
            .insert(name, Quantity::parse(quantity).expect("valid fixture quantity"));
        self
    }

    /// CPU request.
    pub fn cpu(self, quantity: &str) -> Self {
        self.res("cpu", quantity)
    }

    /// Memory request.
    pub fn mem(self, quantity: &str) -> Self {
        self.res("memory", quantity)
    }

    /// Accelerators.
    pub fn gpus(self, resource: &str, count: i64) -> Self {
        let q = count.to_string();
        self.res(resource, &q)
    }

    /// Waiting tolerance in seconds.
    pub fn tolerance(mut self, seconds: i64) -> Self {
        self.job.waiting_tolerance_seconds = Some(seconds);
        self
    }

    /// Phase.
    pub fn phase(mut self, phase: JobPhase) -> Self {
        self.job.phase = phase;
        self
    }

    /// Submission time, in seconds after [`t0`].
    pub fn submitted(mut self, seconds: i64) -> Self {
        self.job.submitted_at = t0() + Duration::seconds(seconds);
        self
    }

    /// Explicit nodes.
    pub fn nodes(mut self, names: &[&str]) -> Self {
        self.job.explicit_nodes = NodeSet::from_names(names.iter().copied());
        self
    }

    /// Running on one node since its submission.
    pub fn running_on(mut self, node: &str) -> Self {
        self.job.phase = JobPhase::Running;
        self.job.nodes = vec![node.into()];
        self.job.started_at = Some(self.job.submitted_at);
        self
    }

    /// Ends at most this long after it starts.
    pub fn limit(mut self, seconds: i64) -> Self {
        self.job.max_runtime_seconds = Some(seconds);
        self
    }

    /// The job.
    pub fn build(mut self) -> JobSnapshot {
        self.job.waiting_since = self.waiting_since.unwrap_or(Some(self.job.submitted_at));
        self.job
    }
}
