//! Gang placement of a job's replicas on nodes (`spec/prequeue.md` §4 step 4).
//!
//! Admission asks "could this job ever run here?": every replica is placed on the nodes'
//! *allocatable* capacity with current usage ignored. The same code places on *free* capacity
//! for the simulated cluster. Rules: ready and schedulable nodes only, `NoSchedule`/`NoExecute`
//! taints need a toleration, explicit nodes are honoured, all replicas or none (gang); tasks are
//! placed biggest first, each replica on the best-fitting node.

use anteroom_shared::scheduling::{NodeSet, ResourceList, TaskResources};
use serde::Serialize;

use super::snapshot::{NodeSnapshot, TaintEffect, Toleration};

/// Which capacity of a node placement fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapacityKind {
    /// `allocatable`, ignoring what runs now: admission.
    Allocatable,
    /// `free`: what a pod could get right now (simulated cluster, preemption).
    Free,
}

/// Why no placement exists, naming the task and the replica that cannot be placed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
#[serde(rename_all = "camelCase")]
#[error("cannot place replica {replica}/{replicas} of task {task:?} with requests {request}: {cause}")]
pub struct PlacementError {
    /// The task.
    pub task: String,
    /// 1-based replica number that failed.
    pub replica: u32,
    /// Replicas of the task.
    pub replicas: u32,
    /// Requests of one replica.
    pub request: ResourceList,
    /// What went wrong.
    pub cause: PlacementFailure,
}

/// The two ways a replica fails to land.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PlacementFailure {
    /// No ready, schedulable, tolerated, allowed node has the capacity for even one replica.
    NoFeasibleNode,
    /// Feasible nodes exist but the earlier replicas of the gang used them up.
    InsufficientCapacity,
}

impl std::fmt::Display for PlacementFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PlacementFailure::NoFeasibleNode => "no ready, schedulable node that allows the task has room for it",
            PlacementFailure::InsufficientCapacity => "the other replicas of the gang leave no room for it",
        })
    }
}

/// One replica and the node it goes to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Assignment {
    /// Task name.
    pub task: String,
    /// 0-based replica index.
    pub replica: u32,
    /// Chosen node.
    pub node: String,
}

/// Whether a pod pinned to `nodes` with `tolerations` may be scheduled on `node` at all
/// (capacity aside): ready, schedulable, allowed by the explicit nodes, every repelling taint
/// tolerated.
pub fn node_accepts(node: &NodeSnapshot, nodes: &NodeSet, tolerations: &[Toleration]) -> bool {
    node.ready
        && node.schedulable
        && nodes.allows(&node.name)
        && node
            .taints
            .iter()
            .filter(|t| matches!(t.effect, TaintEffect::NoSchedule | TaintEffect::NoExecute))
            .all(|t| tolerations.iter().any(|tol| tol.tolerates(t)))
}

/// Fixed-point unit for placement scores (parts per million): the scores only order tasks and
/// nodes, and integers keep the order exact and deterministic.
const SCORE_UNIT: i128 = 1_000_000;

/// Places every replica of every task or fails naming the first replica that cannot be placed.
///
/// Tasks go biggest first (score = Σ request / largest capacity among its candidate nodes);
/// each replica goes to the node that, after taking it, is the most used over the requested
/// resources (best fit), ties to the node name. Assignments come back in placement order.
pub fn place_gang(
    tasks: &[TaskResources],
    tolerations: &[Toleration],
    nodes: &[NodeSnapshot],
    capacity: CapacityKind,
) -> Result<Vec<Assignment>, PlacementError> {
    // Only resources some task needs matter; index them densely.
    let mut names: Vec<&str> = Vec::new();
    for task in tasks {
        for (name, q) in task.requests.iter() {
            if q.is_positive() && !names.contains(&name) {
                names.push(name);
            }
        }
    }
    let cap_of = |node: &NodeSnapshot| -> Vec<i128> {
        let list = match capacity {
            CapacityKind::Allocatable => &node.allocatable,
            CapacityKind::Free => &node.free,
        };
        names.iter().map(|n| list.get(n).milli()).collect()
    };
    // Nodes in name order so equal scores resolve to the smallest name.
    let mut order: Vec<usize> = (0..nodes.len()).collect();
    order.sort_by(|&a, &b| nodes[a].name.cmp(&nodes[b].name));
    let total: Vec<Vec<i128>> = nodes.iter().map(cap_of).collect();
    let mut remaining = total.clone();

    struct Plan<'t> {
        task: &'t TaskResources,
        request: Vec<i128>,
        candidates: Vec<usize>,
        score: i128,
    }
    let mut plans: Vec<Plan<'_>> = Vec::with_capacity(tasks.len());
    for task in tasks.iter().filter(|t| t.replicas > 0) {
        let request: Vec<i128> = names.iter().map(|n| task.requests.get(n).milli().max(0)).collect();
        let pinned = NodeSet::from_names(task.node_names.iter().cloned());
        let candidates: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&i| node_accepts(&nodes[i], &pinned, tolerations))
            .filter(|&i| fits(&total[i], &request))
            .collect();
        if candidates.is_empty() {
            return Err(PlacementError {
                task: task.name.clone(),
                replica: 1,
                replicas: task.replicas,
                request: task.requests.clone(),
                cause: PlacementFailure::NoFeasibleNode,
            });
        }
        let mut score: i128 = 0;
        for (r, &need) in request.iter().enumerate() {
            let largest = candidates.iter().map(|&i| total[i][r]).max().unwrap_or(0);
            if need > 0 && largest > 0 {
                score = score.saturating_add(need.saturating_mul(SCORE_UNIT) / largest);
            }
        }
        plans.push(Plan {
            task,
            request,
            candidates,
            score,
        });
    }
    // Biggest first; the sort is stable, so equal scores keep the submitted task order.
    plans.sort_by_key(|p| std::cmp::Reverse(p.score));

    let mut assignments = Vec::new();
    for plan in &plans {
        for replica in 0..plan.task.replicas {
            let mut best: Option<(i128, usize)> = None;
            for &i in &plan.candidates {
                if !fits(&remaining[i], &plan.request) {
                    continue;
                }
                let mut used: i128 = 0;
                for (r, &need) in plan.request.iter().enumerate() {
                    if need > 0 && total[i][r] > 0 {
                        let after = total[i][r] - (remaining[i][r] - need);
                        used = used.saturating_add(after.saturating_mul(SCORE_UNIT) / total[i][r]);
                    }
                }
                // Candidates are in name order: a strictly better score is needed to move on.
                if best.is_none_or(|(s, _)| used > s) {
                    best = Some((used, i));
                }
            }
            let Some((_, chosen)) = best else {
                return Err(PlacementError {
                    task: plan.task.name.clone(),
                    replica: replica + 1,
                    replicas: plan.task.replicas,
                    request: plan.task.requests.clone(),
                    cause: PlacementFailure::InsufficientCapacity,
                });
            };
            for (r, &need) in plan.request.iter().enumerate() {
                remaining[chosen][r] -= need;
            }
            assignments.push(Assignment {
                task: plan.task.name.clone(),
                replica,
                node: nodes[chosen].name.clone(),
            });
        }
    }
    Ok(assignments)
}

fn fits(capacity: &[i128], request: &[i128]) -> bool {
    capacity
        .iter()
        .zip(request)
        .all(|(have, need)| *need <= 0 || have >= need)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prequeue::snapshot::{Taint, TolerationOperator};
    use crate::prequeue::tests::fixtures::{node, rl, task};

    #[test]
    fn a_job_that_fits_on_allocatable_is_placed() {
        let nodes = [node("n1", &[("cpu", "8"), ("memory", "32Gi")])];
        let placed = place_gang(
            &[task("main", 2, &[("cpu", "4")])],
            &[],
            &nodes,
            CapacityKind::Allocatable,
        )
        .expect("fits");
        assert_eq!(placed.len(), 2);
        assert!(placed.iter().all(|a| a.node == "n1"));
    }

    #[test]
    fn current_usage_is_ignored_at_admission() {
        let mut n = node("n1", &[("cpu", "8")]);
        n.free = rl(&[("cpu", "0")]);
        assert!(
            place_gang(
                &[task("main", 1, &[("cpu", "8")])],
                &[],
                &[n.clone()],
                CapacityKind::Allocatable
            )
            .is_ok()
        );
        assert!(place_gang(&[task("main", 1, &[("cpu", "8")])], &[], &[n], CapacityKind::Free).is_err());
    }

    #[test]
    fn a_gang_that_does_not_fit_names_the_task_and_the_replica() {
        let nodes = [node("n1", &[("cpu", "8")]), node("n2", &[("cpu", "8")])];
        let err = place_gang(
            &[task("worker", 3, &[("cpu", "6")])],
            &[],
            &nodes,
            CapacityKind::Allocatable,
        )
        .expect_err("third replica has no room");
        assert_eq!(err.task, "worker");
        assert_eq!(err.replica, 3);
        assert_eq!(err.cause, PlacementFailure::InsufficientCapacity);
        assert!(err.to_string().contains("replica 3/3 of task \"worker\""));
    }

    #[test]
    fn a_request_larger_than_any_node_has_no_feasible_node() {
        let nodes = [node("n1", &[("cpu", "8"), ("nvidia.com/a100", "4")])];
        let err = place_gang(
            &[task("main", 1, &[("nvidia.com/a100", "8")])],
            &[],
            &nodes,
            CapacityKind::Allocatable,
        )
        .expect_err("too big");
        assert_eq!(err.cause, PlacementFailure::NoFeasibleNode);
        assert_eq!(err.request.get("nvidia.com/a100").to_string(), "8");
    }

    #[test]
    fn unready_and_cordoned_nodes_are_not_used() {
        let mut unready = node("n1", &[("cpu", "8")]);
        unready.ready = false;
        let mut cordoned = node("n2", &[("cpu", "8")]);
        cordoned.schedulable = false;
        let err = place_gang(
            &[task("main", 1, &[("cpu", "1")])],
            &[],
            &[unready, cordoned],
            CapacityKind::Allocatable,
        )
        .expect_err("no usable node");
        assert_eq!(err.cause, PlacementFailure::NoFeasibleNode);
    }

    #[test]
    fn repelling_taints_need_a_toleration() {
        let mut tainted = node("gpu1", &[("cpu", "8")]);
        tainted.taints.push(Taint {
            key: "gpu".into(),
            value: None,
            effect: TaintEffect::NoSchedule,
        });
        let mut soft = node("soft", &[("cpu", "8")]);
        soft.taints.push(Taint {
            key: "x".into(),
            value: None,
            effect: TaintEffect::PreferNoSchedule,
        });
        let t = [task("main", 1, &[("cpu", "1")])];
        assert!(place_gang(&t, &[], std::slice::from_ref(&tainted), CapacityKind::Allocatable).is_err());
        let tol = Toleration {
            key: Some("gpu".into()),
            operator: TolerationOperator::Exists,
            ..Toleration::default()
        };
        assert!(place_gang(&t, &[tol], &[tainted], CapacityKind::Allocatable).is_ok());
        assert!(place_gang(&t, &[], &[soft], CapacityKind::Allocatable).is_ok());
    }

    #[test]
    fn explicit_nodes_restrict_placement() {
        let nodes = [node("n1", &[("cpu", "8")]), node("n2", &[("cpu", "2")])];
        let mut pinned = task("main", 1, &[("cpu", "4")]);
        pinned.node_names = vec!["n2".into()];
        let err = place_gang(&[pinned.clone()], &[], &nodes, CapacityKind::Allocatable).expect_err("n2 too small");
        assert_eq!(err.cause, PlacementFailure::NoFeasibleNode);
        pinned.node_names = vec!["n1".into()];
        let placed = place_gang(&[pinned], &[], &nodes, CapacityKind::Allocatable).expect("n1 fits");
        assert_eq!(placed[0].node, "n1");
    }

    #[test]
    fn each_replica_goes_to_the_best_fitting_node() {
        // n-big would fit but n-small ends up fuller: best fit picks n-small.
        let nodes = [node("n-big", &[("cpu", "64")]), node("n-small", &[("cpu", "4")])];
        let placed = place_gang(
            &[task("main", 1, &[("cpu", "4")])],
            &[],
            &nodes,
            CapacityKind::Allocatable,
        )
        .expect("fits");
        assert_eq!(placed[0].node, "n-small");
    }

    #[test]
    fn bigger_tasks_are_placed_first_so_the_gang_fits() {
        // Small first, best fit would put it on n1 (2 of 4 CPUs beats 2 of 8), leaving the big
        // task, which needs n1's only GPU, 2 CPUs short. Big first takes n1; small goes to n2.
        let nodes = [
            node("n1", &[("cpu", "4"), ("nvidia.com/a100", "1")]),
            node("n2", &[("cpu", "8")]),
        ];
        let tasks = [
            task("small", 1, &[("cpu", "2")]),
            task("big", 1, &[("cpu", "4"), ("nvidia.com/a100", "1")]),
        ];
        let placed = place_gang(&tasks, &[], &nodes, CapacityKind::Allocatable).expect("fits when big goes first");
        let at: Vec<(&str, &str)> = placed.iter().map(|a| (a.task.as_str(), a.node.as_str())).collect();
        assert_eq!(at, [("big", "n1"), ("small", "n2")]);
    }
}
