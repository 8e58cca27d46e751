//! Every error `code` the API can answer has a translation in each of the four languages
//! (`i18n/{en,zh,ja,ko}.json`, key `error.<code>`), so the UI never falls back to the English
//! `message` for a code it was never taught (issue 17, point 5).
//!
//! The codes are collected from the backend's own sources, where errors are made:
//! `ApiError::new(status, "code", …)` (and `Self::new` inside `ApiError`), `not_found("code", …)`,
//! `code: "code"`, and the arms of the `fn code(&self)` of the typed errors that become API
//! answers — plus every back-quoted code the OpenAPI document names for a 4xx or 5xx answer.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The quoted snake_case word at the start of `text` (after blanks), if any.
fn quoted_code(text: &str) -> Option<&str> {
    let text = text.trim_start().strip_prefix('"')?;
    let end = text.find('"')?;
    let code = &text[..end];
    (!code.is_empty() && code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')).then_some(code)
}

/// Codes made in one source file.
fn codes_in_source(text: &str, codes: &mut BTreeSet<String>) {
    // `…::new(StatusCode::X, "code"`: the code is the second argument.
    for (at, _) in text.match_indices("::new(") {
        let before = &text[..at];
        if !(before.ends_with("ApiError") || before.ends_with("Self")) {
            continue;
        }
        let args = &text[at + "::new(".len()..];
        if let Some(comma) = args.find(',')
            && args[..comma].trim().starts_with("StatusCode::")
            && let Some(code) = quoted_code(&args[comma + 1..])
        {
            codes.insert(code.to_owned());
        }
    }
    for pattern in ["not_found(", "code: "] {
        for (at, _) in text.match_indices(pattern) {
            if let Some(code) = quoted_code(&text[at + pattern.len()..]) {
                codes.insert(code.to_owned());
            }
        }
    }
    // The arms of `pub fn code(&self) -> &'static str { match self { X => "code", … } }`.
    for (at, _) in text.match_indices("pub fn code(&self) -> &'static str {") {
        let body = &text[at..];
        let end = body.find("\n    }").unwrap_or(body.len());
        for (arrow, _) in body[..end].match_indices("=> ") {
            if let Some(code) = quoted_code(&body[..end][arrow + 3..]) {
                codes.insert(code.to_owned());
            }
        }
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "tests") {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") && path.file_name().is_some_and(|n| n != "tests.rs") {
            out.push(path);
        }
    }
}

/// Every code: from the backend's sources (wait reasons are not errors: `reason.rs` is left
/// out) and from the OpenAPI document.
fn api_error_codes() -> BTreeSet<String> {
    let mut files = Vec::new();
    rust_files(&root().join("backend/src"), &mut files);
    let mut codes = BTreeSet::new();
    for file in files.iter().filter(|f| !f.ends_with("prequeue/reason.rs")) {
        codes_in_source(&std::fs::read_to_string(file).unwrap(), &mut codes);
    }
    let openapi: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("openapi.json")).unwrap()).unwrap();
    for op in openapi["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|p| p.as_object().unwrap().values())
    {
        let Some(responses) = op["responses"].as_object() else {
            continue;
        };
        for (status, answer) in responses {
            if status.parse::<u16>().is_ok_and(|s| s >= 400) {
                let text = answer["description"].as_str().unwrap_or_default();
                for word in text.split('`').skip(1).step_by(2) {
                    // Codes have an underscore or are one of the single words the backend
                    // also makes (collected above); other back-quoted words are field names.
                    if word.contains('_') && word.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') {
                        codes.insert(word.to_owned());
                    }
                }
            }
        }
    }
    codes
}

#[test]
fn the_collector_finds_codes_made_each_way() {
    let mut codes = BTreeSet::new();
    codes_in_source(
        r#"ApiError::new(StatusCode::CONFLICT, "queue_exists", "x");
           Self::new(
               StatusCode::SERVICE_UNAVAILABLE,
               "busy",
           );
           ApiError::not_found("job_not_found", "no");
           Self { code: "internal", };
           pub fn code(&self) -> &'static str {
               match self {
                   E::A => "queue_cycle",
                   E::B { .. } => "parent_not_found",
               }
           }"#,
        &mut codes,
    );
    let want = [
        "busy",
        "internal",
        "job_not_found",
        "parent_not_found",
        "queue_cycle",
        "queue_exists",
    ];
    assert_eq!(codes, want.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>());
}

#[test]
fn every_error_code_the_api_answers_is_translated_in_every_language() {
    let codes = api_error_codes();
    // The collector must see the codes it is known to make, or it proves nothing.
    for known in [
        "validation_failed",
        "unauthorized",
        "forbidden",
        "busy",
        "queue_cycle",
        "prequeue_full",
    ] {
        assert!(codes.contains(known), "the collector missed {known}: {codes:?}");
    }
    let mut missing = Vec::new();
    for locale in ["en", "zh", "ja", "ko"] {
        let path = root().join(format!("i18n/{locale}.json"));
        let table: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for code in &codes {
            if table["error"][code].as_str().is_none_or(str::is_empty) {
                missing.push(format!("{locale}: error.{code}"));
            }
        }
    }
    assert!(missing.is_empty(), "untranslated error codes:\n{}", missing.join("\n"));
}

/// The field rules made in one source file: `Rule::fixed("code", …)` and `Rule::coded("code", …)`
/// (no parameters) and
/// `Rule::with("code", …, json!({ "name": … }))` (the parameters its `json!` names).
fn field_rules_in_source(text: &str, rules: &mut std::collections::BTreeMap<String, BTreeSet<String>>) {
    for (pattern, with_params) in [("Rule::fixed(", false), ("Rule::coded(", false), ("Rule::with(", true)] {
        for (at, _) in text.match_indices(pattern) {
            let args = &text[at + pattern.len()..];
            let Some(code) = args.trim_start().strip_prefix('"').and_then(|a| a.split('"').next()) else {
                continue;
            };
            if code.is_empty() || !code.bytes().all(|b| b.is_ascii_alphabetic()) {
                continue;
            }
            let mut params = BTreeSet::new();
            // This call's own `json!({ … })`: the first one, before the next rule is made.
            let next_rule = args.find("Rule::").unwrap_or(args.len());
            if with_params && let Some(open) = args[..next_rule].find("json!({") {
                let body = &args[open..];
                let body = &body[..body.find("})").unwrap_or(body.len())];
                // The keys: quoted words followed by a colon (values may be strings too).
                let quoted: Vec<&str> = body.split('"').collect();
                for pair in quoted.windows(2).skip(1).step_by(2) {
                    if pair[1].trim_start().starts_with(':') {
                        params.insert(pair[0].to_owned());
                    }
                }
            }
            rules.entry(code.to_owned()).or_default().extend(params);
        }
    }
}

#[test]
fn every_field_rule_is_translated_in_every_language_with_the_values_it_is_given() {
    let mut files = Vec::new();
    rust_files(&root().join("backend/src"), &mut files);
    let mut rules = std::collections::BTreeMap::new();
    for file in &files {
        field_rules_in_source(&std::fs::read_to_string(file).unwrap(), &mut rules);
    }
    // The collector must see rules of both kinds, with their parameters, or it proves nothing.
    assert_eq!(rules.get("nameEnds").map(BTreeSet::len), Some(0), "{rules:?}");
    assert_eq!(
        rules.get("lengthBetween"),
        Some(&["max", "min"].iter().map(|s| s.to_string()).collect()),
        "{rules:?}"
    );
    let placeholders = |text: &str| -> BTreeSet<String> {
        text.split('{')
            .skip(1)
            .filter_map(|s| s.split_once('}').map(|(name, _)| name.to_owned()))
            .collect()
    };
    let mut wrong = Vec::new();
    for locale in ["en", "zh", "ja", "ko"] {
        let path = root().join(format!("i18n/{locale}.json"));
        let table: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for (code, params) in &rules {
            match table["fieldError"][code].as_str() {
                None | Some("") => wrong.push(format!("{locale}: fieldError.{code} is missing")),
                Some(text) => {
                    let named = placeholders(text);
                    if !named.is_subset(params) {
                        wrong.push(format!("{locale}: fieldError.{code} names {named:?}, given {params:?}"));
                    }
                    if locale == "en" && &named != params {
                        wrong.push(format!("en: fieldError.{code} names {named:?}, given {params:?}"));
                    }
                }
            }
        }
        // No text for a rule the server no longer makes.
        for code in table["fieldError"].as_object().into_iter().flat_map(|m| m.keys()) {
            if !rules.contains_key(code) {
                wrong.push(format!("{locale}: fieldError.{code} is made by no rule"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "field rules and their texts disagree:\n{}",
        wrong.join("\n")
    );
}
