//! Notifications (issue 27): a user's webhook subscriptions, what was sent to them, and the
//! admins' list of destinations webhooks may point at.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// What a subscription is told about, for each of its owner's jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum NotifyOn {
    /// Its pods started running.
    Started,
    /// It was preempted to make room for a job that waited past its tolerance.
    Preempted,
    /// It failed.
    Failed,
    /// It ended otherwise (completed, or aborted in the cluster).
    Finished,
    /// It has waited in the prequeue longer than the subscription's `waitedSeconds` (once a
    /// job).
    Waited,
}

impl NotifyOn {
    /// Every kind.
    pub const ALL: [NotifyOn; 5] = [
        NotifyOn::Started,
        NotifyOn::Preempted,
        NotifyOn::Failed,
        NotifyOn::Finished,
        NotifyOn::Waited,
    ];

    /// The word stored and sent.
    pub fn as_str(self) -> &'static str {
        match self {
            NotifyOn::Started => "started",
            NotifyOn::Preempted => "preempted",
            NotifyOn::Failed => "failed",
            NotifyOn::Finished => "finished",
            NotifyOn::Waited => "waited",
        }
    }
}

/// `POST /api/v1/webhooks` body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebhookBody {
    /// An `http` or `https` URL whose host the admins allow (at most 2,048 characters).
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 2048))]
    pub url: String,
    /// What to be told about (at least one).
    pub events: Vec<NotifyOn>,
    /// With `waited`: after how long in the prequeue (60 – 31,536,000 seconds).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(minimum = 60, maximum = 31_536_000))]
    pub waited_seconds: Option<i64>,
}

/// A subscription as its owner sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Webhook {
    /// Id.
    pub id: i64,
    /// Where deliveries go.
    pub url: String,
    /// What it is told about.
    pub events: Vec<NotifyOn>,
    /// The wait after which `waited` is sent.
    pub waited_seconds: Option<i64>,
    /// When it was made.
    pub created_at: DateTime<Utc>,
}

/// `POST /api/v1/webhooks` answer: the subscription and, this once, its signing secret.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CreatedWebhook {
    /// The subscription.
    pub webhook: Webhook,
    /// The key of the HMAC-SHA256 in `X-Anteroom-Signature`; shown only now.
    pub secret: String,
}

/// One delivery (or a try at one) to a subscription.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    /// Id; also sent as `X-Anteroom-Delivery`, so a receiver can drop a repeat.
    pub id: i64,
    /// The subscription.
    pub webhook_id: i64,
    /// The job.
    pub job_id: i64,
    /// What happened.
    pub event: NotifyOn,
    /// When it happened.
    pub created_at: DateTime<Utc>,
    /// Tries so far.
    pub attempts: i32,
    /// When the receiver answered 2xx; `null` while not yet.
    pub delivered_at: Option<DateTime<Utc>>,
    /// The next try after a failed one; `null` when not tried yet, delivered or given up.
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// Given up after too many failed tries (or the destination is no longer allowed).
    pub given_up: bool,
    /// The last answer's status, if any.
    pub last_status: Option<i32>,
    /// Why the last try failed.
    pub last_error: Option<String>,
}

/// What an entry of the admins' list of destinations is, exactly as the server checks it: an
/// optional `*.`, DNS labels (1–63 of `A-Z a-z 0-9 -`, not starting or ending with `-`) joined
/// by dots, an optional `:port` (1–65535, no leading zero); at most
/// [`DESTINATION_MAX_LENGTH`] characters. A contract tester generates from it, so the server
/// accepts neither more nor less (a test checks).
pub const DESTINATION_PATTERN: &str = r"^(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?$";
/// The longest entry of the admins' list.
pub const DESTINATION_MAX_LENGTH: usize = 253;
/// The most entries in the admins' list.
pub const MAX_DESTINATIONS: usize = 100;

/// The admins' list of destinations (`GET`/`PUT /api/v1/admin/webhook-destinations`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebhookDestinations {
    /// Hosts webhooks may point at: `hooks.example.org`, `*.example.org` (any subdomain),
    /// optionally with `:port`; at most 100 of at most 253 characters. Empty: none (webhooks
    /// off).
    #[cfg_attr(feature = "openapi", schema(schema_with = destination_hosts_schema))]
    pub hosts: Vec<String>,
}

#[cfg(feature = "openapi")]
fn destination_hosts_schema() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
    ArrayBuilder::new()
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .pattern(Some(DESTINATION_PATTERN))
                .min_length(Some(1))
                .max_length(Some(DESTINATION_MAX_LENGTH)),
        )
        .max_items(Some(MAX_DESTINATIONS))
        .description(Some(
            "Hosts webhooks may point at: `hooks.example.org`, `*.example.org` (any subdomain), \
             optionally with `:port`; at most 100 of at most 253 characters. Empty: none (webhooks off).",
        ))
        .build()
}

/// What a receiver gets, as JSON, signed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct WebhookPayload {
    /// The delivery's id (a repeat carries the same).
    pub delivery_id: i64,
    /// What happened.
    pub event: NotifyOn,
    /// When.
    pub at: DateTime<Utc>,
    /// The job.
    pub job_id: i64,
    /// Its name.
    pub job_name: String,
    /// Its queue.
    pub queue: String,
    /// Its phase when this was sent.
    pub phase: String,
}
