//! The cluster's messages as causes a reader can be told in their own language: Kubernetes,
//! Volcano and the simulated cluster write English sentences ("0/5 nodes are available: 2
//! Insufficient nvidia.com/a100, 3 node(s) were unschedulable."); the messages Anteroom's
//! pages show are read into a code and its parameters here, once, on the server, and the UI
//! says them like every other reason. A message this does not know gives no cause: the reason
//! word still has its sentence, and admins still read the message itself.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What a cluster message says, as a code and its parameters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClusterCause {
    /// Which sentence.
    pub code: CauseCode,
    /// Its values by name (`node`, `container`, `exitCode`, `total`…), as text.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, String>,
    /// For `noNodeAvailable`: the nodes counted by why each refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refusals: Vec<NodeRefusal>,
}

/// The sentences a cluster message can be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub enum CauseCode {
    /// `0/N nodes are available: …`: no node can take the pod (`total`; `refusals`).
    NoNodeAvailable,
    /// Some nodes have room for one pod of the task, none for the gang at once (`fitting`,
    /// `total`, `task`).
    GangDoesNotFit,
    /// Volcano's PodGroup: the gang cannot start (`pending`, `minAvailable`).
    GangUnschedulable,
    /// Placed on a node (`node`).
    Scheduled,
    /// An image is being pulled (`image`).
    PullingImage,
    /// A container was created (`container`).
    ContainerCreated,
    /// A container started (`container`).
    ContainerStarted,
    /// A container is being stopped (`container`).
    ContainerStopping,
    /// A container exited (`exitCode`).
    ContainerExited,
    /// A failed container is restarted after a pause.
    RestartBackOff,
    /// The pod ran past its deadline.
    DeadlineExceeded,
    /// Stopped because another task of the job failed (`task`).
    StoppedWithTask,
    /// Deleted; its containers have until a time to exit (`until`, RFC 3339).
    DeletedWithGrace,
}

/// Nodes that refused a pod for one reason.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct NodeRefusal {
    /// How many nodes.
    pub count: u32,
    /// Why.
    pub why: RefusalKind,
    /// For `insufficient`: the resource (`cpu`, `nvidia.com/a100`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// For `taint`: the taints not tolerated (`key: value`), as every user reads them on the
    /// nodes (`GET /api/v1/cluster/nodes`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<String>,
}

/// Why nodes refused a pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub enum RefusalKind {
    /// Not ready.
    NotReady,
    /// Cordoned.
    Unschedulable,
    /// Not among the nodes the pod may use (its node names, affinity or selector).
    NodeSelector,
    /// A taint the pod does not tolerate.
    Taint,
    /// Not enough of a resource free.
    Insufficient,
    /// Another reason (the message says which).
    Other,
}

impl ClusterCause {
    fn new(code: CauseCode, params: &[(&str, &str)]) -> Self {
        ClusterCause {
            code,
            params: params.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
            refusals: Vec::new(),
        }
    }

    /// The cause a cluster message states, if it is one this knows.
    pub fn of_message(message: &str) -> Option<ClusterCause> {
        let m = message.trim();
        if let Some(cause) = no_node_available(m).or_else(|| gang(m)) {
            return Some(cause);
        }
        let one = |prefix: &str, code: CauseCode, name: &str| {
            let value = m.strip_prefix(prefix)?.trim().trim_matches('"');
            (!value.is_empty()).then(|| ClusterCause::new(code, &[(name, value)]))
        };
        if let Some(rest) = m.strip_prefix("Successfully assigned ") {
            let (_, node) = rest.rsplit_once(" to ")?;
            return Some(ClusterCause::new(CauseCode::Scheduled, &[("node", node.trim())]));
        }
        if let Some(code) = m.strip_prefix("Error: container exited with code ") {
            let code: i32 = code.trim().parse().ok()?;
            return Some(ClusterCause::new(
                CauseCode::ContainerExited,
                &[("exitCode", &code.to_string())],
            ));
        }
        if let Some(rest) = m.strip_prefix("stopped when task ") {
            let task = rest.strip_suffix(" failed")?;
            return Some(ClusterCause::new(CauseCode::StoppedWithTask, &[("task", task)]));
        }
        if let Some(rest) = m.strip_prefix("deleted; its containers have until ") {
            let until = rest.strip_suffix(" to exit")?;
            return Some(ClusterCause::new(CauseCode::DeletedWithGrace, &[("until", until)]));
        }
        if m.starts_with("Pod was active on the node longer than the specified deadline") {
            return Some(ClusterCause::new(CauseCode::DeadlineExceeded, &[]));
        }
        if m.starts_with("Back-off restarting failed container") {
            return Some(ClusterCause::new(CauseCode::RestartBackOff, &[]));
        }
        one("Pulling image ", CauseCode::PullingImage, "image")
            .or_else(|| one("Created container ", CauseCode::ContainerCreated, "container"))
            .or_else(|| one("Started container ", CauseCode::ContainerStarted, "container"))
            .or_else(|| one("Stopping container ", CauseCode::ContainerStopping, "container"))
    }
}

/// `0/N nodes are available: 2 Insufficient cpu, 3 node(s) were unschedulable.` (the
/// scheduler's; also `… are unavailable: …`, Volcano's), up to the sentence's end (what a
/// newer scheduler adds after it, `preemption: …`, is left out).
fn no_node_available(m: &str) -> Option<ClusterCause> {
    let rest = m.strip_prefix("0/")?;
    let (total, rest) = rest.split_once(' ')?;
    let total: u32 = total.parse().ok()?;
    let parts = rest
        .strip_prefix("nodes are available:")
        .or_else(|| rest.strip_prefix("nodes are unavailable:"))?;
    let sentence = first_sentence(parts);
    let refusals = split_top_level(sentence)
        .into_iter()
        .filter_map(refusal)
        .collect::<Vec<_>>();
    let mut cause = ClusterCause::new(CauseCode::NoNodeAvailable, &[("total", &total.to_string())]);
    cause.refusals = refusals;
    Some(cause)
}

/// The text up to the first `.` that ends a sentence outside braces (taint values may hold
/// dots: `{node.kubernetes.io/not-ready: }`).
fn first_sentence(text: &str) -> &str {
    let mut depth = 0i32;
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'{' => depth += 1,
            b'}' => depth -= 1,
            b'.' if depth == 0 && bytes.get(i + 1).is_none_or(|n| *n == b' ') => return &text[..i],
            _ => {}
        }
    }
    text
}

/// `a, b {c, d}, e` → `a`, `b {c, d}`, `e`.
fn split_top_level(text: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(text[start..].trim());
    out.retain(|p| !p.is_empty());
    out
}

/// `3 node(s) were unschedulable`, `2 Insufficient nvidia.com/a100`,
/// `1 node(s) had untolerated taint {gpu: true}`.
fn refusal(part: &str) -> Option<NodeRefusal> {
    let (count, why) = part.split_once(' ')?;
    let count: u32 = count.parse().ok()?;
    let mut refusal = NodeRefusal {
        count,
        why: RefusalKind::Other,
        resource: None,
        taints: Vec::new(),
    };
    if let Some(resource) = why.strip_prefix("Insufficient ") {
        refusal.why = RefusalKind::Insufficient;
        refusal.resource = Some(resource.trim().to_owned());
    } else if why.contains("node.kubernetes.io/not-ready") || why.contains("node.kubernetes.io/unreachable") {
        // Newer schedulers say a node is not ready through the taint the node controller sets.
        refusal.why = RefusalKind::NotReady;
    } else if why.contains("node.kubernetes.io/unschedulable") {
        refusal.why = RefusalKind::Unschedulable;
    } else if why.contains("taint") {
        refusal.why = RefusalKind::Taint;
        if let (Some(open), Some(close)) = (why.find('{'), why.rfind('}'))
            && open < close
        {
            refusal.taints = split_top_level(&why[open + 1..close])
                .into_iter()
                .map(str::to_owned)
                .collect();
        }
    } else if why.contains("not ready") {
        refusal.why = RefusalKind::NotReady;
    } else if why.contains("unschedulable") {
        refusal.why = RefusalKind::Unschedulable;
    } else if why.contains("didn't match")
        && !why.contains("anti-affinity")
        && (why.contains("affinity") || why.contains("selector"))
    {
        refusal.why = RefusalKind::NodeSelector;
    }
    Some(refusal)
}

/// The simulated cluster's gang message, and Volcano's PodGroup one:
/// `1/3 nodes have room for one pod of task main, but not for the whole gang at once: …`,
/// `3/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, 3 minAvailable…`.
fn gang(m: &str) -> Option<ClusterCause> {
    let (fraction, rest) = m.split_once(' ')?;
    let (first, total) = fraction.split_once('/')?;
    let (first, total): (u32, u32) = (first.parse().ok()?, total.parse().ok()?);
    if let Some(rest) = rest.strip_prefix("nodes have room for one pod of task ") {
        let (task, _) = rest.split_once(", but not for the whole gang")?;
        return Some(ClusterCause::new(
            CauseCode::GangDoesNotFit,
            &[
                ("fitting", &first.to_string()),
                ("total", &total.to_string()),
                ("task", task),
            ],
        ));
    }
    let rest = rest.strip_prefix("tasks in gang unschedulable:")?;
    let number_before = |word: &str| {
        first_sentence(rest)
            .split([',', ';'])
            .find_map(|p| p.trim().strip_suffix(word).and_then(|n| n.trim().parse::<u32>().ok()))
    };
    let pending = number_before(" Pending").unwrap_or(total);
    let min_available = number_before(" minAvailable").unwrap_or(total);
    Some(ClusterCause::new(
        CauseCode::GangUnschedulable,
        &[
            ("pending", &pending.to_string()),
            ("minAvailable", &min_available.to_string()),
        ],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param<'a>(c: &'a ClusterCause, name: &str) -> &'a str {
        c.params.get(name).map_or("", String::as_str)
    }

    #[test]
    fn the_schedulers_summary_counts_nodes_by_why() {
        let c = ClusterCause::of_message(
            "0/5 nodes are available: 1 node(s) had untolerated taint {team.example/owner: nlp, gpu: a100}, \
             2 Insufficient nvidia.com/a100, 1 node(s) were unschedulable, 1 node(s) didn't match Pod's node \
             affinity/selector. preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling.",
        )
        .unwrap();
        assert_eq!((c.code, param(&c, "total")), (CauseCode::NoNodeAvailable, "5"));
        let whys: Vec<(u32, RefusalKind)> = c.refusals.iter().map(|r| (r.count, r.why)).collect();
        assert_eq!(
            whys,
            [
                (1, RefusalKind::Taint),
                (2, RefusalKind::Insufficient),
                (1, RefusalKind::Unschedulable),
                (1, RefusalKind::NodeSelector)
            ]
        );
        assert_eq!(c.refusals[0].taints, ["team.example/owner: nlp", "gpu: a100"]);
        assert_eq!(c.refusals[1].resource.as_deref(), Some("nvidia.com/a100"));
    }

    #[test]
    fn volcanos_and_odd_summaries_still_read() {
        let c = ClusterCause::of_message("0/2 nodes are unavailable: 2 node(s) resource fit failed.").unwrap();
        assert_eq!(c.refusals[0].why, RefusalKind::Other);
        let c = ClusterCause::of_message("0/3 nodes are available: 3 node(s) were not ready.").unwrap();
        assert_eq!((c.refusals[0].count, c.refusals[0].why), (3, RefusalKind::NotReady));
        let c = ClusterCause::of_message(
            "0/4 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, \
             1 node(s) had untolerated taint {node.kubernetes.io/unschedulable: }, 2 node(s) didn't match pod \
             anti-affinity rules.",
        )
        .unwrap();
        let whys: Vec<RefusalKind> = c.refusals.iter().map(|r| r.why).collect();
        assert_eq!(
            whys,
            [RefusalKind::NotReady, RefusalKind::Unschedulable, RefusalKind::Other]
        );
        assert_eq!(
            ClusterCause::of_message("0/x nodes are available: 1 Insufficient cpu."),
            None
        );
        assert_eq!(ClusterCause::of_message("something else entirely"), None);
        assert_eq!(ClusterCause::of_message(""), None);
    }

    #[test]
    fn gangs_placement_and_containers_read() {
        let c = ClusterCause::of_message(
            "1/3 nodes have room for one pod of task main, but not for the whole gang at once: waiting for resources",
        )
        .unwrap();
        assert_eq!(
            (c.code, param(&c, "fitting"), param(&c, "total"), param(&c, "task")),
            (CauseCode::GangDoesNotFit, "1", "3", "main")
        );
        let c = ClusterCause::of_message(
            "3/4 tasks in gang unschedulable: pod group is not ready, 3 Pending, 2 minAvailable; Pending: 3 Unschedulable",
        )
        .unwrap();
        assert_eq!(
            (c.code, param(&c, "pending"), param(&c, "minAvailable")),
            (CauseCode::GangUnschedulable, "3", "2")
        );
        let c = ClusterCause::of_message("Successfully assigned jobs/ar-4-main-0 to gpu-1").unwrap();
        assert_eq!((c.code, param(&c, "node")), (CauseCode::Scheduled, "gpu-1"));
        let c = ClusterCause::of_message("Error: container exited with code 3").unwrap();
        assert_eq!((c.code, param(&c, "exitCode")), (CauseCode::ContainerExited, "3"));
        let c = ClusterCause::of_message("Pulling image \"pytorch/pytorch:2.4\"").unwrap();
        assert_eq!(
            (c.code, param(&c, "image")),
            (CauseCode::PullingImage, "pytorch/pytorch:2.4")
        );
        for (message, code) in [
            ("Started container main", CauseCode::ContainerStarted),
            ("Created container main", CauseCode::ContainerCreated),
            ("Stopping container main", CauseCode::ContainerStopping),
            ("stopped when task main failed", CauseCode::StoppedWithTask),
            (
                "deleted; its containers have until 2026-11-28T01:00:00Z to exit",
                CauseCode::DeletedWithGrace,
            ),
            (
                "Pod was active on the node longer than the specified deadline",
                CauseCode::DeadlineExceeded,
            ),
            (
                "Back-off restarting failed container main in pod x",
                CauseCode::RestartBackOff,
            ),
        ] {
            assert_eq!(
                ClusterCause::of_message(message).map(|c| c.code),
                Some(code),
                "{message}"
            );
        }
        assert_eq!(
            ClusterCause::of_message("Started container "),
            None,
            "no name, no cause"
        );
    }

    #[test]
    fn a_cause_survives_json_in_the_apis_words() {
        let c = ClusterCause::of_message("0/2 nodes are available: 2 Insufficient cpu.").unwrap();
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"code": "noNodeAvailable", "params": {"total": "2"},
                "refusals": [{"count": 2, "why": "insufficient", "resource": "cpu"}]})
        );
        assert_eq!(serde_json::from_value::<ClusterCause>(json).unwrap(), c);
    }
}
