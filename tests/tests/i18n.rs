//! The four locale files must carry the same keys, none of them empty.

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

fn load(locale: &str) -> BTreeMap<String, String> {
    let path = format!("{}/../i18n/{locale}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut out = BTreeMap::new();
    flatten("", &serde_json::from_str(&text).unwrap(), &mut out);
    out
}

#[test]
fn the_four_locale_files_have_identical_keys_and_no_empty_value() {
    let en = load("en");
    assert!(en.len() > 20);
    for locale in ["zh", "ja", "ko"] {
        let other = load(locale);
        let missing: Vec<_> = en.keys().filter(|k| !other.contains_key(*k)).collect();
        let extra: Vec<_> = other.keys().filter(|k| !en.contains_key(*k)).collect();
        assert!(missing.is_empty(), "{locale}.json lacks {missing:?}");
        assert!(extra.is_empty(), "{locale}.json has keys en.json lacks: {extra:?}");
        for (k, v) in &other {
            assert!(!v.trim().is_empty(), "{locale}.json: {k} is empty");
        }
    }
    for (k, v) in &en {
        assert!(!v.trim().is_empty(), "en.json: {k} is empty");
    }
}

#[test]
fn every_key_the_ui_uses_exists() {
    // The frontend's build fails on an unknown key already; this catches it without building
    // the WASM client.
    let en = load("en");
    let src = format!("{}/../frontend/src", env!("CARGO_MANIFEST_DIR"));
    let mut stack = vec![std::path::PathBuf::from(src)];
    let mut used = 0;
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        for (i, _) in text.match_indices("k!(\"") {
            let rest = &text[i + 4..];
            let key = &rest[..rest.find('"').unwrap()];
            assert!(en.contains_key(key), "{}: unknown i18n key {key}", p.display());
            used += 1;
        }
    }
    assert!(used > 10, "found the keys used by the UI");
}
