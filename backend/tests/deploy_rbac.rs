//! The Kubernetes manifests in `deploy/base/`: each parses as its Kubernetes type with no field the
//! type does not know (a typo would otherwise be dropped silently by `kubectl apply`), the RBAC
//! rules grant exactly the requests the kube adapter sends — [`API_REQUESTS`], the table its
//! mock and fake-apiserver tests hold to the requests they see — nothing missing, nothing
//! extra, and [`REQUIRED_PERMISSIONS`] says the same, in the jobs namespace for what is
//! namespaced; the Deployment runs the kube cluster as a non-root user with its probes and
//! secrets wired; the jobs have a namespace of their own under Pod Security `baseline`; the
//! three PriorityClasses the ConfigMap names are shipped; only the ingress controller reaches
//! Anteroom's port; and the ConfigMap is a configuration Anteroom starts with, without warnings.

use std::collections::BTreeSet;
use std::path::PathBuf;

use anteroom::cluster::kube::{API_REQUESTS, PermissionScope, REQUIRED_PERMISSIONS};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, Subject};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

fn deploy_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/base")
}

/// The manifests of `deploy/base/` (kustomize's own `kustomization.yaml` aside), by name.
fn manifest_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(deploy_dir())
        .expect("deploy/base exists")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .filter(|p| p.file_name().is_some_and(|n| n != "kustomization.yaml"))
        .collect();
    files.sort();
    files
}

#[test]
fn the_kustomize_base_lists_every_manifest_of_deploy_base() {
    let text =
        std::fs::read_to_string(deploy_dir().join("kustomization.yaml")).expect("deploy/base/kustomization.yaml");
    let kustomization: Value = serde_norway::from_str(&text).expect("YAML");
    let listed: Vec<String> = kustomization["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| r.as_str().expect("a file name").to_owned())
        .collect();
    let present: Vec<String> = manifest_files()
        .iter()
        .map(|p| p.file_name().expect("a name").to_string_lossy().into_owned())
        .collect();
    assert_eq!(listed, present, "kustomization.yaml must name every manifest, in order");
}

/// Every YAML document of every `deploy/base/*.yaml`, with the file it came from.
fn documents() -> Vec<(String, Value)> {
    let files = manifest_files();
    assert!(!files.is_empty(), "no manifests in deploy/base/");
    let mut docs = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable manifest");
        let name = file.file_name().expect("file name").to_string_lossy().into_owned();
        for doc in serde_norway::Deserializer::from_str(&text) {
            let value = Value::deserialize(doc).unwrap_or_else(|e| panic!("{name}: invalid YAML: {e}"));
            if !value.is_null() {
                docs.push((name.clone(), value));
            }
        }
    }
    docs
}

/// The documents of one kind, as that Kubernetes type.
fn all_of<T: DeserializeOwned>(kind: &str) -> Vec<T> {
    documents()
        .into_iter()
        .filter(|(_, v)| v["kind"] == kind)
        .map(|(file, v)| serde_json::from_value(v).unwrap_or_else(|e| panic!("{file}: not a valid {kind}: {e}")))
        .collect()
}

fn one_of<T: DeserializeOwned>(kind: &str) -> T {
    let mut all = all_of::<T>(kind);
    assert_eq!(all.len(), 1, "expected exactly one {kind} in deploy/");
    all.remove(0)
}

/// Parses as `T` and serialises back to the same JSON: a field `T` does not know would be lost.
fn round_trips<T: DeserializeOwned + serde::Serialize>(file: &str, value: &Value) {
    let typed: T = serde_json::from_value(value.clone()).unwrap_or_else(|e| panic!("{file}: {e}"));
    let back = serde_json::to_value(&typed).expect("serialise");
    assert_eq!(
        &back, value,
        "{file}: {} has fields its type does not know",
        value["kind"]
    );
}

/// (apiGroup, resource, verb) triples of RBAC rules; wildcards, resource names and non-resource
/// URLs are refused outright (the adapter needs none).
fn triples(rules: &[PolicyRule]) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for rule in rules {
        assert!(rule.resource_names.is_none(), "resourceNames are not used: {rule:?}");
        assert!(
            rule.non_resource_urls.is_none(),
            "nonResourceURLs are not used: {rule:?}"
        );
        for group in rule.api_groups.iter().flatten() {
            for resource in rule.resources.iter().flatten() {
                for verb in &rule.verbs {
                    assert!(
                        ![group, resource, verb].iter().any(|s| s.contains('*')),
                        "wildcard in {rule:?}"
                    );
                    out.insert((group.clone(), resource.clone(), verb.clone()));
                }
            }
        }
    }
    out
}

/// What the adapter sends in `scope`, from the request table.
fn requested(scope: PermissionScope) -> BTreeSet<(String, String, String)> {
    API_REQUESTS
        .iter()
        .filter(|r| r.scope == scope)
        .map(|r| (r.api_group.to_owned(), r.resource.to_owned(), r.verb.to_owned()))
        .collect()
}

/// What the code documents as its RBAC rules in `scope`.
fn documented(scope: PermissionScope) -> BTreeSet<(String, String, String)> {
    REQUIRED_PERMISSIONS
        .iter()
        .filter(|p| p.scope == scope)
        .flat_map(|p| {
            p.verbs
                .iter()
                .map(|v| (p.api_group.to_owned(), p.resource.to_owned(), (*v).to_owned()))
        })
        .collect()
}

/// A value of the ConfigMap's data.
fn configured(key: &str) -> String {
    let config: ConfigMap = one_of("ConfigMap");
    config
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .cloned()
        .unwrap_or_else(|| panic!("{key} in the ConfigMap"))
}

fn configured_namespace() -> String {
    configured("ANTEROOM_JOBS_NAMESPACE")
}

/// The namespace Anteroom itself runs in (its Deployment's).
fn anteroom_namespace() -> String {
    let deployment: Deployment = one_of("Deployment");
    deployment.metadata.namespace.expect("the Deployment's namespace")
}

fn service_account_subject() -> Subject {
    let account: ServiceAccount = one_of("ServiceAccount");
    Subject {
        kind: "ServiceAccount".to_owned(),
        name: account.metadata.name.expect("name"),
        namespace: account.metadata.namespace,
        api_group: None,
    }
}

#[test]
fn deploy_manifests_parse_as_their_kubernetes_types_without_unknown_fields() {
    let mut kinds = BTreeSet::new();
    for (file, doc) in documents() {
        let kind = doc["kind"]
            .as_str()
            .unwrap_or_else(|| panic!("{file}: no kind"))
            .to_owned();
        match kind.as_str() {
            "Namespace" => round_trips::<Namespace>(&file, &doc),
            "ServiceAccount" => round_trips::<ServiceAccount>(&file, &doc),
            "ClusterRole" => round_trips::<ClusterRole>(&file, &doc),
            "ClusterRoleBinding" => round_trips::<ClusterRoleBinding>(&file, &doc),
            "Role" => round_trips::<Role>(&file, &doc),
            "RoleBinding" => round_trips::<RoleBinding>(&file, &doc),
            "ConfigMap" => round_trips::<ConfigMap>(&file, &doc),
            "Deployment" => round_trips::<Deployment>(&file, &doc),
            "Service" => round_trips::<Service>(&file, &doc),
            "PriorityClass" => round_trips::<PriorityClass>(&file, &doc),
            "NetworkPolicy" => round_trips::<NetworkPolicy>(&file, &doc),
            other => panic!("{file}: unexpected kind {other}"),
        }
        kinds.insert(kind);
    }
    let expected = [
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "Deployment",
        "Namespace",
        "NetworkPolicy",
        "PriorityClass",
        "Role",
        "RoleBinding",
        "Service",
        "ServiceAccount",
    ];
    assert_eq!(kinds, expected.iter().map(|k| (*k).to_owned()).collect());
}

#[test]
fn deploy_cluster_role_grants_exactly_the_cluster_wide_requests_the_kube_adapter_sends() {
    let role: ClusterRole = one_of("ClusterRole");
    let granted = triples(role.rules.as_deref().unwrap_or_default());
    assert_eq!(
        granted,
        requested(PermissionScope::Cluster),
        "deploy/base/20-rbac.yaml ClusterRole"
    );
    assert_eq!(documented(PermissionScope::Cluster), granted, "REQUIRED_PERMISSIONS");
}

#[test]
fn deploy_role_grants_exactly_the_namespaced_requests_in_the_configured_namespace() {
    let role: Role = one_of("Role");
    assert_eq!(role.metadata.namespace, Some(configured_namespace()));
    let granted = triples(role.rules.as_deref().unwrap_or_default());
    assert_eq!(
        granted,
        requested(PermissionScope::Namespace),
        "deploy/base/20-rbac.yaml Role"
    );
    assert_eq!(documented(PermissionScope::Namespace), granted, "REQUIRED_PERMISSIONS");
}

#[test]
fn deploy_bindings_give_both_roles_to_the_deployments_service_account() {
    let subject = service_account_subject();
    let deployment: Deployment = one_of("Deployment");
    let pod = deployment.spec.expect("spec").template.spec.expect("pod spec");
    assert_eq!(pod.service_account_name.as_ref(), Some(&subject.name));

    let cluster_binding: ClusterRoleBinding = one_of("ClusterRoleBinding");
    let cluster_role: ClusterRole = one_of("ClusterRole");
    assert_eq!(cluster_binding.role_ref.kind, "ClusterRole");
    assert_eq!(
        Some(&cluster_binding.role_ref.name),
        cluster_role.metadata.name.as_ref()
    );
    assert_eq!(cluster_binding.subjects, Some(vec![subject.clone()]));

    let binding: RoleBinding = one_of("RoleBinding");
    let role: Role = one_of("Role");
    assert_eq!(binding.role_ref.kind, "Role");
    assert_eq!(Some(&binding.role_ref.name), role.metadata.name.as_ref());
    assert_eq!(binding.metadata.namespace, role.metadata.namespace);
    assert_eq!(binding.subjects, Some(vec![subject]));
}

#[test]
fn deploy_deployment_runs_the_kube_cluster_as_non_root_with_probes_and_secrets() {
    let config: ConfigMap = one_of("ConfigMap");
    let data = config.data.expect("data");
    assert_eq!(data.get("ANTEROOM_CLUSTER").map(String::as_str), Some("kube"));

    let deployment: Deployment = one_of("Deployment");
    let pod = deployment.spec.expect("spec").template.spec.expect("pod spec");
    assert_eq!(
        pod.security_context.as_ref().and_then(|s| s.run_as_non_root),
        Some(true)
    );
    let container = &pod.containers[0];
    let security = container.security_context.as_ref().expect("container securityContext");
    assert_eq!(security.allow_privilege_escalation, Some(false));
    assert_eq!(security.read_only_root_filesystem, Some(true));

    let from_config = container
        .env_from
        .iter()
        .flatten()
        .any(|e| e.config_map_ref.as_ref().map(|c| c.name.as_str()) == config.metadata.name.as_deref());
    assert!(from_config, "the container reads the ConfigMap");
    for secret_env in ["ANTEROOM_JWT_SECRET", "ANTEROOM_DATABASE_URL"] {
        let var = container
            .env
            .iter()
            .flatten()
            .find(|e| e.name == secret_env)
            .unwrap_or_else(|| panic!("{secret_env} is set"));
        let from_secret = var.value_from.as_ref().and_then(|v| v.secret_key_ref.as_ref());
        assert!(
            from_secret.is_some() && var.value.is_none(),
            "{secret_env} comes from a Secret"
        );
    }
    let probe_path = |probe: Option<&k8s_openapi::api::core::v1::Probe>| {
        probe.and_then(|p| p.http_get.as_ref()).and_then(|h| h.path.clone())
    };
    assert_eq!(
        probe_path(container.liveness_probe.as_ref()).as_deref(),
        Some("/healthz")
    );
    assert_eq!(
        probe_path(container.readiness_probe.as_ref()).as_deref(),
        Some("/readyz")
    );
}

#[test]
fn deploy_jobs_run_in_a_namespace_of_their_own_under_pod_security_baseline_warned_at_restricted() {
    let jobs = configured_namespace();
    assert_ne!(jobs, anteroom_namespace(), "job pods apart from Anteroom");
    let namespaces: Vec<Namespace> = all_of("Namespace");
    let names: Vec<_> = namespaces.iter().filter_map(|n| n.metadata.name.clone()).collect();
    assert!(names.contains(&anteroom_namespace()), "{names:?}");
    let ns = namespaces
        .iter()
        .find(|n| n.metadata.name.as_ref() == Some(&jobs))
        .unwrap_or_else(|| panic!("no Namespace {jobs} in deploy/: {names:?}"));
    let labels = ns.metadata.labels.clone().unwrap_or_default();
    for (mode, level) in [("enforce", "baseline"), ("warn", "restricted"), ("audit", "restricted")] {
        assert_eq!(
            labels
                .get(&format!("pod-security.kubernetes.io/{mode}"))
                .map(String::as_str),
            Some(level),
            "{jobs}: {labels:?}"
        );
    }
    // Everything of Anteroom's own lives in its namespace; the jobs namespace holds only the
    // Role that lets Anteroom write there, its binding, the policy that keeps notebooks
    // reachable by Anteroom alone and the one that closes job pods' egress.
    for (file, doc) in documents() {
        if doc["metadata"]["namespace"] == jobs.as_str() {
            assert!(
                ["Role", "RoleBinding", "NetworkPolicy"].contains(&doc["kind"].as_str().unwrap_or_default()),
                "{file}: {} in the jobs namespace",
                doc["kind"]
            );
        }
    }
}

#[test]
fn deploy_ships_the_three_priority_classes_the_config_map_names() {
    let classes: Vec<PriorityClass> = all_of("PriorityClass");
    let class = |key: &str| {
        let name = configured(key);
        classes
            .iter()
            .find(|c| c.metadata.name.as_ref() == Some(&name))
            .unwrap_or_else(|| panic!("{key} names {name}, which deploy/ does not ship"))
            .clone()
    };
    let normal = class("ANTEROOM_KUBE_PRIORITY_CLASS_NORMAL");
    let backfill = class("ANTEROOM_KUBE_PRIORITY_CLASS_BACKFILL");
    let never = class("ANTEROOM_KUBE_PRIORITY_CLASS_NEVER");
    assert_eq!(classes.len(), 3);
    assert_eq!(never.preemption_policy.as_deref(), Some("Never"));
    assert_ne!(normal.preemption_policy.as_deref(), Some("Never"));
    assert_eq!(never.value, normal.value, "a Never job is ordered like any normal job");
    assert!(backfill.value < normal.value, "backfill jobs go first");
    assert!(classes.iter().all(|c| c.global_default != Some(true)));
}

#[test]
fn deploy_network_policy_lets_only_the_ingress_controller_reach_anteroom() {
    let mut policies: Vec<NetworkPolicy> = all_of::<NetworkPolicy>("NetworkPolicy")
        .into_iter()
        .filter(|p| p.metadata.namespace == Some(anteroom_namespace()))
        .collect();
    assert_eq!(policies.len(), 1, "one NetworkPolicy in Anteroom's namespace");
    let policy = policies.remove(0);
    let spec = policy.spec.expect("spec");
    let deployment: Deployment = one_of("Deployment");
    let template = deployment.spec.expect("spec").template;
    let pod_labels = template.metadata.and_then(|m| m.labels).unwrap_or_default();
    let selected = spec
        .pod_selector
        .clone()
        .expect("podSelector")
        .match_labels
        .unwrap_or_default();
    assert!(
        !selected.is_empty(),
        "the policy selects Anteroom's pods, not every pod"
    );
    assert!(
        selected.iter().all(|(k, v)| pod_labels.get(k) == Some(v)),
        "{selected:?} does not select {pod_labels:?}"
    );
    assert_eq!(spec.policy_types, Some(vec!["Ingress".to_owned()]));
    let http_port = template.spec.expect("pod spec").containers[0]
        .ports
        .iter()
        .flatten()
        .find(|p| p.name.as_deref() == Some("http"))
        .expect("the http port")
        .container_port;
    let rules = spec.ingress.expect("ingress rules (none would refuse everything)");
    assert!(!rules.is_empty());
    for rule in rules {
        let peers = rule.from.expect("a rule without `from` admits everyone");
        assert!(!peers.is_empty(), "an empty `from` admits everyone");
        for peer in peers {
            assert!(peer.ip_block.is_none(), "no address ranges: {peer:?}");
            let namespaces = peer.namespace_selector.expect("every peer names its namespace");
            assert!(
                namespaces.match_labels.is_some_and(|l| !l.is_empty()),
                "an empty namespaceSelector admits every namespace"
            );
        }
        let ports = rule.ports.expect("the rule names the port");
        assert!(!ports.is_empty());
        for port in ports {
            assert_eq!(port.port, Some(IntOrString::Int(http_port)));
        }
    }
}

/// Whether an egress rule of the jobs namespace lets a pod reach `ip` (any port) by address.
fn egress_reaches(rules: &[k8s_openapi::api::networking::v1::NetworkPolicyEgressRule], ip: std::net::IpAddr) -> bool {
    rules.iter().any(|rule| match &rule.to {
        // No `to`: every destination.
        None => true,
        Some(peers) => peers.iter().any(|peer| {
            peer.ip_block.as_ref().is_some_and(|block| {
                let cidr: ipnet::IpNet = block.cidr.parse().expect("a CIDR");
                cidr.contains(&ip)
                    && !block
                        .except
                        .iter()
                        .flatten()
                        .any(|e| e.parse::<ipnet::IpNet>().expect("a CIDR").contains(&ip))
            })
        }),
    })
}

#[test]
fn deploy_job_pods_reach_dns_their_own_namespace_and_the_internet_but_not_metadata_apiserver_or_anteroom() {
    let jobs = configured_namespace();
    let policies: Vec<NetworkPolicy> = all_of::<NetworkPolicy>("NetworkPolicy")
        .into_iter()
        .filter(|p| p.metadata.namespace.as_ref() == Some(&jobs))
        .filter(|p| {
            p.spec
                .as_ref()
                .and_then(|s| s.policy_types.as_ref())
                .is_some_and(|t| t.iter().any(|t| t == "Egress"))
        })
        .collect();
    assert_eq!(policies.len(), 1, "one egress policy for the jobs namespace");
    let spec = policies[0].spec.clone().expect("spec");
    let selector = spec.pod_selector.clone().unwrap_or_default();
    assert!(
        selector.match_labels.is_none() && selector.match_expressions.is_none(),
        "it selects every job pod"
    );
    let rules = spec.egress.expect("egress rules");
    // Not by address: the metadata service, loopback, the private networks (services, nodes,
    // the API server's service address 10.96.0.1 of most clusters), CGNAT, IPv6 ULA and
    // link-local.
    for blocked in [
        "169.254.169.254",
        "127.0.0.1",
        "10.96.0.1",
        "172.20.0.10",
        "192.168.1.20",
        "100.64.0.1",
        "fd00::1",
        "fe80::1",
        "::1",
    ] {
        assert!(
            !egress_reaches(&rules, blocked.parse().unwrap()),
            "{blocked} is reachable"
        );
    }
    // The internet is.
    for open in ["93.184.216.34", "151.101.0.223", "2606:4700::1111"] {
        assert!(egress_reaches(&rules, open.parse().unwrap()), "{open} is not reachable");
    }
    // Not by selector either: no peer names another namespace but the DNS one, and none
    // selects every namespace.
    let mut dns = false;
    let mut own_pods = false;
    for rule in &rules {
        for peer in rule.to.iter().flatten() {
            if let Some(ns) = &peer.namespace_selector {
                let labels = ns.match_labels.clone().unwrap_or_default();
                assert_eq!(
                    labels.get("kubernetes.io/metadata.name").map(String::as_str),
                    Some("kube-system"),
                    "a peer in another namespace: {peer:?}"
                );
                assert_ne!(labels.get("kubernetes.io/metadata.name"), Some(&anteroom_namespace()));
                let ports: Vec<_> = rule.ports.iter().flatten().filter_map(|p| p.port.clone()).collect();
                assert_eq!(ports, [IntOrString::Int(53), IntOrString::Int(53)], "DNS only");
                dns = true;
            } else if peer.pod_selector.is_some() && peer.ip_block.is_none() {
                own_pods = true;
            }
        }
    }
    assert!(dns, "DNS is allowed");
    assert!(own_pods, "a distributed job's pods reach each other");
}

#[test]
fn deploy_config_map_is_a_configuration_anteroom_starts_with_and_no_setting_is_deprecated() {
    let config: ConfigMap = one_of("ConfigMap");
    let data = config.data.expect("data");
    for key in data.keys() {
        assert!(
            anteroom::config::SETTINGS.iter().any(|s| s.env == key.as_str()),
            "{key} is not a setting"
        );
    }
    let env = |key: &str| data.get(key).cloned();
    let loaded = anteroom::config::Config::load(&anteroom::config::CliOverrides::default(), &env)
        .unwrap_or_else(|e| panic!("deploy/base/30-configmap.yaml: {e}"));
    assert_eq!(loaded.jobs_namespace, configured_namespace());
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

#[test]
fn deploy_notebooks_are_reachable_by_anteroom_s_pods_alone() {
    let jobs = configured_namespace();
    let policy = all_of::<NetworkPolicy>("NetworkPolicy")
        .into_iter()
        .find(|p| p.metadata.namespace.as_ref() == Some(&jobs))
        .expect("a NetworkPolicy in the jobs namespace");
    let spec = policy.spec.expect("spec");
    // It selects the notebook pods by the kind label the manifests put on every pod.
    let selector = serde_json::to_value(spec.pod_selector.expect("podSelector")).unwrap();
    assert_eq!(
        selector["matchExpressions"],
        serde_json::json!([{"key": "anteroom.io/kind", "operator": "In", "values": ["jupyter", "webide"]}])
    );
    assert_eq!(spec.policy_types, Some(vec!["Ingress".to_owned()]));
    // One peer: Anteroom's pods in Anteroom's namespace, nothing else.
    let ingress = spec.ingress.expect("ingress rules");
    assert_eq!(ingress.len(), 1);
    let peers = ingress[0].from.clone().expect("from");
    assert_eq!(peers.len(), 1);
    let peer = serde_json::to_value(&peers[0]).unwrap();
    assert_eq!(
        peer["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"],
        anteroom_namespace()
    );
    let deployment: Deployment = one_of("Deployment");
    let pod_labels = deployment
        .spec
        .expect("spec")
        .template
        .metadata
        .and_then(|m| m.labels)
        .unwrap_or_default();
    for (k, v) in peer["podSelector"]["matchLabels"].as_object().expect("a pod selector") {
        assert_eq!(
            pod_labels.get(k).map(String::as_str),
            v.as_str(),
            "the peer selects Anteroom's pods"
        );
    }
}
