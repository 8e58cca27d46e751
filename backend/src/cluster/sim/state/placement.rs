//! Gang placement of a simulated job on the nodes' free capacity.

use std::collections::HashMap;

use anteroom_shared::scheduling::{NodeSet, ResourceList, TaskResources};

use super::SimPod;
use crate::cluster::JobSpec;
use crate::prequeue::{CapacityKind, NodeSnapshot, Toleration, node_accepts, place_gang};

/// Gang placement on free capacity, with the core's best-fit rule. `None` when the whole gang
/// does not fit now.
///
/// Each pod tolerates only its own task's taints. The core's `place_gang` takes one list of
/// tolerations for the whole job, so each task is pinned here to the nodes that accept *it*
/// (its own tolerations and node names), and the core is given the union, which accepts every
/// node a task was pinned to and so adds nothing.
pub(super) fn place(spec: &JobSpec, nodes: &[NodeSnapshot]) -> Option<Vec<SimPod>> {
    let mut tasks: Vec<TaskResources> = Vec::with_capacity(spec.tasks.len());
    for t in &spec.tasks {
        let allowed = NodeSet::from_names(t.node_names.iter().cloned());
        let accepting: Vec<String> = nodes
            .iter()
            .filter(|n| node_accepts(n, &allowed, &t.tolerations))
            .map(|n| n.name.clone())
            .collect();
        if accepting.is_empty() && t.replicas > 0 {
            // An empty pin list would mean "anywhere": no node takes this task, so no gang.
            return None;
        }
        tasks.push(TaskResources {
            name: t.name.clone(),
            replicas: t.replicas,
            requests: t.resources.clone(),
            node_names: accepting,
        });
    }
    let mut tolerations: Vec<Toleration> = Vec::new();
    for t in &spec.tasks {
        for tol in &t.tolerations {
            if !tolerations.contains(tol) {
                tolerations.push(tol.clone());
            }
        }
    }
    let assignments = place_gang(&tasks, &tolerations, nodes, CapacityKind::Free).ok()?;
    let requests: HashMap<&str, &ResourceList> = spec.tasks.iter().map(|t| (t.name.as_str(), &t.resources)).collect();
    Some(
        assignments
            .into_iter()
            .map(|a| SimPod {
                requests: requests.get(a.task.as_str()).map(|r| (*r).clone()).unwrap_or_default(),
                task: a.task,
                replica: a.replica,
                node: a.node,
            })
            .collect(),
    )
}
