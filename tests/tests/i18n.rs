//! The four locale files must carry the same keys, none of them empty.

use anteroom_tests::locales::load;

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

/// The `{names}` of a text.
fn placeholders(text: &str) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    let mut rest = text;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('}') else { break };
        out.insert(after[..end].to_string());
        rest = &after[end + 1..];
    }
    out
}

/// One `tf(KEY, &[("name", …), …])` call of the sources: where, the key, the names passed.
#[derive(Debug)]
struct Call {
    at: String,
    key: String,
    names: std::collections::BTreeSet<String>,
}

/// The `t` and `tf` calls with a literal key (`k!("…")` in the UI, `"…"` in `ar`) and a literal list
/// of arguments; the count of the others (a key or a list held in a variable), which cannot be
/// checked from the text.
fn tf_calls(dir: &std::path::Path) -> (Vec<Call>, usize) {
    let (mut calls, mut unchecked) = (Vec::new(), 0);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        if p.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        // A text read without arguments (`t(KEY)`) passes none.
        for (i, _) in text.match_indices(".t(") {
            let rest = &text[i + 3..];
            let key = if let Some(r) = rest.strip_prefix("k!(\"") {
                &r[..r.find('"').unwrap()]
            } else if let Some(r) = rest.strip_prefix('"') {
                &r[..r.find('"').unwrap()]
            } else {
                continue;
            };
            calls.push(Call {
                at: format!("{}:{}", p.display(), text[..i].matches('\n').count() + 1),
                key: key.to_owned(),
                names: Default::default(),
            });
        }
        for (i, _) in text.match_indices(".tf(") {
            let line = text[..i].matches('\n').count() + 1;
            let at = format!("{}:{line}", p.display());
            let rest = text[i + 4..].trim_start();
            let (key, rest) = if let Some(r) = rest.strip_prefix("k!(\"") {
                let end = r.find('"').unwrap();
                (&r[..end], r[end + 1..].trim_start().strip_prefix(')').unwrap_or(""))
            } else if let Some(r) = rest.strip_prefix('"') {
                let end = r.find('"').unwrap();
                (&r[..end], &r[end + 1..])
            } else {
                unchecked += 1;
                continue;
            };
            let Some(list) = rest.trim_start().strip_prefix(',').map(str::trim_start) else {
                unchecked += 1;
                continue;
            };
            let Some(names) = arg_names(list) else {
                unchecked += 1;
                continue;
            };
            calls.push(Call {
                at,
                key: key.to_owned(),
                names,
            });
        }
        // A plural pair (`tp(ONE, OTHER, n, &[…])`): both texts get the list and `{count}`.
        for (i, _) in text.match_indices(".tp(") {
            let at = format!("{}:{}", p.display(), text[..i].matches('\n').count() + 1);
            let rest = call_arguments(text[i + 4..].trim_start());
            let keys: Vec<&str> = rest
                .split("k!(\"")
                .skip(1)
                .take(2)
                .filter_map(|r| r.find('"').map(|end| &r[..end]))
                .collect();
            let list = rest.find("&[").map(|j| &rest[j..]);
            let (true, Some(Some(mut names))) = (keys.len() == 2 && rest.starts_with("k!(\""), list.map(arg_names))
            else {
                unchecked += 1;
                continue;
            };
            names.insert("count".to_owned());
            for key in keys {
                calls.push(Call {
                    at: at.clone(),
                    key: key.to_owned(),
                    names: names.clone(),
                });
            }
        }
    }
    (calls, unchecked)
}

/// Where the bracket `close` that closes one already open sits in `text` (brackets inside
/// strings skipped), if it does.
fn closing(text: &str, open: char, close: char) -> Option<usize> {
    let (mut depth, mut in_string, mut escaped) = (1, false, false);
    for (j, c) in text.char_indices() {
        match (in_string, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, '\\') => escaped = true,
            (true, false, '"') => in_string = false,
            (true, ..) => {}
            (false, _, '"') => in_string = true,
            (false, _, c) if c == open => depth += 1,
            (false, _, c) if c == close => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

/// The text of a call's arguments: `text` (what follows its opening parenthesis) up to the
/// parenthesis that closes it.
fn call_arguments(text: &str) -> &str {
    &text[..closing(text, '(', ')').unwrap_or(text.len())]
}

/// The names of a literal argument list `&[("name", value), …]` (strings skipped whole), or
/// `None` when `list` does not start with one.
fn arg_names(list: &str) -> Option<std::collections::BTreeSet<String>> {
    let list = list.strip_prefix("&[")?;
    let end = closing(list, '[', ']').unwrap_or(list.len());
    let list = &list[..end];
    let mut names = std::collections::BTreeSet::new();
    for (j, _) in list.match_indices("(\"") {
        let r = &list[j + 2..];
        let name_end = r.find('"').unwrap();
        let name = &r[..name_end];
        if !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && r[name_end + 1..].trim_start().starts_with(',')
        {
            names.insert(name.to_owned());
        }
    }
    Some(names)
}

/// Every placeholder a call passes is in the text, and every placeholder of the text is
/// passed (the four files agree with each other already, so English stands for all): a
/// mismatch shows a raw `{name}` to the user, or drops a value.
#[test]
fn every_placeholder_passed_is_in_the_text_and_every_one_in_the_text_is_passed() {
    let en = load("en");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut checked = 0;
    let mut wrong = Vec::new();
    for dir in ["frontend/src", "cli/src"] {
        let (calls, unchecked) = tf_calls(&root.join(dir));
        assert!(unchecked < 12, "{dir}: {unchecked} calls not checkable from the text");
        for call in calls {
            let Some(text) = en.get(&call.key) else {
                // `ar`'s tests ask for a missing key on purpose; its own keys are checked by
                // its test, the UI's by `k!` at compile time.
                assert_eq!(dir, "cli/src", "{}: unknown key {}", call.at, call.key);
                continue;
            };
            let expected = placeholders(text);
            if call.names != expected {
                wrong.push(format!(
                    "{}: {} passes {:?}, its text has {:?}",
                    call.at, call.key, call.names, expected
                ));
            }
            checked += 1;
        }
    }
    assert!(checked > 60, "found only {checked} calls");
    println!("{checked} calls checked");
    assert!(
        wrong.is_empty(),
        "placeholders that do not match:\n{}",
        wrong.join("\n")
    );
}
