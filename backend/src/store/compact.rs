//! The compact scheduling columns of `jobs`: a job's request as `name=milli` pairs and its
//! explicit nodes as comma-joined host names. The watcher's snapshot and the usage sums read
//! these for every occupying or waiting job, so they must decode without a JSON parser or a
//! quantity parser (`spec/prequeue.md` §5 step 1).
//!
//! Resource names cannot contain `=` or `,` (Kubernetes qualified names), and host names cannot
//! contain `,`, so both encodings are unambiguous.

use anteroom_shared::scheduling::{NodeSet, Quantity, QuantityFormat, ResourceList};

/// Why a compact column does not decode: the row was written by something other than
/// [`encode_request`] (a hand edit, a bug), and the job must not be scheduled on a guess.
#[derive(Debug, thiserror::Error)]
#[error("unreadable compact column {0:?}")]
pub struct CompactError(pub String);

/// `cpu=8000,memory=34359738368000,nvidia.com/a100=1000`; zero entries are left out.
pub fn encode_request(request: &ResourceList) -> String {
    let mut out = String::new();
    for (name, quantity) in request.iter().filter(|(_, q)| !q.is_zero()) {
        if !out.is_empty() {
            out.push(',');
        }
        out.push_str(name);
        out.push('=');
        out.push_str(&quantity.milli().to_string());
    }
    out
}

/// The inverse of [`encode_request`]. Memory-like names (`memory`, `ephemeral-storage`,
/// `hugepages-*`) come back in binary format so they print as `Gi`; the value is exact either
/// way.
pub fn decode_request(text: &str) -> Result<ResourceList, CompactError> {
    let mut list = ResourceList::new();
    if text.is_empty() {
        return Ok(list);
    }
    for entry in text.split(',') {
        let (name, milli) = entry.split_once('=').ok_or_else(|| CompactError(text.to_string()))?;
        let milli: i128 = milli.parse().map_err(|_| CompactError(text.to_string()))?;
        let format = if is_byte_resource(name) {
            QuantityFormat::BinarySi
        } else {
            QuantityFormat::DecimalSi
        };
        let quantity = Quantity::from_milli(milli, format).map_err(|_| CompactError(text.to_string()))?;
        list.insert(name, quantity);
    }
    Ok(list)
}

fn is_byte_resource(name: &str) -> bool {
    name == "memory" || name == "ephemeral-storage" || name.starts_with("hugepages-")
}

/// `node-a,node-b`, or the empty string for "anywhere".
pub fn encode_nodes(nodes: &NodeSet) -> String {
    match nodes {
        NodeSet::Any => String::new(),
        NodeSet::Only(names) => names.iter().map(String::as_str).collect::<Vec<_>>().join(","),
    }
}

/// The inverse of [`encode_nodes`].
pub fn decode_nodes(text: &str) -> NodeSet {
    if text.is_empty() {
        NodeSet::Any
    } else {
        NodeSet::from_names(text.split(',').map(str::to_string))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_survives_the_round_trip_exactly() {
        let request = ResourceList::parse_map([
            ("cpu", "500m"),
            ("memory", "16Gi"),
            ("nvidia.com/a100", "2"),
            ("zero", "0"),
        ])
        .unwrap();
        let text = encode_request(&request);
        assert_eq!(text, "cpu=500,memory=17179869184000,nvidia.com/a100=2000");
        let back = decode_request(&text).unwrap();
        assert_eq!(back.get("cpu").milli(), 500);
        assert_eq!(back.get("memory").to_string(), "16Gi");
        assert_eq!(back.get("nvidia.com/a100").to_string(), "2");
        assert!(back.get_named("zero").is_none());
        assert!(decode_request("").unwrap().is_empty());
    }

    #[test]
    fn a_broken_column_is_an_error_not_a_guess() {
        for bad in ["cpu", "cpu=x", "cpu=1,", "=5x"] {
            assert!(decode_request(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn node_sets_round_trip() {
        assert_eq!(decode_nodes(&encode_nodes(&NodeSet::Any)), NodeSet::Any);
        let only = NodeSet::from_names(["b".to_string(), "a".to_string()]);
        assert_eq!(encode_nodes(&only), "a,b");
        assert_eq!(decode_nodes("a,b"), only);
    }
}
