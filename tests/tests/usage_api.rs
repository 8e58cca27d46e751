//! Accounting end to end (`spec/prequeue.md` §10, `GET /api/v1/usage`): a scripted day and a
//! half on the simulated cluster, watched in uneven steps; the GPU-hours recorded per user and
//! day equal the simulated runtimes to the second, Elastic use is apart, a user reads only
//! their own, and the CSV form carries the same numbers.

use anteroom_tests::api::{call, settings};
use anteroom_tests::both_driven;
use anteroom_tests::driven::{Driven, GPU_NODES, sleeping, submit};
use serde_json::{Value, json};

/// `rows`' GPU-hours of `user` on `period` (normal, elastic).
fn gpu_hours(report: &Value, user: &str, period: &str) -> (f64, f64) {
    let mut out = (0.0, 0.0);
    for row in report["rows"].as_array().expect("rows") {
        if row["user"] == user && row["period"] == period {
            out.0 += row["used"]["nvidia.com/a100"].as_f64().unwrap_or(0.0);
            out.1 += row["backfill"]["nvidia.com/a100"].as_f64().unwrap_or(0.0);
        }
    }
    out
}

async fn a_scripted_day_is_accounted_to_the_second(db: Option<String>) {
    let d = Driven::start(db, GPU_NODES).await;
    let admin = d.app.admin_token().await;
    settings(&d.app, &admin, json!({"backfillEnabled": true})).await;
    let nina = d.app.user_token("nina").await;
    let carl = d.app.user_token("carl").await;
    // 08:00 on Monday 23 November: nina's 2 GPUs for an hour and 1 GPU for 90 minutes, an
    // Elastic GPU for 20 minutes; carl's 4 GPUs for 20 hours, across midnight.
    submit(&d, &nina, sleeping("short", 2, 3600, "normal")).await;
    submit(&d, &nina, sleeping("longer", 1, 5400, "normal")).await;
    submit(&d, &nina, sleeping("spare", 1, 1200, "backfill")).await;
    submit(&d, &carl, sleeping("night", 4, 72_000, "normal")).await;
    d.settle().await;
    // Watched in uneven steps (7 minutes, never on an end): ends are the cluster's, not the
    // watcher's.
    for _ in 0..(36 * 60 / 7) {
        d.advance(7 * 60).await;
        d.round().await;
    }
    let (_, report) = call(
        &d.app,
        "GET",
        "/api/v1/usage?from=2026-11-23T00:00:00Z&to=2026-11-25T00:00:00Z&by=day",
        &admin,
        None,
    )
    .await;
    let close = |got: f64, want: f64| assert!((got - want).abs() < 1e-9, "{got} vs {want}: {report}");
    let (used, elastic) = gpu_hours(&report, "nina", "2026-11-23");
    close(used, 2.0 * 1.0 + 1.0 * 1.5);
    close(elastic, 1.0 * 20.0 / 60.0);
    // carl: 16 hours on the 23rd (08:00 to midnight), 4 on the 24th, 4 GPUs each.
    close(gpu_hours(&report, "carl", "2026-11-23").0, 4.0 * 16.0);
    close(gpu_hours(&report, "carl", "2026-11-24").0, 4.0 * 4.0);
    let nina_day: Vec<&Value> = report["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter(|r| r["user"] == "nina")
        .collect();
    assert_eq!(nina_day[0]["jobs"], 3, "{report}");
    assert_eq!(nina_day[0]["waitMedianSeconds"], 0.0, "all started at once: {report}");

    // nina sees her own only, and may not ask for carl's.
    let (_, own) = call(
        &d.app,
        "GET",
        "/api/v1/usage?from=2026-11-23T00:00:00Z&to=2026-11-25T00:00:00Z",
        &nina,
        None,
    )
    .await;
    assert!(
        own["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .all(|r| r["user"] == "nina"),
        "{own}"
    );
    let (status, refused) = call(&d.app, "GET", "/api/v1/usage?user=carl", &nina, None).await;
    assert_eq!(
        (status.as_u16(), refused["error"]["code"].as_str()),
        (403, Some("forbidden"))
    );
    let (status, refused) = call(
        &d.app,
        "GET",
        "/api/v1/usage?from=2026-11-25T00:00:00Z&to=2026-11-23T00:00:00Z",
        &nina,
        None,
    )
    .await;
    assert_eq!(
        (status.as_u16(), refused["error"]["code"].as_str()),
        (422, Some("validation_failed"))
    );

    // The CSV: the same numbers, a line per resource.
    let response = d
        .app
        .client
        .get(
            d.app
                .url("/api/v1/usage?from=2026-11-23T00:00:00Z&to=2026-11-25T00:00:00Z&by=week"),
        )
        .bearer_auth(&admin)
        .header("Accept", "text/csv")
        .send()
        .await
        .expect("the CSV");
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .expect("ascii")
            .starts_with("text/csv"),
        "{:?}",
        response.headers()
    );
    let csv = response.text().await.expect("text");
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some(anteroom_shared::api::usage::CSV_HEADER));
    let carl_gpu = csv
        .lines()
        .find(|l| l.contains(",carl,nvidia.com/a100,"))
        .unwrap_or_else(|| panic!("carl's GPU line: {csv}"));
    assert!(carl_gpu.starts_with("2026-W48,"), "{carl_gpu}");
    assert_eq!(carl_gpu.split(',').nth(5), Some("80"), "20 hours × 4 GPUs: {carl_gpu}");
}
both_driven!(scripted_day, a_scripted_day_is_accounted_to_the_second);

/// The runs the history holds for job `id`: (start, end, how it ended, wait start).
async fn runs_of(d: &Driven, id: i64) -> Vec<(String, Option<String>, Option<String>, String)> {
    use anteroom::usage::entity::{Column, Entity};
    use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder};
    Entity::find()
        .filter(Column::JobId.eq(id))
        .order_by_asc(Column::Id)
        .all(&d.app.state.db)
        .await
        .expect("the history")
        .into_iter()
        .map(|r| {
            (
                r.started_at.to_rfc3339(),
                r.ended_at.map(|t| t.to_rfc3339()),
                r.end_phase,
                r.waiting_since.to_rfc3339(),
            )
        })
        .collect()
}

async fn a_run_is_recorded_once_through_a_lost_start_a_restart_and_a_delete(db: Option<String>) {
    use anteroom::jobs::entity::job;
    use sea_orm::sea_query::Expr;
    use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
    let d = Driven::start(db, GPU_NODES).await;
    let nina = d.app.user_token("nina").await;
    let (id, _) = submit(&d, &nina, sleeping("long", 1, 86_400, "normal")).await;
    d.advance(60).await;
    let runs = runs_of(&d, id).await;
    assert_eq!(runs.len(), 1, "{runs:?}");
    let started = runs[0].0.clone();
    assert_eq!(runs[0].1, None, "running: open");
    let set_start = |at: Option<chrono::DateTime<chrono::Utc>>| {
        let db = d.app.state.db.clone();
        async move {
            job::Entity::update_many()
                .col_expr(job::Column::StartedAt, Expr::value(at))
                .filter(job::Column::Id.eq(id))
                .exec(&db)
                .await
                .expect("an update");
        }
    };
    // Status sync briefly knows no start (its pod cache is not filled yet), then the same
    // start again: the run stays one, open.
    let start: chrono::DateTime<chrono::Utc> = started.parse().expect("a time");
    set_start(None).await;
    set_start(Some(start)).await;
    let runs = runs_of(&d, id).await;
    assert_eq!((runs.len(), runs[0].1.clone()), (1, None), "{runs:?}");
    // A restart with a new start: the first run ends there, the second waited nothing.
    let again = start + chrono::Duration::hours(1);
    set_start(Some(again)).await;
    let runs = runs_of(&d, id).await;
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(
        (runs[0].1.clone(), runs[0].2.as_deref()),
        (Some(again.to_rfc3339()), Some("Restarted"))
    );
    assert_eq!(
        (runs[1].0.clone(), runs[1].3.clone()),
        (again.to_rfc3339(), again.to_rfc3339())
    );
    // Deleted by its owner: the run ends.
    let (status, _) = call(&d.app, "DELETE", &format!("/api/v1/jobs/{id}"), &nina, None).await;
    assert!(status.is_success(), "{status}");
    let runs = runs_of(&d, id).await;
    assert!(runs[1].1.is_some(), "{runs:?}");
    assert_eq!(runs.len(), 2, "{runs:?}");
}
both_driven!(
    recorded_once,
    a_run_is_recorded_once_through_a_lost_start_a_restart_and_a_delete
);

/// The ledger's decayed usage of `owner` in `default` and the store's, at the watcher's now.
async fn ledger_and_store(
    d: &Driven,
    ledger: &mut anteroom::usage::ledger::UsageLedger,
    config: &anteroom_shared::scheduling::PrequeueConfig,
    nodes: &[anteroom::prequeue::NodeSnapshot],
    owner: i64,
) -> (f64, f64) {
    let (snapshot, _) = d.watcher.snapshot(0).await.expect("a snapshot");
    let now = d.watcher.clock.now();
    let kept = ledger
        .history(&d.app.state.db, config, &snapshot.jobs, nodes, now)
        .await
        .expect("the ledger")
        .of("default", owner);
    let (specs, _) = anteroom::queues::tree(&d.app.state.db).await.expect("queues");
    let exact = anteroom::usage::fair_share::of_user(&d.app.state.db, config, &specs, nodes, owner, now)
        .await
        .expect("from the store")
        .queues[0]
        .decayed_usage;
    (kept, exact)
}

async fn the_watchers_ledger_counts_each_run_once_and_reads_the_store_again_in_ten_minutes(db: Option<String>) {
    use anteroom::cluster::Cluster;
    use anteroom::usage::ledger::UsageLedger;
    let d = Driven::start(db, GPU_NODES).await;
    let nina = d.app.user_token("nina").await;
    submit(&d, &nina, sleeping("short", 1, 600, "normal")).await;
    submit(&d, &nina, sleeping("long", 2, 7200, "normal")).await;
    d.settle().await;
    let owner = anteroom::users::find_by_username(&d.app.state.db, "nina")
        .await
        .expect("the store")
        .expect("nina")
        .id;
    let config = anteroom_shared::scheduling::PrequeueConfig {
        activation_order: anteroom_shared::scheduling::ActivationOrder::FairShareHistory,
        ..Default::default()
    };
    let nodes = d.sim.nodes().await.expect("nodes");
    let mut ledger = UsageLedger::default();
    d.advance(300).await;
    let (kept, exact) = ledger_and_store(&d, &mut ledger, &config, &nodes, owner).await;
    assert!((kept - exact).abs() < 1e-9, "first read: {kept} vs {exact}");
    // The short job ends at 600; at 700 the ledger has not read the store again: it counts
    // the ended run until it saw it end — 100 s more of its ~1.1 units an hour (1 GPU, 1 CPU
    // at 0.125, a little memory), ~0.03 — and never twice (its whole run, ~0.19, again).
    d.advance(400).await;
    let (kept, exact) = ledger_and_store(&d, &mut ledger, &config, &nodes, owner).await;
    assert!(kept - exact > 0.02 && kept - exact < 0.05, "{kept} vs {exact}");
    // Ten minutes after the first read the store is read again: exact.
    d.advance(260).await;
    let (kept, exact) = ledger_and_store(&d, &mut ledger, &config, &nodes, owner).await;
    assert!((kept - exact).abs() < 1e-9, "after the re-read: {kept} vs {exact}");
}
both_driven!(
    ledger_once,
    the_watchers_ledger_counts_each_run_once_and_reads_the_store_again_in_ten_minutes
);

/// Status, content type, disposition and body of `GET path` as `token`, with `accept` if any.
async fn raw(d: &Driven, path: &str, token: &str, accept: Option<&str>) -> (u16, String, String, String) {
    let mut request = d.app.client.get(d.app.url(path)).bearer_auth(token);
    if let Some(accept) = accept {
        request = request.header("Accept", accept);
    }
    let response = request.send().await.expect("an answer");
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|v| v.to_str().expect("ascii").to_owned())
            .unwrap_or_default()
    };
    let (status, kind, disposition) = (
        response.status().as_u16(),
        header("content-type"),
        header("content-disposition"),
    );
    (status, kind, disposition, response.text().await.expect("a body"))
}

async fn a_download_link_gets_with_format_csv_what_accept_text_csv_gets(db: Option<String>) {
    let d = Driven::start(db, GPU_NODES).await;
    let nina = d.app.user_token("nina").await;
    submit(&d, &nina, sleeping("short", 2, 3600, "normal")).await;
    d.settle().await;
    d.advance(3600).await;
    d.advance(60).await;
    let report = "/api/v1/usage?from=2026-11-23T00:00:00Z&to=2026-11-24T00:00:00Z&by=day";
    let by_header = raw(&d, report, &nina, Some("text/csv")).await;
    let by_query = raw(&d, &format!("{report}&format=csv"), &nina, None).await;
    assert_eq!(by_query, by_header, "the same answer, headers and all");
    assert!(by_query.1.starts_with("text/csv"), "{by_query:?}");
    assert!(
        by_query
            .3
            .contains("2026-11-23,2026-11-23T00:00:00+00:00,default,nina,nvidia.com/a100,2,"),
        "an hour of 2 GPUs: {by_query:?}"
    );
    // `format=json` answers JSON whatever `Accept` says; an unknown form is refused on its field.
    let (status, kind, _, body) = raw(&d, &format!("{report}&format=json"), &nina, Some("text/csv")).await;
    assert_eq!(status, 200);
    assert!(kind.starts_with("application/json"), "{kind}");
    let json: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(gpu_hours(&json, "nina", "2026-11-23"), (2.0, 0.0), "{json}");
    let (status, refused) = call(&d.app, "GET", &format!("{report}&format=xml"), &nina, None).await;
    assert_eq!(
        (status.as_u16(), refused["error"]["code"].as_str()),
        (422, Some("validation_failed")),
        "{refused}"
    );
}
both_driven!(
    format_csv,
    a_download_link_gets_with_format_csv_what_accept_text_csv_gets
);
