//! `DELETE /api/v1/jobs/{id}` (`spec/prequeue.md` §6): a prequeued job is marked `Deleted`, any
//! other unfinished one is deleted in the cluster first; a preempted job still waiting for its
//! requeue is marked `Deleted` too, which cancels the requeue.

use anteroom_shared::scheduling::JobPhase;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, Statement};

use super::entity::job;
use super::events::{self, EventKind};
use super::{Context, DELETE_GRACE_SECONDS, JobError, phase_of, visible};
use crate::users;

/// Whether preempted job `id` is to go back to the prequeue once its pods are gone (its
/// preemption says so and is not over): a delete then still has something to stop. Read by
/// SQL: the preemptions are the watcher's table.
async fn awaits_requeue(db: &impl ConnectionTrait, id: i64) -> Result<bool, DbErr> {
    let backend = db.get_database_backend();
    let placeholder = if backend == sea_orm::DbBackend::Postgres {
        "$1"
    } else {
        "?"
    };
    let sql =
        format!("SELECT victim_id FROM preemptions WHERE victim_id = {placeholder} AND requeue AND gone_at IS NULL");
    Ok(db
        .query_one_raw(Statement::from_sql_and_values(backend, sql, [id.into()]))
        .await?
        .is_some())
}

/// `DELETE /api/v1/jobs/{id}` (`spec/prequeue.md` §6). A prequeued job becomes `Deleted` by
/// compare-and-set; if the watcher claimed it meanwhile, it is deleted in the cluster like any
/// other. Any other unfinished job is deleted in the cluster first (a cluster that does not
/// answer leaves it untouched: 503), then marked `Deleted` by compare-and-set on the phase
/// read; a phase that moved on is read again.
pub async fn delete(ctx: Context<'_>, actor: &users::entity::Model, id: i64) -> Result<(), JobError> {
    let mut row = visible(ctx.db, actor, id).await?;
    // Each pass either finishes or observes a phase change; phases only move forward, but for
    // a preempted job going back to the prequeue (deleting it then cancels the requeue).
    for _ in 0..8 {
        let phase = phase_of(&row)?;
        if phase.is_terminal() && !(phase == JobPhase::Preempted && awaits_requeue(ctx.db, id).await?) {
            return Err(JobError::AlreadyFinished(id, phase));
        }
        // A preempted job's delete was issued with its preemption.
        if !matches!(phase, JobPhase::Prequeue | JobPhase::Preempted) {
            ctx.cluster
                .delete_job(id, &row.uid_in_cluster(), DELETE_GRACE_SECONDS)
                .await?;
        }
        let txn = crate::store::write_transaction(ctx.db).await?;
        // Taken inside the transaction: an event's time is close to its commit (the event
        // stream's settle window relies on it).
        let now = ctx.clock.now();
        let updated = job::Entity::update_many()
            .col_expr(job::Column::Phase, Expr::value(JobPhase::Deleted.as_str()))
            .col_expr(job::Column::FinishedAt, Expr::value(now))
            .col_expr(job::Column::UpdatedAt, Expr::value(now))
            .col_expr(job::Column::WaitReasons, Expr::value(Option::<String>::None))
            .filter(job::Column::Id.eq(id))
            .filter(job::Column::Phase.eq(phase.as_str()))
            .exec(&txn)
            .await?;
        if updated.rows_affected == 1 {
            events::record(
                &txn,
                &row,
                EventKind::Deleted,
                format!("deleted by {}", actor.username),
                Some(serde_json::json!({ "by": actor.username, "phase": phase })),
                now,
            )
            .await?;
            txn.commit().await?;
            ctx.signals.events_written();
            ctx.signals.wake_watcher();
            return Ok(());
        }
        drop(txn);
        row = job::Entity::find_by_id(id)
            .one(ctx.db)
            .await?
            .ok_or(JobError::NotFound(id))?;
    }
    Err(JobError::Db(DbErr::Custom(format!(
        "job {id} kept changing phase during its delete"
    ))))
}
