//! Resource lists (`{"cpu": "8", "memory": "32Gi", "nvidia.com/a100": "1"}`), their exact
//! arithmetic, the resource domain of a job and the explicit-node rules of `spec/prequeue.md` §1.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use super::quantity::{Quantity, QuantityError};

/// Why a resource list could not be built or computed: the resource is named so the API can
/// point at the offending field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("resource {resource:?}: {source}")]
pub struct ResourceError {
    /// The resource name whose value failed.
    pub resource: String,
    /// What went wrong with its quantity.
    #[source]
    pub source: QuantityError,
}

/// A map from resource name to quantity, as Kubernetes' `ResourceList`.
///
/// A resource absent from the map counts as zero everywhere (requests, usage, free capacity);
/// the one exception is a *limit*, where an absent resource means "unlimited" — see
/// [`ResourceList::compare_to_limit`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(transparent)]
pub struct ResourceList(BTreeMap<String, Quantity>);

/// One resource compared against a limit: what a quota or capacity detail reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LimitComparison {
    /// The resource name.
    pub resource: String,
    /// The value compared (usage + request, or the request alone).
    pub value: Quantity,
    /// The limit it was compared with.
    pub limit: Quantity,
    /// True when `value > limit`.
    pub exceeded: bool,
}

impl ResourceList {
    /// An empty list (every resource zero).
    pub fn new() -> Self {
        ResourceList(BTreeMap::new())
    }

    /// Parses a map of quantity strings, naming the first resource whose value is invalid.
    pub fn parse_map<'a, I>(entries: I) -> Result<Self, ResourceError>
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        let mut list = ResourceList::new();
        for (name, value) in entries {
            let quantity = Quantity::parse(value).map_err(|source| ResourceError {
                resource: name.to_owned(),
                source,
            })?;
            list.0.insert(name.to_owned(), quantity);
        }
        Ok(list)
    }

    /// Builder-style insert, for fixtures and conversions.
    pub fn with(mut self, name: impl Into<String>, quantity: Quantity) -> Self {
        self.0.insert(name.into(), quantity);
        self
    }

    /// Sets one resource.
    pub fn insert(&mut self, name: impl Into<String>, quantity: Quantity) {
        self.0.insert(name.into(), quantity);
    }

    /// The quantity of a resource, zero when absent.
    pub fn get(&self, name: &str) -> Quantity {
        self.0.get(name).copied().unwrap_or(Quantity::ZERO)
    }

    /// The quantity of a resource if the list names it (limits: absent = unlimited).
    pub fn get_named(&self, name: &str) -> Option<Quantity> {
        self.0.get(name).copied()
    }

    /// Entries in resource-name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Quantity)> + '_ {
        self.0.iter().map(|(k, v)| (k.as_str(), *v))
    }

    /// Number of named resources.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when no resource is named.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// True when every resource is zero (an empty list included).
    pub fn is_zero(&self) -> bool {
        self.0.values().all(Quantity::is_zero)
    }

    /// The underlying map.
    pub fn as_map(&self) -> &BTreeMap<String, Quantity> {
        &self.0
    }

    /// `self += other`, resource by resource. On error `self` is left unchanged.
    pub fn add_assign_checked(&mut self, other: &ResourceList) -> Result<(), ResourceError> {
        *self = self.checked_add(other)?;
        Ok(())
    }

    /// `self + other`, resource by resource.
    pub fn checked_add(&self, other: &ResourceList) -> Result<ResourceList, ResourceError> {
        let mut out = self.clone();
        for (name, quantity) in &other.0 {
            let entry = out.0.entry(name.clone()).or_insert(Quantity::ZERO);
            *entry = entry.checked_add(*quantity).map_err(|source| ResourceError {
                resource: name.clone(),
                source,
            })?;
        }
        Ok(out)
    }

    /// `self += other` in place, clamping each sum into the quantity range instead of failing.
    /// For usage totals, where a clamped (enormous) value still exceeds every limit, which is
    /// the safe reading; allocates only for resources `self` did not name yet.
    ///
    /// A zero in `other` for a resource `self` does not name adds no entry: in a sum, absent
    /// and zero are the same, and a request full of zero-valued names (which any admission
    /// lets through) would otherwise carry them into every usage total built from it.
    /// Entries `self` already has are kept, zero or not.
    pub fn saturating_add_assign(&mut self, other: &ResourceList) {
        for (name, quantity) in &other.0 {
            match self.0.get_mut(name) {
                Some(value) => {
                    let format = if value.is_zero() {
                        quantity.format_kind()
                    } else {
                        value.format_kind()
                    };
                    *value = Quantity::from_milli_saturating(value.milli().saturating_add(quantity.milli()), format);
                }
                None if quantity.is_zero() => {}
                None => {
                    self.0.insert(name.clone(), *quantity);
                }
            }
        }
    }

    /// What is left of this list (a node's allocatable) after `used`: for each resource this
    /// list names, `self - used`, never below zero — an over-committed node has nothing free,
    /// not a negative amount. Resources only `used` names are left out.
    pub fn left_after(&self, used: &ResourceList) -> ResourceList {
        ResourceList(
            self.0
                .iter()
                .map(|(name, have)| {
                    let left = have.milli().saturating_sub(used.get(name).milli()).max(0);
                    (name.clone(), Quantity::from_milli_saturating(left, have.format_kind()))
                })
                .collect(),
        )
    }

    /// `self - other`, resource by resource (results may be negative).
    pub fn checked_sub(&self, other: &ResourceList) -> Result<ResourceList, ResourceError> {
        let mut out = self.clone();
        for (name, quantity) in &other.0 {
            let entry = out.0.entry(name.clone()).or_insert(Quantity::ZERO);
            *entry = entry.checked_sub(*quantity).map_err(|source| ResourceError {
                resource: name.clone(),
                source,
            })?;
        }
        Ok(out)
    }

    /// Every resource multiplied by `factor` (a task's replicas).
    pub fn checked_mul(&self, factor: i64) -> Result<ResourceList, ResourceError> {
        let mut out = ResourceList::new();
        for (name, quantity) in &self.0 {
            let product = quantity.checked_mul(factor).map_err(|source| ResourceError {
                resource: name.clone(),
                source,
            })?;
            out.0.insert(name.clone(), product);
        }
        Ok(out)
    }

    /// True when this list (capacity) covers `request`: for every resource the request needs
    /// (positive), `self >= request`. Resources the request does not need are ignored.
    pub fn covers(&self, request: &ResourceList) -> bool {
        request
            .0
            .iter()
            .all(|(name, need)| !need.is_positive() || self.get(name) >= *need)
    }

    /// What is missing for this list (available capacity) to cover `request`: for each resource
    /// where the request exceeds what is available, `request - available`. Empty when
    /// [`covers`](Self::covers) holds.
    pub fn deficit(&self, request: &ResourceList) -> ResourceList {
        let mut out = ResourceList::new();
        for (name, need) in &request.0 {
            let have = self.get(name);
            if need.is_positive() && *need > have {
                let missing = Quantity::from_milli_saturating(need.milli() - have.milli(), need.format_kind());
                out.0.insert(name.clone(), missing);
            }
        }
        out
    }

    /// Compares this list with a limit on every resource the limit names (an absent resource is
    /// unlimited), in resource-name order.
    pub fn compare_to_limit(&self, limit: &ResourceList) -> Vec<LimitComparison> {
        limit
            .0
            .iter()
            .map(|(name, lim)| {
                let value = self.get(name);
                LimitComparison {
                    resource: name.clone(),
                    value,
                    limit: *lim,
                    exceeded: value > *lim,
                }
            })
            .collect()
    }

    /// True when some resource the limit names is exceeded by this list.
    pub fn exceeds(&self, limit: &ResourceList) -> bool {
        limit.0.iter().any(|(name, lim)| self.get(name) > *lim)
    }

    /// The resource domain of this request (`spec/prequeue.md` §1).
    pub fn domain(&self) -> ResourceDomain {
        ResourceDomain::of(self)
    }
}

impl fmt::Display for ResourceList {
    /// `cpu=4, memory=16Gi` (for messages naming a request).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("{}");
        }
        for (i, (name, quantity)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{name}={quantity}")?;
        }
        Ok(())
    }
}

impl FromIterator<(String, Quantity)> for ResourceList {
    fn from_iter<T: IntoIterator<Item = (String, Quantity)>>(iter: T) -> Self {
        ResourceList(iter.into_iter().collect())
    }
}

impl From<BTreeMap<String, Quantity>> for ResourceList {
    fn from(map: BTreeMap<String, Quantity>) -> Self {
        ResourceList(map)
    }
}

/// True for extended resources (`vendor/name`, e.g. `nvidia.com/a100`, RDMA, vGPU): the names
/// that make up a resource domain and count as accelerators in summaries.
pub fn is_accelerator(name: &str) -> bool {
    name.contains('/')
}

/// The resource domain of a job: the sorted names of its non-zero resources containing `/`, or
/// `cpu-only` when there are none. Two jobs compete for the same scarce hardware only when
/// their domains relate, which is what the blocking rule keys on.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ResourceDomain {
    /// No accelerator resource: printed `cpu-only`.
    CpuOnly,
    /// The sorted accelerator resource names (never empty).
    Accelerators(Vec<String>),
}

impl ResourceDomain {
    /// The domain of a resource request.
    pub fn of(resources: &ResourceList) -> Self {
        // BTreeMap iteration is sorted, so the names come out in domain order.
        let names: Vec<String> = resources
            .0
            .iter()
            .filter(|(name, q)| is_accelerator(name) && !q.is_zero())
            .map(|(name, _)| name.clone())
            .collect();
        if names.is_empty() {
            ResourceDomain::CpuOnly
        } else {
            ResourceDomain::Accelerators(names)
        }
    }
}

impl fmt::Display for ResourceDomain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResourceDomain::CpuOnly => f.write_str("cpu-only"),
            ResourceDomain::Accelerators(names) => f.write_str(&names.join(",")),
        }
    }
}

impl Serialize for ResourceDomain {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Whether a timed-out job of domain `blocker` holds back a candidate of domain `candidate`:
/// a `cpu-only` blocker blocks only `cpu-only` candidates; any other blocker blocks candidates
/// of exactly its domain and all `cpu-only` candidates (CPU jobs would eat the CPU and memory
/// the accelerator job also needs).
pub fn domain_blocks(blocker: &ResourceDomain, candidate: &ResourceDomain) -> bool {
    match blocker {
        ResourceDomain::CpuOnly => *candidate == ResourceDomain::CpuOnly,
        ResourceDomain::Accelerators(_) => *candidate == ResourceDomain::CpuOnly || candidate == blocker,
    }
}

/// The nodes a job is pinned to. Serialized as a list of host names; the empty list means
/// unconstrained.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(from = "Vec<String>", into = "Vec<String>")]
pub enum NodeSet {
    /// No explicit node: the job may run anywhere.
    #[default]
    Any,
    /// Only these host names (never empty).
    Only(BTreeSet<String>),
}

impl NodeSet {
    /// A set from host names; no names means unconstrained.
    pub fn from_names<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let set: BTreeSet<String> = names
            .into_iter()
            .map(Into::into)
            .filter(|n: &String| !n.is_empty())
            .collect();
        if set.is_empty() {
            NodeSet::Any
        } else {
            NodeSet::Only(set)
        }
    }

    /// True when a job with this set may run on `node`.
    pub fn allows(&self, node: &str) -> bool {
        match self {
            NodeSet::Any => true,
            NodeSet::Only(set) => set.contains(node),
        }
    }

    /// True when unconstrained.
    pub fn is_any(&self) -> bool {
        matches!(self, NodeSet::Any)
    }

    /// Two jobs' node sets overlap when either is unconstrained or they share a host.
    pub fn overlaps(&self, other: &NodeSet) -> bool {
        match (self, other) {
            (NodeSet::Any, _) | (_, NodeSet::Any) => true,
            (NodeSet::Only(a), NodeSet::Only(b)) => {
                let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
                small.iter().any(|n| large.contains(n))
            }
        }
    }
}

impl From<Vec<String>> for NodeSet {
    fn from(names: Vec<String>) -> Self {
        NodeSet::from_names(names)
    }
}

impl From<NodeSet> for Vec<String> {
    fn from(set: NodeSet) -> Self {
        match set {
            NodeSet::Any => Vec::new(),
            NodeSet::Only(names) => names.into_iter().collect(),
        }
    }
}

/// Whether two jobs' explicit node sets overlap (either unconstrained, or a shared host).
pub fn nodes_overlap(a: &NodeSet, b: &NodeSet) -> bool {
    a.overlaps(b)
}

/// The scheduling shape of one task: what placement, resources and node rules need, without
/// the image or command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct TaskResources {
    /// Task name (`main`, `master`, `worker`, `ps`).
    pub name: String,
    /// Pods of this task; a gang needs all of them.
    pub replicas: u32,
    /// Requests of one replica.
    pub requests: ResourceList,
    /// Host names the task is pinned to; empty = unconstrained.
    #[serde(default)]
    pub node_names: Vec<String>,
}

/// Why a job's tasks cannot be summed into its resources. Each variant names the offending
/// field as the API reports it (`tasks[1].resources.cpu`), so a 422 can point at it.
///
/// A request is what a pod takes from a node; a negative one would give capacity back on paper
/// only (`cpu: 64` in one task and `cpu: -60` in another would be counted as 4 CPUs against
/// quotas while the pods reserve 64 on the nodes). So requests must be zero or more, and every
/// product and sum must stay inside the quantity range (quantities are exact integers of
/// milli-units: NaN or infinity cannot be written, and `1e400` fails to parse).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum TaskResourceError {
    /// A per-replica request below zero.
    #[error("{field}: {value} is negative; a request must be zero or more")]
    Negative {
        /// `tasks[i].resources.<name>`.
        field: String,
        /// The rejected request.
        value: Quantity,
    },
    /// `replicas × request`, or the job's sum over tasks, leaves the quantity range.
    #[error("{field}: {message}")]
    OutOfRange {
        /// `tasks[i].resources.<name>` of the task whose product or addition overflowed.
        field: String,
        /// The overflowing computation.
        message: String,
    },
}

impl TaskResourceError {
    /// The offending field (`tasks[i].resources.<name>`).
    pub fn field(&self) -> &str {
        match self {
            TaskResourceError::Negative { field, .. } | TaskResourceError::OutOfRange { field, .. } => field,
        }
    }
}

/// The API path of one task's request for one resource: `tasks[1].resources.cpu`.
pub fn task_resource_field(task: usize, resource: &str) -> String {
    format!("tasks[{task}].resources.{resource}")
}

/// The resources of a job: Σ over tasks of replicas × the task's requests, refusing negative
/// requests and sums out of range (see [`TaskResourceError`]). The one place a job's resources
/// are computed from its tasks, so nothing negative can enter usage, quotas or domains.
pub fn job_resources(tasks: &[TaskResources]) -> Result<ResourceList, TaskResourceError> {
    let mut total = ResourceList::new();
    for (i, task) in tasks.iter().enumerate() {
        for (name, request) in &task.requests.0 {
            if request.milli() < 0 {
                return Err(TaskResourceError::Negative {
                    field: task_resource_field(i, name),
                    value: *request,
                });
            }
            let out_of_range = |source: QuantityError| TaskResourceError::OutOfRange {
                field: task_resource_field(i, name),
                message: source.to_string(),
            };
            let product = request.checked_mul(i64::from(task.replicas)).map_err(out_of_range)?;
            let entry = total.0.entry(name.clone()).or_insert(Quantity::ZERO);
            *entry = entry.checked_add(product).map_err(out_of_range)?;
        }
    }
    Ok(total)
}

/// The explicit nodes of a job: the union of its tasks' node names, or unconstrained as soon as
/// one task is unconstrained (that task may land anywhere).
pub fn job_explicit_nodes(tasks: &[TaskResources]) -> NodeSet {
    let mut union = BTreeSet::new();
    for task in tasks {
        match NodeSet::from_names(task.node_names.iter().cloned()) {
            NodeSet::Any => return NodeSet::Any,
            NodeSet::Only(names) => union.extend(names),
        }
    }
    if union.is_empty() {
        NodeSet::Any
    } else {
        NodeSet::Only(union)
    }
}

/// A single-node job has exactly one task with one replica: the only kind preemption can make
/// room for (and the only kind of backfill job it may remove), since one node's deficit then
/// decides the outcome.
pub fn is_single_node(tasks: &[TaskResources]) -> bool {
    matches!(tasks, [task] if task.replicas == 1)
}

#[cfg(test)]
mod tests;

#[cfg(all(test, feature = "openapi"))]
mod openapi_tests {
    use super::*;
    use utoipa::PartialSchema;

    #[test]
    fn resource_lists_are_documented_as_maps_of_quantity_strings() {
        let schema = serde_json::to_value(ResourceList::schema()).expect("serializes");
        let text = schema.to_string();
        assert!(text.contains("additionalProperties"), "{text}");
        let quantity = serde_json::to_value(Quantity::schema()).expect("serializes");
        assert_eq!(quantity["type"], "string");
    }
}
