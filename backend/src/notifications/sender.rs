//! The sender: posts due deliveries, oldest first, in order per (subscription, job), and
//! records each outcome. Runs while this replica holds the watcher's lease ([`run`]); tests
//! call [`deliver_due`] themselves.
//!
//! Where a delivery may go is decided on addresses, not names: the URL's host is resolved once,
//! only the addresses a webhook may reach are kept ([`rules::may_connect`]: internal ranges only
//! when listed exactly; none left, the delivery is given up), and the connection goes to those —
//! there is no second lookup a name could rebind between. A pass is fair between
//! subscriptions: each gets at most [`PER_SUBSCRIPTION`] tries, stops at its first failure, and
//! a subscription whose receiver is backing off is not tried at all, so one user's dead
//! receiver delays nobody else's.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;

use anteroom_shared::api::notifications::{NotifyOn, WebhookPayload};
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Alias, Expr, ExprTrait, Func, Query};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect,
};

use super::entity::{delivery, webhook};
use super::rules::{self, Destination};

/// Subscriptions served per pass, the longest waiting first.
pub const SUBSCRIPTIONS_PER_PASS: u64 = 100;
/// Deliveries of one subscription tried per pass.
pub const PER_SUBSCRIPTION: u64 = 3;
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

/// Where deliveries may not go beyond the internet and the addresses admins listed: the
/// cluster's own networks (`cluster_networks`: pods, services, nodes).
#[derive(Debug, Clone, Default)]
pub struct NetworkRules {
    /// The cluster's address ranges, refused unless an admin listed the exact address.
    pub cluster_ranges: Vec<ipnet::IpNet>,
}

/// The HTTP client of one delivery to `host`: it connects only to `addrs` (checked), with a
/// short timeout, no redirects (a redirect could lead outside the admins' list), no proxy from
/// the environment.
fn client_to(host: &str, addrs: &[SocketAddr]) -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .timeout(POST_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .resolve_to_addrs(host, addrs)
        .build()
}

/// Why a delivery's destination cannot be reached now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unreachable {
    /// The name did not resolve (try again later).
    Unresolved,
    /// It resolves only to addresses no webhook may reach (give up).
    Refused,
}

/// The addresses `url` may be posted to, resolved once.
async fn checked_addresses(
    url: &reqwest::Url,
    allowed: &[Destination],
    network: &NetworkRules,
) -> Result<Vec<SocketAddr>, Unreachable> {
    let port = url.port_or_known_default().ok_or(Unreachable::Refused)?;
    let host = url.host_str().ok_or(Unreachable::Refused)?;
    let literal = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<std::net::IpAddr>();
    let resolved: Vec<SocketAddr> = match literal {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => match tokio::time::timeout(POST_TIMEOUT, tokio::net::lookup_host((host, port))).await {
            Ok(Ok(addrs)) => addrs.collect(),
            _ => return Err(Unreachable::Unresolved),
        },
    };
    if resolved.is_empty() {
        return Err(Unreachable::Unresolved);
    }
    // Only the addresses a webhook may reach are kept, and only they are connected to: a name
    // that also resolves inside (`localhost` to `::1` and `127.0.0.1`, with `127.0.0.1` listed)
    // reaches the permitted one and never the other.
    let permitted: Vec<SocketAddr> = resolved
        .into_iter()
        .filter(|addr| rules::may_connect(*addr, allowed, &network.cluster_ranges))
        .collect();
    if permitted.is_empty() {
        Err(Unreachable::Refused)
    } else {
        Ok(permitted)
    }
}

/// The admins' list as stored (entries that no longer parse are skipped).
pub async fn destinations(db: &impl ConnectionTrait) -> Result<Vec<String>, DbErr> {
    let row = super::entity::destinations::Entity::find_by_id(1).one(db).await?;
    Ok(row
        .and_then(|r| serde_json::from_str::<Vec<String>>(&r.hosts).ok())
        .unwrap_or_default())
}

/// Deliveries due at `now` whose earlier ones of the same (subscription, job) are done, of
/// subscriptions that are not backing off.
fn due(now: DateTime<Utc>) -> sea_orm::Condition {
    use delivery::Column as D;
    let backing_off = Query::select()
        .expr(Expr::val(1))
        .from_as(delivery::Entity, Alias::new("b"))
        .and_where(Expr::col((Alias::new("b"), D::WebhookId)).equals((delivery::Entity, D::WebhookId)))
        .and_where(Expr::col((Alias::new("b"), D::DeliveredAt)).is_null())
        .and_where(Expr::col((Alias::new("b"), D::GivenUp)).eq(false))
        .and_where(Expr::col((Alias::new("b"), D::Attempts)).gt(0))
        .and_where(Expr::col((Alias::new("b"), D::NextAttemptAt)).gt(now))
        .to_owned();
    sea_orm::Condition::all()
        .add(D::DeliveredAt.is_null())
        .add(D::GivenUp.eq(false))
        // A new delivery has no time set: due at once.
        .add(
            sea_orm::Condition::any()
                .add(D::NextAttemptAt.is_null())
                .add(D::NextAttemptAt.lte(now)),
        )
        // In order per (subscription, job): a delivery behind one still pending is not read at
        // all, so deliveries held behind a failing receiver never crowd out everyone else's.
        .add(Expr::cust(
            "NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.webhook_id = webhook_deliveries.webhook_id \
             AND e.job_id = webhook_deliveries.job_id AND e.id < webhook_deliveries.id \
             AND e.delivered_at IS NULL AND NOT e.given_up)",
        ))
        // A receiver that failed waits out its back-off before anything else is sent to it.
        .add(Expr::exists(backing_off).not())
}

/// One pass at `now`: of up to [`SUBSCRIPTIONS_PER_PASS`] subscriptions with something due
/// (the longest waiting first, none that is backing off), up to [`PER_SUBSCRIPTION`] due
/// deliveries each, oldest first.
pub async fn deliver_due(db: &DatabaseConnection, network: &NetworkRules, now: DateTime<Utc>) -> Result<Sent, DbErr> {
    use delivery::Column as D;
    let subscriptions: Vec<i64> = delivery::Entity::find()
        .select_only()
        .column(D::WebhookId)
        .filter(due(now))
        .group_by(D::WebhookId)
        .order_by(Func::min(Expr::col(D::Id)), sea_orm::Order::Asc)
        .limit(SUBSCRIPTIONS_PER_PASS)
        .into_tuple()
        .all(db)
        .await?;
    let mut due_now = Vec::new();
    for subscription in subscriptions {
        due_now.extend(
            delivery::Entity::find()
                .filter(D::WebhookId.eq(subscription))
                .filter(due(now))
                .order_by_asc(D::Id)
                .limit(PER_SUBSCRIPTION)
                .all(db)
                .await?,
        );
    }
    let due = due_now;
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
        network,
        now,
        allowed: &allowed,
        hooks: &hooks,
        jobs: &jobs,
    };
    let results: Vec<Result<Vec<(i64, Outcome)>, DbErr>> = futures::stream::iter(groups)
        .map(|group| {
            let context = &context;
            async move {
                let mut outcomes = Vec::with_capacity(group.len());
                for d in group {
                    let outcome = try_one(context, &d).await?;
                    outcomes.push((d.id, outcome));
                    if outcome != Outcome::Delivered {
                        // The receiver failed: the rest waits for the next pass (and its
                        // back-off), so a dead receiver costs one timeout a pass at most.
                        break;
                    }
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
    network: &'a NetworkRules,
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
    let addrs = match checked_addresses(&url, c.allowed, c.network).await {
        Ok(addrs) => addrs,
        Err(Unreachable::Refused) => {
            give_up(
                c.db,
                &delivery::Model {
                    attempts: d.attempts.saturating_add(1),
                    ..d.clone()
                },
                None,
                "its host resolves to an address the admins did not list",
            )
            .await?;
            return Ok(Outcome::GivenUp);
        }
        Err(Unreachable::Unresolved) => {
            return retry_or_give_up(c, d, None, "its host did not resolve".to_owned()).await;
        }
    };
    let http = match client_to(url.host_str().unwrap_or_default(), &addrs) {
        Ok(http) => http,
        Err(e) => return Err(DbErr::Custom(format!("an HTTP client for a delivery: {e}"))),
    };
    let outcome = http
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
    let (status, error) = match outcome {
        Ok(res) if res.status().is_success() => {
            let attempts = d.attempts.saturating_add(1);
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
    retry_or_give_up(c, d, status, error).await
}

/// Records a failed try of `d`: tried again after its back-off, or given up after the last.
async fn retry_or_give_up(
    c: &PassContext<'_>,
    d: &delivery::Model,
    status: Option<i32>,
    error: String,
) -> Result<Outcome, DbErr> {
    use delivery::Column as D;
    let attempts = d.attempts.saturating_add(1);
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
    network: NetworkRules,
) {
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
        if let Err(e) = deliver_due(&db, &network, clock.now()).await {
            tracing::warn!(error = %e, "sending webhook deliveries failed; retrying later");
        }
    }
}
