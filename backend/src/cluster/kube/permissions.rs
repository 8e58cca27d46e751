//! What the adapter may do in the cluster: the requests it sends ([`API_REQUESTS`]) and the
//! RBAC rules that grant exactly those ([`REQUIRED_PERMISSIONS`]), kept side by side so the
//! tests and `deploy/base/20-rbac.yaml` can hold each to the other.

/// Where a permission applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PermissionScope {
    /// Cluster-wide (a `ClusterRole`): nodes, queues, and pods of every namespace.
    Cluster,
    /// In the jobs namespace (`ANTEROOM_JOBS_NAMESPACE`) only (a `Role` there).
    Namespace,
}

/// One RBAC rule the adapter needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Permission {
    /// API group (`""` for the core group).
    pub api_group: &'static str,
    /// Resource (plural, as in RBAC rules).
    pub resource: &'static str,
    /// Verbs, sorted.
    pub verbs: &'static [&'static str],
    /// ClusterRole or namespaced Role.
    pub scope: PermissionScope,
    /// What the adapter does with it.
    pub why: &'static str,
}

/// Everything the adapter does in the cluster, as RBAC rules — the list the code's
/// documentation, `deploy/base/20-rbac.yaml` and the tests that compare them share. It is not
/// written from memory: `backend/tests/deploy_rbac.rs` checks it grants exactly the requests of
/// [`API_REQUESTS`], and the adapter's tests check that table against the requests the adapter
/// really sends.
///
/// Least privilege: reads that must see the whole cluster (nodes, queues, every pod's requests)
/// are cluster-wide; writes are namespaced wherever the object is (jobs, pods), so Anteroom
/// cannot touch other tenants' workloads; so are the reads about one job (its pods' states and
/// logs, its events), so other tenants' logs and events stay out of reach. The cluster-wide
/// writes are cordoning a node (`patch nodes`), an admin action of the API, and the Volcano
/// Queues mirroring Anteroom's (`mirror_queues`; Queues are cluster-scoped, and the adapter
/// changes or deletes only those labelled as its own — RBAC cannot say which by label). Nothing is granted for a feature not built yet
/// (the watcher's leader lease lives in the database).
pub const REQUIRED_PERMISSIONS: &[Permission] = &[
    Permission {
        api_group: "",
        resource: "nodes",
        verbs: &["list", "patch", "watch"],
        scope: PermissionScope::Cluster,
        why: "node reflector (capacity, labels, taints, readiness); cordon/uncordon",
    },
    Permission {
        api_group: "",
        resource: "pods",
        verbs: &["list", "watch"],
        scope: PermissionScope::Cluster,
        why: "pod reflector over all namespaces: every bound pod takes node capacity",
    },
    Permission {
        api_group: "scheduling.volcano.sh",
        resource: "queues",
        verbs: &["create", "delete", "get", "list", "update", "watch"],
        scope: PermissionScope::Cluster,
        why: "queue reflector: refuse a job whose Volcano queue does not exist or is closed; \
              mirror_queues: read a queue, create or replace the Volcano Queue mirroring an \
              Anteroom queue, delete it with its queue (only those labelled as Anteroom's)",
    },
    Permission {
        api_group: "batch.volcano.sh",
        resource: "jobs",
        verbs: &["create", "delete", "get", "list", "watch"],
        scope: PermissionScope::Namespace,
        why: "create/delete ar-<id>; get to check it is ours (after 409, before delete); watch for status",
    },
    Permission {
        api_group: "",
        resource: "pods",
        verbs: &["delete", "get", "list", "patch"],
        scope: PermissionScope::Namespace,
        why: "give a deleted job's pods exactly the preemption grace period; mark a job's pods \
              volcano.sh/preemptable as its lock and minimum runtime say; list a job's pods with \
              their full states, and get one to check it is the job's before reading its log",
    },
    Permission {
        api_group: "",
        resource: "pods/log",
        verbs: &["get"],
        scope: PermissionScope::Namespace,
        why: "a job's pod log, as it is and followed",
    },
    Permission {
        api_group: "",
        resource: "events",
        verbs: &["list"],
        scope: PermissionScope::Namespace,
        why: "the events of a job's pods, its PodGroup and its Volcano Job (why it is pending or failed)",
    },
];

/// One kind of request the adapter sends: an RBAC verb on a resource, where, and which code
/// path sends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ApiRequest {
    /// RBAC verb (`get`, `list`, `watch`, `create`, `patch`, `delete`).
    pub verb: &'static str,
    /// API group (`""` for the core group).
    pub api_group: &'static str,
    /// Resource (plural).
    pub resource: &'static str,
    /// Cluster-wide path (`/api/v1/pods`) or namespaced (`/api/v1/namespaces/<ns>/pods/…`).
    pub scope: PermissionScope,
    /// The code that sends it.
    pub sent_by: &'static str,
}

const fn request(
    verb: &'static str,
    api_group: &'static str,
    resource: &'static str,
    scope: PermissionScope,
    sent_by: &'static str,
) -> ApiRequest {
    ApiRequest {
        verb,
        api_group,
        resource,
        scope,
        sent_by,
    }
}

/// Every kind of request the adapter sends, one row per (verb, resource, scope). The adapter's
/// tests hold it to the truth from both sides: every request a mock or fake-apiserver test sees
/// must be a row here, and one test drives every code path and must see every row. RBAC is
/// derived from it (`backend/tests/deploy_rbac.rs`), so a new request without a grant — or a
/// grant without a request — fails a test.
pub const API_REQUESTS: &[ApiRequest] = &[
    request("list", "", "nodes", PermissionScope::Cluster, "node reflector"),
    request("watch", "", "nodes", PermissionScope::Cluster, "node reflector"),
    request(
        "patch",
        "",
        "nodes",
        PermissionScope::Cluster,
        "KubeApi::set_node_schedulable",
    ),
    request("list", "", "pods", PermissionScope::Cluster, "pod reflector"),
    request("watch", "", "pods", PermissionScope::Cluster, "pod reflector"),
    request("delete", "", "pods", PermissionScope::Namespace, "KubeApi::delete_job"),
    request("list", "", "pods", PermissionScope::Namespace, "KubeApi::job_pods"),
    request(
        "get",
        "",
        "pods",
        PermissionScope::Namespace,
        "KubeApi::pod_log and KubeApi::follow_pod_log, checking the pod is the job's",
    ),
    request(
        "get",
        "",
        "pods/log",
        PermissionScope::Namespace,
        "KubeApi::pod_log, KubeApi::follow_pod_log",
    ),
    request("list", "", "events", PermissionScope::Namespace, "KubeApi::job_pods"),
    request(
        "patch",
        "",
        "pods",
        PermissionScope::Namespace,
        "KubeApi::set_pods_preemptable",
    ),
    request(
        "list",
        "scheduling.volcano.sh",
        "queues",
        PermissionScope::Cluster,
        "queue reflector",
    ),
    request(
        "watch",
        "scheduling.volcano.sh",
        "queues",
        PermissionScope::Cluster,
        "queue reflector",
    ),
    request(
        "get",
        "scheduling.volcano.sh",
        "queues",
        PermissionScope::Cluster,
        "KubeApi::mirror_queue and KubeApi::delete_mirrored_queue, reading what is there first",
    ),
    request(
        "create",
        "scheduling.volcano.sh",
        "queues",
        PermissionScope::Cluster,
        "KubeApi::mirror_queue, KubeApi::create_missing_queue",
    ),
    request(
        "update",
        "scheduling.volcano.sh",
        "queues",
        PermissionScope::Cluster,
        "KubeApi::mirror_queue (replace)",
    ),
    request(
        "delete",
        "scheduling.volcano.sh",
        "queues",
        PermissionScope::Cluster,
        "KubeApi::delete_mirrored_queue",
    ),
    request(
        "create",
        "batch.volcano.sh",
        "jobs",
        PermissionScope::Namespace,
        "KubeApi::create_job",
    ),
    request(
        "get",
        "batch.volcano.sh",
        "jobs",
        PermissionScope::Namespace,
        "KubeApi::create_job after 409; KubeApi::delete_job before deleting",
    ),
    request(
        "delete",
        "batch.volcano.sh",
        "jobs",
        PermissionScope::Namespace,
        "KubeApi::delete_job",
    ),
    request(
        "list",
        "batch.volcano.sh",
        "jobs",
        PermissionScope::Namespace,
        "job reflector",
    ),
    request(
        "watch",
        "batch.volcano.sh",
        "jobs",
        PermissionScope::Namespace,
        "job reflector",
    ),
];
