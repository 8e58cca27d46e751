//! The round with sharing between queues (issue 43, point 6): 100 000 waiting jobs of 2 000
//! users in a 50-queue tree (`org` → 7 divisions → 42 teams), with a GPU guarantee on every
//! queue and, side by side, the same world without guarantees. Fixed seed; results in
//! `docs/performance.md`.

use std::hint::black_box;
use std::time::Duration;

use anteroom::prequeue::{JobSnapshot, NodeSnapshot, PreparedRound, QueueQuota, QueueSpec, Snapshot, usage_from_jobs};
use anteroom_shared::scheduling::{
    ActivationOrder, JobKind, JobPhase, NodeSet, PreemptionPolicy, Quantity, ResourceList, ScheduleType,
};
use chrono::{DateTime, TimeZone, Utc};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const GPU: &str = "nvidia.com/a100";
const DIVISIONS: usize = 7;
const TEAMS_PER_DIVISION: usize = 6;
/// GPUs guaranteed to each team (42 × 8 = 336 of the cluster's 800).
const TEAM_GUARANTEE: i64 = 8;

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).single().expect("valid date")
}

fn gpus(n: i64) -> ResourceList {
    ResourceList::new().with(GPU, Quantity::from_units(n))
}

fn spec(name: &str, parent: Option<&str>, guarantee: Option<i64>) -> QueueSpec {
    let mut s = QueueSpec {
        name: name.into(),
        parent: parent.map(Into::into),
        capacity: None,
        sharing: Default::default(),
        budget_hold: None,
    };
    s.sharing.guarantee = guarantee.map(gpus);
    s
}

/// The 50 queues; with `guaranteed`, every one guarantees GPUs (a division its teams' sum, the
/// organisation its divisions').
fn queues(guaranteed: bool) -> (Vec<QueueSpec>, Vec<String>) {
    let g = |n: i64| guaranteed.then_some(n);
    let per_division = TEAM_GUARANTEE * TEAMS_PER_DIVISION as i64;
    let mut specs = vec![spec("org", None, g(per_division * DIVISIONS as i64))];
    let mut leaves = Vec::new();
    for d in 0..DIVISIONS {
        let division = format!("div-{d}");
        specs.push(spec(&division, Some("org"), g(per_division)));
        for t in 0..TEAMS_PER_DIVISION {
            let team = format!("team-{d}-{t}");
            specs.push(spec(&team, Some(&division), g(TEAM_GUARANTEE)));
            leaves.push(team);
        }
    }
    (specs, leaves)
}

fn job(
    id: i64,
    owner: i64,
    queue: &str,
    phase: JobPhase,
    at: i64,
    resources: ResourceList,
    node: Option<String>,
) -> JobSnapshot {
    let submitted_at = t0() + chrono::Duration::seconds(at);
    JobSnapshot {
        id,
        owner,
        queue: queue.to_owned(),
        kind: JobKind::Custom,
        schedule_type: ScheduleType::Normal,
        phase,
        preemption_policy: PreemptionPolicy::PreemptLowerPriority,
        submitted_at,
        started_at: node.as_ref().map(|_| submitted_at),
        waiting_tolerance_seconds: Some(300),
        waiting_since: Some(submitted_at),
        resources,
        explicit_nodes: NodeSet::Any,
        single_node: true,
        nodes: node.into_iter().collect(),
        locked_until: None,
        tolerations: Vec::new(),
        max_runtime_seconds: None,
        sharing: Default::default(),
    }
}

fn request(rng: &mut Rng) -> ResourceList {
    let mut r = ResourceList::new()
        .with("cpu", Quantity::from_units(1 + rng.below(16) as i64))
        .with("memory", Quantity::from_bytes((4 + rng.below(60) as i64) << 30));
    if rng.below(10) < 6 {
        r.insert(GPU, Quantity::from_units(1 + rng.below(4) as i64));
    }
    r
}

/// 1 000 running jobs and `prequeued` waiting ones over the 42 teams, 100 nodes of 8 GPUs,
/// quotas on (a per-user GPU limit in every team).
fn snapshot(prequeued: usize, guaranteed: bool) -> (Snapshot, DateTime<Utc>) {
    let mut rng = Rng(0x5eed_0043);
    let (specs, leaves) = queues(guaranteed);
    let mut s = Snapshot::default();
    s.config.queue_quota_enabled = true;
    s.config.prequeue_candidate_size = 500;
    s.config.max_total_activations_per_round = 500;
    s.config.activation_order = ActivationOrder::Fcfs;
    s.queues = specs;
    s.quotas = leaves
        .iter()
        .map(|q| QueueQuota {
            queue: q.clone(),
            limits: gpus(16),
            max_active_jobs: Some(8),
        })
        .collect();
    s.nodes = (0..100)
        .map(|i| {
            let allocatable = ResourceList::new()
                .with("cpu", Quantity::from_units(128))
                .with("memory", Quantity::from_bytes(1024 << 30))
                .with(GPU, Quantity::from_units(8));
            NodeSnapshot {
                name: format!("node-{i:03}"),
                ready: true,
                schedulable: true,
                free: allocatable.clone(),
                allocatable,
                labels: Default::default(),
                taints: Vec::new(),
            }
        })
        .collect();
    let mut id = 0;
    for _ in 0..1_000 {
        id += 1;
        let leaf = &leaves[rng.below(leaves.len() as u64) as usize];
        let node = format!("node-{:03}", rng.below(100));
        let r = request(&mut rng);
        s.jobs.push(job(
            id,
            rng.below(2_000) as i64,
            leaf,
            JobPhase::Running,
            -100_000 + id,
            r,
            Some(node),
        ));
    }
    s.usage = usage_from_jobs(&s.jobs);
    for i in 0..prequeued {
        id += 1;
        let leaf = &leaves[rng.below(leaves.len() as u64) as usize];
        let r = request(&mut rng);
        s.jobs.push(job(
            id,
            rng.below(2_000) as i64,
            leaf,
            JobPhase::Prequeue,
            (i / 100) as i64,
            r,
            None,
        ));
    }
    (s, t0() + chrono::Duration::seconds(2_000))
}

fn bench_sharing(c: &mut Criterion) {
    let mut group = c.benchmark_group("round_sharing");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(8))
        .warm_up_time(Duration::from_secs(2));
    for guaranteed in [false, true] {
        let (snapshot, now) = snapshot(100_000, guaranteed);
        let outcome = PreparedRound::new(&snapshot, now).expect("prepared").select();
        assert_eq!(outcome.selected.len() + outcome.waiting.len(), 100_000);
        let label = if guaranteed { "guarantees" } else { "no_guarantees" };
        group.bench_with_input(BenchmarkId::new(label, 100_000), &snapshot, |b, s| {
            b.iter(|| black_box(PreparedRound::new(black_box(s), now).expect("prepared").select()))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_sharing);
criterion_main!(benches);
