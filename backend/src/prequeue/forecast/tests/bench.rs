//! The cost of a forecast at the size it runs at after watcher rounds: 100 000 waiting jobs
//! and 2 000 running ones, shaped like the round benchmark (`benches/prequeue.rs`: 20 queues
//! on three levels with capacities, quotas on every team, 2 000 users, 200 nodes). Ignored by
//! default; run it in release and read the printed figures (no wall-clock assertion):
//!
//! ```text
//! cargo test --release -p anteroom --lib prequeue::forecast -- --ignored --nocapture
//! ```

use std::time::Instant;

use anteroom_shared::scheduling::{ActivationOrder, JobPhase, Quantity, ResourceList, ScheduleType};
use chrono::Duration;

use crate::prequeue::forecast::{ForecastBounds, consideration_order, forecast};
use crate::prequeue::snapshot::{NodeSnapshot, QueueQuota, QueueSpec, Snapshot, usage_from_jobs};
use crate::prequeue::tests::fixtures::{JobBuilder, t0};

/// xorshift64*: reproducible data, not statistical quality.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

const GPUS: [&str; 2] = ["nvidia.com/a100", "nvidia.com/h100"];

fn list(cpu: i64, mem_gi: i64, gpu: Option<(&str, i64)>) -> ResourceList {
    let mut l = ResourceList::new()
        .with("cpu", Quantity::from_units(cpu))
        .with("memory", Quantity::from_bytes(mem_gi << 30));
    if let Some((name, count)) = gpu {
        l.insert(name, Quantity::from_units(count));
    }
    l
}

fn spec(name: &str, parent: Option<&str>, capacity: ResourceList) -> QueueSpec {
    QueueSpec {
        name: name.into(),
        parent: parent.map(Into::into),
        capacity: Some(capacity),
        sharing: Default::default(),
        budget_hold: None,
    }
}

/// 100 000 waiting and 2 000 running jobs (both with limits, 10 % of the waiting without).
fn big_snapshot(order: ActivationOrder) -> Snapshot {
    let mut rng = Rng(0x5eed_0002);
    let mut s = Snapshot::default();
    s.config.backfill_enabled = true;
    s.config.queue_quota_enabled = true;
    s.config.activation_order = order;
    let both = |cpu, mem, a100, h100| {
        list(cpu, mem, Some(("nvidia.com/a100", a100))).with("nvidia.com/h100", Quantity::from_units(h100))
    };
    s.queues.push(spec("org", None, both(24_000, 96_000, 1_600, 1_600)));
    let mut leaves = Vec::new();
    for d in 0..4 {
        let division = format!("div-{d}");
        s.queues
            .push(spec(&division, Some("org"), both(6_000, 24_000, 400, 400)));
        for t in 0..if d == 3 { 3 } else { 4 } {
            let team = format!("team-{d}-{t}");
            s.queues.push(spec(
                &team,
                Some(&division),
                list(1_500, 6_000, Some(("nvidia.com/a100", 100))),
            ));
            leaves.push(team);
        }
    }
    s.quotas = leaves
        .iter()
        .map(|q| QueueQuota {
            queue: q.clone(),
            limits: list(64, 256, Some(("nvidia.com/a100", 8))),
            max_active_jobs: Some(8),
        })
        .collect();
    s.nodes = (0..200)
        .map(|i| {
            let allocatable = list(128, 1_024, Some((GPUS[i % 2], 8)));
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
        .collect();
    let request = |rng: &mut Rng| {
        let gpu = (rng.below(10) < 3).then(|| (GPUS[rng.below(2) as usize], 1 + rng.below(8) as i64));
        list(1 + rng.below(16) as i64, 4 * (1 + rng.below(16) as i64), gpu)
    };
    let now = t0() + Duration::days(10);
    let mut id = 0;
    for _ in 0..2_000 {
        id += 1;
        let mut job = JobBuilder::normal(id)
            .owner(rng.below(2_000) as i64)
            .queue(&leaves[rng.below(leaves.len() as u64) as usize])
            .limit(3_600 + rng.below(2 * 86_400) as i64)
            .running_on(&format!("node-{:04}", rng.below(200)))
            .build();
        job.resources = request(&mut rng);
        job.started_at = Some(now - Duration::seconds(rng.below(86_400) as i64));
        s.jobs.push(job);
    }
    s.usage = usage_from_jobs(&s.jobs);
    for i in 0..100_000 {
        id += 1;
        let mut b = JobBuilder::normal(id)
            .owner(rng.below(2_000) as i64)
            .queue(&leaves[rng.below(leaves.len() as u64) as usize])
            .submitted(86_400 + i / 10);
        if rng.below(10) != 0 {
            b = b.limit(600 + rng.below(86_400) as i64);
        }
        let mut job = b.build();
        job.resources = request(&mut rng);
        if rng.below(10) == 0 {
            job.schedule_type = ScheduleType::Backfill;
        }
        s.jobs.push(job);
    }
    assert_eq!(s.jobs.iter().filter(|j| j.phase == JobPhase::Prequeue).count(), 100_000);
    s
}

#[test]
#[ignore = "a timing run: cargo test --release ... -- --ignored --nocapture"]
fn forecast_of_100_000_waiting_jobs() {
    for order in [ActivationOrder::Fcfs, ActivationOrder::FairShare] {
        let s = big_snapshot(order);
        let now = t0() + Duration::days(10);
        let started = Instant::now();
        let ordered = consideration_order(&s);
        let order_time = started.elapsed();
        let mut times = Vec::new();
        let mut estimates = Vec::new();
        for _ in 0..3 {
            let started = Instant::now();
            estimates = forecast(&s, now, ForecastBounds::default());
            times.push(started.elapsed());
        }
        let known = estimates.iter().filter(|e| e.start.is_some()).count();
        let last = estimates.iter().filter_map(|e| e.start).max();
        println!(
            "{order:?}: consideration order {order_time:?} ({} jobs); forecast {times:?}; {known} of {} estimated, \
             the last at now + {:?} h",
            ordered.len(),
            estimates.len(),
            last.map(|t| (t - now).num_hours()),
        );
    }
}

/// The round's cost with time-aware backfill (`round/backfill.rs`) off and on, on the same
/// data with the 50 oldest waiting jobs timed out (so they block their queues) and the
/// forecast's estimates passed in, as the watcher does.
#[test]
#[ignore = "a timing run: cargo test --release ... -- --ignored --nocapture"]
fn a_round_of_100_000_waiting_jobs_with_time_aware_backfill() {
    use crate::prequeue::round::PreparedRound;
    for order in [ActivationOrder::Fcfs, ActivationOrder::FairShare] {
        let mut s = big_snapshot(order);
        let now = t0() + Duration::days(10);
        s.config.backfill_enabled = true;
        for job in s.jobs.iter_mut().filter(|j| j.phase == JobPhase::Prequeue).take(50) {
            job.waiting_tolerance_seconds = Some(300);
        }
        let estimates: Vec<_> = forecast(&s, now, ForecastBounds::default())
            .into_iter()
            .filter_map(|e| Some((e.id, e.start?)))
            .collect();
        for on in [false, true] {
            s.config.time_aware_backfill = on;
            let mut times = Vec::new();
            let mut selected = 0;
            let mut blocked = 0;
            for _ in 0..3 {
                let started = Instant::now();
                let prepared = PreparedRound::with_start_estimates(&s, now, &estimates).expect("prepared");
                let outcome = prepared.select();
                times.push(started.elapsed());
                selected = outcome.selected.len();
                blocked = outcome
                    .waiting
                    .iter()
                    .filter(|w| w.causes.blocked_by().is_some())
                    .count();
            }
            println!("{order:?}, time-aware {on}: round {times:?}; {selected} selected, {blocked} blocked_by");
        }
    }
}
