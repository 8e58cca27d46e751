//! `GET /api/v1/jobs/events/stream`: job events as Server-Sent Events, read from the store so
//! it works across replicas; `id:` is the event id, and a client that reconnects with
//! `Last-Event-ID` gets everything after it.
//!
//! On SQLite the one writer commits events in id order, so a cursor is exact. On PostgreSQL two
//! transactions may commit out of id order (id 7 visible before id 6), so the stream keeps
//! re-reading the ids of the last few seconds above a *floor* and sends what it has not sent
//! yet; the floor only passes events written more than 5 s ago, and a client resuming there
//! gets the unsettled events again (clients dedupe by id). An event whose transaction took
//! longer than 5 s to commit after writing it could be missed (transactions that write events
//! last milliseconds, and take their time after they begin); replicas' clocks must agree to
//! well within 5 s.
//!
//! Each stream reads at most every 200 ms however many writes wake it, and checks every 5 s
//! that its caller may still read (a logout, a role change or a deletion ends it).

use std::collections::{BTreeMap, VecDeque};
use std::convert::Infallible;
use std::time::{Duration, Instant};

use anteroom_shared::api::ErrorBody;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use chrono::Utc;
use futures::Stream;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter};
use serde::Deserialize;

use super::events::{self, FeedFilter};
use crate::auth::AuthUser;
use crate::error::{ApiError, ApiResult, FieldError};
use crate::extract::ApiQuery;
use crate::signals::Signals;
use crate::slots::Slot;
use crate::state::AppState;
use crate::users;

/// How long after its write an event may still appear below newer ones (PostgreSQL).
const SETTLE: chrono::TimeDelta = chrono::TimeDelta::seconds(5);
/// The least time between two reads of one stream.
const DEBOUNCE: Duration = Duration::from_millis(200);
/// How often a stream checks that its caller may still read it.
const REAUTHORIZE: Duration = Duration::from_secs(5);
/// How often the store is read when no local write woke the stream (writes of other replicas).
const POLL: Duration = Duration::from_secs(1);
/// Events read per query.
const BATCH: u64 = 500;
/// Pages of unsettled ids re-read at most per read (PostgreSQL).
const LATE_PAGES: usize = 20;
/// Seconds between heartbeat comments.
pub const HEARTBEAT_SECONDS: u64 = 15;

/// Stream filters.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct StreamQuery {
    /// Admins: only this user's jobs (by username). Users always get only their own.
    user: Option<String>,
    /// Only this job's events.
    job: Option<i64>,
    /// Resume after this event id (what `Last-Event-ID` does on a reconnect; for clients that
    /// cannot set the header).
    last_event_id: Option<i64>,
}

/// One of `user`'s stream slots (event streams and followed logs share them), or 429
/// `too_many_streams`.
pub fn stream_slot(state: &AppState, user: &users::entity::Model) -> Result<Slot, ApiError> {
    let max = state.config.http_limits.max_streams_per_user;
    state.stream_slots.try_take(user.id, max).ok_or_else(|| {
        let mut e = ApiError::new(
            axum::http::StatusCode::TOO_MANY_REQUESTS,
            "too_many_streams",
            format!("you already have {max} streams open (event streams and followed logs); close one first"),
        )
        .with_details(serde_json::json!({ "limit": max }));
        e.retry_after_seconds = Some(5);
        e
    })
}

/// The caller's job events as they are written (admins: all, or one user's); resumable with
/// `Last-Event-ID`; a `: heartbeat` comment every 15 s.
#[utoipa::path(
    get,
    path = "/api/v1/jobs/events/stream",
    tag = "jobs",
    security(("bearer" = [])),
    params(StreamQuery, ("Last-Event-ID" = Option<i64>, Header, description = "Resume after this event id")),
    responses(
        (status = 200, description = "`text/event-stream` of `job` events whose data is a JobEventItem", content_type = "text/event-stream", body = String),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 404, description = "`user_not_found`: the `user` filter names no user", body = ErrorBody),
        (status = 422, description = "`validation_failed`: a bad Last-Event-ID", body = ErrorBody),
        (status = 429, description = "`too_many_streams`: the caller has as many streams open as the server allows (max_streams_per_user)", body = ErrorBody),
    )
)]
pub async fn job_events_stream(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<StreamQuery>,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    let slot = stream_slot(&state, &user)?;
    let admin = users::role_of(&user) == anteroom_shared::api::Role::Admin;
    let owner = match (&query.user, admin) {
        (_, false) => Some(user.id),
        (None, true) => None,
        (Some(name), true) => Some(
            users::entity::Entity::find()
                .filter(users::entity::Column::Username.eq(name))
                .one(&state.db_read)
                .await?
                .ok_or_else(|| {
                    ApiError::not_found("user_not_found", format!("no user named {name:?}"))
                        .with_details(serde_json::json!({ "field": "user" }))
                })?
                .id,
        ),
    };
    let header = match headers.get("last-event-id") {
        Some(v) => Some(
            v.to_str()
                .ok()
                .and_then(|s| s.trim().parse::<i64>().ok())
                .ok_or_else(|| ApiError::validation(vec![FieldError::new("Last-Event-ID", "must be an event id")]))?,
        ),
        None => None,
    };
    let settle = match state.db_read.get_database_backend() {
        sea_orm::DbBackend::Postgres => SETTLE,
        _ => chrono::TimeDelta::zero(),
    };
    let floor = match header.or(query.last_event_id) {
        // PostgreSQL: an event below the client's last one may have committed after it was
        // sent; resume from before every unsettled event (the client dedupes by id).
        Some(id) if !settle.is_zero() => {
            let unsettled = events::first_since(&state.db_read, Utc::now() - settle).await?;
            id.max(0).min(unsettled.map_or(i64::MAX, |first| first - 1))
        }
        Some(id) => id.max(0),
        None => events::latest_id(&state.db_read).await?,
    };
    let feed = Feed {
        db: state.db_read.clone(),
        signals: state.signals.clone(),
        filter: FeedFilter { owner, job: query.job },
        floor,
        settle,
        sent: BTreeMap::new(),
        ready: VecDeque::new(),
        caller: (user.id, user.token_version, user.role.clone()),
        audience: events::Audience::of(&user),
        authorized_at: Instant::now(),
        read_at: None,
        _slot: slot,
    };
    let stream = futures::stream::unfold(feed, |mut feed| async move {
        let event = feed.next().await?;
        Some((Ok(event), feed))
    });
    Ok(Sse::new(stream).keep_alive(
        KeepAlive::new()
            .interval(Duration::from_secs(HEARTBEAT_SECONDS))
            .text("heartbeat"),
    ))
}

/// One client's position in the event feed.
struct Feed {
    db: DatabaseConnection,
    signals: Signals,
    filter: FeedFilter,
    /// Every event at or below it was sent or filtered out.
    floor: i64,
    /// How long an event may stay above the floor (0 on SQLite: ids commit in order).
    settle: chrono::TimeDelta,
    /// Ids above the floor already sent, with when they were written.
    sent: BTreeMap<i64, chrono::DateTime<Utc>>,
    ready: VecDeque<Event>,
    /// Who opened the stream: id, token version and role at the time.
    caller: (i64, i64, String),
    /// What the caller may read of an event (fixed: a role change ends the stream).
    audience: events::Audience,
    authorized_at: Instant,
    read_at: Option<Instant>,
    /// Held while the stream is open (dropped with it).
    _slot: Slot,
}

impl Feed {
    /// The next event to send; `None` when the server shuts down or the caller's session ended.
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(event);
            }
            if self.authorized_at.elapsed() >= REAUTHORIZE {
                if !self.still_authorized().await {
                    return None;
                }
                self.authorized_at = Instant::now();
            }
            if let Some(at) = self.read_at {
                tokio::time::sleep(DEBOUNCE.saturating_sub(at.elapsed())).await;
            }
            let signals = self.signals.clone();
            let written = signals.events().notified();
            tokio::pin!(written);
            // Registered before reading: a commit after the read still wakes us.
            written.as_mut().enable();
            self.read_at = Some(Instant::now());
            if let Err(e) = self.read().await {
                tracing::warn!(error = %e, "reading job events for a stream failed; retrying");
            }
            if !self.ready.is_empty() {
                continue;
            }
            tokio::select! {
                () = &mut written => {}
                () = tokio::time::sleep(POLL) => {}
                () = signals.closed() => return None,
            }
        }
    }

    /// The caller still exists with the same token version and role (a database error keeps
    /// the stream: it is checked again later).
    async fn still_authorized(&self) -> bool {
        let (id, version, role) = &self.caller;
        match users::find_by_id(&self.db, *id).await {
            Ok(Some(user)) => user.token_version == *version && &user.role == role,
            Ok(None) => false,
            Err(_) => true,
        }
    }

    /// The owner (`owner_name`, kept when an account is deleted) and current phase of the jobs
    /// of `rows`, in one query: what lets a client's list tell whether an event touches it.
    async fn job_facts(
        &self,
        rows: &[super::entity::event::Model],
    ) -> Result<std::collections::HashMap<i64, (String, String)>, sea_orm::DbErr> {
        use sea_orm::QuerySelect;
        let jobs: std::collections::BTreeSet<i64> = rows.iter().map(|r| r.job_id).collect();
        if jobs.is_empty() {
            return Ok(Default::default());
        }
        let found: Vec<(i64, String, String)> = super::entity::job::Entity::find()
            .select_only()
            .column(super::entity::job::Column::Id)
            .column(super::entity::job::Column::OwnerName)
            .column(super::entity::job::Column::Phase)
            .filter(super::entity::job::Column::Id.is_in(jobs))
            .into_tuple()
            .all(&self.db)
            .await?;
        Ok(found
            .into_iter()
            .map(|(id, owner, phase)| (id, (owner, phase)))
            .collect())
    }

    /// Reads what is above the floor, queues what was not sent, and raises the floor over
    /// events old enough that nothing can commit below them any more.
    async fn read(&mut self) -> Result<(), sea_orm::DbErr> {
        let newest = self.sent.keys().next_back().copied().unwrap_or(self.floor);
        // New events first, so a burst never stalls the stream behind re-reads.
        let mut rows = events::after(&self.db, newest, self.filter, BATCH).await?;
        if newest > self.floor {
            // PostgreSQL only: ids below the newest sent that committed late, page by page up to
            // the newest (a busy stream has more than one page of unsettled ids).
            let mut cursor = self.floor;
            for _ in 0..LATE_PAGES {
                let page = events::after(&self.db, cursor, self.filter, BATCH).await?;
                let full = page.len() as u64 == BATCH;
                cursor = page.last().map_or(newest, |r| r.id);
                rows.extend(
                    page.into_iter()
                        .filter(|r| r.id < newest && !self.sent.contains_key(&r.id)),
                );
                if !full || cursor >= newest {
                    break;
                }
            }
            rows.sort_by_key(|r| r.id);
        }
        let facts = self.job_facts(&rows).await?;
        for row in &rows {
            if self.sent.insert(row.id, row.created_at).is_none() {
                let mut item = events::to_api(row, self.audience);
                if let Some((owner, phase)) = facts.get(&row.job_id) {
                    item.owner = Some(owner.clone());
                    item.phase = phase.parse().ok();
                }
                let data = serde_json::to_string(&item).unwrap_or_default();
                self.ready
                    .push_back(Event::default().id(row.id.to_string()).event("job").data(data));
            }
        }
        let settled = Utc::now() - self.settle;
        // The floor passes the sent events, in id order, while they are settled.
        while let Some((&id, &at)) = self.sent.first_key_value() {
            if at > settled && !self.settle.is_zero() {
                break;
            }
            self.floor = id;
            self.sent.remove(&id);
        }
        Ok(())
    }
}
