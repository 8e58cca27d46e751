//! No locale text uses a word the glossary rejects.
//!
//! The rejected words come from `i18n/glossary.md` itself, from its section "Rejected words
//! (checked by tests/tests/glossary.rs)": a Markdown table with the columns
//! `lang | rejected | use instead | allowed in | keys | unless en has`, one rejected string of
//! one language a row. The glossary's section explains the columns; in short, a text of
//! `i18n/<lang>.json` is a hit when it contains the rejected string (its `{placeholders}`
//! blanked out first) and
//!
//! - the occurrence does not lie inside one of the row's "allowed in" strings (a longer,
//!   accepted word that contains the rejected one: `卷` in `数据卷`, `クラスタ` in `クラスター`;
//!   this is how a rejected word that is a substring of an accepted one is told apart, and how
//!   the glossary's look-around patterns are written),
//! - the key matches the row's "keys" patterns (`all`, or `*` globs, `!` excluding: for words
//!   rejected for one concept only, like `公開` for a queue),
//! - en.json's text of the same key contains none of the row's "unless en has" words (zh `任务`
//!   is rejected for the job, not for the task).
//!
//! The test fails when the section is missing, when its table has other columns, when a row
//! does not parse, when zh, ja or ko has no row, or when a key pattern names no key: it cannot
//! pass by reading nothing.

use std::collections::BTreeMap;

/// The heading's text (after `## ` and an optional number) that marks the table.
const SECTION: &str = "Rejected words (checked by tests/tests/glossary.rs)";
const COLUMNS: [&str; 6] = ["lang", "rejected", "use instead", "allowed in", "keys", "unless en has"];
const LANGS: [&str; 4] = ["en", "zh", "ja", "ko"];
/// The languages the glossary is about: each must have rejected words.
const REQUIRED: [&str; 3] = ["zh", "ja", "ko"];

use anteroom_tests::locales::load;

fn glossary() -> String {
    let path = format!("{}/../i18n/glossary.md", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// One row of the table.
#[derive(Debug)]
struct Rule {
    /// The line of glossary.md, for the messages.
    line: usize,
    lang: String,
    rejected: String,
    instead: String,
    /// Accepted strings containing `rejected`: an occurrence inside one of them is no hit.
    allowed_in: Vec<String>,
    /// Key patterns the row is limited to; empty: every key.
    keys: Vec<String>,
    /// Key patterns the row leaves out.
    not_keys: Vec<String>,
    /// Words of en.json's text (lower case) that make the key's text no hit.
    unless_en: Vec<String>,
}

/// The strings in backticks of a cell; an error if anything else than commas and spaces is
/// left around them, or a backtick is not closed.
fn spans(cell: &str) -> Result<Vec<String>, String> {
    let (mut out, mut rest, mut outside) = (Vec::new(), cell, String::new());
    while let Some(a) = rest.find('`') {
        outside.push_str(&rest[..a]);
        let after = &rest[a + 1..];
        let b = after
            .find('`')
            .ok_or_else(|| format!("unclosed backtick in {cell:?}"))?;
        if after[..b].is_empty() {
            return Err(format!("empty `` in {cell:?}"));
        }
        out.push(after[..b].to_string());
        rest = &after[b + 1..];
    }
    outside.push_str(rest);
    if outside.chars().any(|c| c != ',' && !c.is_whitespace()) {
        return Err(format!(
            "write each entry of {cell:?} in backticks, separated by commas"
        ));
    }
    Ok(out)
}

/// `—` (or `-`, or nothing) for none, else the strings in backticks.
fn list(cell: &str) -> Result<Vec<String>, String> {
    if matches!(cell, "—" | "-" | "") {
        return Ok(Vec::new());
    }
    let out = spans(cell)?;
    if out.is_empty() {
        return Err(format!("{cell:?}: write — for none"));
    }
    Ok(out)
}

fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(|c| c.trim().to_string()).collect()
}

/// The rows of the glossary's table of rejected words.
fn parse(glossary: &str) -> Result<Vec<Rule>, String> {
    let lines: Vec<&str> = glossary.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with("## ") && l.trim_end().ends_with(SECTION))
        .ok_or_else(|| format!("glossary.md has no section \"## … {SECTION}\""))?;
    let mut rules = Vec::new();
    let mut header_seen = false;
    for (i, line) in lines.iter().enumerate().skip(start + 1) {
        if line.starts_with("# ") || line.starts_with("## ") {
            break;
        }
        if !line.trim_start().starts_with('|') {
            continue;
        }
        let at = i + 1;
        let row = cells(line);
        if !header_seen {
            if row != COLUMNS {
                return Err(format!(
                    "glossary.md:{at}: the table's columns are {row:?}, not {COLUMNS:?}"
                ));
            }
            header_seen = true;
            continue;
        }
        if row
            .iter()
            .all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':')))
        {
            continue;
        }
        let err = |what: String| format!("glossary.md:{at}: {what}");
        if row.len() != COLUMNS.len() {
            return Err(err(format!("{} cells, not {}", row.len(), COLUMNS.len())));
        }
        let lang = row[0].clone();
        if !LANGS.contains(&lang.as_str()) {
            return Err(err(format!("language {lang:?} is none of {LANGS:?}")));
        }
        let rejected = match spans(&row[1]).map_err(&err)?.as_slice() {
            [one] => one.clone(),
            _ => return Err(err(format!("rejected {:?}: one string in backticks", row[1]))),
        };
        let instead = row[2].replace('`', "");
        if instead.is_empty() || instead == "—" {
            return Err(err(format!("{rejected}: no \"use instead\"")));
        }
        let allowed_in = list(&row[3]).map_err(&err)?;
        if let Some(bad) = allowed_in.iter().find(|a| !a.contains(&rejected) || **a == rejected) {
            return Err(err(format!(
                "allowed in {bad:?} does not contain {rejected:?} as a part"
            )));
        }
        let (mut keys, mut not_keys) = (Vec::new(), Vec::new());
        if row[4] != "all" {
            let patterns = spans(&row[4]).map_err(&err)?;
            if patterns.is_empty() {
                return Err(err(format!("keys {:?}: `all` or patterns in backticks", row[4])));
            }
            for p in patterns {
                match p.strip_prefix('!') {
                    Some(p) => not_keys.push(p.to_string()),
                    None => keys.push(p),
                }
            }
        }
        let unless_en = list(&row[5])
            .map_err(&err)?
            .into_iter()
            .map(|w| w.to_lowercase())
            .collect();
        rules.push(Rule {
            line: at,
            lang,
            rejected,
            instead,
            allowed_in,
            keys,
            not_keys,
            unless_en,
        });
    }
    if !header_seen {
        return Err(format!("the section \"{SECTION}\" of glossary.md has no table"));
    }
    if rules.is_empty() {
        return Err(format!("the table of \"{SECTION}\" has no rows"));
    }
    Ok(rules)
}

/// A key pattern: `*` stands for any run of characters; ASCII case is ignored.
fn glob(pattern: &str, key: &str) -> bool {
    let (p, k) = (pattern.to_ascii_lowercase(), key.to_ascii_lowercase());
    let parts: Vec<&str> = p.split('*').collect();
    let [first, .., last] = parts.as_slice() else {
        return p == k;
    };
    if k.len() < first.len() + last.len() || !k.starts_with(first) || !k.ends_with(last) {
        return false;
    }
    let mut rest = &k[first.len()..k.len() - last.len()];
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(i) => rest = &rest[i + mid.len()..],
            None => return false,
        }
    }
    true
}

impl Rule {
    fn applies_to(&self, key: &str) -> bool {
        !self.not_keys.iter().any(|p| glob(p, key)) && (self.keys.is_empty() || self.keys.iter().any(|p| glob(p, key)))
    }

    /// How many times `text` uses the rejected string, leaving out the occurrences inside an
    /// accepted string and inside `{placeholders}`.
    fn hits(&self, text: &str) -> usize {
        let text = blank_placeholders(text);
        text.match_indices(&self.rejected)
            .filter(|(start, _)| {
                let end = start + self.rejected.len();
                !self.allowed_in.iter().any(|a| {
                    text.match_indices(a.as_str())
                        .any(|(p, _)| p <= *start && p + a.len() >= end)
                })
            })
            .count()
    }
}

/// `{name}` → a space: the names are code, not words of the language.
fn blank_placeholders(text: &str) -> String {
    let (mut out, mut rest) = (String::new(), text);
    while let Some(a) = rest.find('{') {
        let Some(b) = rest[a..].find('}') else { break };
        out.push_str(&rest[..a]);
        out.push(' ');
        rest = &rest[a + b + 1..];
    }
    out.push_str(rest);
    out
}

/// What `rules` find in the locale files `files` (language → key → text; en.json included):
/// one line a hit, "lang.json key: rejected → use instead: text".
fn offences(rules: &[Rule], files: &BTreeMap<&str, BTreeMap<String, String>>) -> Vec<String> {
    let en = &files["en"];
    let mut out = Vec::new();
    for rule in rules {
        for (key, text) in &files[rule.lang.as_str()] {
            if !rule.applies_to(key) || rule.hits(text) == 0 {
                continue;
            }
            let en_text = en.get(key).map(|t| t.to_lowercase()).unwrap_or_default();
            if rule.unless_en.iter().any(|w| en_text.contains(w.as_str())) {
                continue;
            }
            out.push(format!(
                "{}.json {key}: `{}` → {}   (glossary.md:{})\n      {text}",
                rule.lang, rule.rejected, rule.instead, rule.line
            ));
        }
    }
    out.sort();
    out
}

#[test]
fn no_locale_text_uses_a_word_the_glossary_rejects() {
    let rules = parse(&glossary()).unwrap_or_else(|e| panic!("{e}"));
    let files: BTreeMap<&str, _> = LANGS.iter().map(|l| (*l, load(l))).collect();
    assert!(files["en"].len() > 20, "read en.json");

    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for rule in &rules {
        *counts.entry(rule.lang.as_str()).or_default() += 1;
    }
    println!("rejected words read from glossary.md: {counts:?}");
    for lang in REQUIRED {
        assert!(
            counts.get(lang).copied().unwrap_or(0) > 0,
            "glossary.md's table \"{SECTION}\" has no row for {lang}"
        );
    }

    // A key pattern that matches no key is a typo, or a key renamed since: the row would
    // check nothing.
    let keys = &files["en"];
    let mut stale = Vec::new();
    for rule in &rules {
        for p in rule.keys.iter().chain(&rule.not_keys) {
            if !keys.keys().any(|k| glob(p, k)) {
                stale.push(format!("glossary.md:{}: key pattern `{p}` matches no key", rule.line));
            }
        }
    }
    assert!(stale.is_empty(), "{}", stale.join("\n"));

    let found = offences(&rules, &files);
    assert!(
        found.is_empty(),
        "{} locale text(s) use a word glossary.md rejects (fix the text, or, if the word is \
         right there, narrow the row in glossary.md's \"{SECTION}\"):\n{}",
        found.len(),
        found.join("\n")
    );
}

/// The matcher on a made-up table: the cases that would give false hits, and a glossary the
/// test must refuse rather than pass on.
#[test]
fn the_matcher_skips_accepted_words_other_keys_and_placeholders() {
    let table = "\
# Glossary

## 9. Rejected words (checked by tests/tests/glossary.rs)

Some prose.

| lang | rejected | use instead | allowed in | keys | unless en has |
|---|---|---|---|---|---|
| zh | `卷` | 数据卷 | `数据卷` | all | — |
| ja | `クラスタ` | クラスター | `クラスター` | all | — |
| ja | `公開` | 開放 | — | `queue.open*` | — |
| zh | `移除` | 删除 | — | `!*.removeRow` | — |
| zh | `任务` | 作业 | — | all | `task` |
| ko | `Pod` | 파드 | — | all | — |

## 10. Next
| lang | not | read |
";
    let rules = parse(table).unwrap();
    assert_eq!(rules.len(), 6);
    let rule = |r: &str| rules.iter().find(|x| x.rejected == r).unwrap();

    assert_eq!(rule("卷").hits("无法挂载卷。"), 1);
    assert_eq!(rule("卷").hits("无法挂载数据卷。"), 0);
    assert_eq!(rule("卷").hits("数据卷和卷"), 1);
    assert_eq!(rule("クラスタ").hits("クラスターへ送信"), 0);
    assert_eq!(rule("クラスタ").hits("クラスタへ送信"), 1);
    assert_eq!(rule("Pod").hits("{Pod} 파드"), 0, "placeholders are not searched");
    assert_eq!(rule("Pod").hits("Pod {pod}"), 1);

    assert!(rule("公開").applies_to("queue.openLabel"));
    assert!(!rule("公開").applies_to("templates.publish"));
    assert!(!rule("移除").applies_to("quota.removeRow"));
    assert!(rule("移除").applies_to("jobs.delete"));

    let files: BTreeMap<&str, BTreeMap<String, String>> = [
        ("en", [("a", "Task {task}"), ("b", "Jobs")]),
        ("zh", [("a", "任务 {task}"), ("b", "任务")]),
        ("ja", [("a", "x"), ("b", "y")]),
        ("ko", [("a", "x"), ("b", "y")]),
    ]
    .into_iter()
    .map(|(l, kv)| (l, kv.into_iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect()))
    .collect();
    let found = offences(&rules, &files);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("zh.json b: `任务` → 作业"), "{found:?}");

    // Nothing to read is an error, never a pass.
    assert!(parse("# Glossary\n\n## 5. Checking\n").is_err(), "no section");
    let empty = "## 6. Rejected words (checked by tests/tests/glossary.rs)\n\n\
                 | lang | rejected | use instead | allowed in | keys | unless en has |\n\
                 |---|---|---|---|---|---|\n";
    assert!(parse(empty).is_err(), "no rows");
    assert!(parse(&empty.replace("| keys ", "| key ")).is_err(), "other columns");
    let bad = format!("{empty}| zh | 卷 | 数据卷 | — | all | — |\n");
    assert!(parse(&bad).is_err(), "rejected word not in backticks");
    let bad = format!("{empty}| zh | `卷` | 数据卷 | `数据` | all | — |\n");
    assert!(
        parse(&bad).is_err(),
        "an accepted word that does not contain the rejected one"
    );
}
