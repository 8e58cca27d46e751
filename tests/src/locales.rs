//! The locale files as flat maps (`"jobs.title" → text`), for the tests that read them
//! directly: the keys' parity across languages, the glossary's rejected words.

use std::collections::BTreeMap;

fn flatten(prefix: &str, v: &serde_json::Value, out: &mut BTreeMap<String, String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        serde_json::Value::String(s) => {
            out.insert(prefix.to_string(), s.clone());
        }
        other => panic!("{prefix}: not a string: {other}"),
    }
}

/// `i18n/<locale>.json`, its nested keys joined with dots (panics on a value that is not text:
/// every leaf of a locale file is a text).
pub fn load(locale: &str) -> BTreeMap<String, String> {
    let path = format!("{}/../i18n/{locale}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut out = BTreeMap::new();
    flatten("", &serde_json::from_str(&text).unwrap(), &mut out);
    out
}
