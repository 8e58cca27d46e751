//! Opening a notebook (jupyter, webide): the portal hands the viewer over to the notebook's own
//! origin with a one-time link, so the notebook's pages never run with the portal's session.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// `POST /api/v1/jobs/{id}/notebook` body.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OpenNotebook {
    /// An admin opening another user's notebook says so: its pages run the owner's code, which
    /// the admin confirmed seeing (without it: 403 `admin_confirmation_required`). Ignored for
    /// one's own notebook.
    #[serde(default)]
    pub as_admin: bool,
}

/// `POST /api/v1/jobs/{id}/notebook` answer: where to send the browser, once.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct NotebookHandoff {
    /// The notebook origin's one-time link: opened before `expiresAt`, once, it sets the
    /// notebook's own cookie and leads to the notebook.
    pub url: String,
    /// The notebook's origin (`https://7.nb.example.org`), where it is served.
    pub origin: String,
    /// When the link stops working.
    pub expires_at: DateTime<Utc>,
}
