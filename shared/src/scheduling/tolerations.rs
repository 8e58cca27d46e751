//! Taints and tolerations with Kubernetes' matching rules, and the admin rules that give jobs
//! their tolerations (Kueue's ResourceFlavor idea): users never write tolerations; a job gets
//! those of every rule that matches an accelerator it requests or its queue (or an ancestor).
//! Shared so the admin page validates a rule as the server does.

use serde::{Deserialize, Serialize};

use super::ResourceList;
use crate::names::{is_dns_subdomain, is_name_part, is_qualified_name};

/// How a taint repels pods (`NoSchedule` and `NoExecute` repel; `PreferNoSchedule` does not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum TaintEffect {
    /// New pods without a toleration are not scheduled.
    NoSchedule,
    /// Soft: the scheduler avoids the node but may use it.
    PreferNoSchedule,
    /// Pods without a toleration are not scheduled and are evicted.
    NoExecute,
}

/// A node taint.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Taint {
    /// Taint key.
    pub key: String,
    /// Taint value (may be empty).
    #[serde(default)]
    pub value: Option<String>,
    /// Effect.
    pub effect: TaintEffect,
}

/// How a toleration matches a taint's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum TolerationOperator {
    /// Key (and value) must match.
    #[default]
    Equal,
    /// Any value; with an empty key, any taint.
    Exists,
}

/// A pod toleration, with Kubernetes' matching rules.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Toleration {
    /// Key; `None` with `Exists` tolerates every taint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Operator.
    #[serde(default)]
    pub operator: TolerationOperator,
    /// Value for `Equal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Effect; `None` matches every effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<TaintEffect>,
}

impl Toleration {
    /// Kubernetes' `ToleratesTaint`.
    pub fn tolerates(&self, taint: &Taint) -> bool {
        if self.effect.is_some_and(|e| e != taint.effect) {
            return false;
        }
        match self.operator {
            TolerationOperator::Exists => self.key.as_deref().is_none_or(|k| k.is_empty() || k == taint.key),
            TolerationOperator::Equal => {
                self.key.as_deref() == Some(taint.key.as_str())
                    && self.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or("")
            }
        }
    }
}

/// What an admin toleration rule applies to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RuleTarget {
    /// Jobs requesting this resource (`nvidia.com/a100`), or any of a domain (`nvidia.com/*`).
    Resource(String),
    /// Jobs in this queue or any queue below it.
    Queue(String),
}

impl RuleTarget {
    /// Whether a job in the queue whose path to the root is `queue_path` (the queue first),
    /// requesting `resources`, is one this rule is for.
    pub fn matches<'a>(&self, mut queue_path: impl Iterator<Item = &'a str>, resources: &ResourceList) -> bool {
        match self {
            RuleTarget::Queue(name) => queue_path.any(|q| q == name),
            RuleTarget::Resource(pattern) => resources.iter().any(|(name, quantity)| {
                quantity.milli() > 0
                    && match pattern.strip_suffix('*') {
                        Some(prefix) => name.starts_with(prefix),
                        None => name == pattern,
                    }
            }),
        }
    }
}

/// One admin rule as the core applies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TolerationRuleSpec {
    /// Which jobs.
    pub target: RuleTarget,
    /// What they tolerate.
    pub tolerations: Vec<Toleration>,
}

/// The tolerations of a job: those of every rule that matches it, in rule order, each once.
/// The same list is used at admission, in the watcher's snapshot and in the pod spec (it is
/// stored with the job when it is submitted).
pub fn job_tolerations(rules: &[TolerationRuleSpec], queue_path: &[&str], resources: &ResourceList) -> Vec<Toleration> {
    let mut out: Vec<Toleration> = Vec::new();
    for rule in rules {
        if rule.target.matches(queue_path.iter().copied(), resources) {
            for t in &rule.tolerations {
                if !out.contains(t) {
                    out.push(t.clone());
                }
            }
        }
    }
    out
}

/// At most this many tolerations in one rule.
pub const MAX_TOLERATIONS_PER_RULE: usize = 16;

/// What is wrong with a toleration of a rule, if anything (`None`: valid), with Kubernetes'
/// rules: a key is a qualified name (an optional DNS prefix and `/`, then up to 63 of
/// `[A-Za-z0-9._-]`, alphanumeric at both ends); `Equal` needs a key; `Exists` takes no value;
/// a value is a label value (up to 63, same characters).
pub fn toleration_problem(t: &Toleration) -> Option<&'static str> {
    if let Some(key) = t.key.as_deref().filter(|k| !k.is_empty())
        && !is_qualified_name(key)
    {
        return Some("key must be a qualified name such as nvidia.com/gpu");
    }
    match t.operator {
        TolerationOperator::Equal if t.key.as_deref().is_none_or(str::is_empty) => {
            Some("operator Equal needs a key (Exists with no key tolerates every taint)")
        }
        // Kubernetes reads an empty key with Exists as "every taint": every team's dedicated
        // nodes and the control plane's. A rule names what it opens.
        TolerationOperator::Exists if t.key.as_deref().is_none_or(str::is_empty) => {
            Some("a rule names the taint key it tolerates")
        }
        TolerationOperator::Exists if t.value.as_deref().is_some_and(|v| !v.is_empty()) => {
            Some("operator Exists takes no value")
        }
        _ => match t.value.as_deref() {
            Some(v) if !v.is_empty() && !is_name_part(v) => {
                Some("value must be up to 63 letters, digits, '-', '_' or '.', alphanumeric at both ends")
            }
            _ => None,
        },
    }
}

/// What is wrong with a rule's resource pattern, if anything: an accelerator name
/// (`domain/name`, as quotas name them) or a whole domain (`domain/*`).
pub fn resource_pattern_problem(pattern: &str) -> Option<&'static str> {
    // 253: what the store keeps.
    let ok = pattern.len() <= 253
        && match pattern.strip_suffix("/*") {
            Some(domain) => is_dns_subdomain(domain),
            None => pattern.contains('/') && is_qualified_name(pattern),
        };
    (!ok).then_some("must be an accelerator resource such as nvidia.com/a100, or a domain such as nvidia.com/*")
}

#[cfg(test)]
mod tests;
