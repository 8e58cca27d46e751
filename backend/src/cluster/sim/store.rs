//! Persistence of the simulation: three tables, JSON text for the nested parts (portable between
//! SQLite and PostgreSQL), written in one transaction per operation.
//!
//! A completed job keeps its row (phase `Completed`) until the retention purge deletes it; in
//! memory only its [`FinishedJob`] summary is loaded.

use std::collections::BTreeMap;

use sea_orm::sea_query::OnConflict;
use sea_orm::{ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, Set, TransactionTrait};

use super::state::{Changes, FinishedJob, SimJob, SimNode, SimPhase, SimState};
use crate::prequeue::JobId;

/// `sim_nodes`.
pub mod node {
    use sea_orm::entity::prelude::*;

    /// One simulated node.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "sim_nodes")]
    pub struct Model {
        /// Host name.
        #[sea_orm(primary_key, auto_increment = false)]
        pub name: String,
        /// ResourceList as JSON.
        pub allocatable: String,
        /// Labels as JSON.
        pub labels: String,
        /// Taints as JSON.
        pub taints: String,
        /// Ready.
        pub ready: bool,
        /// Not cordoned.
        pub schedulable: bool,
    }

    /// No relations.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// `sim_jobs`.
pub mod job {
    use sea_orm::entity::prelude::*;

    /// One simulated Volcano job.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "sim_jobs")]
    pub struct Model {
        /// Anteroom's job id.
        #[sea_orm(primary_key, auto_increment = false)]
        pub job_id: i64,
        /// Volcano queue.
        pub queue: String,
        /// JobSpec as JSON.
        pub spec: String,
        /// SimPhase name.
        pub phase: String,
        /// Creation time.
        pub created_at: DateTimeUtc,
        /// Placement time.
        pub started_at: Option<DateTimeUtc>,
        /// Completion time, if bounded.
        pub finishes_at: Option<DateTimeUtc>,
        /// End of termination.
        pub gone_at: Option<DateTimeUtc>,
        /// Placed pods as JSON.
        pub pods: String,
    }

    /// No relations.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// `sim_queues`.
pub mod queue {
    use sea_orm::entity::prelude::*;

    /// One queue the simulated cluster knows.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "sim_queues")]
    pub struct Model {
        /// Queue name.
        #[sea_orm(primary_key, auto_increment = false)]
        pub name: String,
        /// Accepts new jobs.
        pub open: bool,
    }

    /// No relations.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("simulation state serialises")
}

fn from_json<T: serde::de::DeserializeOwned>(what: &str, s: &str) -> Result<T, DbErr> {
    serde_json::from_str(s).map_err(|e| DbErr::Custom(format!("corrupt simulated cluster row ({what}): {e}")))
}

/// The uid of a stored spec, without the rest (empty in specs stored before uids).
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct UidOnly {
    #[serde(default)]
    cluster_uid: String,
}

/// A stored job as it was when it ended (or as it is, for one still in memory): its spec,
/// times and pods, for the pods and logs of a finished job.
pub fn finished_job(row: &job::Model) -> Result<SimJob, DbErr> {
    Ok(SimJob {
        spec: from_json("spec", &row.spec)?,
        phase: SimPhase::parse(&row.phase)
            .ok_or_else(|| DbErr::Custom(format!("corrupt simulated job {}: phase {}", row.job_id, row.phase)))?,
        created_at: row.created_at,
        started_at: row.started_at,
        finishes_at: row.finishes_at,
        gone_at: row.gone_at,
        pods: from_json("pods", &row.pods)?,
    })
}

/// The stored row of job `id`, as [`finished_job`] reads it; `None` when there is none.
pub async fn load_job(db: &DatabaseConnection, id: JobId) -> Result<Option<SimJob>, DbErr> {
    match job::Entity::find_by_id(id).one(db).await? {
        Some(row) => Ok(Some(finished_job(&row)?)),
        None => Ok(None),
    }
}

/// Loads the whole simulation; `default_runtime_seconds` decides which task of a stored failed
/// job failed ([`SimJob::failure`]).
pub async fn load(db: &DatabaseConnection, default_runtime_seconds: u64) -> Result<SimState, DbErr> {
    let mut state = SimState::default();
    for row in node::Entity::find().all(db).await? {
        state.nodes.insert(
            row.name.clone(),
            SimNode {
                allocatable: from_json("allocatable", &row.allocatable)?,
                labels: from_json("labels", &row.labels)?,
                taints: from_json("taints", &row.taints)?,
                ready: row.ready,
                schedulable: row.schedulable,
                name: row.name,
            },
        );
    }
    for row in queue::Entity::find().all(db).await? {
        state
            .queues
            .insert(row.name.clone(), crate::cluster::ClusterQueue::new(row.name, row.open));
    }
    for row in job::Entity::find().all(db).await? {
        let phase = SimPhase::parse(&row.phase)
            .ok_or_else(|| DbErr::Custom(format!("corrupt simulated job {}: phase {}", row.job_id, row.phase)))?;
        if matches!(phase, SimPhase::Completed | SimPhase::Failed) {
            // Its spec and pods stay on disk only; of a completed job's spec only the uid is
            // read. Why a job failed follows from its spec ([`SimJob::failure`]), so a failed
            // row is read whole.
            let uid: UidOnly = from_json("spec", &row.spec)?;
            let failure = if phase == SimPhase::Failed {
                finished_job(&row)?.failure(default_runtime_seconds)
            } else {
                None
            };
            state.finished.insert(
                row.job_id,
                FinishedJob {
                    started_at: row.started_at,
                    finished_at: row.finishes_at.unwrap_or(row.created_at),
                    cluster_uid: Some(uid.cluster_uid).filter(|u| !u.is_empty()),
                    failure,
                },
            );
            continue;
        }
        state.jobs.insert(
            row.job_id,
            std::sync::Arc::new(SimJob {
                spec: from_json("spec", &row.spec)?,
                phase,
                created_at: row.created_at,
                started_at: row.started_at,
                finishes_at: row.finishes_at,
                gone_at: row.gone_at,
                pods: from_json("pods", &row.pods)?,
            }),
        );
    }
    state.recount_usage();
    Ok(state)
}

fn node_row(n: &SimNode) -> node::ActiveModel {
    node::ActiveModel {
        name: Set(n.name.clone()),
        allocatable: Set(json(&n.allocatable)),
        labels: Set(json(&n.labels)),
        taints: Set(json(&n.taints)),
        ready: Set(n.ready),
        schedulable: Set(n.schedulable),
    }
}

fn job_row(j: &SimJob) -> job::ActiveModel {
    job::ActiveModel {
        job_id: Set(j.spec.id),
        queue: Set(j.spec.queue.clone()),
        spec: Set(json(&j.spec)),
        phase: Set(j.phase.as_str().to_string()),
        created_at: Set(j.created_at),
        started_at: Set(j.started_at),
        finishes_at: Set(j.finishes_at),
        gone_at: Set(j.gone_at),
        pods: Set(json(&j.pods)),
    }
}

/// Writes what `changes` lists, from `state`, in one transaction.
pub async fn save(db: &DatabaseConnection, state: &SimState, changes: &Changes) -> Result<(), DbErr> {
    if changes.is_empty() {
        return Ok(());
    }
    let txn = db.begin().await?;
    for name in &changes.nodes {
        if let Some(n) = state.nodes.get(name) {
            node::Entity::insert(node_row(n))
                .on_conflict(
                    OnConflict::column(node::Column::Name)
                        .update_columns([
                            node::Column::Allocatable,
                            node::Column::Labels,
                            node::Column::Taints,
                            node::Column::Ready,
                            node::Column::Schedulable,
                        ])
                        .to_owned(),
                )
                .exec(&txn)
                .await?;
        } else {
            node::Entity::delete_by_id(name.clone()).exec(&txn).await?;
        }
    }
    for name in &changes.queues {
        if let Some(cluster_queue) = state.queues.get(name) {
            queue::Entity::insert(queue::ActiveModel {
                name: Set(name.clone()),
                open: Set(cluster_queue.open),
            })
            .on_conflict(
                OnConflict::column(queue::Column::Name)
                    .update_column(queue::Column::Open)
                    .to_owned(),
            )
            .exec(&txn)
            .await?;
        } else {
            queue::Entity::delete_by_id(name.clone()).exec(&txn).await?;
        }
    }
    // Jobs in the cluster are written in multi-row statements: a step that places a thousand
    // jobs, or a group of creates, is a few statements instead of one each.
    let mut rows = Vec::new();
    for id in &changes.upserted {
        if let Some(f) = state.finished.get(id) {
            // Its row exists (it ran): mark it completed or failed. Its pods stay on disk (not
            // in memory), so its pods and logs can be read until it is purged.
            let phase = if f.failure.is_some() {
                SimPhase::Failed
            } else {
                SimPhase::Completed
            };
            job::Entity::update_many()
                .col_expr(job::Column::Phase, phase.as_str().into())
                .col_expr(job::Column::FinishesAt, Some(f.finished_at).into())
                .col_expr(
                    job::Column::GoneAt,
                    Option::<chrono::DateTime<chrono::Utc>>::None.into(),
                )
                .filter(job::Column::JobId.eq(*id))
                .exec(&txn)
                .await?;
        } else if let Some(j) = state.jobs.get(id) {
            rows.push(job_row(j));
        }
    }
    // 9 values a row: 100 rows stay far below any store's limit on bound values.
    let mut rows = rows.into_iter().peekable();
    while rows.peek().is_some() {
        job::Entity::insert_many(rows.by_ref().take(100))
            .on_conflict(
                OnConflict::column(job::Column::JobId)
                    .update_columns([
                        job::Column::Phase,
                        job::Column::StartedAt,
                        job::Column::FinishesAt,
                        job::Column::GoneAt,
                        job::Column::Pods,
                    ])
                    .to_owned(),
            )
            .exec_without_returning(&txn)
            .await?;
    }
    if !changes.removed.is_empty() {
        let ids: Vec<JobId> = changes.removed.iter().copied().collect();
        job::Entity::delete_many()
            .filter(job::Column::JobId.is_in(ids))
            .exec(&txn)
            .await?;
    }
    txn.commit().await
}

/// Replaces the stored node definitions with `nodes`, keeping each surviving node's cordon.
/// Returns the changes to apply to the in-memory state.
pub fn reconcile_nodes(state: &mut SimState, nodes: Vec<SimNode>, changes: &mut Changes) {
    let mut wanted: BTreeMap<String, SimNode> = nodes.into_iter().map(|n| (n.name.clone(), n)).collect();
    state.placement_settled = false;
    for (name, node) in wanted.iter_mut() {
        if let Some(existing) = state.nodes.get(name) {
            node.schedulable = existing.schedulable;
        }
    }
    for name in state.nodes.keys() {
        if !wanted.contains_key(name) {
            changes.nodes.insert(name.clone());
        }
    }
    for (name, node) in &wanted {
        if state.nodes.get(name) != Some(node) {
            changes.nodes.insert(name.clone());
        }
    }
    state.nodes = wanted;
}
