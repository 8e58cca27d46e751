//! Kubernetes' name rules, in one place for every check that takes names the cluster will
//! read: toleration keys and values, resource patterns, volume and claim names.

/// An RFC 1123 label: 1–63 of `a-z 0-9 -`, alphanumeric at both ends (object names, the parts
/// of a DNS subdomain).
pub fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}

/// An RFC 1123 subdomain: dot-separated labels, at most 253 in all (claim names, the prefix of
/// a label key).
pub fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns_label)
}

/// The name part of a label key, or a label value: 1–63 of letters, digits, `-`, `_`, `.`,
/// alphanumeric at both ends.
pub fn is_name_part(s: &str) -> bool {
    let bytes = s.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// `prefix/name` or `name`, as label keys (and taint keys) are.
pub fn is_qualified_name(key: &str) -> bool {
    match key.rsplit_once('/') {
        Some((prefix, name)) => is_dns_subdomain(prefix) && is_name_part(name),
        None => is_name_part(key),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_kubernetes() {
        assert!(is_dns_label("a-100") && !is_dns_label("A100") && !is_dns_label("-a") && !is_dns_label(""));
        assert!(!is_dns_label(&"a".repeat(64)));
        assert!(is_dns_subdomain("nvidia.com") && !is_dns_subdomain("nvidia..com") && !is_dns_subdomain("Nvidia.com"));
        assert!(is_qualified_name("nvidia.com/gpu") && is_qualified_name("dedicated") && is_qualified_name("A_b.c"));
        assert!(!is_qualified_name("a/") && !is_qualified_name("/x") && !is_qualified_name("Bad Key"));
    }
}
