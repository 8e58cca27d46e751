//! Generates the i18n module from `../i18n/{en,zh,ja,ko}.json`: one `Key` per dotted key, a
//! string table per locale, and the `k!("dotted.key")` macro that turns a key into its index —
//! a key missing from the files is a compile error. The build also fails when the four files
//! do not have identical keys, a value is empty, or a key's `{placeholders}` differ between
//! languages, so no language can silently lag behind.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

const LOCALES: [&str; 4] = ["en", "zh", "ja", "ko"];

fn flatten(prefix: &str, value: &serde_json::Value, out: &mut BTreeMap<String, String>, file: &str) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out, file);
            }
        }
        serde_json::Value::String(s) => {
            out.insert(prefix.to_string(), s.clone());
        }
        other => panic!("{file}: `{prefix}` must be a string or an object, found {other}"),
    }
}

/// The `{name}` placeholders of a text, sorted.
fn placeholders(text: &str) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    let mut rest = text;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        match after.find('}') {
            Some(end) => {
                out.insert(after[..end].to_string());
                rest = &after[end + 1..];
            }
            None => break,
        }
    }
    out
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let dir = manifest.join("../i18n");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut tables: Vec<BTreeMap<String, String>> = Vec::new();
    for locale in LOCALES {
        let path = dir.join(format!("{locale}.json"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        let json: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()));
        let mut flat = BTreeMap::new();
        flatten("", &json, &mut flat, &format!("{locale}.json"));
        for (k, v) in &flat {
            assert!(!v.trim().is_empty(), "i18n/{locale}.json: `{k}` is empty");
        }
        tables.push(flat);
    }
    let keys: Vec<&String> = tables[0].keys().collect();
    for (i, table) in tables.iter().enumerate().skip(1) {
        let missing: Vec<_> = keys.iter().filter(|k| !table.contains_key(k.as_str())).collect();
        let extra: Vec<_> = table.keys().filter(|k| !tables[0].contains_key(k.as_str())).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "i18n/{}.json differs from en.json: missing {missing:?}, extra {extra:?}",
            LOCALES[i]
        );
    }

    // A placeholder (`{seconds}`) renamed or forgotten in one language would show raw or drop
    // a value: every key must have the same placeholders in all four.
    for k in &keys {
        let expected = placeholders(&tables[0][k.as_str()]);
        for (i, table) in tables.iter().enumerate().skip(1) {
            let found = placeholders(&table[k.as_str()]);
            assert!(
                found == expected,
                "i18n/{}.json: `{k}` has placeholders {found:?}, en.json has {expected:?}",
                LOCALES[i]
            );
        }
    }
    // A plural pair is `<name>.one` and `<name>.other`: one without the other is a mistake.
    for k in &keys {
        if let Some(stem) = k.strip_suffix(".one") {
            assert!(
                tables[0].contains_key(&format!("{stem}.other")),
                "`{k}` has no `{stem}.other`"
            );
        }
    }

    // The terminal client's texts (`cli.*`) are checked with the rest but not compiled into
    // the browser's WASM.
    let keys: Vec<&String> = keys.into_iter().filter(|k| !k.starts_with("cli.")).collect();

    let mut code = String::new();
    writeln!(
        code,
        "/// Number of translation keys.\npub const KEY_COUNT: usize = {};",
        keys.len()
    )
    .unwrap();
    for (i, locale) in LOCALES.iter().enumerate() {
        writeln!(code, "static TABLE_{}: [&str; KEY_COUNT] = [", locale.to_uppercase()).unwrap();
        for k in &keys {
            writeln!(code, "    {:?},", tables[i][k.as_str()]).unwrap();
        }
        code.push_str("];\n");
    }
    // The names, sorted (the keys come from a BTreeMap): for keys known only at run time,
    // such as `error.<code>` of an API answer.
    code.push_str("/// Every key's dotted name, sorted, indexed by `Key`.\nstatic KEY_NAMES: [&str; KEY_COUNT] = [\n");
    for k in &keys {
        writeln!(code, "    {k:?},").unwrap();
    }
    code.push_str("];\n");
    code.push_str("/// The string table of a locale, indexed by `Key`.\nfn table(locale: Locale) -> &'static [&'static str; KEY_COUNT] {\n    match locale {\n");
    for locale in LOCALES {
        let variant = format!("{}{}", locale[..1].to_uppercase(), &locale[1..]);
        writeln!(code, "        Locale::{variant} => &TABLE_{},", locale.to_uppercase()).unwrap();
    }
    code.push_str("    }\n}\n");
    code.push_str(
        "/// Turns a dotted key of `i18n/*.json` into a [`Key`]; an unknown key does not compile.\nmacro_rules! k {\n",
    );
    for (i, k) in keys.iter().enumerate() {
        writeln!(code, "    ({k:?}) => {{ $crate::i18n::Key({i}) }};").unwrap();
    }
    code.push_str("}\npub(crate) use k;\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo")).join("i18n_table.rs");
    std::fs::write(out, code).expect("write i18n table");
}
