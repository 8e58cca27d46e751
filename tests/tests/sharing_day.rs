//! A simulated day of two teams on one 8-GPU node, with and without sharing (issue 43, point 6;
//! figures in `docs/performance.md`). `nlp` keeps a backlog of 2-hour, 1-GPU training jobs
//! (asking to be requeued if preempted); `cv` runs two 2-GPU, 8-hour jobs from 09:00. Without
//! sharing each team has a hard capacity of 4; with sharing each is guaranteed 4 and may
//! borrow the other's idle GPUs. The day is stepped every 5 minutes with a watcher round each
//! step. The test checks what sharing promises — more of the cluster used, and `cv` still
//! getting its GPUs within `reclaimDelaySeconds` + the grace period (+ one step) — and prints
//! the figures (`--nocapture`).

use anteroom::cluster::clock::Clock;
use anteroom_tests::api::{queue, settings};
use anteroom_tests::driven::{Driven, GPU_NODES, submit};
use sea_orm::{ConnectionTrait, Statement};
use serde_json::{Value, json};

const STEP: i64 = 300;
const DAY: i64 = 86_400;
/// The day starts at 18:00 (the hand clock's epoch is 08:00): `cv` starts at 09:00, 15 h in.
const CV_STARTS: i64 = 15 * 3600;

fn training(name: &str, team: &str, gpus: u32, seconds: u32) -> Value {
    json!({
        "name": name, "kind": "custom", "queue": team, "requeue": true,
        "tasks": [{"name": "main", "replicas": 1, "image": "busybox",
                   "command": ["sleep", seconds.to_string()],
                   "resources": {"cpu": "1", "nvidia.com/a100": gpus.to_string()}}]
    })
}

/// What a day gives: GPU-seconds occupied per team, reclaims, and how long `cv`'s jobs waited.
#[derive(Debug)]
struct Day {
    nlp_gpu_seconds: i64,
    cv_gpu_seconds: i64,
    cv_waits: Vec<i64>,
    reclaimed: usize,
    nlp_completed: i64,
}

impl Day {
    fn utilisation(&self) -> f64 {
        (self.nlp_gpu_seconds + self.cv_gpu_seconds) as f64 / (8 * DAY) as f64
    }
}

async fn a_day(sharing: bool) -> Day {
    let d = Driven::start(None, GPU_NODES).await;
    let admin = d.app.admin_token().await;
    settings(
        &d.app,
        &admin,
        json!({"queueQuotaEnabled": true, "reclaimDelaySeconds": 10, "maxPrequeuedJobsPerUser": 200}),
    )
    .await;
    let room = if sharing { "guarantee" } else { "capacity" };
    for team in ["cv", "nlp"] {
        queue(
            &d.app,
            &admin,
            json!({"name": team, "open": true, room: {"nvidia.com/a100": "4"}}),
        )
        .await;
    }
    // The day starts at 18:00.
    d.advance(10 * 3600).await;
    let start = d.clock.now();
    let nina = d.app.user_token("nina").await;
    let carl = d.app.user_token("carl").await;
    for i in 0..100 {
        submit(&d, &nina, training(&format!("nlp-{i}"), "nlp", 1, 7200)).await;
    }
    let mut cv = Vec::new();
    let mut reclaimed = 0;
    let mut t = 0;
    while t < DAY {
        if t == CV_STARTS {
            for i in 0..2 {
                let (id, _) = submit(&d, &carl, training(&format!("cv-{i}"), "cv", 2, 8 * 3600)).await;
                cv.push(id);
            }
        }
        reclaimed += d.round().await.reclaimed.len();
        d.advance(STEP).await;
        t += STEP;
    }
    d.round().await;
    let end = d.clock.now();
    // GPU-seconds each job occupied within the day (its pods running), from the store.
    let db = &d.app.state.db;
    let rows = db
        .query_all_raw(Statement::from_string(
            db.get_database_backend(),
            "SELECT id, queue, phase, request_milli, started_at, finished_at, submitted_at FROM jobs",
        ))
        .await
        .expect("jobs");
    let mut day = Day {
        nlp_gpu_seconds: 0,
        cv_gpu_seconds: 0,
        cv_waits: Vec::new(),
        reclaimed,
        nlp_completed: 0,
    };
    for row in rows {
        let queue: String = row.try_get("", "queue").unwrap();
        let phase: String = row.try_get("", "phase").unwrap();
        let request: String = row.try_get("", "request_milli").unwrap();
        let gpus = request
            .split(',')
            .find_map(|kv| kv.strip_prefix("nvidia.com/a100="))
            .map_or(0, |m| m.parse::<i64>().unwrap() / 1000);
        let started: Option<chrono::DateTime<chrono::Utc>> = row.try_get("", "started_at").unwrap();
        let finished: Option<chrono::DateTime<chrono::Utc>> = row.try_get("", "finished_at").unwrap();
        let submitted: chrono::DateTime<chrono::Utc> = row.try_get("", "submitted_at").unwrap();
        if let Some(started) = started {
            let from = started.max(start);
            let to = finished.unwrap_or(end).min(end);
            let seconds = (to - from).num_seconds().max(0) * gpus;
            if queue == "cv" {
                day.cv_gpu_seconds += seconds;
                day.cv_waits.push((started - submitted).num_seconds());
            } else {
                day.nlp_gpu_seconds += seconds;
            }
        }
        if queue == "nlp" && phase == "Completed" {
            day.nlp_completed += 1;
        }
    }
    day
}

#[tokio::test]
async fn sharing_uses_idle_gpus_and_keeps_each_teams_guarantee() {
    let without = a_day(false).await;
    let with = a_day(true).await;
    for (name, day) in [("capacities of 4", &without), ("guarantees of 4", &with)] {
        eprintln!(
            "{name}: {:.1} % of 192 GPU-hours used (nlp {:.1} h, cv {:.1} h), nlp jobs completed {}, \
             cv waited {:?} s, jobs reclaimed {}",
            day.utilisation() * 100.0,
            day.nlp_gpu_seconds as f64 / 3600.0,
            day.cv_gpu_seconds as f64 / 3600.0,
            day.nlp_completed,
            day.cv_waits,
            day.reclaimed,
        );
    }
    assert!(
        with.utilisation() > without.utilisation() + 0.2,
        "sharing: {with:?}; without: {without:?}"
    );
    assert!(with.nlp_completed > without.nlp_completed, "{with:?} {without:?}");
    // cv got its guarantee: both its jobs started, within the reclaim delay + grace + one step.
    assert_eq!(with.cv_waits.len(), 2, "{with:?}");
    assert!(with.cv_waits.iter().all(|w| *w <= 10 + 30 + 2 * STEP), "{with:?}");
    assert!(with.reclaimed > 0, "{with:?}");
    assert_eq!(without.reclaimed, 0);
}
