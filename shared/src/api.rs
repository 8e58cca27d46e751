//! Data transfer objects of the REST API (`spec/api.md`), shared so the WASM client and the
//! server cannot disagree on a field name.

use serde::{Deserialize, Serialize};

pub mod jobs;
pub mod notebooks;
pub mod notifications;
pub mod pods;
pub mod prequeue;
pub mod queues;
pub mod templates;
pub mod tolerations;
pub mod usage;
pub mod volumes;

/// The one error shape every API error uses: `{"error": {code, message, details?}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorBody {
    /// The error itself.
    pub error: ErrorObject,
}

/// The inside of [`ErrorBody`]: a stable code for programs, a message for people.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorObject {
    /// Stable snake_case code; clients (and the UI's translations) key on it.
    pub code: String,
    /// English text for people; the UI shows a translation of `code` instead when it has one.
    pub message: String,
    /// Structured context, e.g. the offending fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
}

/// Whether a user administers Anteroom or only uses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Sets quotas, queues and the prequeue; sees every job.
    Admin,
    /// Submits and watches their own jobs.
    User,
}

/// A user as the API shows it (never the password hash).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct User {
    /// Database id.
    pub id: i64,
    /// Login name.
    pub username: String,
    /// Name shown in the UI.
    pub display_name: String,
    /// Admin or user.
    pub role: Role,
    /// Queues this user may submit to.
    pub queues: Vec<String>,
}

/// `POST /api/v1/admin/users` body.
// `Debug` is written by hand below: it hides the password.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateUser {
    /// Login name: 1–64 of `a-z 0-9 . _ -`, starting with a letter or digit (it also names the
    /// owner of cluster objects, so it stays label-safe).
    #[cfg_attr(
        feature = "openapi",
        schema(min_length = 1, max_length = 64, pattern = r"^[a-z0-9][a-z0-9._-]*$")
    )]
    pub username: String,
    /// 8 to 1024 characters.
    #[cfg_attr(feature = "openapi", schema(min_length = 8, max_length = 1024))]
    pub password: String,
    /// Name shown in the UI, 1–128 characters without control characters; the username when
    /// absent.
    #[serde(default)]
    #[cfg_attr(
        feature = "openapi",
        schema(min_length = 1, max_length = 128, pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$")
    )]
    pub display_name: Option<String>,
    /// Admin or user.
    pub role: Role,
}

/// `GET /api/v1/auth/session`: who the browser's session is, or nobody. The web UI asks this
/// on load instead of `/auth/me`, so a visitor who is not logged in gets an answer rather than
/// a 401 (which the browser would log as a failed load on every first visit).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Session {
    /// The logged-in user; `null` when the request carries no valid session.
    pub user: Option<User>,
}

/// `PATCH /api/v1/admin/users/{id}` body: only the fields present change.
// `Debug` is written by hand below: it hides the password.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateUser {
    /// New role; demoting the last admin is refused.
    #[serde(default)]
    pub role: Option<Role>,
    /// New password, 8 to 1024 characters.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(min_length = 8, max_length = 1024))]
    pub password: Option<String>,
    /// New display name, 1–128 characters without control characters.
    #[serde(default)]
    #[cfg_attr(
        feature = "openapi",
        schema(min_length = 1, max_length = 128, pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$")
    )]
    pub display_name: Option<String>,
}

/// `POST /api/v1/auth/login` body.
// `Debug` is written by hand below: it hides the password.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LoginRequest {
    /// Login name.
    pub username: String,
    /// Password in clear (sent over the same TLS as everything else).
    pub password: String,
}

/// `POST /api/v1/auth/login` answer.
// `Debug` is written by hand below: it hides the token.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LoginResponse {
    /// Bearer token for the `Authorization` header.
    pub token: String,
    /// When the token stops working (RFC 3339).
    pub expires_at: chrono::DateTime<chrono::Utc>,
    /// Who logged in.
    pub user: User,
}

/// What `Debug` shows instead of a secret.
const REDACTED: &str = "***";

/// `Some("***")` for a secret that is there, `None` for one that is not.
fn redacted<T>(secret: &Option<T>) -> Option<&'static str> {
    secret.as_ref().map(|_| REDACTED)
}

// `Debug` of the bodies that carry a secret (`CreateUser`, `UpdateUser`, `LoginRequest`,
// `LoginResponse`), written by hand so the secret never reaches a log line or a panic message. Each destructures without `..`: a new field does not compile
// until it is placed here, so nothing is left out and nothing secret slips in unseen.

impl std::fmt::Debug for CreateUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let CreateUser {
            username,
            password: _,
            display_name,
            role,
        } = self;
        f.debug_struct("CreateUser")
            .field("username", username)
            .field("password", &REDACTED)
            .field("display_name", display_name)
            .field("role", role)
            .finish()
    }
}

impl std::fmt::Debug for UpdateUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let UpdateUser {
            role,
            password,
            display_name,
        } = self;
        f.debug_struct("UpdateUser")
            .field("role", role)
            .field("password", &redacted(password))
            .field("display_name", display_name)
            .finish()
    }
}

impl std::fmt::Debug for LoginRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let LoginRequest { username, password: _ } = self;
        f.debug_struct("LoginRequest")
            .field("username", username)
            .field("password", &REDACTED)
            .finish()
    }
}

impl std::fmt::Debug for LoginResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let LoginResponse {
            token: _,
            expires_at,
            user,
        } = self;
        f.debug_struct("LoginResponse")
            .field("token", &REDACTED)
            .field("expires_at", expires_at)
            .field("user", user)
            .finish()
    }
}

/// A page of a list: `?page=1&pageSize=50` → `{items, total, page, pageSize}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Page<T> {
    /// This page's items.
    pub items: Vec<T>,
    /// Items over all pages.
    pub total: u64,
    /// 1-based page number.
    pub page: u64,
    /// Items per page (≤ 500).
    pub page_size: u64,
}

/// `GET /readyz` answer: each dependency and whether it answered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Readiness {
    /// All checks passed.
    pub ready: bool,
    /// The database answered a query.
    pub database: bool,
    /// Every migration is applied.
    pub migrations: bool,
    /// The cluster answered.
    pub cluster: bool,
}

/// A node as `GET /api/v1/cluster/nodes` shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClusterNode {
    /// Host name.
    pub name: String,
    /// `Ready=True`.
    pub ready: bool,
    /// Not cordoned.
    pub schedulable: bool,
    /// What pods may request in total.
    pub allocatable: crate::scheduling::ResourceList,
    /// Requests of the pods on it (terminating ones included).
    pub used: crate::scheduling::ResourceList,
    /// `allocatable − used`.
    pub free: crate::scheduling::ResourceList,
    /// Node labels.
    pub labels: std::collections::BTreeMap<String, String>,
    /// Node taints: what a job's pods must tolerate to run there (an admin writing toleration
    /// rules reads them here). Absent from older servers: none.
    #[serde(default)]
    pub taints: Vec<crate::scheduling::Taint>,
}

/// A resource name the nodes offer (`GET /api/v1/cluster/resources`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClusterResource {
    /// e.g. `cpu`, `memory`, `nvidia.com/a100`.
    pub name: String,
    /// Accelerators (names with `/`) are offered by model in forms and quota editors.
    pub accelerator: bool,
}

/// `PUT /api/v1/admin/nodes/{name}/schedulable` body.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetSchedulable {
    /// `false` cordons the node, `true` lets pods land on it again.
    pub schedulable: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "correct-horse-battery";

    #[test]
    fn debug_of_a_login_body_hides_the_password() {
        let body = LoginRequest {
            username: "alice".into(),
            password: SECRET.into(),
        };
        let shown = format!("{body:?}");
        assert!(!shown.contains(SECRET), "{shown}");
        assert!(shown.contains("alice") && shown.contains("***"), "{shown}");
    }

    #[test]
    fn debug_of_a_new_user_hides_the_password() {
        let body = CreateUser {
            username: "alice".into(),
            password: SECRET.into(),
            display_name: Some("Alice".into()),
            role: Role::User,
        };
        let shown = format!("{body:?}");
        assert!(!shown.contains(SECRET), "{shown}");
        assert!(shown.contains("alice") && shown.contains("Alice"), "{shown}");
    }

    #[test]
    fn debug_of_a_user_change_hides_the_password_and_says_whether_there_is_one() {
        let with = UpdateUser {
            password: Some(SECRET.into()),
            ..UpdateUser::default()
        };
        let shown = format!("{with:?}");
        assert!(!shown.contains(SECRET), "{shown}");
        assert!(shown.contains(r#"password: Some("***")"#), "{shown}");
        assert!(format!("{:?}", UpdateUser::default()).contains("password: None"));
    }

    #[test]
    fn debug_of_a_login_answer_hides_the_token() {
        let answer = LoginResponse {
            token: SECRET.into(),
            expires_at: chrono::DateTime::UNIX_EPOCH,
            user: User {
                id: 1,
                username: "alice".into(),
                display_name: "Alice".into(),
                role: Role::User,
                queues: Vec::new(),
            },
        };
        let shown = format!("{answer:?}");
        assert!(!shown.contains(SECRET), "{shown}");
        assert!(shown.contains("alice"), "{shown}");
    }
}
