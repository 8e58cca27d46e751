//! The sender: posts due deliveries, oldest first, in order per (subscription, job), and
//! records each outcome. Runs while this replica holds the watcher's lease ([`run`]); tests
//! call [`deliver_due`] themselves.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;

use anteroom_shared::api::notifications::{NotifyOn, WebhookPayload};
use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect,
};

use super::entity::{delivery, webhook};
use super::rules::{self, Destination};

/// Deliveries read per pass.
const PER_PASS: u64 = 100;
/// How long one post may take.
pub const POST_TIMEOUT: Duration = Duration::from_secs(5);
/// How often the sender looks for due deliveries.
const EVERY: Duration = Duration::from_secs(1);

/// What one pass did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Sent {
    /// Delivered (2xx), by id.
    pub delivered: Vec<i64>,
    /// Failed and to be tried again.
    pub retried: Vec<i64>,
    /// Failed for the last time, or no longer allowed.
    pub given_up: Vec<i64>,
}

/// The HTTP client of deliveries: a short timeout, no redirects (a redirect could lead
/// outside the admins' list), no proxy from the environment.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(POST_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .expect("an HTTP client")
}

/// The admins' list as stored (entries that no longer parse are skipped).
pub async fn destinations(db: &impl ConnectionTrait) -> Result<Vec<String>, DbErr> {
    let row = super::entity::destinations::Entity::find_by_id(1).one(db).await?;
    Ok(row
        .and_then(|r| serde_json::from_str::<Vec<String>>(&r.hosts).ok())
        .unwrap_or_default())
}

/// One pass at `now`: every due delivery whose earlier ones of the same (subscription, job)
/// are done, oldest first, up to `PER_PASS` (100).
pub async fn deliver_due(db: &DatabaseConnection, http: &reqwest::Client, now: DateTime<Utc>) -> Result<Sent, DbErr> {
    use delivery::Column as D;
    let due = delivery::Entity::find()
        .filter(D::DeliveredAt.is_null())
        .filter(D::GivenUp.eq(false))
        // A new delivery has no time set: due at once.
        .filter(
            sea_orm::Condition::any()
                .add(D::NextAttemptAt.is_null())
                .add(D::NextAttemptAt.lte(now)),
        )
        // In order per (subscription, job): a delivery behind one still pending is not read at
        // all, so deliveries held behind a failing receiver never crowd out everyone else's.
        .filter(Expr::cust(
            "NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.webhook_id = webhook_deliveries.webhook_id \
             AND e.job_id = webhook_deliveries.job_id AND e.id < webhook_deliveries.id \
             AND e.delivered_at IS NULL AND NOT e.given_up)",
        ))
        .order_by_asc(D::Id)
        .limit(PER_PASS)
        .all(db)
        .await?;
    let mut sent = Sent::default();
    if due.is_empty() {
        return Ok(sent);
    }
    let allowed: Vec<Destination> = destinations(db)
        .await?
        .iter()
        .filter_map(|h| Destination::parse(h).ok())
        .collect();
    let hooks: HashMap<i64, webhook::Model> = webhook::Entity::find()
        .filter(webhook::Column::Id.is_in(due.iter().map(|d| d.webhook_id)))
        .all(db)
        .await?
        .into_iter()
        .map(|w| (w.id, w))
        .collect();
    let jobs = job_names(db, &due).await?;
    // One subscription's deliveries one after the other, in id order; different
    // subscriptions side by side, so a slow receiver delays only its own.
    let mut groups: Vec<Vec<delivery::Model>> = Vec::new();
    let mut group_of: HashMap<i64, usize> = HashMap::new();
    for d in due {
        let g = *group_of.entry(d.webhook_id).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[g].push(d);
    }
    let context = PassContext {
        db,
        http,
        now,
        allowed: &allowed,
        hooks: &hooks,
        jobs: &jobs,
    };
    let results: Vec<Result<Vec<(i64, Outcome)>, DbErr>> = futures::stream::iter(groups)
        .map(|group| {
            let context = &context;
            async move {
                let mut failed: HashSet<i64> = HashSet::new();
                let mut outcomes = Vec::with_capacity(group.len());
                for d in group {
                    if failed.contains(&d.job_id) {
                        continue;
                    }
                    let outcome = try_one(context, &d).await?;
                    if outcome != Outcome::Delivered {
                        // Its job's later deliveries to this subscription wait for it.
                        failed.insert(d.job_id);
                    }
                    outcomes.push((d.id, outcome));
                }
                Ok(outcomes)
            }
        })
        .buffer_unordered(CONCURRENT_SUBSCRIPTIONS)
        .collect()
        .await;
    for result in results {
        for (id, outcome) in result? {
            match outcome {
                Outcome::Delivered => sent.delivered.push(id),
                Outcome::Retried => sent.retried.push(id),
                Outcome::GivenUp => sent.given_up.push(id),
            }
        }
    }
    sent.delivered.sort_unstable();
    sent.retried.sort_unstable();
    sent.given_up.sort_unstable();
    if !sent.delivered.is_empty() || !sent.given_up.is_empty() {
        axum_prometheus::metrics::counter!("anteroom_webhook_deliveries_total", "outcome" => "delivered")
            .increment(sent.delivered.len() as u64);
        axum_prometheus::metrics::counter!("anteroom_webhook_deliveries_total", "outcome" => "given_up")
            .increment(sent.given_up.len() as u64);
    }
    Ok(sent)
}

/// Subscriptions served side by side in one pass.
const CONCURRENT_SUBSCRIPTIONS: usize = 8;

/// What one try did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Delivered,
    Retried,
    GivenUp,
}

/// What every try of a pass reads.
struct PassContext<'a> {
    db: &'a DatabaseConnection,
    http: &'a reqwest::Client,
    now: DateTime<Utc>,
    allowed: &'a [Destination],
    hooks: &'a HashMap<i64, webhook::Model>,
    jobs: &'a HashMap<i64, (String, String, String)>,
}

/// One try of delivery `d`, recorded.
async fn try_one(c: &PassContext<'_>, d: &delivery::Model) -> Result<Outcome, DbErr> {
    use delivery::Column as D;
    let Some(hook) = c.hooks.get(&d.webhook_id) else {
        // The subscription was deleted: nothing to send to.
        give_up(c.db, d, None, "the subscription was deleted").await?;
        return Ok(Outcome::GivenUp);
    };
    let url = match rules::check_url(&hook.url, c.allowed) {
        Ok(url) => url,
        Err(problem) => {
            give_up(c.db, d, None, &problem.to_string()).await?;
            return Ok(Outcome::GivenUp);
        }
    };
    let Some(event) = NotifyOn::ALL.into_iter().find(|e| e.as_str() == d.event) else {
        give_up(c.db, d, None, "unknown event").await?;
        return Ok(Outcome::GivenUp);
    };
    let (job_name, queue, phase) = c.jobs.get(&d.job_id).cloned().unwrap_or_default();
    let payload = WebhookPayload {
        delivery_id: d.id,
        event,
        at: d.created_at,
        job_id: d.job_id,
        job_name,
        queue,
        phase,
    };
    let body = serde_json::to_vec(&payload).expect("a payload serialises");
    let outcome = c
        .http
        .post(url)
        .header("content-type", "application/json")
        .header("user-agent", "Anteroom-Webhook/1")
        .header("x-anteroom-delivery", d.id.to_string())
        .header("x-anteroom-event", event.as_str())
        .header(
            "x-anteroom-signature",
            rules::signature(&hook.secret, c.now.timestamp(), &body),
        )
        .body(body)
        .send()
        .await;
    let attempts = d.attempts.saturating_add(1);
    let (status, error) = match outcome {
        Ok(res) if res.status().is_success() => {
            delivery::Entity::update_many()
                .col_expr(D::DeliveredAt, Expr::value(c.now))
                .col_expr(D::NextAttemptAt, Expr::value(Option::<DateTime<Utc>>::None))
                .col_expr(D::Attempts, Expr::value(attempts))
                .col_expr(D::LastStatus, Expr::value(i32::from(res.status().as_u16())))
                .col_expr(D::LastError, Expr::value(Option::<String>::None))
                .filter(D::Id.eq(d.id))
                .exec(c.db)
                .await?;
            return Ok(Outcome::Delivered);
        }
        Ok(res) => (
            Some(i32::from(res.status().as_u16())),
            format!("answered {}", res.status()),
        ),
        Err(e) => (None, without_url(&e)),
    };
    match rules::next_attempt(attempts, c.now) {
        Some(next) => {
            delivery::Entity::update_many()
                .col_expr(D::Attempts, Expr::value(attempts))
                .col_expr(D::NextAttemptAt, Expr::value(next))
                .col_expr(D::LastStatus, Expr::value(status))
                .col_expr(D::LastError, Expr::value(error))
                .filter(D::Id.eq(d.id))
                .exec(c.db)
                .await?;
            Ok(Outcome::Retried)
        }
        None => {
            give_up(c.db, &delivery::Model { attempts, ..d.clone() }, status, &error).await?;
            Ok(Outcome::GivenUp)
        }
    }
}

/// Name, queue and phase of the jobs of `due` (read by SQL: this module does not depend on
/// the jobs module, which writes the outbox through it).
async fn job_names(
    db: &impl ConnectionTrait,
    due: &[delivery::Model],
) -> Result<HashMap<i64, (String, String, String)>, DbErr> {
    #[derive(sea_orm::FromQueryResult)]
    struct Named {
        id: i64,
        name: String,
        queue: String,
        phase: String,
    }
    let mut ids: Vec<i64> = due.iter().map(|d| d.job_id).collect();
    ids.sort_unstable();
    ids.dedup();
    // Numbers only in the text.
    let list = ids.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
    let sql = format!("SELECT id, name, queue, phase FROM jobs WHERE id IN ({list})");
    use sea_orm::FromQueryResult;
    let rows = Named::find_by_statement(sea_orm::Statement::from_string(db.get_database_backend(), sql))
        .all(db)
        .await?;
    Ok(rows.into_iter().map(|r| (r.id, (r.name, r.queue, r.phase))).collect())
}

async fn give_up(db: &impl ConnectionTrait, d: &delivery::Model, status: Option<i32>, why: &str) -> Result<(), DbErr> {
    use delivery::Column as D;
    delivery::Entity::update_many()
        .col_expr(D::GivenUp, Expr::value(true))
        .col_expr(D::NextAttemptAt, Expr::value(Option::<DateTime<Utc>>::None))
        .col_expr(D::Attempts, Expr::value(d.attempts))
        .col_expr(D::LastStatus, Expr::value(status))
        .col_expr(D::LastError, Expr::value(why.to_owned()))
        .filter(D::Id.eq(d.id))
        .exec(db)
        .await?;
    Ok(())
}

/// A client error without the URL (it may carry a token in its query).
fn without_url(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else if e.is_redirect() {
        "redirected (not followed)"
    } else {
        "the request failed"
    };
    kind.to_owned()
}

/// Sends due deliveries while `leading` (this replica holds the watcher's lease), every
/// second, until shutdown; also writes `waited` notifications every ten passes.
pub async fn run(
    db: DatabaseConnection,
    clock: Arc<dyn crate::cluster::clock::Clock>,
    signals: crate::signals::Signals,
    leading: Arc<AtomicBool>,
) {
    let http = client();
    let mut pass: u64 = 0;
    loop {
        tokio::select! {
            () = tokio::time::sleep(EVERY) => {}
            () = signals.closed() => return,
        }
        if !leading.load(Ordering::Acquire) {
            continue;
        }
        pass += 1;
        if pass % 10 == 1
            && let Err(e) = super::enqueue_waited(&db, clock.now()).await
        {
            tracing::warn!(error = %e, "writing waited notifications failed; retrying later");
        }
        if let Err(e) = deliver_due(&db, &http, clock.now()).await {
            tracing::warn!(error = %e, "sending webhook deliveries failed; retrying later");
        }
    }
}
