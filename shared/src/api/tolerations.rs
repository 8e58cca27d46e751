//! Admin toleration rules (`/api/v1/admin/toleration-rules`): which jobs tolerate which node
//! taints. Users never write tolerations; a job gets those of every rule that matches an
//! accelerator it requests or its queue ([`crate::scheduling::job_tolerations`]).

use serde::{Deserialize, Serialize};

use crate::scheduling::{
    MAX_TOLERATIONS_PER_RULE, RuleTarget, Toleration, TolerationRuleSpec, resource_pattern_problem, toleration_problem,
};

/// The longest description of a rule.
pub const MAX_RULE_DESCRIPTION: usize = 200;

/// `POST /api/v1/admin/toleration-rules` and `PUT /api/v1/admin/toleration-rules/{id}` body:
/// exactly one of `resource` and `queue`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TolerationRuleBody {
    /// Jobs requesting this accelerator (`nvidia.com/a100`) or any of a domain
    /// (`nvidia.com/*`).
    #[serde(default)]
    pub resource: Option<String>,
    /// Jobs in this queue or below it (a team's dedicated nodes).
    #[serde(default)]
    pub queue: Option<String>,
    /// What they tolerate: 1 to 16 tolerations in Kubernetes' form.
    pub tolerations: Vec<Toleration>,
    /// Why the rule exists, for the next admin.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 200))]
    pub description: String,
}

/// A stored rule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct TolerationRule {
    /// Id.
    pub id: i64,
    /// See [`TolerationRuleBody::resource`].
    pub resource: Option<String>,
    /// See [`TolerationRuleBody::queue`].
    pub queue: Option<String>,
    /// What matching jobs tolerate.
    pub tolerations: Vec<Toleration>,
    /// Why the rule exists.
    pub description: String,
}

impl TolerationRuleBody {
    /// Every problem of the body as (field, problem); empty when it is valid (whether the
    /// queue exists is the server's to check).
    pub fn problems(&self) -> Vec<(String, &'static str)> {
        let mut out: Vec<(String, &'static str)> = Vec::new();
        match (&self.resource, &self.queue) {
            (Some(_), Some(_)) => out.push(("queue".into(), "a rule names a resource or a queue, not both")),
            (None, None) => out.push(("resource".into(), "a rule names a resource or a queue")),
            (Some(resource), None) => {
                if let Some(p) = resource_pattern_problem(resource) {
                    out.push(("resource".into(), p));
                }
            }
            (None, Some(queue)) => {
                if queue.is_empty() || queue.len() > 63 {
                    out.push(("queue".into(), "must be 1 to 63 characters"));
                }
            }
        }
        if self.tolerations.is_empty() || self.tolerations.len() > MAX_TOLERATIONS_PER_RULE {
            out.push(("tolerations".into(), "must hold 1 to 16 tolerations"));
        }
        for (i, t) in self.tolerations.iter().enumerate() {
            if let Some(p) = toleration_problem(t) {
                out.push((format!("tolerations[{i}]"), p));
            }
        }
        if self.description.chars().count() > MAX_RULE_DESCRIPTION {
            out.push(("description".into(), "at most 200 characters"));
        }
        out
    }

    /// The rule as the core applies it; `None` unless exactly one target is set.
    pub fn to_spec(&self) -> Option<TolerationRuleSpec> {
        let target = match (&self.resource, &self.queue) {
            (Some(resource), None) => RuleTarget::Resource(resource.clone()),
            (None, Some(queue)) => RuleTarget::Queue(queue.clone()),
            _ => return None,
        };
        Some(TolerationRuleSpec {
            target,
            tolerations: self.tolerations.clone(),
        })
    }
}
