//! The labels that mark what Anteroom owns in the cluster: its Jobs, their pods and its
//! mirrored queues. A module of their own, so that the manifests and the settings that decide
//! ownership both read them without depending on each other.

/// Label on everything Anteroom creates; the job watch selects on it, and an existing object
/// without it is not Anteroom's (create answers `Conflict`).
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// Value of [`MANAGED_BY_LABEL`].
pub const MANAGED_BY_VALUE: &str = "anteroom";
/// Label with the installation id: job ids restart with a new database, so `ar-7` alone does
/// not say which Anteroom (or which life of it) created an object.
pub const INSTALLATION_LABEL: &str = "anteroom.io/installation";
