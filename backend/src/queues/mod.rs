//! Queues (`spec/prequeue.md` §1, `spec/api.md` "Queues"): the tree, who may use which queue,
//! and the admin's create, replace and delete — each write validated against the whole tree
//! with the change applied, so no cycle, unknown parent, capacity above a parent's or guarantee
//! beyond a capacity or a parent's guarantee is ever stored.

pub mod budget;
pub mod cluster;
pub mod entity;
pub mod handlers;
pub mod names;
mod sharing;
pub mod usage;

use std::collections::{BTreeMap, HashMap};

use anteroom_shared::api::queues::QueueBody;
use anteroom_shared::scheduling::{JobPhase, QueueSharing, ResourceList};
use chrono::{SubsecRound, Utc};
use sea_orm::sea_query::{Alias, Expr, ExprTrait, Query};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, FromQueryResult,
    QueryFilter, QueryOrder, Set,
};

use self::entity::{member, queue};
pub use self::names::{dns_label_problem, resource_name_problem};
use crate::cluster::{Cluster, ClusterError};
use crate::field_rule::Rule;
use crate::prequeue::{QueueSpec, QueueTree, QueueTreeError};
use crate::users;

/// The queue every user may use; it cannot be deleted.
pub const DEFAULT_QUEUE: &str = anteroom_shared::api::jobs::DEFAULT_QUEUE;

/// What a queue operation can fail on; the handlers map each to a status and a stable code.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    /// No such queue (`queue_not_found`).
    #[error("no queue named {0:?}")]
    NotFound(String),
    /// The queue exists but the caller is not a member and it is not open (`queue_forbidden`).
    #[error("you may not use queue {0:?}")]
    Forbidden(String),
    /// A field is invalid (`validation_failed`): (field, problem).
    #[error("{0}: {1}")]
    Invalid(String, Rule),
    /// A queue of that name exists (`queue_exists`).
    #[error("a queue named {0:?} exists")]
    Exists(String),
    /// The tree with the change applied is invalid (`queue_cycle`, `parent_not_found`,
    /// `capacity_exceeds_parent`, `guarantee_exceeds_parent`, `guarantee_exceeds_capacity`).
    #[error(transparent)]
    Tree(#[from] QueueTreeError),
    /// The write's `If-Match` no longer names the stored queue (`precondition_failed`); carries
    /// the stored one's version.
    #[error("queue {0:?} changed since it was read")]
    Stale(String),
    /// Deleting a queue with children (`queue_has_children`).
    #[error("queue {0:?} has child queues; delete or move them first")]
    HasChildren(String),
    /// Deleting a queue with unfinished jobs (`queue_in_use`).
    #[error("queue {queue:?} has {jobs} unfinished jobs")]
    InUse {
        /// The queue.
        queue: String,
        /// Its jobs not in a terminal phase.
        jobs: u64,
    },
    /// Deleting a queue that volumes of the catalogue are offered to (`queue_in_use`): a queue
    /// created later under the same name must not inherit another team's data.
    #[error("queue {queue:?} is named by the volumes {volumes:?}; take it out of them first")]
    NamedByVolumes {
        /// The queue.
        queue: String,
        /// The volumes that name it.
        volumes: Vec<String>,
    },
    /// `default` cannot be deleted (`queue_protected`).
    #[error("the default queue cannot be deleted")]
    Protected,
    /// The cluster refused or did not answer.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// The database failed.
    #[error(transparent)]
    Db(#[from] DbErr),
}

/// The queue as the core sees it.
fn spec_of(row: &queue::Model) -> Result<QueueSpec, DbErr> {
    Ok(QueueSpec {
        name: row.name.clone(),
        parent: row.parent.clone(),
        capacity: capacity_of(row)?,
        sharing: sharing_of(row)?,
        budget_hold: budget::hold_of(row),
    })
}

/// A queue row's capacity.
pub fn capacity_of(row: &queue::Model) -> Result<Option<ResourceList>, DbErr> {
    row.capacity
        .as_deref()
        .map(|text| {
            serde_json::from_str(text)
                .map_err(|e| DbErr::Custom(format!("queue {:?}: unreadable capacity: {e}", row.name)))
        })
        .transpose()
}

/// A queue row's sharing settings (`spec/prequeue.md` §9); NULL: the defaults, which share
/// nothing (every queue stored before sharing existed).
pub fn sharing_of(row: &queue::Model) -> Result<QueueSharing, DbErr> {
    row.sharing.as_deref().map_or_else(
        || Ok(QueueSharing::default()),
        |text| {
            serde_json::from_str(text)
                .map_err(|e| DbErr::Custom(format!("queue {:?}: unreadable sharing settings: {e}", row.name)))
        },
    )
}

/// Every queue, by name.
pub async fn all(db: &impl ConnectionTrait) -> Result<Vec<queue::Model>, DbErr> {
    queue::Entity::find().order_by_asc(queue::Column::Name).all(db).await
}

/// Every queue as the core's specs.
pub async fn specs(db: &impl ConnectionTrait) -> Result<Vec<QueueSpec>, DbErr> {
    all(db).await?.iter().map(spec_of).collect()
}

/// The tree as stored (lenient: what is stored was validated on write).
pub async fn tree(db: &impl ConnectionTrait) -> Result<(Vec<QueueSpec>, QueueTree), DbErr> {
    tree_of(&all(db).await?)
}

/// The tree of queue rows already read.
pub fn tree_of(rows: &[queue::Model]) -> Result<(Vec<QueueSpec>, QueueTree), DbErr> {
    let specs: Vec<QueueSpec> = rows.iter().map(spec_of).collect::<Result<_, _>>()?;
    let tree = QueueTree::new_lenient(&specs);
    Ok((specs, tree))
}

/// [`usable`] against queue rows already read (one query fewer; the membership is read only
/// for a queue that is not open, and not for an admin).
pub async fn usable_among(
    db: &impl ConnectionTrait,
    rows: &[queue::Model],
    user: &users::entity::Model,
    name: &str,
) -> Result<(), QueueError> {
    let row = rows
        .iter()
        .find(|q| q.name == name)
        .ok_or_else(|| QueueError::NotFound(name.to_owned()))?;
    if row.open || users::role_of(user) == anteroom_shared::api::Role::Admin {
        return Ok(());
    }
    match member::Entity::find_by_id((name.to_owned(), user.id)).one(db).await? {
        Some(_) => Ok(()),
        None => Err(QueueError::Forbidden(name.to_owned())),
    }
}

/// The queue `name` if `user` may submit to it: admins may use every queue, users the open
/// ones and those they are members of. An unknown queue is `NotFound`, one the user may not
/// use `Forbidden`.
pub async fn usable(
    db: &impl ConnectionTrait,
    user: &users::entity::Model,
    name: &str,
) -> Result<queue::Model, QueueError> {
    let row = queue::Entity::find_by_id(name.to_owned())
        .one(db)
        .await?
        .ok_or_else(|| QueueError::NotFound(name.to_owned()))?;
    usable_among(db, std::slice::from_ref(&row), user, name).await?;
    Ok(row)
}

/// The queues `user` may submit to, by name.
pub async fn usable_by(db: &impl ConnectionTrait, user: &users::entity::Model) -> Result<Vec<queue::Model>, DbErr> {
    // One rule for "may use", the one `/auth/me` answers with.
    let names = users::queue_names_of(db, std::slice::from_ref(user))
        .await?
        .remove(&user.id)
        .unwrap_or_default();
    Ok(all(db).await?.into_iter().filter(|q| names.contains(&q.name)).collect())
}

/// Usernames of each queue's members.
pub async fn members(db: &impl ConnectionTrait) -> Result<HashMap<String, Vec<String>>, DbErr> {
    #[derive(FromQueryResult)]
    struct Row {
        queue: String,
        username: String,
    }
    let query = Query::select()
        .column((Alias::new("queue_members"), Alias::new("queue")))
        .column((Alias::new("users"), Alias::new("username")))
        .from(Alias::new("queue_members"))
        .inner_join(
            Alias::new("users"),
            Expr::col((Alias::new("users"), Alias::new("id")))
                .equals((Alias::new("queue_members"), Alias::new("user_id"))),
        )
        .order_by((Alias::new("users"), Alias::new("username")), sea_orm::Order::Asc)
        .to_owned();
    let rows = Row::find_by_statement(db.get_database_backend().build(&query))
        .all(db)
        .await?;
    let mut out: HashMap<String, Vec<String>> = HashMap::new();
    for row in rows {
        out.entry(row.queue).or_default().push(row.username);
    }
    Ok(out)
}

/// What all users' occupying normal jobs use in every queue and below it.
pub async fn used_by_queue(db: &impl ConnectionTrait) -> Result<BTreeMap<String, ResourceList>, DbErr> {
    let (_, tree) = tree(db).await?;
    let rows = usage::usage_rows(db, None, None).await?;
    Ok(usage::subtree_usage(&tree, &rows))
}

/// Checks the fields of a create or replace that do not need the database, with the runtime
/// limits and sharing settings the write leaves on the queue.
fn check_body(body: &QueueBody, limits: RuntimeLimits, sharing: &QueueSharing) -> Result<(), QueueError> {
    if let Some(problem) = dns_label_problem(&body.name) {
        return Err(QueueError::Invalid("name".into(), problem));
    }
    if body.name == crate::cluster::ELASTIC_QUEUE {
        return Err(QueueError::Invalid(
            "name".into(),
            Rule::fixed("queueNameReserved", "this name is the cluster queue of Elastic jobs"),
        ));
    }
    if let Some(display) = &body.display_name
        && let Some(problem) = users::display_name_problem(display)
    {
        return Err(QueueError::Invalid("displayName".into(), problem));
    }
    if body.name == DEFAULT_QUEUE && (!body.open || body.parent.is_some()) {
        return Err(QueueError::Invalid(
            if body.open { "parent" } else { "open" }.into(),
            Rule::fixed("defaultQueueOpenRoot", "the default queue stays an open root queue"),
        ));
    }
    if body.parent.as_deref() == Some(body.name.as_str()) {
        return Err(QueueTreeError::Cycle {
            queue: body.name.clone(),
        }
        .into());
    }
    if let Some(capacity) = &body.capacity
        && let Some((name, _)) = capacity.iter().find(|(name, _)| resource_name_problem(name).is_some())
    {
        return Err(QueueError::Invalid(
            format!("capacity.{name}"),
            resource_name_problem(name).unwrap_or_else(|| "invalid".into()),
        ));
    }
    use anteroom_shared::api::jobs::{MAX_RUNTIME_LIMIT_SECONDS, MIN_RUNTIME_LIMIT_SECONDS};
    for (field, value) in [
        ("defaultRuntimeSeconds", limits.default),
        ("maxRuntimeSeconds", limits.max),
    ] {
        if let Some(v) = value
            && !(MIN_RUNTIME_LIMIT_SECONDS..=MAX_RUNTIME_LIMIT_SECONDS).contains(&v)
        {
            return Err(QueueError::Invalid(
                field.into(),
                Rule::fixed(
                    "runtimeLimitRange",
                    "a runtime limit is 60 to 31,536,000 seconds (a year)",
                ),
            ));
        }
    }
    if let (Some(default), Some(max)) = (limits.default, limits.max)
        && default > max
    {
        return Err(QueueError::Invalid(
            "defaultRuntimeSeconds".into(),
            Rule::fixed(
                "runtimeDefaultAboveMax",
                "the default runtime limit is above the maximum",
            ),
        ));
    }
    if let Some(Some(uid)) = body.run_as_user
        && !(1..=anteroom_shared::api::queues::MAX_RUN_AS_USER).contains(&uid)
    {
        return Err(QueueError::Invalid(
            "runAsUser".into(),
            Rule::fixed(
                "runAsUserRange",
                "a user id from 1 to 2,147,483,647 (0 is root: use null to let images run as root)",
            ),
        ));
    }
    if let Some((field, problem)) = sharing::problem(sharing) {
        return Err(QueueError::Invalid(field, problem));
    }
    if body.members.len() > 10_000 {
        return Err(QueueError::Invalid("members".into(), "at most 10,000 members".into()));
    }
    Ok(())
}

/// The user ids of `usernames`, naming the first unknown one.
async fn member_ids(db: &impl ConnectionTrait, usernames: &[String]) -> Result<Vec<i64>, QueueError> {
    let mut ids = Vec::with_capacity(usernames.len());
    let found = users::entity::Entity::find()
        .filter(users::entity::Column::Username.is_in(usernames.iter().map(String::as_str)))
        .all(db)
        .await?;
    for (i, name) in usernames.iter().enumerate() {
        match found.iter().find(|u| &u.username == name) {
            Some(user) => {
                if !ids.contains(&user.id) {
                    ids.push(user.id);
                }
            }
            None => {
                return Err(QueueError::Invalid(
                    format!("members[{i}]"),
                    Rule::with(
                        "noSuchUser",
                        format!("no user named {name:?}"),
                        serde_json::json!({ "name": name }),
                    ),
                ));
            }
        }
    }
    Ok(ids)
}

/// The queue tree with `body` applied (with the sharing settings the write leaves), validated
/// as a whole (no cycle, known parents, no capacity above an ancestor's, guarantees within
/// capacities and parents' guarantees), and the queues whose tree changes: the old and the new
/// root.
fn apply(specs: &mut Vec<QueueSpec>, body: &QueueBody, sharing: &QueueSharing) -> Result<Vec<String>, QueueError> {
    let before = QueueTree::new_lenient(specs);
    let mut roots = vec![before.root_of(&body.name).to_owned()];
    let spec = QueueSpec {
        name: body.name.clone(),
        parent: body.parent.clone(),
        capacity: body.capacity.clone(),
        sharing: sharing.clone(),
        budget_hold: None, // tree validation does not read holds
    };
    match specs.iter_mut().find(|s| s.name == body.name) {
        Some(slot) => *slot = spec,
        None => specs.push(spec),
    }
    let after = QueueTree::new(specs)?;
    roots.push(after.root_of(&body.name).to_owned());
    // While queues share, decisions take one turn for every queue (`QueueTree::turn_of`): the
    // write takes it too. A write that starts or ends sharing also takes every tree's turn, so
    // no decision made under the other rule is in flight.
    if before.shares() || after.shares() {
        roots.push(crate::prequeue::queue_tree::SHARED_TURN.to_owned());
    }
    if before.shares() != after.shares() {
        for tree in [&before, &after] {
            roots.extend(
                (0..tree.len())
                    .filter(|&q| tree.parent(q).is_none())
                    .map(|q| tree.name(q).to_owned()),
            );
        }
    }
    roots.sort();
    roots.dedup();
    Ok(roots)
}

/// Takes the queue-write lock, then the tree locks of `roots` (sorted): decisions in those trees
/// wait until the change is committed (PostgreSQL; SQLite's single writer does this alone).
async fn lock_for_queue_write(txn: &sea_orm::DatabaseTransaction, roots: &[String]) -> Result<(), DbErr> {
    crate::store::lock_named(txn, "anteroom-queues").await?;
    for root in roots {
        crate::store::lock_queue_tree(txn, root).await?;
    }
    Ok(())
}

/// A queue's runtime limits as a write leaves them: what the body says, or for a field it
/// leaves out, what the queue had (a new queue: none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RuntimeLimits {
    default: Option<i64>,
    max: Option<i64>,
}

impl RuntimeLimits {
    fn of(body: &QueueBody, existing: Option<&queue::Model>) -> Self {
        RuntimeLimits {
            default: body
                .default_runtime_seconds
                .unwrap_or_else(|| existing.and_then(|e| e.default_runtime_seconds)),
            max: body
                .max_runtime_seconds
                .unwrap_or_else(|| existing.and_then(|e| e.max_runtime_seconds)),
        }
    }
}

/// A queue's version, its `ETag` ([`crate::etag`]): it follows the writes of its definition and
/// members (each sets `updated_at`), not its usage.
pub fn version(row: &queue::Model) -> String {
    crate::etag::of(&(&row.name, row.updated_at.timestamp_micros()))
}

/// Creates (`replace = None`) or replaces the queue `body.name`: validated against the whole
/// tree with the change applied, then the cluster is told, then queue and members are written
/// in one transaction that holds the queue-write lock and the locks of the trees it changes
/// (and validates again under them, in case another write came first).
pub async fn save(
    db: &DatabaseConnection,
    cluster: &dyn Cluster,
    body: &QueueBody,
    replace: Option<&str>,
    if_match: Option<&str>,
) -> Result<queue::Model, QueueError> {
    let before = queue::Entity::find_by_id(body.name.clone()).one(db).await?;
    let sharing = sharing::after(body, before.as_ref())?;
    check_body(body, RuntimeLimits::of(body, before.as_ref()), &sharing)?;
    if let Some(path_name) = replace
        && path_name != body.name
    {
        return Err(QueueError::Invalid(
            "name".into(),
            format!("must equal the queue in the path ({path_name:?}): queues are not renamed").into(),
        ));
    }
    let check_existing = |existing: &Option<queue::Model>| match (replace, existing) {
        (None, Some(_)) => Err(QueueError::Exists(body.name.clone())),
        (Some(name), None) => Err(QueueError::NotFound(name.to_owned())),
        _ => Ok(()),
    };
    // A first check outside any lock, so a refused write tells the cluster nothing.
    check_existing(&before)?;
    apply(&mut specs(db).await?, body, &sharing)?;
    member_ids(db, &body.members).await?;
    // Before the transaction: the simulated cluster writes through the same single SQLite
    // writer, and nothing slow belongs inside a write lock. If the write below fails after
    // all, the cluster keeps a harmless unused queue, or a mirror ahead of the stored queue
    // until its next write.
    cluster.sync_queue(&self::cluster::of_body(body, &sharing)).await?;
    let txn = crate::store::write_transaction(db).await?;
    crate::store::lock_named(&txn, "anteroom-queues").await?;
    let existing = queue::Entity::find_by_id(body.name.clone()).one(&txn).await?;
    check_existing(&existing)?;
    if let (Some(row), Some(if_match)) = (&existing, if_match)
        && !crate::etag::matches(if_match, &version(row))
    {
        return Err(QueueError::Stale(version(row)));
    }
    // Read again under the lock: what a field left out keeps is what is stored now.
    let limits = RuntimeLimits::of(body, existing.as_ref());
    let sharing = sharing::after(body, existing.as_ref())?;
    check_body(body, limits, &sharing)?;
    let roots = apply(&mut specs(&txn).await?, body, &sharing)?;
    lock_for_queue_write(&txn, &roots).await?;
    let ids = member_ids(&txn, &body.members).await?;
    // Whole microseconds, as PostgreSQL keeps them: the version read back is the one answered.
    let now = Utc::now().trunc_subsecs(6);
    let capacity = body
        .capacity
        .as_ref()
        .map(|c| serde_json::to_string(c).map_err(|e| DbErr::Custom(e.to_string())))
        .transpose()?;
    let row = queue::ActiveModel {
        name: Set(body.name.clone()),
        display_name: Set(body.display_name.clone().unwrap_or_else(|| body.name.clone())),
        open: Set(body.open),
        parent: Set(body.parent.clone()),
        capacity: Set(capacity),
        default_runtime_seconds: Set(limits.default),
        max_runtime_seconds: Set(limits.max),
        // Absent: a queue replaced keeps what it had (a client that does not know the field
        // never resets it); a new queue runs as a non-root user.
        run_as_user: Set(match body.run_as_user {
            Some(uid) => uid,
            None => existing
                .as_ref()
                .map_or(Some(anteroom_shared::api::queues::DEFAULT_RUN_AS_USER), |e| {
                    e.run_as_user
                }),
        }),
        sharing: Set(sharing::column(&sharing)?),
        created_at: Set(existing.as_ref().map_or(now, |e| e.created_at)),
        updated_at: Set(now),
        ..Default::default() // the budget and its hold: kept (written by `usage::budget`)
    };
    let saved = if existing.is_some() {
        row.update(&txn).await?
    } else {
        row.insert(&txn).await?
    };
    member::Entity::delete_many()
        .filter(member::Column::Queue.eq(&body.name))
        .exec(&txn)
        .await?;
    if !ids.is_empty() {
        member::Entity::insert_many(ids.into_iter().map(|user_id| member::ActiveModel {
            queue: Set(body.name.clone()),
            user_id: Set(user_id),
        }))
        .exec(&txn)
        .await?;
    }
    txn.commit().await?;
    Ok(saved)
}

/// Deletes a queue without children and unfinished jobs (its quota rule and memberships go with
/// it); `default` stays.
pub async fn delete(db: &DatabaseConnection, cluster: &dyn Cluster, name: &str) -> Result<(), QueueError> {
    if name == DEFAULT_QUEUE {
        return Err(QueueError::Protected);
    }
    let txn = crate::store::write_transaction(db).await?;
    crate::store::lock_named(&txn, "anteroom-queues").await?;
    queue::Entity::find_by_id(name.to_owned())
        .one(&txn)
        .await?
        .ok_or_else(|| QueueError::NotFound(name.to_owned()))?;
    // Submissions into this queue hold its tree's lock from their access check to their
    // insert: once we hold it, every one of them has committed (and is counted below) or will
    // find the queue gone.
    let (_, tree) = tree(&txn).await?;
    // Submissions take the shared turn while queues share; it sorts before every root name,
    // and every holder of several takes them in that order.
    if tree.shares() {
        crate::store::lock_queue_tree(&txn, crate::prequeue::queue_tree::SHARED_TURN).await?;
    }
    crate::store::lock_queue_tree(&txn, tree.root_of(name)).await?;
    let children = queue::Entity::find()
        .filter(queue::Column::Parent.eq(name))
        .all(&txn)
        .await?;
    if !children.is_empty() {
        return Err(QueueError::HasChildren(name.to_owned()));
    }
    let unfinished = unfinished_jobs(&txn, name).await?;
    if unfinished > 0 {
        return Err(QueueError::InUse {
            queue: name.to_owned(),
            jobs: unfinished,
        });
    }
    // Volume writes take the same lock, so none can name the queue between this and the delete.
    let volumes: Vec<String> = crate::volumes::list(&txn)
        .await?
        .into_iter()
        .filter(|v| v.queues.iter().any(|q| q == name))
        .map(|v| v.name)
        .collect();
    if !volumes.is_empty() {
        return Err(QueueError::NamedByVolumes {
            queue: name.to_owned(),
            volumes,
        });
    }
    queue::Entity::delete_by_id(name.to_owned()).exec(&txn).await?;
    txn.commit().await?;
    if let Err(e) = cluster.remove_queue(name).await {
        tracing::warn!(queue = name, error = %e, "the cluster did not forget a deleted queue");
    }
    Ok(())
}

/// Jobs of a queue not in a terminal phase.
async fn unfinished_jobs(db: &impl ConnectionTrait, name: &str) -> Result<u64, DbErr> {
    #[derive(FromQueryResult)]
    struct Count {
        n: i64,
    }
    let terminal: Vec<&str> = JobPhase::ALL
        .iter()
        .filter(|p| p.is_terminal())
        .map(|p| p.as_str())
        .collect();
    let query = Query::select()
        .expr_as(Expr::col(Alias::new("id")).count(), Alias::new("n"))
        .from(Alias::new("jobs"))
        .and_where(Expr::col(Alias::new("queue")).eq(name))
        .and_where(Expr::col(Alias::new("phase")).is_not_in(terminal))
        .to_owned();
    let count = Count::find_by_statement(db.get_database_backend().build(&query))
        .one(db)
        .await?
        .map_or(0, |c| c.n);
    Ok(u64::try_from(count).unwrap_or(0))
}
