//! What occupying normal jobs use, per (owner, queue), read from the compact columns of `jobs`
//! in one query (`spec/prequeue.md` §1: backfill jobs never count, `Prequeue` does not occupy).
//!
//! The query names the table and columns itself instead of going through the jobs feature, which
//! sits above queues (a job needs its queue; a queue's usage needs only these columns).

use std::collections::BTreeMap;

use anteroom_shared::scheduling::{JobPhase, ResourceList, ScheduleType};
use sea_orm::sea_query::{Alias, Expr, ExprTrait, Query};
use sea_orm::{ConnectionTrait, DbErr, FromQueryResult};

use crate::prequeue::{QueueTree, UsageRow, UserId};
use crate::store::compact;

/// The phases that hold cluster resources.
pub fn occupying_phases() -> Vec<&'static str> {
    JobPhase::ALL
        .iter()
        .filter(|p| p.is_occupying())
        .map(|p| p.as_str())
        .collect()
}

#[derive(FromQueryResult)]
struct Row {
    owner_id: i64,
    queue: String,
    request_milli: String,
}

/// Usage rows of the occupying normal jobs in `queues` (every queue when `None`), summed per
/// (owner, queue). With `owner`, only that user's rows.
pub async fn usage_rows(
    db: &impl ConnectionTrait,
    queues: Option<&[String]>,
    owner: Option<UserId>,
) -> Result<Vec<UsageRow>, DbErr> {
    let mut query = Query::select();
    query
        .columns([Alias::new("owner_id"), Alias::new("queue"), Alias::new("request_milli")])
        .from(Alias::new("jobs"))
        .and_where(Expr::col(Alias::new("schedule_type")).eq(ScheduleType::Normal.as_str()))
        .and_where(Expr::col(Alias::new("phase")).is_in(occupying_phases()));
    if let Some(queues) = queues {
        query.and_where(Expr::col(Alias::new("queue")).is_in(queues.iter().map(String::as_str)));
    }
    if let Some(owner) = owner {
        query.and_where(Expr::col(Alias::new("owner_id")).eq(owner));
    }
    let statement = db.get_database_backend().build(&query);
    let rows = Row::find_by_statement(statement).all(db).await?;
    let mut sums: BTreeMap<(UserId, String), UsageRow> = BTreeMap::new();
    for row in rows {
        // An unreadable column counts as nothing here and is reported: usage is advisory for
        // display, and the decision paths read the same rows (a corrupt row is a bug to fix,
        // not a reason to refuse every submission in the queue).
        let request = match compact::decode_request(&row.request_milli) {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(error = %e, queue = %row.queue, "a job's request column is unreadable");
                continue;
            }
        };
        let entry = sums
            .entry((row.owner_id, row.queue.clone()))
            .or_insert_with(|| UsageRow {
                owner: row.owner_id,
                queue: row.queue,
                resources: ResourceList::new(),
                active_jobs: 0,
            });
        entry.resources.saturating_add_assign(&request);
        entry.active_jobs = entry.active_jobs.saturating_add(1);
    }
    Ok(sums.into_values().collect())
}

/// Per queue: what all users use in it and every descendant (a job counts at every level of
/// its path to the root).
pub fn subtree_usage(tree: &QueueTree, rows: &[UsageRow]) -> BTreeMap<String, ResourceList> {
    let mut used: BTreeMap<String, ResourceList> = BTreeMap::new();
    for row in rows {
        for &q in tree.path_of(&row.queue) {
            used.entry(tree.name(q).to_owned())
                .or_default()
                .saturating_add_assign(&row.resources);
        }
    }
    used
}

#[derive(FromQueryResult)]
struct Waiting {
    queue: String,
    n: i64,
}

/// How many jobs wait in the prequeue of each queue (all users; a queue with none is absent):
/// the length of each line, which every user may see.
pub async fn waiting_by_queue(db: &impl ConnectionTrait) -> Result<BTreeMap<String, u64>, DbErr> {
    let query = Query::select()
        .column(Alias::new("queue"))
        .expr_as(Expr::col(Alias::new("id")).count(), Alias::new("n"))
        .from(Alias::new("jobs"))
        .and_where(Expr::col(Alias::new("phase")).eq(JobPhase::Prequeue.as_str()))
        .group_by_col(Alias::new("queue"))
        .to_owned();
    let rows = Waiting::find_by_statement(db.get_database_backend().build(&query))
        .all(db)
        .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.queue, u64::try_from(r.n).unwrap_or(0)))
        .collect())
}

#[derive(FromQueryResult)]
struct Owner {
    id: i64,
    username: String,
}

/// Every (user, queue) with occupying normal jobs, by queue then username: what each quota
/// rule's per-user limits are held against now.
pub async fn per_user(db: &impl ConnectionTrait) -> Result<Vec<anteroom_shared::api::queues::QueueUserUse>, DbErr> {
    let rows = usage_rows(db, None, None).await?;
    let ids: Vec<i64> = rows.iter().map(|r| r.owner).collect();
    let mut names: BTreeMap<i64, String> = BTreeMap::new();
    for chunk in ids.chunks(500) {
        let query = Query::select()
            .columns([Alias::new("id"), Alias::new("username")])
            .from(Alias::new("users"))
            .and_where(Expr::col(Alias::new("id")).is_in(chunk.iter().copied()))
            .to_owned();
        for o in Owner::find_by_statement(db.get_database_backend().build(&query))
            .all(db)
            .await?
        {
            names.insert(o.id, o.username);
        }
    }
    let mut out: Vec<_> = rows
        .into_iter()
        .map(|r| anteroom_shared::api::queues::QueueUserUse {
            // A user deleted since keeps their jobs' usage, under their id.
            user: names.get(&r.owner).cloned().unwrap_or_else(|| format!("#{}", r.owner)),
            queue: r.queue,
            used: r.resources,
            active_jobs: r.active_jobs,
        })
        .collect();
    out.sort_by(|a, b| (&a.queue, &a.user).cmp(&(&b.queue, &b.user)));
    Ok(out)
}

/// Per queue, while queues share (§9, quotas on): its effective guarantee, what its subtree
/// holds beyond it (`borrowed`) and the idle part of it others may use (`lent`), against the
/// cluster's `nodes`. Empty while nothing is guaranteed or quotas are off.
pub async fn sharing_by_queue(
    db: &impl ConnectionTrait,
    config: &anteroom_shared::scheduling::PrequeueConfig,
    nodes: &[crate::prequeue::NodeSnapshot],
) -> Result<BTreeMap<String, crate::prequeue::sharing::QueueSharingUse>, DbErr> {
    if !config.queue_quota_enabled {
        return Ok(BTreeMap::new());
    }
    let (specs, tree) = super::tree(db).await?;
    let Some(model) = crate::prequeue::sharing::SharingTree::new(&specs, &tree, nodes) else {
        return Ok(BTreeMap::new());
    };
    let rows = usage_rows(db, None, None).await?;
    let state = model.state(rows.iter().map(|row| (tree.index_of(&row.queue), &row.resources)));
    Ok((0..tree.len())
        .map(|q| (tree.name(q).to_owned(), model.queue_use(&state, q)))
        .collect())
}
