//! Translation keys whose name is built at run time are checked here, because nothing else sees
//! them. A literal key (`k!("jobs.title")` in the web UI, `"cli.ls.empty"` in `ar`) is checked when
//! the code compiles or by a test that reads the sources. A key such as
//! `key_named(&format!("event.{}", e.kind))` or `i.t(&format!("scheduleType.{}", …))` is not: a
//! value without its text shows the raw kind, the key itself or the server's English message to a
//! reader of another language.
//!
//! So this test finds every such key in `frontend/src` and `cli/src` (a `format!("prefix.{…` passed
//! straight to `key_named`, `lookup`, `t`, `tf` or `tp`, and any other `format!` that builds a key
//! of one of the locale files' sections). For each prefix it takes the closed set of values that
//! can fill it (event kinds, schedule types, the backend's field-rule codes…) and checks that
//! `i18n/{en,zh,ja,ko}.json` have `prefix.value` for each. A prefix it does not know fails the test,
//! so a new lookup of this kind cannot be added without a check.
//!
//! `ar` reads the same files under the same dotted names as the web UI
//! (`anteroom_shared::i18n::lookup`, which adds no `cli.` prefix). `ar watch`'s `event.started` is
//! `{"event": {"started": …}}`, the same text the job page's timeline shows.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anteroom::jobs::events::EventKind;
use anteroom_shared::scheduling::{JobKind, JobPhase, ScheduleType};
use anteroom_tests::locales::load;

const LOCALES: [&str; 4] = ["en", "zh", "ja", "ko"];

/// The calls that turn a name into a text: the web UI's `key_named`, and `ar`'s `I18n::lookup`,
/// `t`, `tf`, `tp` (the UI's `t`, `tf` and `tp` take a `Key`, but are listed too: a text search
/// cannot tell the two apart, and more calls seen is safer).
const LOOKUPS: [&str; 5] = ["key_named(", ".lookup(", ".t(", ".tf(", ".tp("];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// One key built at run time: its prefix (`event`, `event.detail`), where it is, and whether
/// the `format!` is an argument of a lookup call itself (rather than a key made elsewhere and
/// handed over later, as `ar`'s `phase_key`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct RunTimeKey {
    prefix: String,
    at: String,
    in_lookup: bool,
}

/// The prefix of a `format!` string that builds a dotted key, from the text just after
/// `format!("`: one or two words, each followed by a dot, then a `{` (`event.{}`,
/// `a.b.{code}`). `None` for anything else (`{}.{}`, `plain`). Whether the first word is a
/// section of the locale files is for the caller to see (`json.{}.tmp` has a prefix, `json`).
fn key_prefix(literal: &str) -> Option<&str> {
    let mut end = 0;
    for _ in 0..2 {
        let rest = &literal[end..];
        let word = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if word == 0 || rest.starts_with(|c: char| c.is_ascii_digit()) || !rest[word..].starts_with('.') {
            return None;
        }
        end += word + 1;
        if literal[end..].starts_with('{') && !literal[end..].starts_with("{{") {
            return Some(&literal[..end - 1]);
        }
    }
    None
}

/// The source with its comment lines blanked (same length, same line breaks): a key in a doc
/// comment is not a lookup.
fn without_comment_lines(text: &str) -> String {
    text.split_inclusive('\n')
        .map(|line| {
            if line.trim_start().starts_with("//") {
                line.chars().map(|c| if c == '\n' { '\n' } else { ' ' }).collect()
            } else {
                line.to_owned()
            }
        })
        .collect()
}

/// The source without its test modules (`#[cfg(test)] mod tests { … }` blanked, same length,
/// same line breaks): a test that builds keys to check them is not a lookup.
fn without_test_modules(text: &str) -> String {
    let mut out = text.to_owned();
    for (at, _) in text.match_indices("#[cfg(test)]") {
        let after = &text[at + "#[cfg(test)]".len()..];
        let rest = after.trim_start();
        let Some(name_and_body) = rest.strip_prefix("mod ") else {
            continue;
        };
        let Some(open) = name_and_body
            .find('{')
            .filter(|o| !name_and_body[..*o].contains([';', '(']))
        else {
            continue;
        };
        let body_start = at + "#[cfg(test)]".len() + (after.len() - rest.len()) + "mod ".len() + open + 1;
        let body_end = call_arguments(&text[body_start..])
            .last()
            .map_or(text.len(), |(start, arg)| body_start + start + arg.len());
        let blank: String = text[at..body_end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        // A character of several bytes became one blank: pad to the same number of bytes, so
        // the offsets (and lines) after the module stay where they were.
        let blank = format!("{blank:width$}", width = body_end - at);
        out.replace_range(at..body_end, &blank[..]);
    }
    out
}

/// The arguments of the call whose `(` ends just before `text` starts, at its own depth: split
/// at its commas, each with its offset in `text`. Strings and character literals are skipped, so
/// a `"("` or a `')'` does not count.
fn call_arguments(text: &str) -> Vec<(usize, &str)> {
    let bytes = text.as_bytes();
    let (mut depth, mut start, mut i) = (0usize, 0usize, 0usize);
    let mut args = Vec::new();
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            // A character literal (`'"'`, `'\''`), not a lifetime (`'static`).
            b'\'' if bytes.get(i + 2) == Some(&b'\'') => i += 2,
            b'\'' if bytes.get(i + 1) == Some(&b'\\') => {
                i += 3;
                while i < bytes.len() && bytes[i] != b'\'' {
                    i += 1;
                }
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' if depth == 0 => {
                args.push((start, &text[start..i]));
                return args;
            }
            b')' | b']' | b'}' => depth -= 1,
            b',' if depth == 0 => {
                args.push((start, &text[start..i]));
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    // No closing bracket: the rest is the last argument.
    args.push((start, &text[start.min(text.len())..]));
    args
}

/// Line of a byte offset, counted from 1.
fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

/// The keys built at run time in one source file (`name` is how it is reported). `sections`: the
/// locale files' top-level keys, which tell a `format!` that builds a key outside a lookup call
/// (`phase.{}`) from one that builds anything else (`json.{}.tmp`).
fn run_time_keys_in(name: &str, text: &str, sections: &BTreeSet<String>) -> Vec<RunTimeKey> {
    // Comments first: a `}` or a `"` in one must not end a test module early.
    let text = without_test_modules(&without_comment_lines(text));
    let mut found = Vec::new();
    let mut in_lookups = BTreeSet::new();
    for call in LOOKUPS {
        for (at, _) in text.match_indices(call) {
            let open = at + call.len();
            // `key_named(` must be the function itself, not `other_key_named(`.
            if call == "key_named("
                && text[..at]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                continue;
            }
            for (offset, arg) in call_arguments(&text[open..]) {
                // `&format!(…)` or `format!(…)`: `rest` ends where `arg` ends.
                let arg_start = arg.trim_start();
                let rest = arg_start.strip_prefix('&').map_or(arg_start, str::trim_start);
                let at_format = open + offset + arg.len() - rest.len();
                check_format(&text, at_format, rest, name, &mut found, &mut in_lookups);
            }
        }
    }
    // Any other key-shaped `format!` whose first word is a section of the locale files.
    for (at, _) in text.match_indices("format!(\"") {
        if in_lookups.contains(&at) {
            continue;
        }
        if let Some(prefix) = key_prefix(&text[at + "format!(\"".len()..])
            && sections.contains(prefix.split('.').next().unwrap_or_default())
        {
            found.push(RunTimeKey {
                prefix: prefix.to_owned(),
                at: format!("{name}:{}", line_of(&text, at)),
                in_lookup: false,
            });
        }
    }
    found
}

/// Records `arg` (at offset `at` of `text`) if it is a `format!` that builds a key.
fn check_format(
    text: &str,
    at: usize,
    arg: &str,
    name: &str,
    found: &mut Vec<RunTimeKey>,
    in_lookups: &mut BTreeSet<usize>,
) {
    let Some(literal) = arg.strip_prefix("format!(") else {
        return;
    };
    let Some(literal) = literal.trim_start().strip_prefix('"') else {
        return;
    };
    if let Some(prefix) = key_prefix(literal) {
        in_lookups.insert(at);
        found.push(RunTimeKey {
            prefix: prefix.to_owned(),
            at: format!("{name}:{}", line_of(text, at)),
            in_lookup: true,
        });
    }
}

/// The Rust files under `dir` (relative to the workspace), test files left out (a `tests`
/// folder, a `tests.rs`): each as its name from the workspace's root, and its text.
fn sources(dir: &str) -> Vec<(String, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "tests") {
                    walk(&path, out);
                }
            } else if path.extension().is_some_and(|e| e == "rs") && path.file_name().is_some_and(|n| n != "tests.rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&root().join(dir), &mut files);
    files.sort();
    files
        .iter()
        .map(|f| {
            let name = f.strip_prefix(root()).unwrap_or(f).display().to_string();
            (name, std::fs::read_to_string(f).unwrap())
        })
        .collect()
}

/// Every key built at run time in the web UI's and `ar`'s sources.
fn run_time_keys() -> Vec<RunTimeKey> {
    let sections: BTreeSet<String> = load("en")
        .keys()
        .filter_map(|k| k.split('.').next())
        .map(str::to_owned)
        .collect();
    let mut found = Vec::new();
    for dir in ["frontend/src", "cli/src"] {
        for (name, text) in sources(dir) {
            found.extend(run_time_keys_in(&name, &text, &sections));
        }
    }
    found
}

/// The quoted word at the start of `text` (after blanks), if any.
fn quoted(text: &str) -> Option<&str> {
    let text = text.trim_start().strip_prefix('"')?;
    text.find('"').map(|end| &text[..end])
}

/// The field-rule codes one backend source file makes: the first argument of `Rule::fixed`,
/// `Rule::coded` and `Rule::with` (`Self::…` inside `field_rule.rs`), and the `code:` of a `Rule`
/// or `FieldError` written out as a struct. The code `invalid` (`field_rule::INVALID`, what a bare
/// English text becomes) is left out: see [`field_rule_codes`]. A code this cannot read (a
/// constant, a variable) goes to `unreadable`, so a rule cannot hide from the check.
fn field_codes_in(name: &str, text: &str, codes: &mut BTreeSet<String>, unreadable: &mut Vec<String>) {
    let text = without_comment_lines(text);
    let mut read = |value: &str, at: usize| {
        if let Some(code) = quoted(value) {
            codes.insert(code.to_owned());
        } else {
            let value = value.trim_start();
            let word: String = value
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            if word != "INVALID" && !word.ends_with("::INVALID") {
                unreadable.push(format!("{name}:{}: {word}", line_of(&text, at)));
            }
        }
    };
    let mut makers = vec!["Rule::fixed(", "Rule::coded(", "Rule::with("];
    if name.ends_with("field_rule.rs") {
        makers.extend(["Self::fixed(", "Self::coded(", "Self::with("]);
    }
    for maker in makers {
        for (at, _) in text.match_indices(maker) {
            read(&text[at + maker.len()..], at);
        }
    }
    for ty in ["Rule {", "FieldError {"] {
        for (at, _) in text.match_indices(ty) {
            let before = &text[..at];
            // A struct written out, not `QuotaRule {`, `struct Rule {`, `impl … for Rule {` or
            // `-> Rule {`.
            if before.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
                || ["struct ", "for ", "impl ", "-> "].iter().any(|w| before.ends_with(w))
            {
                continue;
            }
            let body = &text[at + ty.len()..];
            let body = &body[..body.find('}').unwrap_or(body.len())];
            if let Some(code) = body.find("code:") {
                read(&body[code + "code:".len()..], at);
            }
        }
    }
}

/// Every field-rule code the backend can send in a 422's `fields` (its sources outside tests).
///
/// `invalid` is not among them on purpose: it is the code of a problem said only in English
/// (`field_rule::INVALID`, from a bare `&str` or `String`), and the web UI shows that English
/// `message` when no `fieldError.<code>` exists (`I18n::field_rule` in `frontend/src/i18n.rs`,
/// which also takes `invalid` for a field that names no code). Every other code has its text:
/// the UI shows the English message for no other code on purpose.
fn field_rule_codes() -> BTreeSet<String> {
    let (mut codes, mut unreadable) = (BTreeSet::new(), Vec::new());
    for (name, text) in sources("backend/src") {
        field_codes_in(&name, &text, &mut codes, &mut unreadable);
    }
    assert!(
        unreadable.is_empty(),
        "field-rule codes this test cannot read (write the code as a literal, or teach this test \
         where its values come from):\n{}",
        unreadable.join("\n")
    );
    // The collector must see rules made each way, or it proves nothing.
    for known in ["lengthBetween", "nameEnds", "negativeLimit", "atLeastOneOrNone"] {
        assert!(codes.contains(known), "the collector missed {known}: {codes:?}");
    }
    codes
}

/// The values that can fill a prefix's `{…}`, for every prefix this test knows; `None` for one
/// it does not.
fn values_of(prefix: &str) -> Option<Vec<String>> {
    let words = |all: &[&str]| all.iter().map(|s| s.to_string()).collect();
    Some(match prefix {
        // The job page's timeline and `ar watch`: the `kind` of an event, one of the backend's
        // `EventKind`s.
        "event" => words(&EventKind::ALL.map(EventKind::as_str)),
        // `ar ls` and `ar why`: a job's schedule type.
        "scheduleType" => words(&ScheduleType::ALL.iter().map(|t| t.as_str()).collect::<Vec<_>>()),
        // `ar`'s names of job kinds.
        "kind" => words(&JobKind::ALL.iter().map(|k| k.as_str()).collect::<Vec<_>>()),
        // `ar`'s `output::phase_key`, which says `Activating` as `Pending` (as the web UI does):
        // `phase.Activating` is never asked for, and is left out while that holds.
        "phase" => {
            let output = std::fs::read_to_string(root().join("cli/src/output.rs")).unwrap();
            assert!(
                output.contains("JobPhase::Activating => JobPhase::Pending"),
                "cli/src/output.rs no longer shows Activating as Pending: check phase.Activating too"
            );
            words(
                &JobPhase::ALL
                    .iter()
                    .filter(|p| **p != JobPhase::Activating)
                    .map(|p| p.as_str())
                    .collect::<Vec<_>>(),
            )
        }
        // The web UI's fields of a refused form: the backend's field-rule codes.
        "fieldError" => field_rule_codes().into_iter().collect(),
        _ => return None,
    })
}

/// Prefixes whose values another test checks: no values here, but the test that does must exist.
fn checked_elsewhere(prefix: &str) -> Option<&'static str> {
    match prefix {
        // `error.<code>`: an API error's code (the UI, `ar`, and a requeue refused in the
        // timeline, whose codes are the API's own). `i18n_error_codes.rs` collects every code the
        // backend makes and the OpenAPI document names, and checks all four files.
        "error" => Some("every_error_code_the_api_answers_is_translated_in_every_language"),
        _ => None,
    }
}

#[test]
fn every_key_built_at_run_time_has_a_text_in_every_language() {
    let found = run_time_keys();
    let in_lookups = found.iter().filter(|k| k.in_lookup).count();
    println!(
        "{in_lookups} keys built at run time in lookup calls, {} more built elsewhere:",
        found.len() - in_lookups
    );
    for key in &found {
        println!("  {}.{{…}} at {}", key.prefix, key.at);
    }
    // It must see the lookups known to exist, or it proves nothing.
    assert!(
        in_lookups >= 5,
        "found only {in_lookups} lookups of a key built at run time: {found:?}"
    );
    let (wrong, checked) = check(&found);
    println!("{checked} keys checked across {} languages", LOCALES.len());
    assert!(
        wrong.is_empty(),
        "keys built at run time without a text:\n{}",
        wrong.join("\n")
    );
}

/// What is wrong with these keys' texts in the four files (a prefix no check knows included),
/// and how many keys were looked at.
fn check(found: &[RunTimeKey]) -> (Vec<String>, usize) {
    let mut places: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for key in found {
        places.entry(&key.prefix).or_default().push(&key.at);
    }
    let tables: Vec<(&str, BTreeMap<String, String>)> = LOCALES.iter().map(|l| (*l, load(l))).collect();
    let (mut wrong, mut checked) = (Vec::new(), 0);
    for (prefix, at) in &places {
        if let Some(test) = checked_elsewhere(prefix) {
            let other = std::fs::read_to_string(root().join("tests/tests/i18n_error_codes.rs")).unwrap();
            assert!(
                other.contains(&format!("fn {test}()")),
                "{prefix}.* is said to be checked by {test} in i18n_error_codes.rs, which is gone"
            );
            continue;
        }
        let Some(values) = values_of(prefix) else {
            wrong.push(format!(
                "a key built at run time with prefix {prefix} is checked by nothing: add it to this test \
                 (at {})",
                at.join(", ")
            ));
            continue;
        };
        assert!(!values.is_empty(), "no values found for {prefix}");
        println!("  {prefix}: {} values", values.len());
        for (locale, table) in &tables {
            for value in &values {
                checked += 1;
                let key = format!("{prefix}.{value}");
                if table.get(&key).is_none_or(|t| t.trim().is_empty()) {
                    wrong.push(format!(
                        "i18n/{locale}.json lacks {key} (looked up at {})",
                        at.join(", ")
                    ));
                }
            }
        }
    }
    (wrong, checked)
}

#[test]
fn a_prefix_no_check_knows_fails() {
    let made_up = RunTimeKey {
        prefix: "madeUp".to_owned(),
        at: "frontend/src/x.rs:7".to_owned(),
        in_lookup: true,
    };
    let (wrong, checked) = check(&[made_up]);
    assert_eq!(
        wrong,
        [
            "a key built at run time with prefix madeUp is checked by nothing: add it to this test \
          (at frontend/src/x.rs:7)"
        ]
    );
    assert_eq!(checked, 0);
}

#[test]
fn the_scanner_finds_keys_built_each_way() {
    let sections: BTreeSet<String> = ["phase", "event"].iter().map(|s| s.to_string()).collect();
    let text = r#"
        match key_named(&format!("event.{}", e.kind)) {}
        let kind = ctx
            .i18n
            .lookup(&format!("error.{code}"))
            .unwrap_or_default();
        i.t(&format!("scheduleType.{}", job.schedule_type.as_str()));
        i.tf(&format!("a.b.{x}"), &[("n", &format!("{n}"))]);
        i.tp(k!("x.one"), format!("plural.{n}"), 2, &[]);
        i.t(k!("literal.key"));
        i.t(&format!("{}.{}", a, b));
        i.t(&format!("no_braces"));
        // i.t(&format!("commented.{x}"));
        other_key_named(&format!("other.{x}"));
        i.tf(k!("x"), &[("why", &fill("(", ')'))]).t(&format!("after.{strange}"));
        fn phase_key(p: JobPhase) -> String { format!("phase.{}", p.as_str()) }
        let tmp = path.with_extension(format!("json.{}.tmp", 1));
        let id = format!("defaultRequests.{kind}.{name}");
        #[cfg(test)]
        mod tests {
            fn t() { let close = "}"; i.t(&format!("testOnly.{x}")); }
        }
        i.t(&format!("afterTests.{x}"));
    "#;
    let found: Vec<(String, usize, bool)> = run_time_keys_in("f.rs", text, &sections)
        .into_iter()
        .map(|k| (k.prefix, k.at["f.rs:".len()..].parse().unwrap(), k.in_lookup))
        .collect();
    let want = [
        ("event", 2, true),
        ("error", 5, true),
        ("after", 15, true),
        ("scheduleType", 7, true),
        ("a.b", 8, true),
        ("plural", 9, true),
        ("phase", 16, false),
        ("afterTests", 23, true),
    ];
    let mut found = found;
    found.sort();
    let mut want: Vec<(String, usize, bool)> = want.iter().map(|(p, l, d)| (p.to_string(), *l, *d)).collect();
    want.sort();
    assert_eq!(found, want);
}

#[test]
fn the_field_rule_collector_reads_every_way_a_code_is_given() {
    let (mut codes, mut unreadable) = (BTreeSet::new(), Vec::new());
    field_codes_in(
        "backend/src/x.rs",
        r#"Rule::fixed("nameEnds", "x");
           Rule::coded(
               "negativeLimit",
               e.to_string(),
           );
           crate::field_rule::Rule::with("lengthBetween", m, json!({}));
           Rule { code: "structCode", message: m, params: None };
           impl From<String> for Rule {
               fn from(m: String) -> Self { Rule { code: INVALID, message: m.into(), params: None } }
           }
           fn rule_of(e: &E) -> Rule {
               Rule::fixed(INVALID, "x")
           }
           let q = QueueQuotaRule { code: "notARule" };
           Rule::coded(CODE, "x");
        "#,
        &mut codes,
        &mut unreadable,
    );
    let want = ["lengthBetween", "nameEnds", "negativeLimit", "structCode"];
    assert_eq!(codes, want.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>());
    assert_eq!(unreadable, ["backend/src/x.rs:15: CODE"]);
}

/// `EventKind::ALL` must list every kind: as many as the arms of `as_str`, with distinct words,
/// the same words as those arms.
#[test]
fn event_kind_all_lists_every_arm_of_as_str() {
    let source = std::fs::read_to_string(root().join("backend/src/jobs/events.rs")).unwrap();
    let start = source
        .find("pub fn as_str(self) -> &'static str {")
        .expect("EventKind::as_str in backend/src/jobs/events.rs");
    let body = &source[start..];
    let body = &body[..body.find("\n    }").expect("the end of as_str")];
    let arms: Vec<&str> = body
        .lines()
        .filter(|l| l.trim_start().starts_with("EventKind::"))
        .filter_map(|l| quoted(l.split_once("=>")?.1))
        .collect();
    assert_eq!(
        arms.len(),
        body.matches("=>").count(),
        "every arm of as_str reads `EventKind::X => \"word\"`"
    );
    assert_eq!(
        EventKind::ALL.len(),
        arms.len(),
        "EventKind::ALL must list every kind as_str names"
    );
    let words: BTreeSet<&str> = EventKind::ALL.iter().map(|k| k.as_str()).collect();
    assert_eq!(words.len(), EventKind::ALL.len(), "EventKind::ALL lists a kind twice");
    assert_eq!(words, arms.into_iter().collect(), "EventKind::ALL and as_str disagree");
}
