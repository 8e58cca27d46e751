//! The names a queue write carries that the cluster will see: its own (a Kubernetes name) and
//! its capacity's resources. Pure; the users' and jobs' checks use the same rules.

use crate::field_rule::Rule;

/// A Kubernetes name (DNS-1123 label): 1–63 of `a-z 0-9 -`, starting and ending with a letter
/// or digit. Queue, job and task names all follow it, since each names a cluster object.
pub fn dns_label_problem(name: &str) -> Option<Rule> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() > 63 {
        return Some(Rule::length_between(1, 63));
    }
    let ok = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-';
    if !bytes.iter().all(ok) {
        return Some(Rule::fixed(
            "nameCharacters",
            "may contain only lowercase letters, digits and '-'",
        ));
    }
    if bytes[0] == b'-' || bytes[bytes.len() - 1] == b'-' {
        return Some(Rule::fixed("nameEnds", "must start and end with a letter or digit"));
    }
    None
}

/// A Kubernetes resource name: an optional DNS-subdomain prefix and `/`, then 1–63 of
/// `A-Z a-z 0-9 - _ .` starting and ending with a letter or digit (`cpu`, `nvidia.com/a100`).
pub fn resource_name_problem(name: &str) -> Option<Rule> {
    let (prefix, base) = match name.split_once('/') {
        Some((p, b)) => (Some(p), b),
        None => (None, name),
    };
    if let Some(prefix) = prefix
        && (prefix.is_empty()
            || prefix.len() > 253
            || !prefix.split('.').all(|label| dns_label_problem(label).is_none()))
    {
        return Some(Rule::fixed(
            "resourcePrefix",
            "the prefix before '/' must be a DNS subdomain",
        ));
    }
    let bytes = base.as_bytes();
    let ok = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
    if bytes.is_empty()
        || bytes.len() > 63
        || !bytes.iter().all(ok)
        || !bytes[0].is_ascii_alphanumeric()
        || !bytes[bytes.len() - 1].is_ascii_alphanumeric()
    {
        return Some(Rule::fixed(
            "resourceName",
            "must be a Kubernetes resource name such as cpu or nvidia.com/a100",
        ));
    }
    None
}
