//! Saved job templates (`/api/v1/templates`) and the admin's defaults per kind
//! (`/api/v1/job-defaults`): a template is a job body without its name, so the submission form
//! can start from one and a user never retypes an image and its resources. Users keep their
//! own; admins publish templates for everyone and mark one per kind as the default the form
//! starts from.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::api::jobs::{DEFAULT_QUEUE, JobBody, TaskBody};
use crate::scheduling::{JobKind, PreemptionPolicy, ScheduleType};

fn default_queue() -> String {
    DEFAULT_QUEUE.to_string()
}

/// A job body without its name: what a template keeps. The fields mean what they mean in
/// [`JobBody`], and are checked by the same rules when the template is saved (but not the
/// caller's right to the queue, nor quotas: those are checked when a job is submitted).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TemplateBody {
    /// Fixes the task layout.
    pub kind: JobKind,
    /// The queue a job from it goes to (`default` when absent).
    #[serde(default = "default_queue")]
    pub queue: String,
    /// `normal` (default) or `backfill`.
    #[serde(default)]
    pub schedule_type: ScheduleType,
    /// Normal jobs only; `PreemptLowerPriority` when absent.
    #[serde(default)]
    pub preemption_policy: Option<PreemptionPolicy>,
    /// 1–64 tasks.
    pub tasks: Vec<TaskBody>,
    /// Catalogue volumes by name (at most 16); whether the queue is offered them is checked
    /// at submission, since the catalogue may change in between.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<String>,
    /// The runtime limit of a job from it ([`JobBody::max_runtime_seconds`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 60, maximum = 31_536_000))]
    pub max_runtime_seconds: Option<i64>,
    /// Requeue after preemption ([`JobBody::requeue`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeue: Option<bool>,
    /// Priority inside its queue ([`JobBody::priority`]; the queue's range is checked when a
    /// job is submitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    /// Whether a job from it may borrow ([`JobBody::borrow`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub borrow: Option<crate::scheduling::BorrowPolicy>,
}

impl TemplateBody {
    /// The submission of this template under `name`: what the form sends after the user named
    /// the job.
    pub fn into_job_body(self, name: impl Into<String>) -> JobBody {
        let TemplateBody {
            kind,
            queue,
            schedule_type,
            preemption_policy,
            tasks,
            volumes,
            max_runtime_seconds,
            requeue,
            priority,
            borrow,
        } = self;
        JobBody {
            name: name.into(),
            kind,
            queue,
            schedule_type,
            preemption_policy,
            tasks,
            volumes,
            max_runtime_seconds,
            requeue,
            priority,
            borrow,
        }
    }
}

/// A job body saved as a template: everything but the name, which belongs to each job.
impl From<JobBody> for TemplateBody {
    fn from(body: JobBody) -> Self {
        let JobBody {
            name: _,
            priority,
            borrow,
            kind,
            queue,
            schedule_type,
            preemption_policy,
            tasks,
            volumes,
            max_runtime_seconds,
            requeue,
        } = body;
        TemplateBody {
            kind,
            queue,
            schedule_type,
            preemption_policy,
            tasks,
            volumes,
            max_runtime_seconds,
            requeue,
            priority,
            borrow,
        }
    }
}

/// The longest description of a template, in characters.
pub const MAX_TEMPLATE_DESCRIPTION: usize = 1024;

/// `POST /api/v1/templates` and `PUT /api/v1/templates/{id}` body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TemplateWrite {
    /// A Kubernetes-like name (1–63 of `a-z 0-9 -`, alphanumeric at both ends), unique among
    /// the owner's templates.
    #[cfg_attr(
        feature = "openapi",
        schema(min_length = 1, max_length = 63, pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    )]
    pub name: String,
    /// What it is for, shown beside it in the picker.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 1024))]
    pub description: String,
    /// Shown to every user (admins only; a non-admin's `true` is 403 `forbidden`).
    #[serde(default)]
    pub published: bool,
    /// The default the submission form starts from for jobs of the body's kind (admins only,
    /// and only on a published template); setting it takes it from the kind's previous one.
    #[serde(default)]
    pub default_for_kind: bool,
    /// The job body without its name.
    pub body: TemplateBody,
}

/// A saved template as the API shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct JobTemplate {
    /// Database id.
    pub id: i64,
    /// Unique among the owner's templates.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// Username of whoever created it.
    pub owner: String,
    /// Shown to every user.
    pub published: bool,
    /// The form's default for jobs of its kind (at most one per kind).
    pub default_for_kind: bool,
    /// The job body without its name.
    pub body: TemplateBody,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

/// One entry of `GET /api/v1/job-defaults`: the published template the submission form starts
/// from for jobs of `kind`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct KindDefault {
    /// The kind it is the default of.
    pub kind: JobKind,
    /// The template.
    pub template: JobTemplate,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_body_is_a_job_body_without_its_name_both_ways() {
        let json = serde_json::json!({"kind": "custom", "tasks": [{"name": "main", "replicas": 1,
            "image": "busybox", "resources": {"cpu": "1"}}]});
        let body: TemplateBody = serde_json::from_value(json).expect("a body");
        assert_eq!(body.queue, DEFAULT_QUEUE);
        let job = body.clone().into_job_body("run-1");
        assert_eq!(job.name, "run-1");
        assert_eq!(job.tasks, body.tasks);
        assert_eq!(TemplateBody::from(job), body);
        let named = serde_json::json!({"name": "x", "kind": "custom", "tasks": []});
        assert!(
            serde_json::from_value::<TemplateBody>(named).is_err(),
            "a template has no name"
        );
    }

    #[test]
    fn a_write_defaults_to_private_and_not_a_default() {
        let json = serde_json::json!({"name": "small", "body": {"kind": "jupyter", "tasks": []}});
        let write: TemplateWrite = serde_json::from_value(json).expect("a write");
        assert!(!write.published && !write.default_for_kind && write.description.is_empty());
    }
}

#[cfg(test)]
mod sharing_tests {
    use super::*;

    #[test]
    fn a_template_keeps_a_jobs_priority_and_borrow_policy() {
        let body: JobBody = serde_json::from_value(serde_json::json!({
            "name": "train", "kind": "custom", "priority": 3, "borrow": "never",
            "tasks": [{"name": "main", "replicas": 1, "image": "busybox", "command": ["true"], "resources": {}}]
        }))
        .expect("a job body");
        let template = TemplateBody::from(body.clone());
        let json = serde_json::to_value(&template).expect("serializes");
        assert_eq!(
            (json["priority"].as_i64(), json["borrow"].as_str()),
            (Some(3), Some("never"))
        );
        assert_eq!(template.into_job_body("train"), body);
        // A template stored before sharing reads as one that names neither.
        let old: TemplateBody = serde_json::from_value(serde_json::json!({
            "kind": "custom",
            "tasks": [{"name": "main", "replicas": 1, "image": "busybox", "command": ["true"], "resources": {}}]
        }))
        .expect("an old template");
        assert_eq!((old.priority, old.borrow), (None, None));
    }
}
