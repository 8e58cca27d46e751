//! The cluster endpoints of `spec/api.md`: nodes with their capacity, the resource names for
//! forms, and cordoning a node.

use anteroom_shared::api::{ClusterNode, ClusterResource, ErrorBody, SetSchedulable};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::ClusterError;
use crate::auth::AuthUser;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath};
use crate::prequeue::NodeSnapshot;
use crate::state::AppState;

/// The cluster routes of every logged-in user.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_nodes))
        .routes(routes!(list_resources))
}

/// The cluster routes of admins (mounted behind the admin layer).
pub fn admin_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(set_schedulable))
}

impl From<ClusterError> for ApiError {
    fn from(e: ClusterError) -> Self {
        match e {
            ClusterError::NodeNotFound(name) => ApiError::not_found("node_not_found", format!("no node named {name}")),
            ClusterError::PodNotFound(name) => ApiError::not_found("pod_not_found", format!("no pod named {name}")),
            ClusterError::Unavailable(_) => ApiError::unavailable("the cluster", e),
            ClusterError::Conflict(_) => ApiError::new(StatusCode::CONFLICT, "cluster_conflict", e.to_string()),
            other => ApiError::internal(other),
        }
    }
}

fn to_api(node: NodeSnapshot) -> ClusterNode {
    // `free` may be clamped at zero by an adapter; `used` is what the pods take.
    let used = node.allocatable.checked_sub(&node.free).unwrap_or_default();
    ClusterNode {
        name: node.name,
        ready: node.ready,
        schedulable: node.schedulable,
        allocatable: node.allocatable,
        used,
        free: node.free,
        labels: node.labels.into_iter().collect(),
        taints: node.taints,
    }
}

/// Every node with allocatable, used and free capacity per resource.
#[utoipa::path(
    get,
    path = "/api/v1/cluster/nodes",
    tag = "cluster",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Nodes in name order", body = [ClusterNode]),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 503, description = "`unavailable`: the cluster does not answer", body = ErrorBody),
    )
)]
async fn list_nodes(State(state): State<AppState>) -> ApiResult<Json<Vec<ClusterNode>>> {
    let mut nodes: Vec<ClusterNode> = state.cluster.nodes().await?.into_iter().map(to_api).collect();
    nodes.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Json(nodes))
}

/// The resource names the nodes offer, accelerators flagged: what forms and the quota editor
/// offer.
#[utoipa::path(
    get,
    path = "/api/v1/cluster/resources",
    tag = "cluster",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Resource names, sorted", body = [ClusterResource]),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 503, description = "`unavailable`", body = ErrorBody),
    )
)]
async fn list_resources(State(state): State<AppState>) -> ApiResult<Json<Vec<ClusterResource>>> {
    let names = state.cluster.resource_names().await?;
    Ok(Json(
        names
            .into_iter()
            .map(|r| ClusterResource {
                name: r.name,
                accelerator: r.accelerator,
            })
            .collect(),
    ))
}

/// Cordons (`false`) or uncordons (`true`) a node.
#[utoipa::path(
    put,
    path = "/api/v1/admin/nodes/{name}/schedulable",
    tag = "cluster",
    security(("bearer" = [])),
    params(("name" = String, Path, description = "Node name")),
    request_body = SetSchedulable,
    responses(
        (status = 200, description = "The node after the change", body = ClusterNode),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: admins only", body = ErrorBody),
        (status = 404, description = "`node_not_found`", body = ErrorBody),
        (status = 422, description = "`validation_failed`", body = ErrorBody),
    )
)]
#[tracing::instrument(skip_all, fields(node = %name, schedulable = body.schedulable))]
async fn set_schedulable(
    AuthUser(admin): AuthUser,
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiJson(body): ApiJson<SetSchedulable>,
) -> ApiResult<Json<ClusterNode>> {
    state.cluster.set_node_schedulable(&name, body.schedulable).await?;
    tracing::info!(user.id = admin.id, "node schedulability changed");
    if body.schedulable {
        // Room may have appeared for waiting jobs: a full round (`spec/api.md`).
        state.signals.wake_watcher();
    }
    let node = state
        .cluster
        .nodes()
        .await?
        .into_iter()
        .find(|n| n.name == name)
        .ok_or_else(|| ApiError::not_found("node_not_found", format!("no node named {name}")))?;
    Ok(Json(to_api(node)))
}
