//! Status sync in batches (issue 25): the cluster's events applied together
//! ([`sync::apply_all`](anteroom::watcher::sync::apply_all), one read and one write transaction
//! per run of statuses) leave the store exactly as applying them one by one does, over random
//! histories of submissions, deletes, rounds and time passing.

use anteroom_tests::api::{call, quota, settings};
use anteroom_tests::driven::{Driven, timed_job};
use proptest::prelude::*;
use serde_json::{Value, json};

#[derive(Debug, Clone)]
enum Step {
    /// A user (of two) submits a job of `cpu` CPUs running `seconds`.
    Submit { user: u8, cpu: u8, seconds: u16 },
    /// The owner deletes the `pick`-th job submitted so far.
    Delete { pick: u16 },
    /// Time passes: the cluster starts, ends and removes jobs; the events are synced (with a
    /// resync after) or, with `lag`, left to pile up for a later step, so that one batch holds
    /// several statuses of one job (`Pending`, `Running`, `Completed`).
    Advance { seconds: u16, lag: bool },
    /// A watcher round.
    Round,
    /// What piled up is applied, without the resync that would repair a lost status.
    Sync,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0u8..2, 1u8..6, 5u16..200).prop_map(|(user, cpu, seconds)| Step::Submit { user, cpu, seconds }),
        1 => any::<u16>().prop_map(|pick| Step::Delete { pick }),
        3 => (1u16..120, any::<bool>()).prop_map(|(seconds, lag)| Step::Advance { seconds, lag }),
        2 => Just(Step::Round),
        1 => Just(Step::Sync),
    ]
}

/// Every job as its owner's list shows it, with its events' kinds (their times are the wall
/// clock's, the rest is the hand clock's).
async fn jobs(d: &Driven, tokens: &[String]) -> Vec<Value> {
    let mut out = Vec::new();
    for token in tokens {
        let (status, list) = call(&d.app, "GET", "/api/v1/jobs?pageSize=500", token, None).await;
        assert_eq!(status, 200, "{list}");
        for job in list["items"].as_array().unwrap() {
            let id = job["id"].as_i64().unwrap();
            let detail = anteroom_tests::driven::detail(d, token, id).await;
            out.push(json!({
                "id": id,
                "phase": detail["phase"],
                "nodes": detail["nodes"],
                "startedAt": detail["startedAt"],
                "finishedAt": detail["finishedAt"],
                "failure": detail["failure"],
                "events": anteroom_tests::driven::kinds(&detail),
            }));
        }
    }
    out
}

async fn start(one_by_one: bool) -> (Driven, Vec<String>) {
    let mut d = Driven::start(None, "").await;
    d.one_by_one_sync = one_by_one;
    let admin = d.app.admin_token().await;
    settings(&d.app, &admin, json!({"queueQuotaEnabled": true})).await;
    quota(&d.app, &admin, "default", json!({"cpu": "8"})).await;
    let tokens = vec![d.app.user_token("ann").await, d.app.user_token("bob").await];
    d.round().await;
    (d, tokens)
}

async fn history(steps: Vec<Step>) {
    let (alone, alone_tokens) = start(true).await;
    let (batched, batched_tokens) = start(false).await;
    let mut submitted: Vec<(i64, usize)> = Vec::new();
    for (n, step) in steps.iter().enumerate() {
        let mut applied = Vec::new();
        for (d, tokens) in [(&alone, &alone_tokens), (&batched, &batched_tokens)] {
            match step {
                Step::Submit { user, cpu, seconds } => {
                    let body = timed_job(
                        &format!("j{n}"),
                        json!({"cpu": cpu.to_string()}),
                        Some(u32::from(*seconds)),
                    );
                    let token = &tokens[usize::from(*user)];
                    let (status, answer) = call(&d.app, "POST", "/api/v1/jobs", token, Some(body)).await;
                    assert_eq!(status, 201, "{answer}");
                    if std::ptr::eq(d, &batched) {
                        submitted.push((answer["job"]["id"].as_i64().unwrap(), usize::from(*user)));
                    }
                }
                Step::Delete { pick } if !submitted.is_empty() => {
                    let (id, user) = submitted[usize::from(*pick) % submitted.len()];
                    call(&d.app, "DELETE", &format!("/api/v1/jobs/{id}"), &tokens[user], None).await;
                }
                Step::Advance { seconds, lag: false } => d.advance(i64::from(*seconds)).await,
                Step::Advance { seconds, lag: true } => d.step_cluster(i64::from(*seconds)).await,
                Step::Round => {
                    d.round().await;
                }
                Step::Sync => applied.push(d.sync_events().await),
                Step::Delete { .. } => {}
            }
        }
        if let [one_by_one, together] = &applied[..] {
            assert_eq!(
                one_by_one, together,
                "what each event did, at step {n} ({step:?}) of {steps:?}"
            );
        }
        assert_eq!(
            jobs(&alone, &alone_tokens).await,
            jobs(&batched, &batched_tokens).await,
            "after step {n} ({step:?}) of {steps:?}"
        );
    }
}

#[test]
fn statuses_applied_together_leave_the_store_as_one_by_one_does() {
    let config = ProptestConfig {
        cases: 8,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest!(config, |(steps in prop::collection::vec(step(), 1..30))| {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        runtime.block_on(history(steps));
    });
}

/// One batch with a job's `Pending`, `Running` and `Completed` (and a second job's start):
/// each status is compared with the row as the ones before it left it.
#[test]
fn one_batch_holding_a_whole_life_of_a_job() {
    let steps = vec![
        Step::Submit {
            user: 0,
            cpu: 1,
            seconds: 5,
        },
        Step::Advance { seconds: 1, lag: true },
        Step::Submit {
            user: 1,
            cpu: 1,
            seconds: 500,
        },
        Step::Advance { seconds: 10, lag: true },
        Step::Sync,
    ];
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(history(steps));
}
