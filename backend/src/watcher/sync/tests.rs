//! Status sync on the simulated cluster.

use super::*;
use sea_orm::{ConnectionTrait, TransactionTrait};

/// Jobs `a`, `b`, `c`… in the given phases, ids 1, 2, 3….
async fn jobs_in(db: &DatabaseConnection, phases: &[&str]) {
    for (i, phase) in phases.iter().enumerate() {
        db.execute_unprepared(&format!(
            "INSERT INTO jobs (name, kind, queue, owner_id, owner_name, schedule_type, preemption_policy, phase, \
             tasks, resources, request_milli, explicit_nodes, single_node, nodes, submitted_at, updated_at, attempts) \
             VALUES ('j{i}', 'custom', 'default', 1, 'ada', 'normal', 'Never', '{phase}', '[]', '{{}}', '', '', \
             true, '[]', '2026-11-01 00:00:00+00:00', '2026-11-01 00:00:00+00:00', 0)"
        ))
        .await
        .unwrap();
    }
}

fn running(id: i64, node: &str, at: DateTime<Utc>) -> JobStatus {
    JobStatus {
        job_id: id,
        phase: JobPhase::Running,
        nodes: vec![node.to_owned()],
        observed_at: at,
        started_at: Some(at),
        failure: None,
        cluster_uid: None,
        failed_pod: None,
    }
}

#[tokio::test]
async fn statuses_written_together_each_land_on_their_own_row_by_compare_and_set() {
    let dir = tempfile::tempdir().unwrap();
    let db = crate::store::test_database(dir.path()).await;
    jobs_in(&db, &["Pending", "Deleted", "Pending"]).await;
    let at = chrono::DateTime::parse_from_rfc3339("2026-11-02T10:00:00Z")
        .unwrap()
        .to_utc();
    let statuses = [running(1, "n1", at), running(2, "n2", at), running(3, "n3", at)];
    let statuses: Vec<&JobStatus> = statuses.iter().collect();
    // Job 2 was read as Pending, and deleted since: its write must miss.
    let rows: Vec<job::Model> = job::Entity::find().all(&db).await.unwrap();
    let writes: Vec<(usize, job::Model, JobPhase, String)> = (0..3)
        .map(|k| {
            let nodes = serde_json::to_string(&statuses[k].nodes).unwrap();
            (k, rows[k].clone(), JobPhase::Pending, nodes)
        })
        .collect();
    let txn = db.begin().await.unwrap();
    let written = write_statuses_together(&txn, &statuses, &writes).await.unwrap();
    txn.commit().await.unwrap();
    assert_eq!(written, [1, 3].into_iter().collect());
    let rows = job::Entity::find().all(&db).await.unwrap();
    let seen: Vec<(i64, &str, &str, Option<DateTime<Utc>>)> = rows
        .iter()
        .map(|r| (r.id, r.phase.as_str(), r.nodes.as_str(), r.started_at))
        .collect();
    assert_eq!(
        seen,
        [
            (1, "Running", r#"["n1"]"#, Some(at)),
            (2, "Deleted", "[]", None),
            (3, "Running", r#"["n3"]"#, Some(at)),
        ]
    );
    // A `started` event for each job written, in the same transaction, at the cluster's time.
    let started: Vec<(i64, String, DateTime<Utc>)> = crate::jobs::entity::event::Entity::find()
        .all(&db)
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.job_id, e.kind, e.created_at))
        .collect();
    assert_eq!(started, [(1, "started".to_owned(), at), (3, "started".to_owned(), at)]);
}
