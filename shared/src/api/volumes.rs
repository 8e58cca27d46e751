//! The admin's catalogue of volumes (`/api/v1/admin/volumes`): data a job may mount by name —
//! a PersistentVolumeClaim in the jobs namespace, or an NFS export (host-independent) — with
//! where it goes and which queues may use it. Users never write volume sources: a job names
//! catalogue entries (`JobBody::volumes`), so it can only reach data an admin offered to its
//! queue.

use serde::{Deserialize, Serialize};

use crate::names::{is_dns_label, is_dns_subdomain};

/// Where a volume's data is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", rename_all_fields = "camelCase", deny_unknown_fields)]
pub enum VolumeSource {
    /// A PersistentVolumeClaim in the jobs namespace.
    Pvc {
        /// The claim's name.
        claim_name: String,
    },
    /// An NFS export.
    Nfs {
        /// Server host name or address.
        server: String,
        /// Exported path (absolute).
        path: String,
    },
}

/// `POST /api/v1/admin/volumes` and `PUT /api/v1/admin/volumes/{name}` body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VolumeBody {
    /// What jobs name it by: a Kubernetes name (1–63 of `a-z 0-9 -`); fixed once created.
    pub name: String,
    /// Where the data is.
    pub source: VolumeSource,
    /// Where it appears in the containers: an absolute path, not `/`, `/dev…`, `/proc…` or
    /// `/sys…`.
    pub mount_path: String,
    /// Mounted read-only (datasets) or not (checkpoints).
    #[serde(default)]
    pub read_only: bool,
    /// Queues whose jobs may mount it (a queue's sub-queues too); empty: every queue.
    #[serde(default)]
    pub queues: Vec<String>,
    /// What it holds, for the users who pick it.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 200))]
    pub description: String,
}

/// A catalogue entry as stored (the body, which is the whole of it).
pub type Volume = VolumeBody;

/// A volume as a job mounts it: resolved from the catalogue when the job is submitted and kept
/// with it, so a later catalogue change never alters a job already admitted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct VolumeMount {
    /// Catalogue name.
    pub name: String,
    /// Where the data is.
    pub source: VolumeSource,
    /// Where it appears.
    pub mount_path: String,
    /// Read-only.
    pub read_only: bool,
}

/// A volume as users see it when picking one (`GET /api/v1/volumes?queue=`): where it appears
/// and what it holds; its source stays with the admins.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct VolumeChoice {
    /// What to name in `JobBody::volumes`.
    pub name: String,
    /// Where it appears.
    pub mount_path: String,
    /// Read-only.
    pub read_only: bool,
    /// What it holds.
    pub description: String,
}

impl VolumeChoice {
    /// The choice of a catalogue entry.
    pub fn of(volume: &VolumeBody) -> Self {
        VolumeChoice {
            name: volume.name.clone(),
            mount_path: volume.mount_path.clone(),
            read_only: volume.read_only,
            description: volume.description.clone(),
        }
    }
}

impl VolumeBody {
    /// Every problem as (field, problem); empty when valid (whether the queues exist is the
    /// server's to check).
    pub fn problems(&self) -> Vec<(String, &'static str)> {
        let mut out = Vec::new();
        // Pods name the volume `vol-<name>`, and a pod's volume names are at most 63 long.
        if !is_dns_label(&self.name) || self.name.len() > MAX_VOLUME_NAME {
            out.push((
                "name".into(),
                "must be 1 to 59 of a-z, 0-9 and '-', starting and ending with a letter or digit",
            ));
        }
        match &self.source {
            VolumeSource::Pvc { claim_name } => {
                if !is_dns_subdomain(claim_name) {
                    out.push(("source.pvc.claimName".into(), "must be a Kubernetes object name"));
                }
            }
            VolumeSource::Nfs { server, path } => {
                let server_ok = !server.is_empty()
                    && server.len() <= 253
                    && server
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':'));
                if !server_ok {
                    out.push(("source.nfs.server".into(), "must be a host name or an address"));
                }
                if !is_clean_absolute_path(path) {
                    out.push(("source.nfs.path".into(), "must be an absolute path without '..'"));
                }
            }
        }
        if !is_clean_absolute_path(&self.mount_path)
            || self.mount_path == "/"
            || ["/dev", "/proc", "/sys"]
                .iter()
                .any(|p| self.mount_path == *p || self.mount_path.starts_with(&format!("{p}/")))
        {
            out.push((
                "mountPath".into(),
                "must be an absolute path without '..', not / nor under /dev, /proc or /sys",
            ));
        }
        if self.queues.len() > 64 {
            out.push(("queues".into(), "at most 64 queues"));
        }
        if self.description.chars().count() > 200 {
            out.push(("description".into(), "at most 200 characters"));
        }
        out
    }

    /// Whether a job in the queue whose path to the root is `queue_path` may mount it.
    pub fn allows(&self, queue_path: &[&str]) -> bool {
        self.queues.is_empty()
            || queue_path
                .iter()
                .any(|q| self.queues.iter().any(|allowed| allowed == q))
    }

    /// The mount a job gets.
    pub fn to_mount(&self) -> VolumeMount {
        VolumeMount {
            name: self.name.clone(),
            source: self.source.clone(),
            mount_path: self.mount_path.clone(),
            read_only: self.read_only,
        }
    }
}

/// The longest catalogue name (a pod's volume is `vol-<name>`, at most 63 long).
pub const MAX_VOLUME_NAME: usize = 59;

/// `/` or `/a/b` with no empty, `.` or `..` segment: one spelling per path, so `//proc` or
/// `/./dev` cannot pass for something else and two mounts at one place are seen as such.
fn is_clean_absolute_path(p: &str) -> bool {
    p == "/"
        || (p.starts_with('/')
            && p.len() <= 1024
            && !p.chars().any(char::is_control)
            && p[1..]
                .split('/')
                .all(|part| !part.is_empty() && part != "." && part != ".."))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body() -> VolumeBody {
        VolumeBody {
            name: "imagenet".into(),
            source: VolumeSource::Pvc {
                claim_name: "imagenet-ro".into(),
            },
            mount_path: "/data/imagenet".into(),
            read_only: true,
            queues: vec!["vision".into()],
            description: String::new(),
        }
    }

    #[test]
    fn a_catalogue_entry_is_checked_as_kubernetes_would_take_it() {
        assert!(body().problems().is_empty());
        let mut b = body();
        b.name = "ImageNet".into();
        b.mount_path = "/dev/shm".into();
        b.source = VolumeSource::Nfs {
            server: "nfs 1".into(),
            path: "data/../etc".into(),
        };
        let fields: Vec<String> = b.problems().into_iter().map(|(f, _)| f).collect();
        assert_eq!(fields, ["name", "source.nfs.server", "source.nfs.path", "mountPath"]);
        for bad in [
            "/", "relative", "/a/../b", "/proc", "/sys/x", "/data/", "//proc", "/./dev/x", "/data//x",
        ] {
            let mut b = body();
            b.mount_path = bad.into();
            assert_eq!(b.problems().len(), 1, "{bad}");
        }
    }

    #[test]
    fn a_catalogue_name_leaves_room_for_the_pods_prefix() {
        let mut b = body();
        b.name = "a".repeat(MAX_VOLUME_NAME);
        assert!(b.problems().is_empty());
        b.name.push('a');
        assert_eq!(b.problems().len(), 1);
    }

    #[test]
    fn a_volume_is_for_its_queues_and_their_sub_queues_or_for_all() {
        let b = body();
        assert!(b.allows(&["vision"]));
        assert!(b.allows(&["vision-interns", "vision"]));
        assert!(!b.allows(&["nlp"]));
        let open = VolumeBody {
            queues: vec![],
            ..body()
        };
        assert!(open.allows(&["nlp"]));
    }

    #[test]
    fn sources_read_as_the_api_writes_them() {
        let json = serde_json::json!({"name": "ckpt", "source": {"nfs": {"server": "10.0.0.5", "path": "/export/ckpt"}},
            "mountPath": "/ckpt"});
        let b: VolumeBody = serde_json::from_value(json).expect("a body");
        assert!(!b.read_only);
        assert!(b.problems().is_empty());
        let pvc = serde_json::to_value(body()).expect("json");
        assert_eq!(pvc["source"], serde_json::json!({"pvc": {"claimName": "imagenet-ro"}}));
    }
}
