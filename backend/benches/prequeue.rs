//! Benchmarks of the pure prequeue core (issue 11, item 11): round selection over 10 000 and
//! 100 000 prequeued jobs in both activation orders, the preemption plan over 200 nodes × 16
//! backfill jobs, and one submission decision against 10 000 active jobs.
//!
//! Every input is generated from a fixed seed, so runs compare like with like. Results and the
//! machine are recorded in `docs/performance.md`.

use std::hint::black_box;
use std::time::Duration;

use anteroom::prequeue::queue_tree::QueueTree;
use anteroom::prequeue::{
    JobSnapshot, NodeSnapshot, PreparedRound, QueueQuota, QueueSpec, Snapshot, Submission, decide_submission,
    plan_preemption, usage_from_jobs,
};
use anteroom_shared::scheduling::{
    ActivationOrder, JobKind, JobPhase, NodeSet, PreemptionPolicy, Quantity, ResourceList, ScheduleType, TaskResources,
};
use chrono::{DateTime, TimeZone, Utc};
use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

/// A small deterministic generator (xorshift64*): the benchmark needs reproducible data, not
/// statistical quality.
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

const USERS: u64 = 2_000;
const GPU_TYPES: [&str; 2] = ["nvidia.com/a100", "nvidia.com/h100"];

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).single().expect("valid date")
}

fn list(cpu: i64, mem_gi: i64, gpu: Option<(&str, i64)>) -> ResourceList {
    let mut l = ResourceList::new()
        .with("cpu", Quantity::from_units(cpu))
        .with("memory", Quantity::from_bytes(mem_gi << 30));
    if let Some((name, count)) = gpu {
        l.insert(name, Quantity::from_units(count));
    }
    l
}

/// 20 queues, three levels: `org` → 4 divisions → 15 teams, capacities on every level.
fn queues() -> (Vec<QueueSpec>, Vec<String>) {
    let mut specs = vec![QueueSpec {
        name: "org".into(),
        parent: None,
        capacity: Some(
            list(24_000, 96_000, Some(("nvidia.com/a100", 1_600))).with("nvidia.com/h100", Quantity::from_units(1_600)),
        ),
        sharing: Default::default(),
        budget_hold: None,
    }];
    let mut leaves = Vec::new();
    for d in 0..4 {
        let division = format!("div-{d}");
        specs.push(QueueSpec {
            name: division.clone(),
            parent: Some("org".into()),
            capacity: Some(
                list(6_000, 24_000, Some(("nvidia.com/a100", 400))).with("nvidia.com/h100", Quantity::from_units(400)),
            ),
            sharing: Default::default(),
            budget_hold: None,
        });
        let teams = if d == 3 { 3 } else { 4 };
        for t in 0..teams {
            let team = format!("team-{d}-{t}");
            specs.push(QueueSpec {
                name: team.clone(),
                parent: Some(division.clone()),
                capacity: Some(list(1_500, 6_000, Some(("nvidia.com/a100", 100)))),
                sharing: Default::default(),
                budget_hold: None,
            });
            leaves.push(team);
        }
    }
    (specs, leaves)
}

fn nodes(count: usize) -> Vec<NodeSnapshot> {
    (0..count)
        .map(|i| {
            let allocatable = list(128, 1_024, Some((GPU_TYPES[i % 2], 8)));
            NodeSnapshot {
                name: format!("node-{i:04}"),
                ready: true,
                schedulable: true,
                free: allocatable.clone(),
                allocatable,
                labels: Default::default(),
                taints: Vec::new(),
            }
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn job(
    id: i64,
    owner: i64,
    queue: &str,
    phase: JobPhase,
    schedule_type: ScheduleType,
    submitted_s: i64,
    resources: ResourceList,
    node: Option<&str>,
) -> JobSnapshot {
    let submitted_at = t0() + chrono::Duration::seconds(submitted_s);
    JobSnapshot {
        id,
        owner,
        queue: queue.to_owned(),
        kind: JobKind::Custom,
        schedule_type,
        phase,
        preemption_policy: PreemptionPolicy::PreemptLowerPriority,
        submitted_at,
        started_at: node.map(|_| submitted_at),
        waiting_tolerance_seconds: (schedule_type == ScheduleType::Normal).then_some(300),
        waiting_since: Some(submitted_at),
        resources,
        explicit_nodes: NodeSet::Any,
        single_node: true,
        nodes: node.map(|n| vec![n.to_owned()]).unwrap_or_default(),
        locked_until: None,
        tolerations: Vec::new(),
        sharing: Default::default(),
        max_runtime_seconds: None,
    }
}

fn random_request(rng: &mut Rng) -> ResourceList {
    let gpu = (rng.below(10) < 3).then(|| (GPU_TYPES[rng.below(2) as usize], 1 + rng.below(8) as i64));
    list(1 + rng.below(16) as i64, 4 * (1 + rng.below(16) as i64), gpu)
}

/// The round benchmark's snapshot: `prequeued` jobs from 2 000 users in the 15 team queues,
/// 1 000 running jobs, 20 timed-out pending jobs, quotas on every team, 200 nodes.
fn round_snapshot(prequeued: usize, order: ActivationOrder) -> (Snapshot, DateTime<Utc>) {
    let mut rng = Rng(0x5eed_0001);
    let (queues, leaves) = queues();
    let mut s = Snapshot::default();
    s.config.backfill_enabled = true;
    s.config.queue_quota_enabled = true;
    s.config.prequeue_candidate_size = 500;
    s.config.max_total_activations_per_round = 500;
    s.config.activation_order = order;
    s.queues = queues;
    s.quotas = leaves
        .iter()
        .map(|q| QueueQuota {
            queue: q.clone(),
            limits: list(64, 256, Some(("nvidia.com/a100", 8))),
            max_active_jobs: Some(8),
        })
        .collect();
    s.nodes = nodes(200);
    let mut id = 0;
    for _ in 0..1_000 {
        id += 1;
        let leaf = &leaves[rng.below(leaves.len() as u64) as usize];
        let node = format!("node-{:04}", rng.below(200));
        s.jobs.push(job(
            id,
            rng.below(USERS) as i64,
            leaf,
            JobPhase::Running,
            ScheduleType::Normal,
            -100_000 + id,
            random_request(&mut rng),
            Some(&node),
        ));
    }
    for _ in 0..20 {
        id += 1;
        let leaf = &leaves[rng.below(leaves.len() as u64) as usize];
        s.jobs.push(job(
            id,
            rng.below(USERS) as i64,
            leaf,
            JobPhase::Pending,
            ScheduleType::Normal,
            -50_000 + id,
            random_request(&mut rng),
            None,
        ));
    }
    s.usage = usage_from_jobs(&s.jobs);
    // Prequeued jobs arrive over time, one every 10 ms on average; the store delivers them in
    // (submittedAt, id) order. The oldest ~5 % are timed out at `now`.
    for i in 0..prequeued {
        id += 1;
        let leaf = &leaves[rng.below(leaves.len() as u64) as usize];
        let backfill = rng.below(10) == 0;
        let mut j = job(
            id,
            rng.below(USERS) as i64,
            leaf,
            JobPhase::Prequeue,
            if backfill {
                ScheduleType::Backfill
            } else {
                ScheduleType::Normal
            },
            (i / 100) as i64,
            random_request(&mut rng),
            None,
        );
        j.submitted_at += chrono::Duration::milliseconds((i % 100) as i64 * 10);
        s.jobs.push(j);
    }
    let now = t0() + chrono::Duration::seconds(300 + (prequeued / 100 / 20) as i64);
    if order == ActivationOrder::FairShareHistory {
        // A week of history: every user with some decayed usage in every leaf.
        s.history = std::sync::Arc::new(anteroom::prequeue::history::History::from_pairs(
            leaves
                .iter()
                .flat_map(|leaf| (0..USERS as i64).map(move |user| (leaf.clone(), user)))
                .map(|pair| {
                    let units = rng.below(10_000) as f64 / 10.0;
                    (pair, units)
                })
                .collect::<Vec<_>>(),
        ));
    }
    (s, now)
}

fn bench_round(c: &mut Criterion) {
    let mut group = c.benchmark_group("round_selection");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(8))
        .warm_up_time(Duration::from_secs(2));
    for prequeued in [10_000, 100_000] {
        for order in [
            ActivationOrder::Fcfs,
            ActivationOrder::FairShare,
            ActivationOrder::FairShareHistory,
        ] {
            let (snapshot, now) = round_snapshot(prequeued, order);
            // Sanity: the round selects a full batch and explains everyone else.
            let prepared = PreparedRound::new(&snapshot, now).expect("prepared");
            let outcome = prepared.select();
            assert!(!outcome.selected.is_empty());
            assert_eq!(outcome.selected.len() + outcome.waiting.len(), prequeued);
            group.bench_with_input(BenchmarkId::new(order.as_str(), prequeued), &snapshot, |b, s| {
                b.iter(|| {
                    let prepared = PreparedRound::new(black_box(s), now).expect("prepared");
                    black_box(prepared.select())
                })
            });
        }
    }
    // Materialising full reasons for every waiting job (what a page of 100 000 would cost).
    let (snapshot, now) = round_snapshot(100_000, ActivationOrder::Fcfs);
    let prepared = PreparedRound::new(&snapshot, now).expect("prepared");
    let outcome = prepared.select();
    group.bench_function("explain_all/100000", |b| {
        b.iter(|| black_box(prepared.explain_all(&outcome)))
    });
    group.finish();
}

/// 200 nodes, each running 16 backfill jobs that hold all 8 of its GPUs (1–3 GPUs per job, the
/// rest CPU-only), and a timed-out pending job needing 5 A100s: every A100 node has a deficit
/// and a different best victim set.
fn preemption_snapshot() -> (Snapshot, DateTime<Utc>) {
    let mut rng = Rng(0x5eed_0002);
    let mut s = Snapshot::default();
    s.config.backfill_enabled = true;
    s.queues = vec![QueueSpec {
        name: "default".into(),
        parent: None,
        capacity: None,
        sharing: Default::default(),
        budget_hold: None,
    }];
    s.nodes = nodes(200);
    let mut id = 0;
    for n in 0..200 {
        let name = format!("node-{n:04}");
        let gpu = GPU_TYPES[n % 2];
        let mut used = ResourceList::new();
        let mut gpus_left = 8_i64;
        for k in 0..16 {
            id += 1;
            // Spread the node's 8 GPUs over random jobs; the last jobs take what is left.
            let take = if gpus_left == 0 {
                0
            } else if k >= 13 {
                gpus_left.min(3)
            } else if rng.below(2) == 0 {
                (1 + rng.below(3) as i64).min(gpus_left)
            } else {
                0
            };
            gpus_left -= take;
            let request = list(1 + rng.below(6) as i64, 8, (take > 0).then_some((gpu, take)));
            used.add_assign_checked(&request).expect("small");
            s.jobs.push(job(
                id,
                rng.below(USERS) as i64,
                "default",
                JobPhase::Running,
                ScheduleType::Backfill,
                id,
                request,
                Some(&name),
            ));
        }
        let node = &mut s.nodes[n];
        node.free = node.allocatable.checked_sub(&used).expect("small");
    }
    id += 1;
    s.jobs.push(job(
        id,
        1,
        "default",
        JobPhase::Pending,
        ScheduleType::Normal,
        0,
        list(8, 64, Some(("nvidia.com/a100", 5))),
        None,
    ));
    (s, t0() + chrono::Duration::seconds(3_600))
}

fn bench_preemption(c: &mut Criterion) {
    let (snapshot, now) = preemption_snapshot();
    let plan = plan_preemption(&snapshot, now).plan.expect("a plan exists");
    assert!(plan.exact);
    let mut group = c.benchmark_group("preemption_plan");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(5))
        .warm_up_time(Duration::from_secs(1));
    group.bench_function("200_nodes_x_16_backfill", |b| {
        b.iter(|| black_box(plan_preemption(black_box(&snapshot), now)))
    });
    group.finish();
}

/// One submission against 10 000 active jobs (running, pending, prequeued), quotas and
/// blocking on, 200 nodes.
fn bench_submission(c: &mut Criterion) {
    let (mut snapshot, now) = round_snapshot(0, ActivationOrder::Fcfs);
    let mut rng = Rng(0x5eed_0003);
    let (_, leaves) = queues();
    let mut id = 1_000_000;
    for i in 0..(10_000 - snapshot.jobs.len()) {
        id += 1;
        let phase = if i % 2 == 0 {
            JobPhase::Running
        } else {
            JobPhase::Prequeue
        };
        let leaf = &leaves[rng.below(leaves.len() as u64) as usize];
        snapshot.jobs.push(job(
            id,
            rng.below(USERS) as i64,
            leaf,
            phase,
            ScheduleType::Normal,
            i as i64,
            random_request(&mut rng),
            None,
        ));
    }
    snapshot.usage = usage_from_jobs(&snapshot.jobs);
    let tree = QueueTree::new(&snapshot.queues).expect("valid tree");
    let tasks = [TaskResources {
        name: "main".into(),
        replicas: 1,
        requests: list(4, 16, Some(("nvidia.com/a100", 1))),
        node_names: Vec::new(),
    }];
    let submission = Submission {
        owner_prequeued: None,
        owner_unfinished: None,
        owner: 7,
        queue: &leaves[0],
        kind: JobKind::Custom,
        schedule_type: ScheduleType::Normal,
        preemption_policy: PreemptionPolicy::PreemptLowerPriority,
        tasks: &tasks,
        tolerations: &[],
        borrow: Default::default(),
        priority: 0,
    };
    decide_submission(&snapshot, &tree, &submission, now).expect("accepted");
    let mut group = c.benchmark_group("submission_decision");
    group
        .sample_size(50)
        .measurement_time(Duration::from_secs(5))
        .warm_up_time(Duration::from_secs(1));
    group.bench_function("one_job_vs_10000_active", |b| {
        b.iter(|| black_box(decide_submission(black_box(&snapshot), &tree, &submission, now)))
    });
    group.finish();
}

/// CPU time of the benchmark thread (from `/proc/thread-self/schedstat`, nanoseconds on CPU).
///
/// This machine's two cores are shared with other builds; wall time then includes time spent
/// waiting for a core. CPU time measures the code itself, so the round selection is reported
/// both ways.
struct CpuTime;

fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

impl Measurement for CpuTime {
    type Intermediate = u64;
    type Value = u64;
    fn start(&self) -> u64 {
        thread_cpu_ns()
    }
    fn end(&self, start: u64) -> u64 {
        thread_cpu_ns().saturating_sub(start)
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn zero(&self) -> u64 {
        0
    }
    fn to_f64(&self, value: &u64) -> f64 {
        *value as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &CpuFormatter
    }
}

/// Formats nanoseconds of CPU time in ms or µs.
struct CpuFormatter;

impl ValueFormatter for CpuFormatter {
    fn scale_values(&self, typical: f64, values: &mut [f64]) -> &'static str {
        let (factor, unit) = if typical >= 1e6 {
            (1e-6, "ms cpu")
        } else {
            (1e-3, "µs cpu")
        };
        for v in values {
            *v *= factor;
        }
        unit
    }
    fn scale_throughputs(&self, _typical: f64, _throughput: &Throughput, _values: &mut [f64]) -> &'static str {
        "n/a"
    }
    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

fn bench_round_cpu(c: &mut Criterion<CpuTime>) {
    let mut group = c.benchmark_group("round_selection_cpu");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(8))
        .warm_up_time(Duration::from_secs(2));
    for order in [ActivationOrder::Fcfs, ActivationOrder::FairShare] {
        let (snapshot, now) = round_snapshot(100_000, order);
        group.bench_with_input(BenchmarkId::new(order.as_str(), 100_000), &snapshot, |b, s| {
            b.iter(|| {
                let prepared = PreparedRound::new(black_box(s), now).expect("prepared");
                black_box(prepared.select())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_round, bench_preemption, bench_submission);
criterion_group! {
    name = cpu;
    config = Criterion::default().with_measurement(CpuTime);
    targets = bench_round_cpu
}
criterion_main!(benches, cpu);
