//! Leases: one holder at a time for work that must not run twice (the prequeue watcher), on
//! SQLite and PostgreSQL alike (`spec/prequeue.md` §5).
//!
//! A lease row has a holder, an expiry and a fencing token that grows by one with every new
//! holder. The holder renews it well before it expires; another replica takes it over only
//! once it has expired (or was released). Expiry alone would not be enough: a holder paused
//! for longer than the lease (a long GC pause, a stalled disk) wakes up believing it still
//! holds it. So every write of the holder carries its [`Fence`] and checks it inside its own
//! transaction ([`Fence::holds`]); a stale token refuses the write. On PostgreSQL that check
//! also locks the lease row until the write commits, so a takeover waits for a write that
//! passed the check instead of overtaking it; SQLite's single writer serialises them anyway.

use chrono::{DateTime, Duration, Utc};
use sea_orm::sea_query::{Alias, Expr, ExprTrait, OnConflict, Query};
use sea_orm::{ConnectionTrait, DatabaseConnection, DbErr, FromQueryResult};

/// The lease of the prequeue watcher.
pub const WATCHER_LEASE: &str = "prequeue-watcher";

fn table() -> Alias {
    Alias::new("leases")
}

fn col(name: &str) -> Alias {
    Alias::new(name)
}

/// The expiry written on release: long past, so the next replica may take the lease at once.
fn released_at() -> DateTime<Utc> {
    DateTime::<Utc>::UNIX_EPOCH
}

/// Proof of holding a lease: its name, the holder and the token it was granted with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    /// The lease.
    pub name: String,
    /// Who holds it.
    pub holder: String,
    /// Grows with every new holder; a write with an older one is refused.
    pub token: i64,
}

impl Fence {
    /// Inside a write transaction: true if this fence still holds the lease at `now`. The
    /// caller writes only then, in the same transaction. (On PostgreSQL the check is an
    /// `UPDATE` of the lease row, whose lock lasts until the transaction ends.)
    pub async fn holds(&self, txn: &impl ConnectionTrait, now: DateTime<Utc>) -> Result<bool, DbErr> {
        let stmt = Query::update()
            .table(table())
            .value(col("fence"), Expr::col(col("fence")))
            .and_where(Expr::col(col("name")).eq(self.name.as_str()))
            .and_where(Expr::col(col("holder")).eq(self.holder.as_str()))
            .and_where(Expr::col(col("fence")).eq(self.token))
            .and_where(Expr::col(col("expires_at")).gt(now))
            .to_owned();
        let done = txn.execute_raw(txn.get_database_backend().build(&stmt)).await?;
        Ok(done.rows_affected() == 1)
    }
}

/// One replica's side of a lease.
#[derive(Debug, Clone)]
pub struct Lease {
    /// The lease's name.
    pub name: String,
    /// This replica (unique per process start, so a restarted process is a new holder).
    pub holder: String,
    /// How long a grant or renewal lasts.
    pub ttl: Duration,
}

#[derive(FromQueryResult)]
struct Token {
    fence: i64,
}

impl Lease {
    /// A lease `name` for this process: the holder is the host name, the process id and a
    /// random suffix.
    pub fn for_this_process(name: &str, ttl: Duration) -> Self {
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "anteroom".into());
        let suffix: u32 = rand::random();
        Lease {
            name: name.to_owned(),
            holder: format!("{host}/{}/{suffix:08x}", std::process::id()),
            ttl,
        }
    }

    /// Takes the lease if it is free or expired at `now`: a new fence, one above the last.
    /// `None` while another holder's lease runs.
    pub async fn acquire(&self, db: &DatabaseConnection, now: DateTime<Utc>) -> Result<Option<Fence>, DbErr> {
        let txn = crate::store::write_transaction(db).await?;
        let backend = txn.get_database_backend();
        let seed = Query::insert()
            .into_table(table())
            .columns([col("name"), col("holder"), col("fence"), col("expires_at")])
            .values_panic([self.name.as_str().into(), "".into(), 0i64.into(), released_at().into()])
            .on_conflict(OnConflict::column(col("name")).do_nothing().to_owned())
            .to_owned();
        txn.execute_raw(backend.build(&seed)).await?;
        let take = Query::update()
            .table(table())
            .value(col("holder"), self.holder.as_str())
            .value(col("fence"), Expr::col(col("fence")).add(1))
            .value(col("expires_at"), now + self.ttl)
            .and_where(Expr::col(col("name")).eq(self.name.as_str()))
            .and_where(Expr::col(col("expires_at")).lte(now))
            .to_owned();
        if txn.execute_raw(backend.build(&take)).await?.rows_affected() != 1 {
            return Ok(None);
        }
        let read = Query::select()
            .column(col("fence"))
            .from(table())
            .and_where(Expr::col(col("name")).eq(self.name.as_str()))
            .to_owned();
        let token = Token::find_by_statement(backend.build(&read))
            .one(&txn)
            .await?
            .ok_or_else(|| DbErr::RecordNotFound(format!("lease {}", self.name)))?;
        txn.commit().await?;
        Ok(Some(Fence {
            name: self.name.clone(),
            holder: self.holder.clone(),
            token: token.fence,
        }))
    }

    /// Extends a held lease to `now + ttl`. False if it was lost (expired, or taken over):
    /// the caller must stop acting and acquire it anew.
    pub async fn renew(&self, db: &DatabaseConnection, fence: &Fence, now: DateTime<Utc>) -> Result<bool, DbErr> {
        let stmt = Query::update()
            .table(table())
            .value(col("expires_at"), now + self.ttl)
            .and_where(Expr::col(col("name")).eq(fence.name.as_str()))
            .and_where(Expr::col(col("holder")).eq(fence.holder.as_str()))
            .and_where(Expr::col(col("fence")).eq(fence.token))
            .and_where(Expr::col(col("expires_at")).gt(now))
            .to_owned();
        Ok(db
            .execute_raw(db.get_database_backend().build(&stmt))
            .await?
            .rows_affected()
            == 1)
    }

    /// Gives the lease up (on shutdown), so another replica takes it at its next try instead
    /// of after the expiry. Nothing happens if it was lost already.
    pub async fn release(&self, db: &DatabaseConnection, fence: &Fence) -> Result<(), DbErr> {
        let stmt = Query::update()
            .table(table())
            .value(col("holder"), "")
            .value(col("expires_at"), released_at())
            .and_where(Expr::col(col("name")).eq(fence.name.as_str()))
            .and_where(Expr::col(col("holder")).eq(fence.holder.as_str()))
            .and_where(Expr::col(col("fence")).eq(fence.token))
            .to_owned();
        db.execute_raw(db.get_database_backend().build(&stmt)).await?;
        Ok(())
    }
}
