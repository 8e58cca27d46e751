//! Notifications over HTTP: a user's webhook subscriptions and what was sent to them; the
//! admins' list of destinations.

use anteroom_shared::api::ErrorBody;
use anteroom_shared::api::notifications::{
    CreatedWebhook, Delivery, NotifyOn, Webhook, WebhookBody, WebhookDestinations,
};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::Utc;
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, Set};
use serde::Deserialize;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::entity::{delivery, destinations, webhook};
use super::rules::{self, Destination, UrlProblem};
use crate::auth::AuthUser;
use crate::error::{ApiError, ApiResult, FieldError};
use crate::etag::{IfMatch, Tagged};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::field_rule::Rule;
use crate::state::AppState;

/// Most subscriptions one user keeps.
pub const MAX_WEBHOOKS_PER_USER: u64 = 20;
/// Most deliveries one answer lists.
pub const MAX_DELIVERIES: u32 = 200;

/// Routes of every user.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_webhooks, create_webhook))
        .routes(routes!(delete_webhook))
        .routes(routes!(list_deliveries))
}

/// Routes under `/api/v1/admin`.
pub fn admin_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(get_destinations, put_destinations))
}

fn to_api(row: &webhook::Model) -> Webhook {
    Webhook {
        id: row.id,
        url: row.url.clone(),
        events: serde_json::from_str(&row.events).unwrap_or_default(),
        waited_seconds: row.waited_seconds,
        created_at: row.created_at,
    }
}

/// The caller's subscriptions, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/webhooks",
    tag = "notifications",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The caller's subscriptions", body = Vec<Webhook>),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
    )
)]
async fn list_webhooks(State(state): State<AppState>, AuthUser(user): AuthUser) -> ApiResult<Json<Vec<Webhook>>> {
    let rows = webhook::Entity::find()
        .filter(webhook::Column::OwnerId.eq(user.id))
        .order_by_asc(webhook::Column::Id)
        .all(&state.db_read)
        .await?;
    Ok(Json(rows.iter().map(to_api).collect()))
}

/// Subscribes a URL to what happens to the caller's jobs; answers its signing secret once.
#[utoipa::path(
    post,
    path = "/api/v1/webhooks",
    tag = "notifications",
    security(("bearer" = [])),
    request_body = WebhookBody,
    responses(
        (status = 201, description = "Subscribed; `secret` keys the HMAC-SHA256 of `X-Anteroom-Signature` and is not shown again", body = CreatedWebhook),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 409, description = "`webhook_limit`: the caller has 20 subscriptions", body = ErrorBody),
        (status = 422, description = "`validation_failed`: a malformed URL, a host the admins do not allow (`destinationNotAllowed`), no events, or `waitedSeconds` out of range or without `waited`", body = ErrorBody),
    )
)]
async fn create_webhook(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    ApiJson(body): ApiJson<WebhookBody>,
) -> ApiResult<(StatusCode, Json<CreatedWebhook>)> {
    let allowed: Vec<Destination> = super::sender::destinations(&state.db)
        .await?
        .iter()
        .filter_map(|h| Destination::parse(h).ok())
        .collect();
    let mut fields = Vec::new();
    match rules::check_url(&body.url, &allowed) {
        Ok(_) => {}
        Err(UrlProblem::Malformed) => fields.push(FieldError::new(
            "url",
            Rule::fixed(
                "webhookUrl",
                "must be an http or https URL without credentials, at most 2,048 characters",
            ),
        )),
        Err(UrlProblem::NotAllowed) => fields.push(FieldError::new(
            "url",
            Rule::fixed(
                "destinationNotAllowed",
                "its host is not among the destinations the admins allow",
            ),
        )),
    }
    let mut events = body.events.clone();
    events.sort();
    events.dedup();
    if events.is_empty() {
        fields.push(FieldError::new(
            "events",
            Rule::fixed("webhookEvents", "name at least one event"),
        ));
    }
    match (events.contains(&NotifyOn::Waited), body.waited_seconds) {
        (true, None) => fields.push(FieldError::new(
            "waitedSeconds",
            Rule::fixed("waitedSecondsNeeded", "`waited` needs waitedSeconds"),
        )),
        (false, Some(_)) => fields.push(FieldError::new(
            "waitedSeconds",
            Rule::fixed("waitedSecondsUnused", "waitedSeconds applies only with `waited`"),
        )),
        (_, Some(s)) if !(60..=31_536_000).contains(&s) => fields.push(FieldError::new(
            "waitedSeconds",
            Rule::fixed("waitedSecondsRange", "must be 60 to 31,536,000 seconds"),
        )),
        _ => {}
    }
    if !fields.is_empty() {
        return Err(ApiError::validation(fields));
    }
    let txn = crate::store::write_transaction(&state.db).await?;
    // One user's subscriptions are counted and added one request at a time (PostgreSQL reads
    // committed rows only: two requests could both count 19).
    crate::store::lock_named(&txn, &format!("anteroom-webhooks-{}", user.id)).await?;
    let count = webhook::Entity::find()
        .filter(webhook::Column::OwnerId.eq(user.id))
        .count(&txn)
        .await?;
    if count >= MAX_WEBHOOKS_PER_USER {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "webhook_limit",
            format!("at most {MAX_WEBHOOKS_PER_USER} subscriptions per user"),
        ));
    }
    let secret = rules::new_secret();
    let row = webhook::ActiveModel {
        owner_id: Set(user.id),
        url: Set(body.url.clone()),
        secret: Set(secret.clone()),
        events: Set(serde_json::to_string(&events).expect("events serialise")),
        waited_seconds: Set(body.waited_seconds),
        created_at: Set(Utc::now()),
        ..Default::default()
    }
    .insert(&txn)
    .await?;
    txn.commit().await?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedWebhook {
            webhook: to_api(&row),
            secret,
        }),
    ))
}

/// Ends a subscription of the caller's; what it had not sent yet is dropped.
#[utoipa::path(
    delete,
    path = "/api/v1/webhooks/{id}",
    tag = "notifications",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "Subscription id")),
    responses(
        (status = 204, description = "Ended"),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 404, description = "`webhook_not_found`", body = ErrorBody),
        (status = 422, description = "`validation_failed`: the id is not a number", body = ErrorBody),
    )
)]
async fn delete_webhook(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<StatusCode> {
    let txn = crate::store::write_transaction(&state.db).await?;
    let gone = webhook::Entity::delete_many()
        .filter(webhook::Column::Id.eq(id))
        .filter(webhook::Column::OwnerId.eq(user.id))
        .exec(&txn)
        .await?;
    if gone.rows_affected == 0 {
        return Err(ApiError::not_found(
            "webhook_not_found",
            format!("no subscription {id}"),
        ));
    }
    delivery::Entity::delete_many()
        .filter(delivery::Column::WebhookId.eq(id))
        .exec(&txn)
        .await?;
    txn.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// How many deliveries to list.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct DeliveriesQuery {
    /// The latest this many (1–200, default 50).
    #[param(minimum = 1, maximum = 200)]
    limit: Option<u32>,
}

/// The latest deliveries to the caller's subscriptions, newest first: delivered, waiting for
/// a retry, or given up, with the last answer.
#[utoipa::path(
    get,
    path = "/api/v1/webhooks/deliveries",
    tag = "notifications",
    security(("bearer" = [])),
    params(DeliveriesQuery),
    responses(
        (status = 200, description = "Newest first", body = Vec<Delivery>),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 422, description = "`validation_failed`: a bad parameter", body = ErrorBody),
    )
)]
async fn list_deliveries(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    ApiQuery(query): ApiQuery<DeliveriesQuery>,
) -> ApiResult<Json<Vec<Delivery>>> {
    let limit = query.limit.unwrap_or(50);
    if !(1..=MAX_DELIVERIES).contains(&limit) {
        return Err(ApiError::validation(vec![FieldError::new(
            "limit",
            format!("must be 1–{MAX_DELIVERIES}"),
        )]));
    }
    let rows = delivery::Entity::find()
        .filter(delivery::Column::OwnerId.eq(user.id))
        .order_by_desc(delivery::Column::Id)
        .limit(u64::from(limit))
        .all(&state.db_read)
        .await?;
    Ok(Json(
        rows.into_iter()
            .filter_map(|d| {
                Some(Delivery {
                    event: NotifyOn::ALL.into_iter().find(|e| e.as_str() == d.event)?,
                    id: d.id,
                    webhook_id: d.webhook_id,
                    job_id: d.job_id,
                    created_at: d.created_at,
                    attempts: d.attempts,
                    delivered_at: d.delivered_at,
                    next_attempt_at: d.next_attempt_at,
                    given_up: d.given_up,
                    last_status: d.last_status,
                    last_error: d.last_error,
                })
            })
            .collect(),
    ))
}

/// The hosts webhooks may point at.
#[utoipa::path(
    get,
    path = "/api/v1/admin/webhook-destinations",
    tag = "notifications",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The list", body = WebhookDestinations,
            headers(("ETag" = String, description = "Its version: send it back in `If-Match` with a change"))),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
    )
)]
async fn get_destinations(State(state): State<AppState>) -> ApiResult<Tagged<WebhookDestinations>> {
    Ok(Tagged::new(WebhookDestinations {
        hosts: super::sender::destinations(&state.db_read).await?,
    }))
}

/// Replaces the hosts webhooks may point at. Deliveries to a host taken off are given up at
/// their next try.
#[utoipa::path(
    put,
    path = "/api/v1/admin/webhook-destinations",
    tag = "notifications",
    security(("bearer" = [])),
    params(("If-Match" = Option<String>, Header, description = "The `ETag` of the list the change was made on")),
    request_body = WebhookDestinations,
    responses(
        (status = 200, description = "Saved (normalised: lowercase, without repeats)", body = WebhookDestinations,
            headers(("ETag" = String, description = "Its new version"))),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
        (status = 412, description = "`precondition_failed`: changed since the `If-Match` was read; nothing stored", body = ErrorBody),
        (status = 422, description = "`validation_failed` naming each entry that is not `host`, `*.domain` or an address, optionally with `:port`, or more than 100", body = ErrorBody),
    )
)]
async fn put_destinations(
    State(state): State<AppState>,
    IfMatch(if_match): IfMatch,
    ApiJson(body): ApiJson<WebhookDestinations>,
) -> ApiResult<Tagged<WebhookDestinations>> {
    let mut fields: Vec<FieldError> = body
        .hosts
        .iter()
        .enumerate()
        .filter(|(_, h)| Destination::parse(h).is_err())
        .map(|(i, _)| {
            FieldError::new(
                format!("hosts[{i}]"),
                Rule::fixed(
                    "destinationHost",
                    "must be a host, *.domain or an address, optionally with :port",
                ),
            )
        })
        .collect();
    if body.hosts.len() > rules::MAX_DESTINATIONS {
        fields.push(FieldError::new(
            "hosts",
            Rule::fixed("destinationsTooMany", "at most 100 hosts"),
        ));
    }
    if !fields.is_empty() {
        return Err(ApiError::validation(fields));
    }
    let mut hosts: Vec<String> = body.hosts.iter().map(|h| h.to_ascii_lowercase()).collect();
    hosts.sort();
    hosts.dedup();
    // The check and the write in one locked transaction: two admins cannot both pass it.
    let txn = crate::store::write_transaction(&state.db).await?;
    crate::store::lock_named(&txn, "anteroom-webhook-destinations").await?;
    if let Some(if_match) = if_match {
        let stored = WebhookDestinations {
            hosts: super::sender::destinations(&txn).await?,
        };
        crate::etag::check(Some(&if_match), &crate::etag::of(&stored))?;
    }
    destinations::ActiveModel {
        id: Set(1),
        hosts: Set(serde_json::to_string(&hosts).expect("hosts serialise")),
    }
    .update(&txn)
    .await?;
    txn.commit().await?;
    Ok(Tagged::new(WebhookDestinations { hosts }))
}
