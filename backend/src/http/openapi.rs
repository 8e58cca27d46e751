//! The OpenAPI document's frame: title, version, security scheme. Paths come from the
//! handlers themselves (utoipa-axum), so routes and spec cannot drift.

use utoipa::Modify;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};

/// Root of the OpenAPI 3.1 document served at `/api/openapi.json`.
#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "Anteroom API",
        description = "Job portal and quota-aware admission layer for Kubernetes + Volcano GPU clusters. Errors: `{\"error\": {code, message, details?}}` with stable codes.",
        license(name = "Apache-2.0")
    ),
    modifiers(&BearerAuth),
    tags(
        (name = "auth", description = "Log in and find out who you are"),
        (name = "operations", description = "Health, readiness and metrics"),
        (name = "cluster", description = "Nodes, their capacity, and the resources they offer"),
        (name = "tolerations", description = "Admin rules that give jobs their tolerations, per accelerator or queue"),
        (name = "volumes", description = "The admin's catalogue of data jobs mount by name, per queue"),
        (name = "notifications", description = "Webhook subscriptions to what happens to one's jobs (signed, retried, in order per job) and the admins' list of allowed destinations"),
        (name = "templates", description = "Saved job bodies without a name, published ones, and the default per kind the submission form starts from"),
        (name = "usage", description = "Accounting: what jobs occupied per period, queue, user and resource, from a history that outlives the jobs"),
    )
)]
pub struct ApiDoc;

/// Adds the `bearer` security scheme the authenticated paths refer to.
struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .build(),
            ),
        );
    }
}
