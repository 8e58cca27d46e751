//! The admin users API of `spec/api.md`: list, create, change and delete accounts.
//!
//! Mounted under the admin router, whose layer refuses anyone but an admin before these
//! handlers run; the handlers take the caller only to say who did what.
//!
//! Every change keeps at least one admin (409 `last_admin`), so Anteroom can always be
//! administered without editing its database.

use anteroom_shared::api::{CreateUser, ErrorBody, Page, UpdateUser, User};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{AdminChange, AuthUser, UserChanges};
use crate::error::{ApiError, ApiResult, FieldError};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::http::paging::PageQuery;
use crate::state::AppState;
use crate::users;

/// The admin users routes (mounted behind the admin layer).
pub fn admin_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_users, create_user))
        .routes(routes!(update_user, delete_user))
}

fn user_not_found(id: i64) -> ApiError {
    ApiError::not_found("user_not_found", format!("no user with id {id}"))
}

fn last_admin() -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "last_admin",
        "this is the last admin: make another user admin first",
    )
}

/// Checks the fields a request sets (`None`: not set), naming every bad one in one 422.
fn validate(username: Option<&str>, password: Option<&str>, display_name: Option<&str>) -> ApiResult<()> {
    let errors: Vec<FieldError> = [
        ("username", username.and_then(users::username_problem)),
        ("password", password.and_then(users::password_problem)),
        ("displayName", display_name.and_then(users::display_name_problem)),
    ]
    .into_iter()
    .filter_map(|(field, problem)| problem.map(|p| FieldError::new(field, p)))
    .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ApiError::validation(errors))
    }
}

/// Hashes off the async threads, in one of the few hashing slots: Argon2id takes tens of
/// milliseconds of CPU and ~19 MiB on purpose.
async fn hash(state: &AppState, password: String) -> ApiResult<String> {
    state
        .passwords
        .hash(password)
        .await
        .map_err(|_| ApiError::busy(1))?
        .map_err(|e| ApiError::internal(anyhow::anyhow!("hashing a password: {e}")))
}

/// Every user, in id order, one page at a time.
#[utoipa::path(
    get,
    path = "/api/v1/admin/users",
    tag = "users",
    security(("bearer" = [])),
    params(PageQuery),
    responses(
        (status = 200, description = "One page of users", body = Page<User>),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
        (status = 422, description = "`validation_failed`: page or pageSize out of range", body = ErrorBody),
    )
)]
async fn list_users(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<PageQuery>,
) -> ApiResult<Json<Page<User>>> {
    let page = query.validate()?;
    let (rows, total) = users::list(&state.db_read, page.offset(), page.page_size).await?;
    Ok(Json(Page {
        items: users::to_api_all(&state.db_read, &rows).await?,
        total,
        page: page.page,
        page_size: page.page_size,
    }))
}

/// Creates an account.
#[utoipa::path(
    post,
    path = "/api/v1/admin/users",
    tag = "users",
    security(("bearer" = [])),
    request_body = CreateUser,
    responses(
        (status = 201, description = "Created", body = User),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
        (status = 409, description = "`username_taken`", body = ErrorBody),
        (status = 422, description = "`validation_failed` naming the fields", body = ErrorBody),
    )
)]
async fn create_user(
    State(state): State<AppState>,
    AuthUser(admin): AuthUser,
    ApiJson(body): ApiJson<CreateUser>,
) -> ApiResult<(StatusCode, Json<User>)> {
    let display_name = body.display_name.clone().unwrap_or_else(|| body.username.clone());
    validate(Some(&body.username), Some(&body.password), Some(&display_name))?;
    let password_hash = hash(&state, body.password).await?;
    let created = users::insert(&state.db, &body.username, &display_name, password_hash, body.role)
        .await?
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::CONFLICT,
                "username_taken",
                format!("the username {} is taken", body.username),
            )
        })?;
    tracing::info!(by = admin.id, user.id = created.id, role = %created.role, "user created");
    Ok((StatusCode::CREATED, Json(users::to_api_one(&state.db, &created).await?)))
}

/// Changes a user's role, password or display name; absent fields stay as they are.
#[utoipa::path(
    patch,
    path = "/api/v1/admin/users/{id}",
    tag = "users",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "User id")),
    request_body = UpdateUser,
    responses(
        (status = 200, description = "The user as changed", body = User),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
        (status = 404, description = "`user_not_found`", body = ErrorBody),
        (status = 409, description = "`last_admin`: demoting the only admin", body = ErrorBody),
        (status = 422, description = "`validation_failed` naming the fields", body = ErrorBody),
    )
)]
async fn update_user(
    State(state): State<AppState>,
    AuthUser(admin): AuthUser,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<UpdateUser>,
) -> ApiResult<Json<User>> {
    validate(None, body.password.as_deref(), body.display_name.as_deref())?;
    let password_hash = match body.password {
        Some(p) => Some(hash(&state, p).await?),
        None => None,
    };
    let password_changed = password_hash.is_some();
    let changes = UserChanges {
        role: body.role,
        password_hash,
        display_name: body.display_name,
    };
    let changed = users::update(&state.db, id, changes).await;
    // Whatever the outcome (a failed commit may still have happened): requests read it again.
    state.session_users.forget(id);
    match changed? {
        AdminChange::Done(user) => {
            tracing::info!(by = admin.id, user.id = id, "user changed");
            if password_changed && let Err(e) = users::forget_generated_password(&state.config.data_dir, &user) {
                tracing::warn!(error = %e, "could not remove the kept first-admin password file");
            }
            Ok(Json(users::to_api_one(&state.db, &user).await?))
        }
        AdminChange::NotFound => Err(user_not_found(id)),
        AdminChange::LastAdmin => Err(last_admin()),
    }
}

/// Deletes a user; their tokens stop working at once.
#[utoipa::path(
    delete,
    path = "/api/v1/admin/users/{id}",
    tag = "users",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "User id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
        (status = 404, description = "`user_not_found`", body = ErrorBody),
        (status = 409, description = "`last_admin`: deleting the only admin", body = ErrorBody),
        (status = 422, description = "`validation_failed`: the id is not a number", body = ErrorBody),
    )
)]
async fn delete_user(
    State(state): State<AppState>,
    AuthUser(admin): AuthUser,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<StatusCode> {
    let deleted = users::delete(&state.db, id).await;
    // Whatever the outcome (a failed commit may still have happened): requests read it again.
    state.session_users.forget(id);
    match deleted? {
        AdminChange::Done(()) => {
            tracing::info!(by = admin.id, user.id = id, "user deleted");
            Ok(StatusCode::NO_CONTENT)
        }
        AdminChange::NotFound => Err(user_not_found(id)),
        AdminChange::LastAdmin => Err(last_admin()),
    }
}
