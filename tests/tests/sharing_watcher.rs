//! Sharing between queues end to end (`spec/prequeue.md` §9), on the simulated cluster with the
//! watcher driven by hand: two teams guaranteed 4 of the node's 8 GPUs each. An idle team's
//! GPUs are lent (the borrower's answer says so and its job carries the flag); once the cluster
//! is full a borrower waits with `borrowing_limit`, a lender's job with `reclaiming`; after
//! `reclaimDelaySeconds` the newest borrowers are reclaimed (events on both sides, the metric)
//! and the lender's job starts in the same round; jobs within their guarantee are never taken.

use anteroom_tests::api::{metric, queue, settings};
use anteroom_tests::both_driven;
use anteroom_tests::driven::{Driven, GPU_NODES, detail, gpu_job, kinds, phase, reason_codes, submit};
use serde_json::{Value, json};

/// The two teams, quotas on, a 10 s reclaim delay.
async fn two_teams(d: &Driven) -> String {
    let admin = d.app.admin_token().await;
    settings(
        &d.app,
        &admin,
        json!({"queueQuotaEnabled": true, "reclaimDelaySeconds": 10}),
    )
    .await;
    for team in ["cv", "nlp"] {
        queue(
            &d.app,
            &admin,
            json!({"name": team, "open": true, "guarantee": {"nvidia.com/a100": "4"}}),
        )
        .await;
    }
    admin
}

fn team_job(name: &str, team: &str, gpus: u32) -> Value {
    let mut body = gpu_job(name, "custom", gpus, "normal");
    body["queue"] = json!(team);
    body
}

async fn an_idle_teams_gpus_are_lent_and_reclaimed(db: Option<String>) {
    let d = Driven::start(db, GPU_NODES).await;
    let admin = two_teams(&d).await;
    let nina = d.app.user_token("nina").await;
    let carl = d.app.user_token("carl").await;

    // The night: nlp takes its 4, then borrows cv's idle 4.
    let mut nlp = Vec::new();
    for i in 0..8 {
        let (id, answer) = submit(&d, &nina, team_job(&format!("nlp-{i}"), "nlp", 1)).await;
        let admission = &answer["admission"];
        assert_eq!(admission["decision"], "activated", "{answer}");
        assert_eq!(admission["borrowing"], i >= 4, "job {i}: {answer}");
        assert_eq!(answer["job"]["borrowing"], i >= 4, "{answer}");
        if i >= 4 {
            assert_eq!(
                admission["borrowed"],
                json!([{"queue": "nlp", "resources": {"nvidia.com/a100": "1"}}]),
                "{answer}"
            );
        }
        nlp.push(id);
        d.advance(1).await;
    }
    // Lists say so too (on SQLite the list's JSON is written by the database itself).
    let (_, running) =
        anteroom_tests::api::call(&d.app, "GET", "/api/v1/jobs?phase=Running&pageSize=50", &nina, None).await;
    let borrowing: Vec<i64> = running["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|j| j["borrowing"] == true)
        .map(|j| j["id"].as_i64().unwrap())
        .collect();
    let mut expected = nlp[4..].to_vec();
    expected.sort_unstable();
    let mut borrowing = borrowing;
    borrowing.sort_unstable();
    assert_eq!(borrowing, expected, "{running}");
    // A ninth does not fit the cluster: it would borrow and nothing is lent.
    let (ninth, answer) = submit(&d, &nina, team_job("nlp-8", "nlp", 1)).await;
    assert_eq!(answer["admission"]["decision"], "prequeued", "{answer}");
    assert_eq!(answer["admission"]["reasons"][0]["code"], "borrowing_limit", "{answer}");

    // The morning: cv asks for 2 of its guaranteed GPUs; they are owed.
    let (cv, answer) = submit(&d, &carl, team_job("cv-0", "cv", 2)).await;
    assert_eq!(answer["admission"]["decision"], "prequeued", "{answer}");
    assert_eq!(answer["admission"]["reasons"][0]["code"], "reclaiming", "{answer}");
    let reclaimed_before = metric(&d.app, "anteroom_prequeue_reclaimed_total").await;

    // Not before the delay.
    let report = d.round().await;
    assert!(report.reclaimed.is_empty(), "{report:?}");
    assert_eq!(reason_codes(&detail(&d, &carl, cv).await), ["reclaiming"]);

    d.advance(10).await;
    let report = d.round().await;
    // The two newest borrowers go; cv's job starts in the same round.
    assert_eq!(report.reclaimed, [nlp[6], nlp[7]], "{report:?}");
    assert_eq!(report.reclaimed_for, [cv]);
    assert!(report.activated.contains(&cv), "{report:?}");
    assert!(!report.activated.contains(&ninth), "{report:?}");
    assert_eq!(
        metric(&d.app, "anteroom_prequeue_reclaimed_total").await - reclaimed_before,
        2.0
    );
    for victim in [nlp[6], nlp[7]] {
        let seen = detail(&d, &nina, victim).await;
        assert_eq!(seen["phase"], "Preempted", "{seen}");
        let last = seen["events"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(last["kind"], "reclaimed", "{last}");
        assert_eq!(last["details"]["beneficiary"], cv, "{last}");
        assert_eq!(last["details"]["queue"], "cv", "{last}");
    }
    assert!(kinds(&detail(&d, &carl, cv).await).contains(&"reclaimed_for".to_owned()));
    // Jobs within nlp's guarantee were never candidates; the other borrowers are not needed.
    for &id in &nlp[..6] {
        assert_eq!(phase(&d, &admin, id).await, "Running", "job {id}");
    }

    // Pods gone, cv runs; nothing more is reclaimed and the ninth still waits for lent room.
    d.advance(31).await;
    let report = d.round().await;
    assert!(report.reclaimed.is_empty(), "{report:?}");
    assert_eq!(phase(&d, &carl, cv).await, "Running");
    assert_eq!(phase(&d, &nina, ninth).await, "Prequeue");
    assert_eq!(reason_codes(&detail(&d, &nina, ninth).await), ["borrowing_limit"]);
    // The usage history says how the two borrowers' runs ended (§10).
    let (_, usage) = anteroom_tests::api::call(&d.app, "GET", "/api/v1/usage?queue=nlp", &admin, None).await;
    let reclaimed: u64 = usage["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["reclaimed"].as_u64().unwrap())
        .sum();
    let preempted: u64 = usage["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["preempted"].as_u64().unwrap())
        .sum();
    assert_eq!((reclaimed, preempted), (2, 0), "{usage}");
}
both_driven!(lent_and_reclaimed, an_idle_teams_gpus_are_lent_and_reclaimed);

async fn a_job_that_will_not_borrow_waits_for_guaranteed_room(db: Option<String>) {
    let d = Driven::start(db, GPU_NODES).await;
    two_teams(&d).await;
    let nina = d.app.user_token("nina").await;
    let (_, answer) = submit(&d, &nina, team_job("within", "nlp", 4)).await;
    assert_eq!(answer["admission"]["decision"], "activated", "{answer}");
    assert_eq!(answer["admission"]["borrowing"], false, "{answer}");
    let mut body = team_job("careful", "nlp", 1);
    body["borrow"] = json!("never");
    let (id, answer) = submit(&d, &nina, body).await;
    assert_eq!(answer["admission"]["decision"], "prequeued", "{answer}");
    let reason = &answer["admission"]["reasons"][0];
    assert_eq!(
        (&reason["code"], &reason["details"]["mayBorrow"]),
        (&json!("borrowing_limit"), &json!(false)),
        "{answer}"
    );
    // Rounds keep it waiting although cv's GPUs are idle.
    d.advance(60).await;
    let report = d.round().await;
    assert!(!report.activated.contains(&id), "{report:?}");
    let seen = detail(&d, &nina, id).await;
    assert_eq!(
        (seen["phase"].as_str(), seen["borrow"].as_str()),
        (Some("Prequeue"), Some("never"))
    );
}
both_driven!(borrow_never, a_job_that_will_not_borrow_waits_for_guaranteed_room);

async fn a_queues_per_job_rules_refuse_before_anything_is_written(db: Option<String>) {
    let d = Driven::start(db, GPU_NODES).await;
    let admin = d.app.admin_token().await;
    queue(
        &d.app,
        &admin,
        json!({"name": "course", "open": true, "maxPerJob": {"nvidia.com/a100": "2"},
               "priorityRange": {"min": -5, "max": 5}}),
    )
    .await;
    let nina = d.app.user_token("nina").await;
    let refused = |body: Value, code: &'static str| {
        let d = &d;
        let nina = nina.clone();
        async move {
            let (status, answer) = anteroom_tests::api::call(&d.app, "POST", "/api/v1/jobs", &nina, Some(body)).await;
            let error = answer["error"].clone();
            assert_eq!((status.as_u16(), error["code"].as_str()), (422, Some(code)), "{answer}");
            error
        }
    };
    let answer = refused(team_job("big", "course", 3), "request_exceeds_queue_job_limit").await;
    assert_eq!(answer["details"]["resources"][0]["limit"], "2", "{answer}");
    let mut high = team_job("high", "course", 1);
    high["priority"] = json!(6);
    let answer = refused(high.clone(), "priority_out_of_range").await;
    assert_eq!(
        (answer["details"]["min"].as_i64(), answer["details"]["max"].as_i64()),
        (Some(-5), Some(5))
    );
    // Nothing was written.
    let (_, mine) = anteroom_tests::api::call(&d.app, "GET", "/api/v1/jobs", &nina, None).await;
    assert_eq!(mine["items"].as_array().map(Vec::len), Some(0), "{mine}");
    // Within both: accepted with its priority. Another queue allows only 0.
    high["priority"] = json!(5);
    let (id, answer) = submit(&d, &nina, high.clone()).await;
    assert_eq!(answer["job"]["priority"], 5, "{answer}");
    assert_eq!(detail(&d, &nina, id).await["priority"], 5);
    high["queue"] = json!("default");
    refused(high, "priority_out_of_range").await;
}
both_driven!(per_job_rules, a_queues_per_job_rules_refuse_before_anything_is_written);

/// The night of [`an_idle_teams_gpus_are_lent_and_reclaimed`] to the point where cv's job is
/// owed room and the delay has passed. Answers (nlp's jobs, cv's job).
async fn owed_after_the_delay(d: &Driven) -> (Vec<i64>, i64) {
    two_teams(d).await;
    let nina = d.app.user_token("nina").await;
    let carl = d.app.user_token("carl").await;
    let mut nlp = Vec::new();
    for i in 0..8 {
        let (id, _) = submit(d, &nina, team_job(&format!("nlp-{i}"), "nlp", 1)).await;
        nlp.push(id);
        d.advance(1).await;
    }
    let (cv, answer) = submit(d, &carl, team_job("cv-0", "cv", 2)).await;
    assert_eq!(answer["admission"]["reasons"][0]["code"], "reclaiming", "{answer}");
    d.advance(10).await;
    (nlp, cv)
}

async fn a_reclaim_killed_before_its_deletes_is_finished_by_the_next_watcher(db: Option<String>) {
    use anteroom::watcher::{FaultPoint, Watcher, WatcherError};
    let d = Driven::start(db, GPU_NODES).await;
    let admin = d.app.admin_token().await;
    let (nlp, cv) = owed_after_the_delay(&d).await;
    let mut dying = Watcher::new(d.app.state.watcher_inputs());
    dying.faults = Some(std::sync::Arc::new(|p| p == FaultPoint::MidPreemption));
    assert!(matches!(
        d.try_round(&dying).await,
        Err(WatcherError::Injected(FaultPoint::MidPreemption))
    ));
    // Marked in the store, still running in the cluster: the deletes never went out, and cv's
    // job still waits.
    for victim in [nlp[6], nlp[7]] {
        assert_eq!(phase(&d, &admin, victim).await, "Preempted");
    }
    let in_cluster = |d: &Driven| {
        let sim = d.sim.clone();
        async move {
            use anteroom::cluster::Cluster;
            let ids: Vec<i64> = sim.job_statuses().await.unwrap().iter().map(|s| s.job_id).collect();
            ids
        }
    };
    assert!(in_cluster(&d).await.contains(&nlp[7]));
    // cv's job was claimed with them: its room is held, though it is not in the cluster yet.
    assert_eq!(phase(&d, &admin, cv).await, "Activating");
    assert!(!in_cluster(&d).await.contains(&cv));
    // So a submission racing in now finds no room to borrow: the room is cv's.
    let nina = d.app.token("nina", anteroom_tests::USER_PASSWORD).await;
    let (racer, answer) = submit(&d, &nina, team_job("racer", "nlp", 2)).await;
    assert_eq!(answer["admission"]["decision"], "prequeued", "{answer}");
    // The next watcher (after the dead one's lease) deletes them and reclaims nothing more;
    // the claim the dead one left is driven once stale, as any claim is, and cv's job starts.
    // Every other nlp job runs on.
    d.advance(16).await;
    let report = d.round().await;
    assert!(report.reclaimed.is_empty(), "{report:?}");
    d.advance(61).await;
    let report = d.round().await;
    assert!(report.reclaimed.is_empty(), "{report:?}");
    d.advance(1).await;
    d.round().await;
    assert_eq!(phase(&d, &admin, cv).await, "Running");
    let left = in_cluster(&d).await;
    assert!(!left.contains(&nlp[6]) && !left.contains(&nlp[7]), "{left:?}");
    for &id in &nlp[..6] {
        assert_eq!(phase(&d, &admin, id).await, "Running", "job {id}");
    }
    assert_eq!(phase(&d, &admin, racer).await, "Prequeue");
    let events = detail(&d, &admin, nlp[7]).await;
    assert_eq!(
        kinds(&events).iter().filter(|k| *k == "reclaimed").count(),
        1,
        "reclaimed once: {events}"
    );
}
both_driven!(
    mid_reclaim,
    a_reclaim_killed_before_its_deletes_is_finished_by_the_next_watcher
);

/// A queue `lab` with a capacity of 4 GPUs and priorities 0–9 (`preempt`: lower priorities may
/// be preempted), full of four priority-0 jobs, and a 2-GPU priority-5 job waiting past the
/// reclaim delay. Answers (the app, the user, the low jobs, the urgent one).
async fn a_full_lab(db: Option<String>, preempt: bool) -> (Driven, String, Vec<i64>, i64) {
    let d = Driven::start(db, GPU_NODES).await;
    let admin = d.app.admin_token().await;
    settings(
        &d.app,
        &admin,
        json!({"queueQuotaEnabled": true, "reclaimDelaySeconds": 10}),
    )
    .await;
    let mut lab = json!({"name": "lab", "open": true, "capacity": {"nvidia.com/a100": "4"},
                         "priorityRange": {"min": 0, "max": 9}});
    if preempt {
        lab["preemptWithinQueue"] = json!("lowerPriority");
    }
    queue(&d.app, &admin, lab).await;
    let nina = d.app.user_token("nina").await;
    let mut low = Vec::new();
    for i in 0..4 {
        let (id, _) = submit(&d, &nina, team_job(&format!("low-{i}"), "lab", 1)).await;
        low.push(id);
        d.advance(1).await;
    }
    let mut body = team_job("urgent", "lab", 2);
    body["priority"] = json!(5);
    let (urgent, answer) = submit(&d, &nina, body).await;
    assert_eq!(answer["admission"]["reasons"][0]["code"], "queue_capacity", "{answer}");
    d.advance(10).await;
    (d, nina, low, urgent)
}

async fn a_higher_priority_job_takes_the_room_of_lower_ones_where_its_queue_allows(db: Option<String>) {
    // The second half needs a database of its own, of the same kind.
    let second = match &db {
        Some(_) => Some(anteroom_tests::postgres::fresh_database(&anteroom_tests::postgres::server_url()).await),
        None => None,
    };
    let (d, nina, low, urgent) = a_full_lab(db, true).await;
    let report = d.round().await;
    assert_eq!(report.reclaimed, [low[2], low[3]], "{report:?}");
    assert!(report.activated.contains(&urgent), "{report:?}");
    let seen = detail(&d, &nina, low[3]).await;
    let last = seen["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        (last["kind"].as_str(), last["details"]["priority"].as_i64()),
        (Some("preempted"), Some(5)),
        "{last}"
    );
    // Without the queue's consent nothing is taken.
    let (d, _, _, urgent) = a_full_lab(second, false).await;
    let report = d.round().await;
    assert!(
        report.reclaimed.is_empty() && !report.activated.contains(&urgent),
        "{report:?}"
    );
}
both_driven!(
    priority_within_queue,
    a_higher_priority_job_takes_the_room_of_lower_ones_where_its_queue_allows
);

/// Two nodes of 4 GPUs: the room a gang is owed must be where its replicas can go.
const TWO_GPU_NODES: &str = r#"
[[node]]
name = "gpu-0"
cpu = "64"
memory = "512Gi"
accelerators = { "nvidia.com/a100" = "4" }

[[node]]
name = "gpu-1"
cpu = "64"
memory = "512Gi"
accelerators = { "nvidia.com/a100" = "4" }
"#;

async fn a_gang_is_reclaimed_for_once_its_replicas_can_be_placed(db: Option<String>) {
    let d = Driven::start(db, TWO_GPU_NODES).await;
    two_teams(&d).await;
    let nina = d.app.user_token("nina").await;
    let carl = d.app.user_token("carl").await;
    // nlp's seven 1-GPU jobs, pinned: its guarantee's four (one on gpu-0, three on gpu-1), then
    // three borrowers — two on gpu-0, the newest on gpu-1. gpu-0 has one GPU free.
    let mut nlp = Vec::new();
    for (i, node) in ["gpu-0", "gpu-1", "gpu-1", "gpu-1", "gpu-0", "gpu-0", "gpu-1"]
        .iter()
        .enumerate()
    {
        let mut body = team_job(&format!("nlp-{i}"), "nlp", 1);
        body["tasks"][0]["nodeNames"] = json!([node]);
        let (id, answer) = submit(&d, &nina, body).await;
        assert_eq!(answer["admission"]["decision"], "activated", "{answer}");
        assert_eq!(answer["admission"]["borrowing"], i >= 4, "{answer}");
        nlp.push(id);
        d.advance(1).await;
    }
    // cv's PyTorch gang: a 3-GPU master and a CPU worker, owed cv's room. The cluster is short
    // by 2 GPUs: the two newest borrowers (on gpu-0 and gpu-1) would free them but leave no
    // node with 3; the two on gpu-0 do.
    let gang = json!({"name": "ddp", "kind": "pytorch", "queue": "cv", "scheduleType": "normal",
                      "tasks": [
                        {"name": "master", "replicas": 1, "image": "pytorch/pytorch",
                         "resources": {"cpu": "1", "memory": "1Gi", "nvidia.com/a100": "3"}},
                        {"name": "worker", "replicas": 1, "image": "pytorch/pytorch",
                         "resources": {"cpu": "1", "memory": "1Gi"}}]});
    let (id, answer) = submit(&d, &carl, gang).await;
    assert_eq!(answer["admission"]["reasons"][0]["code"], "reclaiming", "{answer}");
    d.advance(10).await;
    let report = d.round().await;
    let mut taken = report.reclaimed.clone();
    taken.sort_unstable();
    assert_eq!(taken, [nlp[4], nlp[5]], "{report:?}");
    assert_eq!(report.reclaimed_for, [id], "{report:?}");
    assert!(report.activated.contains(&id), "{report:?}");
    d.advance(31).await;
    d.round().await;
    assert_eq!(phase(&d, &carl, id).await, "Running");
    assert_eq!(
        phase(&d, &nina, nlp[6]).await,
        "Running",
        "the newest borrower was not needed"
    );
}
both_driven!(
    gang_reclaimed_for,
    a_gang_is_reclaimed_for_once_its_replicas_can_be_placed
);
