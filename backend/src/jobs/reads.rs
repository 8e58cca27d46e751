//! Reading jobs: one page of a list with its filters, one job with its timeline and (while it
//! waits) its position and reasons, and the admin's list of every waiting job.

use super::*;
use anteroom_shared::api::jobs::{JobSort, JobSortField};
use sea_orm::{DbBackend, QueryTrait};

/// Which jobs a list shows.
#[derive(Debug, Clone, Default)]
pub struct JobFilter {
    /// Only this owner's (users see only their own).
    pub owner: Option<i64>,
    /// Only these owners, by username (admins).
    pub users: Vec<String>,
    /// Any of these phases.
    pub phases: Vec<JobPhase>,
    /// Any of these schedule types.
    pub schedule_types: Vec<ScheduleType>,
    /// Any of these kinds.
    pub kinds: Vec<JobKind>,
    /// Any of these queues.
    pub queues: Vec<String>,
    /// Only jobs whose name contains this, letters' case ignored (`q=`).
    pub name_contains: Option<String>,
    /// The order of the list (`sort=`).
    pub sort: JobSort,
}

/// The jobs a filter selects.
fn matching(filter: &JobFilter) -> sea_orm::Select<job::Entity> {
    let mut query = job::Entity::find();
    if let Some(owner) = filter.owner {
        query = query.filter(job::Column::OwnerId.eq(owner));
    }
    if !filter.users.is_empty() {
        query = query.filter(job::Column::OwnerName.is_in(filter.users.iter().map(String::as_str)));
    }
    if !filter.phases.is_empty() {
        query = query.filter(job::Column::Phase.is_in(filter.phases.iter().map(|p| p.as_str())));
    }
    if !filter.schedule_types.is_empty() {
        query = query.filter(job::Column::ScheduleType.is_in(filter.schedule_types.iter().map(|s| s.as_str())));
    }
    if !filter.kinds.is_empty() {
        query = query.filter(job::Column::Kind.is_in(filter.kinds.iter().map(|k| k.as_str())));
    }
    if !filter.queues.is_empty() {
        query = query.filter(job::Column::Queue.is_in(filter.queues.iter().map(String::as_str)));
    }
    if let Some(text) = filter.name_contains.as_deref() {
        // Job names are lowercase (Kubernetes names): a search ignores case by lowering itself.
        let pattern = format!("%{}%", escape_like(&text.to_lowercase()));
        query = query.filter(job::Column::Name.like(sea_orm::sea_query::LikeExpr::new(pattern).escape('\\')));
    }
    query
}

/// `text` matched literally by `LIKE … ESCAPE '\'`.
fn escape_like(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

/// The column a list is sorted by before its tie-break on the id; `None` for the submission
/// order, which is the ids' own. Compared byte by byte on both stores (PostgreSQL's
/// `COLLATE "C"`; SQLite's default), so a list has one order whichever store holds it (a
/// locale's collation would put `a1` before `a-2`); the names are lowercase ASCII.
fn sort_column(sort: JobSort, backend: DbBackend) -> Option<&'static str> {
    let postgres = backend == DbBackend::Postgres;
    match sort.field {
        JobSortField::SubmittedAt => None,
        JobSortField::Name if postgres => Some("name COLLATE \"C\""),
        JobSortField::Name => Some("name"),
        JobSortField::Phase if postgres => Some("phase COLLATE \"C\""),
        JobSortField::Phase => Some("phase"),
        JobSortField::Queue if postgres => Some("queue COLLATE \"C\""),
        JobSortField::Queue => Some("queue"),
        JobSortField::Owner if postgres => Some("owner_name COLLATE \"C\""),
        JobSortField::Owner => Some("owner_name"),
    }
}

/// The terms a list is ordered by: its sort column, then the id, both in its direction.
fn order_terms(sort: JobSort, backend: DbBackend) -> impl Iterator<Item = &'static str> {
    sort_column(sort, backend).into_iter().chain(["id"])
}

/// [`order_terms`] as SQL, for a statement written by hand.
fn order_by(sort: JobSort, backend: DbBackend) -> String {
    let direction = if sort.descending { "DESC" } else { "ASC" };
    order_terms(sort, backend)
        .map(|term| format!("{term} {direction}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// How many jobs a filter selects.
async fn total_of(db: &impl ConnectionTrait, filter: &JobFilter) -> Result<u64, DbErr> {
    match counted_total(db, filter).await? {
        Some(total) => Ok(total),
        None => matching(filter).count(db).await,
    }
}

/// The ids of one page of the jobs a filter selects, in its order, as a subquery: in the
/// submission order from the index alone, so a deep page skips its offset over index entries instead of table rows
/// (page 50 of 100,000: half the time of a plain `OFFSET`, measured with SQLite;
/// docs/performance.md).
fn page_ids(filter: &JobFilter, backend: DbBackend, offset: u64, limit: u64) -> sea_orm::sea_query::SelectStatement {
    let mut query = matching(filter).select_only().column(job::Column::Id).into_query();
    let direction = if filter.sort.descending {
        sea_orm::Order::Desc
    } else {
        sea_orm::Order::Asc
    };
    for term in order_terms(filter.sort, backend) {
        query.order_by_expr(Expr::cust(term), direction.clone());
    }
    query.offset(offset).limit(limit);
    query
}

/// One page of jobs in the filter's order, and how many match.
pub async fn list(
    db: &impl ConnectionTrait,
    filter: &JobFilter,
    offset: u64,
    limit: u64,
) -> Result<(Vec<Job>, u64), DbErr> {
    let backend = db.get_database_backend();
    let total = total_of(db, filter).await?;
    let mut query = job::Entity::find().filter(job::Column::Id.in_subquery(page_ids(filter, backend, offset, limit)));
    let direction = if filter.sort.descending {
        sea_orm::Order::Desc
    } else {
        sea_orm::Order::Asc
    };
    for term in order_terms(filter.sort, backend) {
        query = query.order_by(Expr::cust(term), direction.clone());
    }
    let rows = query.all(db).await?;
    let jobs = rows.iter().map(to_api).collect::<Result<Vec<_>, _>>()?;
    Ok((jobs, total))
}

/// Gives each waiting job of `jobs` (a page of [`list`]) its standing: its position and
/// estimate from the forecast `board` (the order the prequeue follows) where it covers the job,
/// else its position counted in submission order; its stored reasons. One request for a
/// terminal's whole table; the caller reads the board only when the page has a waiting job.
pub async fn attach_standings(
    db: &impl ConnectionTrait,
    jobs: &mut [Job],
    board: Option<&crate::forecasts::Board>,
) -> Result<(), DbErr> {
    let waiting: Vec<i64> = jobs
        .iter()
        .filter(|j| j.phase == JobPhase::Prequeue)
        .map(|j| j.id)
        .collect();
    if waiting.is_empty() {
        return Ok(());
    }
    let rows: std::collections::HashMap<i64, job::Model> = job::Entity::find()
        .filter(job::Column::Id.is_in(waiting))
        .all(db)
        .await?
        .into_iter()
        .map(|row| (row.id, row))
        .collect();
    for job in jobs.iter_mut() {
        let Some(row) = rows.get(&job.id).filter(|r| r.phase == JobPhase::Prequeue.as_str()) else {
            continue;
        };
        let forecast = board.and_then(|b| b.jobs.get(&job.id));
        job.prequeue = Some(PrequeueStanding {
            position: match forecast {
                Some(entry) => entry.rank as u64 + 1,
                None => position(db, row).await?,
            },
            reasons: stored_reasons(row),
            estimated_start_at: forecast.and_then(|e| e.estimated_start_at),
            basis: forecast.map(|e| e.basis),
        });
    }
    Ok(())
}

/// A job row as the API's [`Job`] in JSON, written by SQLite itself: each `(field, expression)`
/// gives one field of the object. Stored JSON columns go through as they are; times, stored as
/// RFC 3339 with a `+00:00` offset, end in `Z` as the API writes them; empty text stands for an
/// empty list, and a mount is shown as the choice it was made from (`VolumeChoice`). Kept equal
/// to [`to_api`] by a test that reads the same jobs both ways.
pub const JOB_JSON_FIELDS: &[(&str, &str)] = &[
    ("id", "id"),
    ("name", "name"),
    ("kind", "kind"),
    ("queue", "queue"),
    ("owner", "owner_name"),
    ("scheduleType", "schedule_type"),
    ("preemptionPolicy", "preemption_policy"),
    ("waitingToleranceSeconds", "waiting_tolerance_seconds"),
    ("phase", "phase"),
    ("tasks", "json(tasks)"),
    ("resources", "json(resources)"),
    ("nodes", "json(nodes)"),
    ("submittedAt", "replace(replace(submitted_at, ' ', 'T'), '+00:00', 'Z')"),
    ("activatedAt", "replace(replace(activated_at, ' ', 'T'), '+00:00', 'Z')"),
    ("startedAt", "replace(replace(started_at, ' ', 'T'), '+00:00', 'Z')"),
    ("finishedAt", "replace(replace(finished_at, ' ', 'T'), '+00:00', 'Z')"),
    ("lockedUntil", "replace(replace(locked_until, ' ', 'T'), '+00:00', 'Z')"),
    (
        "waitingSince",
        "replace(replace(waiting_since, ' ', 'T'), '+00:00', 'Z')",
    ),
    (
        "tolerations",
        "json(CASE WHEN tolerations = '' THEN '[]' ELSE tolerations END)",
    ),
    (
        "volumes",
        "json((SELECT json_group_array(json_object('name', v.value ->> 'name', 'mountPath', \
         v.value ->> 'mountPath', 'readOnly', v.value -> 'readOnly', 'description', '')) \
         FROM json_each(CASE WHEN volumes = '' THEN '[]' ELSE volumes END) AS v))",
    ),
    ("failure", "json(failure)"),
    ("maxRuntimeSeconds", "max_runtime_seconds"),
    ("requeue", "json(CASE WHEN requeue THEN 'true' ELSE 'false' END)"),
    ("requeues", "requeues"),
    ("priority", "priority"),
    ("borrow", "CASE WHEN borrow_never THEN 'never' ELSE 'ifIdle' END"),
    ("borrowing", "json(CASE WHEN borrowing THEN 'true' ELSE 'false' END)"),
];

/// SQLite: one page of jobs in the filter's order, as the API's JSON (`Page<Job>`), written by SQLite
/// in one statement ([`JOB_JSON_FIELDS`]) with its total, instead of read into rows, decoded
/// and written out again: that round trip, and a second hand-over to the database thread for
/// the count, were most of a list request's time (issue 25; docs/performance.md).
/// Page `page` (1-based) of `page_size`. `None` on PostgreSQL: [`list`] there.
pub async fn list_json(
    db: &impl ConnectionTrait,
    filter: &JobFilter,
    page: u64,
    page_size: u64,
) -> Result<Option<String>, DbErr> {
    if db.get_database_backend() != DbBackend::Sqlite {
        return Ok(None);
    }
    let (total_sql, mut values) = total_statement(filter);
    let offset = page.saturating_sub(1).saturating_mul(page_size);
    let ids = DbBackend::Sqlite.build(&page_ids(filter, DbBackend::Sqlite, offset, page_size));
    values.extend(ids.values.map(|v| v.0).unwrap_or_default());
    let object = JOB_JSON_FIELDS
        .iter()
        .map(|(field, expression)| format!("'{field}', {expression}"))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!(
        "SELECT ({total_sql}) AS total, (SELECT json_group_array(json_object({object}) ORDER BY {}) \
         FROM jobs WHERE id IN ({})) AS items",
        order_by(filter.sort, DbBackend::Sqlite),
        ids.sql
    );
    let row = ItemsAndTotal::find_by_statement(Statement::from_sql_and_values(DbBackend::Sqlite, sql, values))
        .one(db)
        .await?;
    let (items, total) = row.map_or_else(
        || ("[]".to_owned(), 0),
        |row| (row.items, row.total.unwrap_or(0).max(0)),
    );
    Ok(Some(format!(
        "{{\"items\":{items},\"total\":{total},\"page\":{page},\"pageSize\":{page_size}}}"
    )))
}

/// SQLite: the statement that counts the jobs a filter selects, to be run as a subquery — from
/// the kept counts when it can ([`counts_statement`]), else over the rows.
fn total_statement(filter: &JobFilter) -> (String, Vec<sea_orm::Value>) {
    if let Some(counted) = counts_statement(filter, DbBackend::Sqlite) {
        return counted;
    }
    let count = DbBackend::Sqlite.build(
        &matching(filter)
            .select_only()
            .expr(sea_orm::sea_query::Expr::cust("COUNT(*)"))
            .into_query(),
    );
    (count.sql, count.values.map(|v| v.0).unwrap_or_default())
}

#[derive(FromQueryResult)]
struct ItemsAndTotal {
    items: String,
    total: Option<i64>,
}

#[derive(FromQueryResult)]
struct Total {
    total: Option<i64>,
}

/// How many jobs match a filter of owner and phases only, from the counts the triggers of
/// migrations 23 (SQLite) and 24 (PostgreSQL) keep per owner and phase — a few rows instead of
/// every job the owner ever had. `None` when the filter names more: count the rows.
async fn counted_total(db: &impl ConnectionTrait, filter: &JobFilter) -> Result<Option<u64>, DbErr> {
    let backend = db.get_database_backend();
    let Some((sql, values)) = counts_statement(filter, backend) else {
        return Ok(None);
    };
    let row = Total::find_by_statement(Statement::from_sql_and_values(backend, sql, values))
        .one(db)
        .await?;
    Ok(Some(row.and_then(|r| r.total).unwrap_or(0).max(0) as u64))
}

/// The statement [`counted_total`] runs: `None` when the filter names more than owner and
/// phases.
fn counts_statement(filter: &JobFilter, backend: DbBackend) -> Option<(String, Vec<sea_orm::Value>)> {
    let plain = filter.users.is_empty()
        && filter.name_contains.is_none()
        && filter.schedule_types.is_empty()
        && filter.kinds.is_empty()
        && filter.queues.is_empty();
    if !plain {
        return None;
    }
    use sea_orm::sea_query::{Alias, Expr, ExprTrait, Query};
    // A sum of sums: PostgreSQL keeps several `+1`/`-1` rows a pair (migration 24).
    let mut query = Query::select();
    query
        .expr_as(Expr::cust("CAST(sum(n) AS BIGINT)"), Alias::new("total"))
        .from(Alias::new("job_counts"));
    if let Some(owner) = filter.owner {
        query.and_where(Expr::col(Alias::new("owner_id")).eq(owner));
    }
    if !filter.phases.is_empty() {
        query.and_where(Expr::col(Alias::new("phase")).is_in(filter.phases.iter().map(|p| p.as_str())));
    }
    let built = backend.build(&query);
    Some((built.sql, built.values.map(|v| v.0).unwrap_or_default()))
}

/// The job `id` if `actor` may see it: its owner or an admin. Anyone else gets `NotFound`, as
/// if it did not exist.
pub async fn visible(db: &impl ConnectionTrait, actor: &users::entity::Model, id: i64) -> Result<job::Model, JobError> {
    let row = job::Entity::find_by_id(id)
        .one(db)
        .await?
        .ok_or(JobError::NotFound(id))?;
    let admin = users::role_of(actor) == anteroom_shared::api::Role::Admin;
    if row.owner_id != actor.id && !admin {
        return Err(JobError::NotFound(id));
    }
    Ok(row)
}

/// 1-based position of a prequeued job among the prequeued jobs of its queue, in
/// (submittedAt, id) order.
pub async fn position(db: &impl ConnectionTrait, row: &job::Model) -> Result<u64, DbErr> {
    let before = job::Entity::find()
        .filter(job::Column::Queue.eq(&row.queue))
        .filter(job::Column::Phase.eq(JobPhase::Prequeue.as_str()))
        .filter(
            Condition::any().add(job::Column::SubmittedAt.lt(row.submitted_at)).add(
                Condition::all()
                    .add(job::Column::SubmittedAt.eq(row.submitted_at))
                    .add(job::Column::Id.lt(row.id)),
            ),
        )
        .count(db)
        .await?;
    Ok(before + 1)
}

fn stored_reasons(row: &job::Model) -> Vec<WaitReason> {
    row.wait_reasons
        .as_deref()
        .and_then(|r| serde_json::from_str(r).ok())
        .unwrap_or_default()
}

/// `GET /api/v1/jobs/{id}`: the job, its timeline and, while prequeued, where it stands.
///
/// Its position and start estimate come from the watcher's forecast `board` when it covers the
/// job (the order the prequeue follows, fair share included); otherwise the position is
/// counted in (submittedAt, id) order and the estimate is absent.
pub async fn detail(
    db: &impl ConnectionTrait,
    actor: &users::entity::Model,
    id: i64,
    board: Option<&crate::forecasts::Board>,
) -> Result<JobDetail, JobError> {
    let row = visible(db, actor, id).await?;
    let events: Vec<JobEventItem> = events::of_job(db, id, events::Audience::of(actor)).await?;
    let prequeue = if phase_of(&row)? == JobPhase::Prequeue {
        let forecast = board.and_then(|b| b.jobs.get(&id));
        Some(PrequeueStanding {
            position: match forecast {
                Some(entry) => entry.rank as u64 + 1,
                None => position(db, &row).await?,
            },
            reasons: stored_reasons(&row),
            estimated_start_at: forecast.and_then(|e| e.estimated_start_at),
            basis: forecast.map(|e| e.basis),
        })
    } else {
        None
    };
    Ok(JobDetail {
        job: to_api(&row)?,
        events,
        prequeue,
    })
}

/// `GET /api/v1/admin/prequeue`: every prequeued job in (submittedAt, id) order with its
/// position in its queue and its reasons, one page at a time.
pub async fn prequeued(db: &impl ConnectionTrait, offset: u64, limit: u64) -> Result<(Vec<PrequeuedJob>, u64), DbErr> {
    #[derive(FromQueryResult)]
    struct Ranked {
        id: i64,
        position: i64,
    }
    let total = job::Entity::find()
        .filter(job::Column::Phase.eq(JobPhase::Prequeue.as_str()))
        .count(db)
        .await?;
    // Window functions: SQLite ≥ 3.25 and PostgreSQL both have ROW_NUMBER; the bounds are
    // validated integers, the phase a constant.
    let sql = format!(
        "SELECT id, position FROM (SELECT id, submitted_at, ROW_NUMBER() OVER (PARTITION BY queue ORDER BY submitted_at, id) AS position FROM jobs WHERE phase = 'Prequeue') ranked ORDER BY submitted_at, id LIMIT {limit} OFFSET {offset}"
    );
    let ranked = Ranked::find_by_statement(Statement::from_string(db.get_database_backend(), sql))
        .all(db)
        .await?;
    let rows = job::Entity::find()
        .filter(job::Column::Id.is_in(ranked.iter().map(|r| r.id)))
        .all(db)
        .await?;
    let mut out = Vec::with_capacity(ranked.len());
    for r in ranked {
        // A job activated between the two queries is left out of this page.
        if let Some(row) = rows.iter().find(|row| row.id == r.id) {
            out.push(PrequeuedJob {
                job: to_api(row)?,
                position: u64::try_from(r.position).unwrap_or(0),
                reasons: stored_reasons(row),
            });
        }
    }
    Ok((out, total))
}
