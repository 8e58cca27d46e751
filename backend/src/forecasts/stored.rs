//! The board in the store (migration `000029`): the leader writes each new board to one row and
//! every replica — the leader too — answers from the row, so a job has one position and one
//! estimate whichever replica is asked (`spec/prequeue.md` §8).
//!
//! A read costs one primary-key lookup of the row's version; the board itself is read and
//! parsed only when the version moved, and kept. A write carries the writer's lease term and is
//! refused when a newer leader wrote already, so a deposed leader's late forecast never
//! replaces the new leader's.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anteroom_shared::api::jobs::EstimateBasis;
use anteroom_shared::scheduling::ActivationOrder;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QuerySelect};
use tokio::sync::Mutex;

use super::{Board, Entry};

/// The row.
pub mod entity {
    use sea_orm::entity::prelude::*;

    /// The one row of `forecast_board` (id 1).
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "forecast_board")]
    pub struct Model {
        /// Always 1.
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i32,
        /// The lease term of the leader that wrote it.
        pub term: i64,
        /// Moves with every write; 0: never written.
        pub version: i64,
        /// When the board was computed.
        pub computed_at: Option<DateTimeUtc>,
        /// The board as JSON.
        pub body: Option<String>,
    }

    /// None.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// A board unchanged but for when it was computed is written again this often at most, so the
/// stored one says how fresh it is without a write per forecast.
pub const REWRITE_UNCHANGED_AFTER: Duration = Duration::from_secs(30);

/// The store's board, as this replica last read or wrote it.
#[derive(Debug, Default)]
pub struct StoredBoard {
    /// `(version, board)` last read or written here.
    cached: Mutex<Option<(i64, Arc<Board>)>>,
    /// What this replica wrote last, and when: an unchanged board is not written again before
    /// [`REWRITE_UNCHANGED_AFTER`].
    written: std::sync::Mutex<Option<(Instant, Arc<Board>)>>,
}

impl StoredBoard {
    /// The board in the store; `None` before a leader wrote one.
    pub async fn read(&self, db: &impl ConnectionTrait) -> Result<Option<Arc<Board>>, DbErr> {
        let version: Option<i64> = entity::Entity::find_by_id(1)
            .select_only()
            .column(entity::Column::Version)
            .into_tuple()
            .one(db)
            .await?;
        let Some(version) = version.filter(|v| *v > 0) else {
            return Ok(None);
        };
        // One reader reads and parses a new version; the others wait for it and share it.
        let mut cached = self.cached.lock().await;
        if let Some((seen, board)) = cached.as_ref()
            && *seen >= version
        {
            return Ok(Some(board.clone()));
        }
        let Some(row) = entity::Entity::find_by_id(1).one(db).await? else {
            return Ok(None);
        };
        let Some(body) = row.body.as_deref() else {
            return Ok(None);
        };
        let stored: Compact = serde_json::from_str(body)
            .map_err(|e| DbErr::Custom(format!("the stored forecast board is unreadable: {e}")))?;
        let board = Arc::new(stored.board());
        *cached = Some((row.version, board.clone()));
        Ok(Some(board))
    }

    /// Writes `board` of lease term `term`, unless a leader of a newer term wrote since or the
    /// same board (but for its time) was written less than [`REWRITE_UNCHANGED_AFTER`] ago.
    /// Answers whether it was written.
    pub async fn write(&self, db: &DatabaseConnection, term: i64, board: &Arc<Board>) -> Result<bool, DbErr> {
        if self.unchanged(board) {
            return Ok(false);
        }
        let body = serde_json::to_string(&Compact::of(board)).map_err(|e| DbErr::Custom(e.to_string()))?;
        let updated = entity::Entity::update_many()
            .col_expr(entity::Column::Term, Expr::value(term))
            .col_expr(entity::Column::Version, Expr::col(entity::Column::Version).add(1))
            .col_expr(entity::Column::ComputedAt, Expr::value(board.computed_at))
            .col_expr(entity::Column::Body, Expr::value(body))
            .filter(entity::Column::Id.eq(1))
            .filter(entity::Column::Term.lte(term))
            .exec(db)
            .await?;
        if updated.rows_affected == 0 {
            return Ok(false);
        }
        *self.written.lock().expect("the written board's lock") = Some((Instant::now(), board.clone()));
        Ok(true)
    }

    /// Whether `board` is the one written last but for its time, less than
    /// [`REWRITE_UNCHANGED_AFTER`] ago.
    fn unchanged(&self, board: &Board) -> bool {
        let written = self.written.lock().expect("the written board's lock");
        written
            .as_ref()
            .is_some_and(|(at, last)| at.elapsed() < REWRITE_UNCHANGED_AFTER && same_but_time(last, board))
    }

    /// Forgets what this replica wrote (it no longer leads: when it leads again, it writes).
    pub fn forget_written(&self) {
        *self.written.lock().expect("the written board's lock") = None;
    }
}

/// Whether two boards differ only in when they were computed.
fn same_but_time(a: &Board, b: &Board) -> bool {
    a.order == b.order && a.queues == b.queues && a.jobs == b.jobs
}

/// A board as stored: per queue, its waiting jobs in consideration order, each as `[id,
/// estimated start in Unix microseconds or null, basis]` — some 30 bytes a job, a few MB for a
/// prequeue of 100,000.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Compact {
    order: ActivationOrder,
    computed_at: DateTime<Utc>,
    queues: BTreeMap<String, Vec<(i64, Option<i64>, EstimateBasis)>>,
}

impl Compact {
    fn of(board: &Board) -> Compact {
        let queues = board
            .queues
            .iter()
            .map(|(queue, ids)| {
                let jobs = ids
                    .iter()
                    .filter_map(|id| {
                        let entry = board.jobs.get(id)?;
                        Some((*id, entry.estimated_start_at.map(|t| t.timestamp_micros()), entry.basis))
                    })
                    .collect();
                (queue.clone(), jobs)
            })
            .collect();
        Compact {
            order: board.order,
            computed_at: board.computed_at,
            queues,
        }
    }

    fn board(self) -> Board {
        let mut jobs = HashMap::new();
        let mut queues = HashMap::with_capacity(self.queues.len());
        for (queue, entries) in self.queues {
            let mut ids = Vec::with_capacity(entries.len());
            for (rank, (id, start, basis)) in entries.into_iter().enumerate() {
                jobs.insert(
                    id,
                    Entry {
                        queue: queue.clone(),
                        rank,
                        estimated_start_at: start.and_then(DateTime::from_timestamp_micros),
                        basis,
                    },
                );
                ids.push(id);
            }
            queues.insert(queue, ids);
        }
        Board {
            computed_at: self.computed_at,
            order: self.order,
            queues,
            jobs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_board_reads_back_as_it_was_written() {
        let at = DateTime::from_timestamp_micros(1_800_000_000_123_456).unwrap();
        let entry = |queue: &str, rank, start: Option<DateTime<Utc>>, basis| Entry {
            queue: queue.into(),
            rank,
            estimated_start_at: start,
            basis,
        };
        let board = Board {
            computed_at: at,
            order: ActivationOrder::FairShare,
            queues: HashMap::from([("a".into(), vec![7, 3]), ("b".into(), vec![5])]),
            jobs: HashMap::from([
                (7, entry("a", 0, Some(at), EstimateBasis::Limits)),
                (3, entry("a", 1, None, EstimateBasis::Unknown)),
                (
                    5,
                    entry("b", 0, Some(at + chrono::Duration::seconds(90)), EstimateBasis::Limits),
                ),
            ]),
        };
        let json = serde_json::to_string(&Compact::of(&board)).unwrap();
        let back = serde_json::from_str::<Compact>(&json).unwrap().board();
        assert_eq!(back, board, "{json}");
    }

    #[tokio::test]
    async fn a_deposed_leader_cannot_overwrite_and_every_reader_sees_the_write() {
        use migration::{Migrator, MigratorTrait};
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("anteroom.db").display());
        let db = crate::store::connect(&url).await.unwrap();
        Migrator::up(&db, None).await.unwrap();
        let board = |seconds: i64, order| {
            Arc::new(Board {
                computed_at: DateTime::from_timestamp(1_800_000_000 + seconds, 0).unwrap(),
                order,
                queues: HashMap::new(),
                jobs: HashMap::new(),
            })
        };
        let (leader, follower) = (StoredBoard::default(), StoredBoard::default());
        assert_eq!(follower.read(&db).await.unwrap(), None, "none before a leader writes");
        assert!(leader.write(&db, 2, &board(0, ActivationOrder::Fcfs)).await.unwrap());
        assert_eq!(follower.read(&db).await.unwrap(), Some(board(0, ActivationOrder::Fcfs)));
        // The same board a moment later: not written again.
        assert!(!leader.write(&db, 2, &board(1, ActivationOrder::Fcfs)).await.unwrap());
        // A leader of an older term (deposed, its forecast late) writes nothing.
        let deposed = StoredBoard::default();
        assert!(
            !deposed
                .write(&db, 1, &board(5, ActivationOrder::FairShare))
                .await
                .unwrap()
        );
        assert_eq!(follower.read(&db).await.unwrap(), Some(board(0, ActivationOrder::Fcfs)));
        // A newer term's board replaces it, and a reader that cached the old one sees it.
        assert!(
            deposed
                .write(&db, 3, &board(9, ActivationOrder::FairShare))
                .await
                .unwrap()
        );
        assert_eq!(
            follower.read(&db).await.unwrap(),
            Some(board(9, ActivationOrder::FairShare))
        );
    }
}
