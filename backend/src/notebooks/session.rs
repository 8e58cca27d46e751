//! The notebook cookie: what a notebook origin accepts instead of the portal's session. Set by
//! the handoff, host-only (no `Domain`), `HttpOnly`, `SameSite=Lax`, `Secure` and `__Host-` over
//! https; it names one job and one viewer, and is good only while the portal session it came
//! from is: it expires with it, and a logout, password or role change or deletion (the user's
//! token version) ends it on the next request — and on an open tunnel within seconds.
//!
//! Who may open a notebook: its owner; an admin only after confirming that the page runs the
//! owner's code (the handoff's `asAdmin`, carried in the cookie). Anyone else: 404, as for the
//! job itself.

use anteroom_shared::api::Role;
use axum::http::{HeaderMap, StatusCode, header};

use super::origin::NotebookOrigin;
use crate::auth::token::NotebookGrant;
use crate::error::ApiError;
use crate::state::AppState;
use crate::users;

/// The notebook cookie over http.
pub const NOTEBOOK_COOKIE: &str = "anteroom_notebook";
/// The notebook cookie over https: `__Host-` makes browsers take it only `Secure`, with `Path=/`
/// and no `Domain`, so no sibling host can plant or widen it.
pub const SECURE_NOTEBOOK_COOKIE: &str = "__Host-anteroom_notebook";

/// The cookie's name on `origin`.
pub fn cookie_name(origin: &NotebookOrigin) -> &'static str {
    if origin.https() {
        SECURE_NOTEBOOK_COOKIE
    } else {
        NOTEBOOK_COOKIE
    }
}

/// The `Set-Cookie` value holding `value` for `max_age_seconds` on `origin`.
pub fn set_cookie(origin: &NotebookOrigin, value: &str, max_age_seconds: i64) -> String {
    let secure = if origin.https() { "; Secure" } else { "" };
    format!(
        "{}={value}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age_seconds}{secure}",
        cookie_name(origin)
    )
}

/// The value of cookie `name` in `headers` (empty counts as none).
pub fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, value)| value)
        .filter(|value| !value.is_empty())
}

/// How a viewer may open a job's notebook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opener {
    /// The job's owner.
    Owner,
    /// An admin who confirmed opening another user's notebook.
    Admin,
}

/// Whether `user` may open the notebook of a job owned by `owner_id`: the owner always; an
/// admin only `as_admin` (confirmed); anyone else never.
pub fn may_open(user: &users::entity::Model, owner_id: i64, as_admin: bool) -> Option<Opener> {
    if user.id == owner_id {
        Some(Opener::Owner)
    } else if as_admin && users::role_of(user) == Role::Admin {
        Some(Opener::Admin)
    } else {
        None
    }
}

/// The viewer of job `job_id`'s notebook by the notebook cookie in `headers`, checked against
/// everything that may have changed since it was set: the cookie's signature, audience, job and
/// expiry; the user's existence and token version; their right to open this job (ownership, or
/// the admin role for an admin's confirmed opening). 401 without a valid cookie, 404 when the
/// viewer may not open it. With the viewer, the job as stored now.
pub async fn viewer(
    state: &AppState,
    headers: &HeaderMap,
    job_id: i64,
) -> Result<(users::entity::Model, crate::jobs::entity::job::Model), ApiError> {
    let grant = grant(state, headers, job_id)?;
    let user = crate::auth::current_user(state, grant.user_id, grant.version).await?;
    let row = crate::jobs::visible(&state.db_read, &user, job_id).await?;
    may_open(&user, row.owner_id, grant.as_admin)
        .ok_or_else(|| ApiError::not_found("job_not_found", format!("job {job_id} is not yours to open")))?;
    Ok((user, row))
}

/// The notebook cookie's grant for job `job_id`, or 401.
fn grant(state: &AppState, headers: &HeaderMap, job_id: i64) -> Result<NotebookGrant, ApiError> {
    let unauthorized = || {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "notebook_session_required",
            "open this notebook from its job's page in Anteroom",
        )
    };
    let value = cookie(headers, cookie_name(&state.notebook_origin)).ok_or_else(unauthorized)?;
    let grant = state.tokens.verify_notebook(value.trim()).ok_or_else(unauthorized)?;
    if grant.job_id != job_id {
        return Err(unauthorized());
    }
    Ok(grant)
}
