//! `GET /api/v1/jobs/events/stream`: job events as Server-Sent Events, read from the store so
//! it works across replicas; `id:` is the event id, and a client that reconnects with
//! `Last-Event-ID` gets everything after it.
//!
//! Event ids come from the database in insert order, but on PostgreSQL two transactions may
//! commit out of id order (id 7 visible before id 6). So the stream does not trust a single
//! cursor: it keeps re-reading the last few seconds of ids above a *floor* and sends what it has
//! not sent yet; the floor only passes events older than `SETTLE` (5 s). A commit delayed longer
//! than that could be missed — transactions that write events are short (milliseconds).

use std::collections::{BTreeSet, VecDeque};
use std::convert::Infallible;
use std::time::Duration;

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
use crate::state::AppState;
use crate::users;

/// How long after its write an event may still appear below newer ones.
const SETTLE: chrono::TimeDelta = chrono::TimeDelta::seconds(5);
/// How often the store is read when no local write woke the stream (writes of other replicas).
const POLL: Duration = Duration::from_secs(1);
/// Events read per query.
const BATCH: u64 = 500;
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
        (status = 422, description = "`validation_failed`: an unknown user or a bad Last-Event-ID", body = ErrorBody),
    )
)]
pub async fn job_events_stream(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<StreamQuery>,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    let admin = users::role_of(&user) == anteroom_shared::api::Role::Admin;
    let owner = match (&query.user, admin) {
        (_, false) => Some(user.id),
        (None, true) => None,
        (Some(name), true) => Some(
            users::entity::Entity::find()
                .filter(users::entity::Column::Username.eq(name))
                .one(&state.db_read)
                .await?
                .ok_or_else(|| ApiError::validation(vec![FieldError::new("user", "no such user")]))?
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
    let floor = match header.or(query.last_event_id) {
        Some(id) => id.max(0),
        None => events::latest_id(&state.db_read).await?,
    };
    let feed = Feed {
        db: state.db_read.clone(),
        signals: state.signals.clone(),
        filter: FeedFilter { owner, job: query.job },
        floor,
        sent: BTreeSet::new(),
        ready: VecDeque::new(),
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
    /// Ids above the floor already sent.
    sent: BTreeSet<i64>,
    ready: VecDeque<Event>,
}

impl Feed {
    /// The next event to send; `None` when the server shuts down.
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(event);
            }
            let signals = self.signals.clone();
            let written = signals.events().notified();
            tokio::pin!(written);
            // Registered before reading: a commit after the read still wakes us.
            written.as_mut().enable();
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

    /// Reads what is above the floor, queues what was not sent, and raises the floor over
    /// events old enough that nothing can commit below them any more.
    async fn read(&mut self) -> Result<(), sea_orm::DbErr> {
        let rows = events::after(&self.db, self.floor, self.filter, BATCH).await?;
        let settled = Utc::now() - SETTLE;
        let mut still_settling = false;
        for row in &rows {
            if self.sent.insert(row.id) {
                let item = events::to_api(row);
                let data = serde_json::to_string(&item).unwrap_or_default();
                self.ready
                    .push_back(Event::default().id(row.id.to_string()).event("job").data(data));
            }
            if row.created_at < settled && !still_settling {
                self.floor = row.id;
            } else {
                still_settling = true;
            }
        }
        // A full batch of unsettled events: move on anyway rather than re-read it for ever.
        if rows.len() as u64 == BATCH
            && self.sent.len() as u64 >= BATCH
            && let Some(&last) = self.sent.iter().next_back()
        {
            self.floor = self.floor.max(last);
        }
        let floor = self.floor;
        self.sent.retain(|&id| id > floor);
        Ok(())
    }
}
