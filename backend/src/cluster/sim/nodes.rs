//! The simulated cluster's nodes: read from the TOML file named by `ANTEROOM_SIM_NODES`, or the
//! built-in default cluster.
//!
//! ```toml
//! [[node]]
//! name = "gpu-a100-0"
//! cpu = "64"
//! memory = "512Gi"
//! accelerators = { "nvidia.com/a100" = "8" }
//! labels = { zone = "a" }            # optional
//! taints = []                        # optional: [{ key, value, effect }]
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anteroom_shared::scheduling::{Quantity, ResourceList};
use serde::Deserialize;

use super::state::SimNode;
use crate::cluster::ClusterError;
use crate::prequeue::Taint;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeFile {
    #[serde(default)]
    node: Vec<NodeEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeEntry {
    name: String,
    cpu: String,
    memory: String,
    #[serde(default)]
    accelerators: BTreeMap<String, String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    taints: Vec<Taint>,
}

/// The default cluster: two 8×A100 nodes, two 4×V100 nodes, one CPU-only node. The GPU nodes
/// carry the `nvidia.com/gpu` taint of a typical GPU pool, so every demo and test goes through
/// the toleration rules (the seeded rule lets jobs that request `nvidia.com/*` in).
pub const DEFAULT_NODES: &str = r#"
[[node]]
name = "gpu-a100-0"
cpu = "64"
memory = "512Gi"
accelerators = { "nvidia.com/a100" = "8" }
labels = { "nvidia.com/gpu.product" = "A100-SXM4-80GB", zone = "a" }
taints = [{ key = "nvidia.com/gpu", value = "present", effect = "NoSchedule" }]

[[node]]
name = "gpu-a100-1"
cpu = "64"
memory = "512Gi"
accelerators = { "nvidia.com/a100" = "8" }
labels = { "nvidia.com/gpu.product" = "A100-SXM4-80GB", zone = "a" }
taints = [{ key = "nvidia.com/gpu", value = "present", effect = "NoSchedule" }]

[[node]]
name = "gpu-v100-0"
cpu = "32"
memory = "256Gi"
accelerators = { "nvidia.com/v100" = "4" }
labels = { "nvidia.com/gpu.product" = "Tesla-V100-SXM2-32GB", zone = "b" }
taints = [{ key = "nvidia.com/gpu", value = "present", effect = "NoSchedule" }]

[[node]]
name = "gpu-v100-1"
cpu = "32"
memory = "256Gi"
accelerators = { "nvidia.com/v100" = "4" }
labels = { "nvidia.com/gpu.product" = "Tesla-V100-SXM2-32GB", zone = "b" }
taints = [{ key = "nvidia.com/gpu", value = "present", effect = "NoSchedule" }]

[[node]]
name = "cpu-0"
cpu = "64"
memory = "256Gi"
labels = { zone = "b" }
"#;

/// Reads the node file, or the default cluster when `path` is `None`.
pub fn load(path: Option<&Path>) -> Result<Vec<SimNode>, ClusterError> {
    match path {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .map_err(|e| ClusterError::Config(format!("ANTEROOM_SIM_NODES: cannot read {}: {e}", p.display())))?;
            parse(&text).map_err(|e| ClusterError::Config(format!("ANTEROOM_SIM_NODES ({}): {e}", p.display())))
        }
        None => Ok(parse(DEFAULT_NODES).expect("the default cluster parses")),
    }
}

/// Parses the TOML node format; an error names the node and the field.
pub fn parse(text: &str) -> Result<Vec<SimNode>, String> {
    let file: NodeFile = toml::from_str(text).map_err(|e| e.to_string())?;
    if file.node.is_empty() {
        return Err("no [[node]] entries".into());
    }
    let mut seen = BTreeSet::new();
    let mut nodes = Vec::with_capacity(file.node.len());
    for entry in file.node {
        if entry.name.is_empty() || !seen.insert(entry.name.clone()) {
            return Err(format!("node name `{}` is empty or repeated", entry.name));
        }
        let quantity = |field: &str, value: &str| -> Result<Quantity, String> {
            let q = Quantity::parse(value).map_err(|e| format!("node {}: {field}: {e}", entry.name))?;
            if q.milli() < 0 {
                return Err(format!("node {}: {field} must not be negative", entry.name));
            }
            Ok(q)
        };
        let mut allocatable = ResourceList::new();
        allocatable.insert("cpu", quantity("cpu", &entry.cpu)?);
        allocatable.insert("memory", quantity("memory", &entry.memory)?);
        for (name, value) in &entry.accelerators {
            if !name.contains('/') {
                return Err(format!(
                    "node {}: accelerator `{name}` must be a vendor-qualified resource name such as nvidia.com/a100",
                    entry.name
                ));
            }
            allocatable.insert(name.clone(), quantity(name, value)?);
        }
        nodes.push(SimNode {
            name: entry.name,
            allocatable,
            labels: entry.labels,
            taints: entry.taints,
            ready: true,
            schedulable: true,
        });
    }
    Ok(nodes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_cluster_has_two_a100_two_v100_and_one_cpu_node() {
        let nodes = load(None).unwrap();
        assert_eq!(nodes.len(), 5);
        let a100: Vec<_> = nodes
            .iter()
            .filter(|n| n.allocatable.get("nvidia.com/a100").is_positive())
            .collect();
        assert_eq!(a100.len(), 2);
        assert_eq!(
            a100[0].allocatable.get("nvidia.com/a100"),
            Quantity::parse("8").unwrap()
        );
        let v100 = nodes
            .iter()
            .filter(|n| n.allocatable.get("nvidia.com/v100").is_positive())
            .count();
        assert_eq!(v100, 2);
        assert!(nodes.iter().any(|n| n.name == "cpu-0" && n.allocatable.len() == 2));
    }

    #[test]
    fn the_binding_format_parses_labels_and_taints() {
        let nodes = parse(
            r#"
            [[node]]
            name = "gpu-a100-0"
            cpu = "64"
            memory = "512Gi"
            accelerators = { "nvidia.com/a100" = "8" }
            labels = { zone = "a" }
            taints = [{ key = "dedicated", value = "ml", effect = "NoSchedule" }]
            "#,
        )
        .unwrap();
        assert_eq!(nodes[0].labels["zone"], "a");
        assert_eq!(nodes[0].taints[0].key, "dedicated");
        assert_eq!(nodes[0].allocatable.get("memory"), Quantity::parse("512Gi").unwrap());
    }

    #[test]
    fn a_bad_quantity_or_unknown_field_names_the_node() {
        let err = parse("[[node]]\nname = \"n1\"\ncpu = \"lots\"\nmemory = \"1Gi\"\n").unwrap_err();
        assert!(err.contains("n1") && err.contains("cpu"), "{err}");
        let err = parse("[[node]]\nname = \"n1\"\ncpu = \"1\"\nmemory = \"1Gi\"\ngpus = 3\n").unwrap_err();
        assert!(err.contains("gpus"), "{err}");
        let err = parse("[[node]]\nname = \"n1\"\ncpu = \"1\"\nmemory = \"1Gi\"\naccelerators = { gpu = \"1\" }\n")
            .unwrap_err();
        assert!(err.contains("vendor-qualified"), "{err}");
    }
}
