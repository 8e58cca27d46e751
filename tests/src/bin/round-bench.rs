//! The watcher's round on a large prequeue, against a faithful re-implementation of the
//! reference's query pattern on the same data (`docs/performance.md`, "The watcher's round").
//! Run through `./anteroom.sh bench-round`, or by hand:
//!
//! ```text
//! cargo run --release -p anteroom-tests --bin round-bench -- [jobs...] [--postgres URL]
//! ```
//!
//! For each size (default 10,000 and 100,000) on SQLite (and PostgreSQL when a server URL is
//! given), on a fresh database:
//!
//! - a tree `org` → 15 team queues, each with a capacity and a quota rule (1 CPU a user);
//! - 2,000 users, each with one running 1-CPU job in their team (their quota is full) and
//!   `jobs / 2000` prequeued jobs there: every job waits, so nothing is activated and the
//!   reference's selector walks the whole prequeue — the case that costs it most;
//! - our round, `Watcher::round` (snapshot, repair, preemption, selection, reason writes), run
//!   until its reason writes settle, then timed over 10 rounds;
//! - the reference's selector (§5.4 of `reference/crater-prequeue.md`): blockers scanned in
//!   OFFSET pages of 50, candidates in OFFSET pages of 50 ordered by submission, and for each
//!   candidate a config read, a quota lookup and a load of the owner's occupying jobs in the
//!   queue (summed in the application) — timed over 3 runs.
//!
//! Also, with the real watcher loop and a 60 s ticker: the time from a job finishing in the
//! simulated cluster to the activation of the job its quota held (20 samples).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anteroom::cluster::clock::Clock;
use anteroom::jobs::entity::job;
use anteroom::watcher::Watcher;
use anteroom_shared::scheduling::{JobPhase, ResourceList};
use anteroom_tests::TestApp;
use anteroom_tests::api::{call, quota, settings};
use sea_orm::{ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use serde_json::json;

const USERS: usize = 2_000;
const TEAMS: usize = 15;
const PAGE: u64 = 50;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut sizes = Vec::new();
    let mut postgres = None;
    let mut with_reference = true;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--no-reference" {
            with_reference = false;
        } else if arg == "--postgres" {
            postgres = Some(args.next().ok_or_else(|| anyhow::anyhow!("--postgres needs a URL"))?);
        } else {
            sizes.push(arg.parse::<usize>()?);
        }
    }
    if sizes.is_empty() {
        sizes = vec![10_000, 100_000];
    }
    println!(
        "| store | prequeued | our round: first | our round: median of 10 (min–max) | with 100 jobs changed: median of 10 | reference selector: median of 3 | reference queries | ratio |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for &size in &sizes {
        let mut stores = vec![("SQLite", None)];
        if let Some(server) = &postgres {
            stores.push((
                "PostgreSQL",
                Some(anteroom_tests::postgres::fresh_database(server).await),
            ));
        }
        for (store, url) in stores {
            let row = compare(store, url, size, with_reference).await?;
            println!("{row}");
        }
    }
    println!();
    wake_up_latency().await?;
    Ok(())
}

/// Seeds one store with `size` waiting jobs and times both selectors on it.
async fn compare(store: &str, url: Option<String>, size: usize, with_reference: bool) -> anyhow::Result<String> {
    let clock = Arc::new(anteroom::cluster::clock::ManualClock::new(chrono::Utc::now()));
    let mut builder = TestApp::builder().hand_clock(clock.clone());
    if let Some(url) = url {
        builder = builder.database_url(url);
    }
    let app = builder.start().await;
    let admin = app.admin_token().await;
    settings(&app, &admin, json!({"queueQuotaEnabled": true})).await;
    let (status, body) = call(
        &app,
        "POST",
        "/api/v1/admin/queues",
        &admin,
        Some(json!({"name": "org", "open": true, "capacity": {"cpu": "100000"}})),
    )
    .await;
    anyhow::ensure!(status == 201, "{body}");
    for t in 0..TEAMS {
        let name = format!("team{t}");
        let (status, body) = call(
            &app,
            "POST",
            "/api/v1/admin/queues",
            &admin,
            Some(json!({"name": name, "open": true, "parent": "org", "capacity": {"cpu": "10000"}})),
        )
        .await;
        anyhow::ensure!(status == 201, "{body}");
        quota(&app, &admin, &name, json!({"cpu": "1"})).await;
    }
    seed(&app.state.db, size, clock.now()).await?;

    let resident_before = resident_kib("VmRSS");
    let watcher = Watcher::new(app.state.watcher_inputs());
    let fence = watcher
        .lease
        .acquire(&app.state.db, clock.now())
        .await?
        .ok_or_else(|| anyhow::anyhow!("the lease is free"))?;
    let started = Instant::now();
    let first = watcher.round(&fence).await?;
    let first_took = started.elapsed();
    anyhow::ensure!(first.prequeued == size, "{first:?}");
    anyhow::ensure!(first.activated.is_empty(), "every job should wait: {first:?}");
    // Reasons settle: every waiting job's reasons written once.
    for _ in 0..100 {
        if watcher.round(&fence).await?.reasons_written == 0 {
            break;
        }
    }
    let mut ours = Vec::new();
    for _ in 0..10 {
        let started = Instant::now();
        let report = watcher.round(&fence).await?;
        ours.push(started.elapsed());
        anyhow::ensure!(report.reasons_written == 0 && report.activated.is_empty(), "{report:?}");
    }
    ours.sort();
    // What the watcher's state (the job view, the round's structures, the reasons cache) and
    // the store's caches added to the process, read after the steady rounds.
    if let (Some(before), Some(after), Some(peak)) = (resident_before, resident_kib("VmRSS"), resident_kib("VmHWM")) {
        eprintln!(
            "{store} {size}: resident {:.1} MiB before the first round, {:.1} MiB after the steady rounds (+{:.1} MiB), peak {:.1} MiB",
            before as f64 / 1024.0,
            after as f64 / 1024.0,
            after.saturating_sub(before) as f64 / 1024.0,
            peak as f64 / 1024.0
        );
    }

    // Rounds after 100 waiting jobs changed (their lock touched, a scheduling column): what
    // the job view re-reads when the backlog moves a little between rounds.
    let mut changed = Vec::new();
    for r in 0..10 {
        let sql = format!(
            "UPDATE jobs SET locked_until = {} WHERE id IN (SELECT id FROM jobs WHERE phase = 'Prequeue' ORDER BY id LIMIT 100 OFFSET {})",
            if r % 2 == 0 {
                "'2099-01-01 00:00:00+00:00'"
            } else {
                "NULL"
            },
            r * 100
        );
        app.state.db.execute_unprepared(&sql).await?;
        let started = Instant::now();
        watcher.round(&fence).await?;
        changed.push(started.elapsed());
    }
    changed.sort();

    let mut reference = Vec::new();
    let mut queries = 0;
    for _ in 0..if with_reference { 3 } else { 0 } {
        let started = Instant::now();
        let (selected, q) = reference_selector(&app.state.db, 10, clock.now()).await?;
        reference.push(started.elapsed());
        anyhow::ensure!(selected == 0, "the reference pattern selected {selected}");
        queries = q;
    }
    reference.sort();
    let median = ours[ours.len() / 2];
    app.stop().await;
    let Some(reference_median) = reference.get(reference.len() / 2) else {
        return Ok(format!(
            "| {store} | {size} | {} | {} ({}–{}) | {} | — | — | — |",
            ms(first_took),
            ms(median),
            ms(ours[0]),
            ms(ours[ours.len() - 1]),
            ms(changed[changed.len() / 2]),
        ));
    };
    Ok(format!(
        "| {store} | {size} | {} | {} ({}–{}) | {} | {} | {queries} | {:.0}× |",
        ms(first_took),
        ms(median),
        ms(ours[0]),
        ms(ours[ours.len() - 1]),
        ms(changed[changed.len() / 2]),
        ms(*reference_median),
        reference_median.as_secs_f64() / median.as_secs_f64()
    ))
}

/// A `/proc/self/status` field in KiB (`VmRSS`: resident now; `VmHWM`: the peak); `None` where
/// there is no `/proc`.
fn resident_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms >= 10_000.0 {
        format!("{:.1} s", ms / 1000.0)
    } else {
        format!("{ms:.1} ms")
    }
}

/// `size` prequeued 1-CPU jobs and one running 1-CPU job per user, straight into the store in
/// the shape the API writes them; user `u` submits into team `u % 15`.
async fn seed(db: &DatabaseConnection, size: usize, now: chrono::DateTime<chrono::Utc>) -> anyhow::Result<()> {
    let backend = db.get_database_backend();
    let txn = anteroom::store::write_transaction(db).await?;
    let total = size + USERS;
    let rows: Vec<usize> = (0..total).collect();
    for chunk in rows.chunks(500) {
        let values: Vec<String> = chunk
            .iter()
            .map(|&i| {
                let (user, running) = if i < USERS { (i, true) } else { ((i - USERS) % USERS, false) };
                let owner = 10_000 + user as i64;
                let team = user % TEAMS;
                let at = (now - chrono::Duration::milliseconds((total - i) as i64)).format("%Y-%m-%d %H:%M:%S%.6f+00:00");
                let (phase, started, activated) = if running {
                    ("Running", format!("'{at}'"), format!("'{at}'"))
                } else {
                    ("Prequeue", "NULL".into(), "NULL".into())
                };
                let single = if backend == sea_orm::DbBackend::Postgres { "true" } else { "1" };
                format!(
                    "('j{i}', 'custom', 'team{team}', {owner}, 'u{user}', 'normal', 'PreemptLowerPriority', '{phase}', 3600, NULL, \
                     '[{{\"name\":\"main\",\"replicas\":1,\"image\":\"busybox\",\"command\":[],\"resources\":{{\"cpu\":\"1\"}},\"nodeNames\":[]}}]', \
                     '{{\"cpu\":\"1\"}}', 'cpu=1000', '', {single}, '[]', NULL, '{at}', {activated}, {started}, NULL, NULL, '{at}', NULL, 0, NULL, NULL)"
                )
            })
            .collect();
        txn.execute_unprepared(&format!(
            "INSERT INTO jobs (name, kind, queue, owner_id, owner_name, schedule_type, preemption_policy, phase, \
             waiting_tolerance_seconds, timeout_at, tasks, resources, request_milli, explicit_nodes, single_node, nodes, \
             wait_reasons, submitted_at, activated_at, started_at, finished_at, locked_until, updated_at, claimed_at, \
             attempts, next_attempt_at, last_error) VALUES {}",
            values.join(",")
        ))
        .await?;
    }
    txn.commit().await?;
    if backend == sea_orm::DbBackend::Postgres {
        db.execute_unprepared("ANALYZE jobs").await?;
    }
    Ok(())
}

/// The reference's selector (`reference/crater-prequeue.md` §5.4) on our schema: answers how
/// many jobs it selected and how many queries it ran.
async fn reference_selector(
    db: &DatabaseConnection,
    limit: u64,
    now: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<(usize, usize)> {
    let mut queries = 0;
    // Blockers: timed-out normal jobs with a tolerance, pending and prequeued, in pages of 50.
    let mut blockers = 0;
    for phase in [JobPhase::Pending, JobPhase::Prequeue] {
        let mut offset = 0;
        loop {
            let page = job::Entity::find()
                .filter(job::Column::Phase.eq(phase.as_str()))
                .filter(job::Column::ScheduleType.eq("normal"))
                .filter(job::Column::WaitingToleranceSeconds.is_not_null())
                .filter(job::Column::TimeoutAt.lt(now))
                .order_by_asc(job::Column::SubmittedAt)
                .offset(offset)
                .limit(PAGE)
                .all(db)
                .await?;
            queries += 1;
            blockers += page.len();
            if (page.len() as u64) < PAGE {
                break;
            }
            offset += PAGE;
        }
    }
    let page_size = limit.max(PAGE);
    let mut offset = 0;
    let mut selected = 0usize;
    let mut accumulated: HashMap<(i64, String), ResourceList> = HashMap::new();
    'pages: loop {
        let page = job::Entity::find()
            .filter(job::Column::Phase.eq(JobPhase::Prequeue.as_str()))
            .order_by_asc(job::Column::SubmittedAt)
            .offset(offset)
            .limit(page_size)
            .all(db)
            .await?;
        queries += 1;
        for candidate in &page {
            // Every candidate: the config, its queue's quota, the owner's occupying jobs.
            let config = anteroom::settings::entity::Entity::find().one(db).await?;
            queries += 1;
            let rule = anteroom::quotas::entity::Entity::find()
                .filter(anteroom::quotas::entity::Column::Queue.eq(&candidate.queue))
                .one(db)
                .await?;
            queries += 1;
            let occupying: Vec<String> = job::Entity::find()
                .select_only()
                .column(job::Column::Resources)
                .filter(job::Column::OwnerId.eq(candidate.owner_id))
                .filter(job::Column::Queue.eq(&candidate.queue))
                .filter(job::Column::Phase.is_in(occupying_phases()))
                .into_tuple()
                .all(db)
                .await?;
            queries += 1;
            let request: ResourceList = serde_json::from_str(&candidate.resources)?;
            let mut projected = request.clone();
            for text in &occupying {
                let used: ResourceList = serde_json::from_str(text)?;
                projected.saturating_add_assign(&used);
            }
            let key = (candidate.owner_id, candidate.queue.clone());
            if let Some(earlier) = accumulated.get(&key) {
                projected.saturating_add_assign(earlier);
            }
            let quota_on = config.map(|c| c.queue_quota_enabled).unwrap_or(false);
            let fits = !quota_on
                || rule.is_none_or(|rule| {
                    let limits: ResourceList = serde_json::from_str(&rule.limits).unwrap_or_default();
                    limits.iter().all(|(name, limit)| projected.get(name) <= limit)
                });
            // Blockers: none time out in this data set (every tolerance is an hour).
            if fits && blockers == 0 {
                accumulated.entry(key).or_default().saturating_add_assign(&request);
                selected += 1;
                if selected as u64 > limit {
                    break 'pages;
                }
            }
        }
        if (page.len() as u64) < page_size {
            break;
        }
        offset += page_size;
    }
    Ok((selected, queries))
}

fn occupying_phases() -> Vec<&'static str> {
    JobPhase::ALL
        .iter()
        .filter(|p| p.is_occupying())
        .map(|p| p.as_str())
        .collect()
}

/// With the real loop and a 60 s ticker: from a job's finish (its `finished_at`, the
/// simulation's time) to the activation of the job its quota held (`activated_at`).
async fn wake_up_latency() -> anyhow::Result<()> {
    let app = TestApp::builder()
        .configure(|c| c.sim_default_runtime_seconds = 86_400)
        .start()
        .await;
    let admin = app.admin_token().await;
    settings(
        &app,
        &admin,
        json!({"queueQuotaEnabled": true, "activateTickerIntervalSeconds": 60}),
    )
    .await;
    quota(&app, &admin, "default", json!({"cpu": "1"})).await;
    let user = app.user_token("wake").await;
    let mut samples = Vec::new();
    for i in 0..20 {
        let mut first = anteroom_tests::api::job(&format!("short{i}"), json!({"cpu": "1"}));
        first["tasks"][0]["command"] = json!(["sleep", "1"]);
        let (_, a) = call(&app, "POST", "/api/v1/jobs", &user, Some(first)).await;
        let first = anteroom_tests::api::job_id(&a);
        let mut held = anteroom_tests::api::job(&format!("held{i}"), json!({"cpu": "1"}));
        held["tasks"][0]["command"] = json!(["sleep", "1"]);
        let (_, b) = call(&app, "POST", "/api/v1/jobs", &user, Some(held)).await;
        anyhow::ensure!(b["admission"]["decision"] == "prequeued", "{b}");
        let held = anteroom_tests::api::job_id(&b);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            anyhow::ensure!(Instant::now() < deadline, "job {held} was not activated within 30 s");
            let rows = job::Entity::find()
                .filter(job::Column::Id.is_in([first, held]))
                .all(&app.state.db)
                .await?;
            let finished = rows.iter().find(|r| r.id == first).and_then(|r| r.finished_at);
            let activated = rows.iter().find(|r| r.id == held).and_then(|r| r.activated_at);
            if let (Some(f), Some(a)) = (finished, activated) {
                samples.push((a - f).to_std().unwrap_or_default());
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Let the held job finish too, so the next pair starts from an empty quota.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            anyhow::ensure!(Instant::now() < deadline, "job {held} did not finish");
            let row = job::Entity::find_by_id(held).one(&app.state.db).await?;
            if row.is_some_and(|r| r.finished_at.is_some()) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    samples.sort();
    println!(
        "Quota freed → next activation, ticker 60 s, {} samples: median {}, max {}",
        samples.len(),
        ms(samples[samples.len() / 2]),
        ms(samples[samples.len() - 1])
    );
    app.stop().await;
    Ok(())
}
