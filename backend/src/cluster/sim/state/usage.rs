//! What the pods of running and terminating jobs hold on each node, kept as jobs start and
//! leave rather than summed from every job at each read: reading the nodes (every submission
//! does, and every placement pass) then costs the nodes, not the jobs (issue 25: Volcano keeps
//! node usage the same way).
//!
//! Sums are exact (`i128` milli-units, far from overflow for any number of pods), so taking a
//! pod away gives back exactly what adding it gave; [`SimState::node_snapshots`](super::SimState::node_snapshots)
//! clamps the free capacity at zero as summing from scratch did.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use anteroom_shared::scheduling::{Quantity, ResourceList};

use super::model::{SimJob, SimPhase};
use crate::prequeue::JobId;

/// Per node, per resource, the milli-units held by placed pods.
#[derive(Debug, Clone, Default)]
pub struct NodeUsage(HashMap<String, BTreeMap<String, i128>>);

impl NodeUsage {
    /// Summed from scratch: what the incremental usage must always equal.
    pub fn of_jobs(jobs: &BTreeMap<JobId, Arc<SimJob>>) -> Self {
        let mut usage = NodeUsage::default();
        for job in jobs.values() {
            usage.hold(job);
        }
        usage
    }

    /// Whether `job`'s pods hold capacity: they do while it runs and while it terminates.
    pub fn occupies(job: &SimJob) -> bool {
        matches!(job.phase, SimPhase::Running | SimPhase::Terminating)
    }

    /// Adds what `job`'s pods hold, if it [occupies](Self::occupies) its nodes.
    pub fn hold(&mut self, job: &SimJob) {
        self.apply(job, 1);
    }

    /// Takes away what `job`'s pods held, if it [occupies](Self::occupies) its nodes.
    pub fn release(&mut self, job: &SimJob) {
        self.apply(job, -1);
    }

    fn apply(&mut self, job: &SimJob, sign: i128) {
        if !Self::occupies(job) {
            return;
        }
        for pod in &job.pods {
            let node = match self.0.get_mut(&pod.node) {
                Some(node) => node,
                None => self.0.entry(pod.node.clone()).or_default(),
            };
            for (name, quantity) in pod.requests.iter() {
                let held = match node.get_mut(name) {
                    Some(held) => held,
                    None => node.entry(name.to_owned()).or_default(),
                };
                *held += sign * quantity.milli();
            }
        }
    }

    /// What is free on a node of `allocatable` named `node`: for each resource the node names,
    /// what is not held, never below zero (a node file may shrink a node under running pods).
    pub fn free_on(&self, node: &str, allocatable: &ResourceList) -> ResourceList {
        let Some(held) = self.0.get(node) else {
            return allocatable.clone();
        };
        let mut free = ResourceList::new();
        for (name, have) in allocatable.iter() {
            let left = (have.milli() - held.get(name).copied().unwrap_or(0)).max(0);
            free.insert(name, Quantity::from_milli_saturating(left, have.format_kind()));
        }
        free
    }
}

/// Equal when every node holds the same of every resource (a resource or node at zero and one
/// absent are the same: a released pod leaves zeros behind).
impl PartialEq for NodeUsage {
    fn eq(&self, other: &Self) -> bool {
        let covers = |a: &Self, b: &Self| {
            a.0.iter().all(|(node, held)| {
                held.iter()
                    .all(|(name, milli)| *milli == b.0.get(node).and_then(|h| h.get(name)).copied().unwrap_or(0))
            })
        };
        covers(self, other) && covers(other, self)
    }
}

impl Eq for NodeUsage {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::sim::state::SimPod;

    fn resources(cpu: &str, memory: &str) -> ResourceList {
        ResourceList::parse_map([("cpu", cpu), ("memory", memory)]).unwrap()
    }

    fn running(pods: &[(&str, &str)]) -> SimJob {
        SimJob {
            spec: crate::cluster::sim::state::tests::JobBuilder::new(1, anteroom_shared::scheduling::JobKind::Custom)
                .build(),
            phase: SimPhase::Running,
            created_at: chrono::DateTime::UNIX_EPOCH,
            started_at: None,
            finishes_at: None,
            gone_at: None,
            pods: pods
                .iter()
                .enumerate()
                .map(|(i, (node, cpu))| SimPod {
                    task: "main".into(),
                    replica: i as u32,
                    node: (*node).into(),
                    requests: resources(cpu, "1Gi"),
                })
                .collect(),
        }
    }

    #[test]
    fn releasing_what_was_held_gives_back_exactly_the_allocatable_and_free_is_never_negative() {
        let allocatable = resources("4", "8Gi");
        let mut usage = NodeUsage::default();
        let a = running(&[("n1", "1500m"), ("n1", "1")]);
        let big = running(&[("n1", "10")]);
        usage.hold(&a);
        assert_eq!(usage.free_on("n1", &allocatable), resources("1500m", "6Gi"));
        assert_eq!(usage.free_on("n2", &allocatable), allocatable, "a node nothing runs on");
        usage.hold(&big);
        assert_eq!(
            usage.free_on("n1", &allocatable),
            resources("0", "5Gi"),
            "over-committed: nothing free"
        );
        usage.release(&big);
        usage.release(&a);
        assert_eq!(usage.free_on("n1", &allocatable), allocatable);
        assert_eq!(usage, NodeUsage::default(), "zeros left behind equal nothing held");
        let mut pending = running(&[("n1", "1")]);
        pending.phase = SimPhase::Pending;
        usage.hold(&pending);
        assert_eq!(usage, NodeUsage::default(), "a pending job holds nothing");
    }
}
