//! The accessibility audit: axe-core, injected into the page through WebDriver, run on the
//! WCAG 2.0/2.1 A and AA rules; the serious and critical violations are what a test fails on.

use std::fmt;
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::{Value, json};

use super::Browser;

impl Browser {
    /// The current page's accessibility violations that matter: axe-core's WCAG 2.0/2.1 A and AA
    /// rules ([`AXE_TAGS`]), run on the whole document, kept when their impact is `serious` or
    /// `critical` (the minor and moderate ones are advice, not failures). Call it once the page
    /// has rendered what is to be audited: axe sees the DOM as it is at that moment.
    ///
    /// axe-core is the file [`AXE_JS_ENV`] names (`./anteroom.sh test` installs one pinned
    /// version and sets it); it is injected through WebDriver, which the page's
    /// Content-Security-Policy (no inline script, no eval) does not restrict. Panics when the
    /// variable is unset, the file is missing, or axe fails or answers something unexpected:
    /// an empty list must mean the page was audited and passed, never that the audit did not
    /// run.
    pub async fn axe_violations(&self) -> Vec<AxeViolation> {
        let loaded = self
            .client
            .execute(
                "return typeof window.axe === 'object' && typeof window.axe.run === 'function'",
                vec![],
            )
            .await
            .unwrap_or_else(|e| panic!("checking for axe-core in the page failed: {e}"));
        if loaded != Value::Bool(true) {
            let src = axe_source();
            // The newline ends a `//` comment the file might close with.
            let injected = self
                .client
                .execute(&format!("{src}\n;return typeof window.axe;"), vec![])
                .await
                .unwrap_or_else(|e| panic!("injecting axe-core into the page failed: {e}"));
            assert_eq!(injected, "object", "axe-core did not define window.axe in the page");
        }
        let answer = self
            .client
            .execute_async(AXE_RUN, vec![json!(AXE_TAGS)])
            .await
            .unwrap_or_else(|e| panic!("running axe-core in the page failed: {e}"));
        serious_violations(&answer)
    }
}

/// The environment variable that names axe-core's `axe.min.js`; `./anteroom.sh test` installs
/// the pinned version (`~/.cache/anteroom/axe-core/node_modules/axe-core/axe.min.js`) and sets it.
pub const AXE_JS_ENV: &str = "ANTEROOM_AXE_JS";

/// The axe-core rule tags [`Browser::axe_violations`] runs: WCAG 2.0 and 2.1, levels A and AA.
pub const AXE_TAGS: &[&str] = &["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"];

/// How many of a violation's elements [`AxeViolation::nodes`] keeps: enough to find the
/// problem, few enough to keep an assertion message readable.
const AXE_NODES_KEPT: usize = 3;

/// How much of an element's HTML [`AxeNode::html`] keeps, in characters.
const AXE_HTML_KEPT: usize = 160;

/// Runs axe on the document (`arguments[0]`: the tags) and answers `{violations: [...]}` with only
/// the fields [`AxeViolation`] needs, or `{error}` when axe fails.
const AXE_RUN: &str = r#"
const done = arguments[arguments.length - 1];
window.axe
  .run(document, { runOnly: { type: 'tag', values: arguments[0] }, resultTypes: ['violations'] })
  .then(
    (r) => done({
      violations: r.violations.map((v) => ({
        id: v.id,
        impact: v.impact,
        help: v.help,
        helpUrl: v.helpUrl,
        nodes: v.nodes.map((n) => ({
          target: n.target.map((t) => (Array.isArray(t) ? t.join(' >>> ') : String(t))).join(' | '),
          html: n.html,
        })),
      })),
    }),
    (e) => done({ error: String((e && e.stack) || e) }),
  );
"#;

/// axe-core's source, from the file [`AXE_JS_ENV`] names; panics, pointing at `./anteroom.sh
/// test`, when it is unset or unreadable, so that an accessibility test fails rather than passes
/// without auditing.
fn axe_source() -> String {
    let Some(path) = std::env::var_os(AXE_JS_ENV).filter(|p| !p.is_empty()) else {
        panic!(
            "this test needs axe-core: {AXE_JS_ENV} must name axe.min.js (./anteroom.sh test installs it and sets {AXE_JS_ENV})"
        );
    };
    let path = PathBuf::from(path);
    let src = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "this test needs axe-core: {AXE_JS_ENV}={} cannot be read ({e}); ./anteroom.sh test installs it",
            path.display()
        )
    });
    assert!(!src.trim().is_empty(), "{AXE_JS_ENV}={} is empty", path.display());
    src
}

/// One axe-core rule the page breaks, with its elements (the first few, see
/// [`AxeViolation::nodes`]). Its `Display` is one line for the rule and one per element, made
/// for assertion messages; [`format_violations`] lists several.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AxeViolation {
    /// The rule, e.g. `color-contrast`.
    pub id: String,
    /// `serious` or `critical` ([`Browser::axe_violations`] drops the others).
    pub impact: String,
    /// What the rule asks for, in a sentence.
    pub help: String,
    /// Deque's page explaining the rule and how to fix it.
    pub help_url: String,
    /// How many elements break the rule (more than [`AxeViolation::nodes`] may hold).
    pub node_count: usize,
    /// The first few elements that break the rule.
    pub nodes: Vec<AxeNode>,
}

/// An element that breaks an axe-core rule: where it is and what it looks like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AxeNode {
    /// A CSS selector for the element (` | ` between frames, ` >>> ` into shadow roots).
    pub target: String,
    /// The element's opening HTML, shortened to a readable length.
    pub html: String,
}

impl fmt::Display for AxeViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}: {} ({})", self.impact, self.id, self.help, self.help_url)?;
        for node in &self.nodes {
            write!(f, "\n    at {}: {}", node.target, node.html)?;
        }
        if self.node_count > self.nodes.len() {
            write!(f, "\n    and {} more", self.node_count - self.nodes.len())?;
        }
        Ok(())
    }
}

/// The violations as a block of text for an assertion message: a count, then each violation
/// (see [`AxeViolation`]'s `Display`). E.g. `assert!(v.is_empty(), "{}", format_violations(&v))`.
pub fn format_violations(violations: &[AxeViolation]) -> String {
    if violations.is_empty() {
        return "no serious or critical accessibility violations".to_string();
    }
    let mut out = format!(
        "{} serious or critical accessibility violation(s) (axe-core, WCAG 2.1 A/AA):",
        violations.len()
    );
    for v in violations {
        out.push_str("\n  ");
        out.push_str(&v.to_string());
    }
    out
}

/// The [`AXE_RUN`] answer's shape.
#[derive(Deserialize)]
struct AxeAnswer {
    violations: Vec<RawViolation>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawViolation {
    id: String,
    impact: Option<String>,
    help: String,
    help_url: String,
    nodes: Vec<RawNode>,
}

#[derive(Deserialize)]
struct RawNode {
    target: String,
    html: String,
}

/// The serious and critical violations of an [`AXE_RUN`] answer; panics on an `error` answer or
/// any other shape, so that a failed audit never reads as a clean one.
fn serious_violations(answer: &Value) -> Vec<AxeViolation> {
    if let Some(error) = answer.get("error") {
        panic!(
            "axe-core failed in the page: {}",
            error.as_str().unwrap_or(&error.to_string())
        );
    }
    let answer: AxeAnswer = serde_json::from_value(answer.clone())
        .unwrap_or_else(|e| panic!("axe-core's answer is not the expected shape ({e}): {answer}"));
    answer
        .violations
        .into_iter()
        .filter(|v| matches!(v.impact.as_deref(), Some("serious" | "critical")))
        .map(|v| AxeViolation {
            id: v.id,
            impact: v.impact.unwrap_or_default(),
            help: v.help,
            help_url: v.help_url,
            node_count: v.nodes.len(),
            nodes: v
                .nodes
                .into_iter()
                .take(AXE_NODES_KEPT)
                .map(|n| AxeNode {
                    target: n.target,
                    html: shorten(&n.html, AXE_HTML_KEPT),
                })
                .collect(),
        })
        .collect()
}

/// `s` on one line, cut to `max` characters (with `…`).
fn shorten(s: &str, max: usize) -> String {
    let one_line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        return one_line;
    }
    let mut cut: String = one_line.chars().take(max).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axe_answer() -> Value {
        let nodes: Vec<Value> = (0..5)
            .map(|i| json!({"target": format!("#b{i}"), "html": format!("<button id=\"b{i}\">\n  x</button>")}))
            .collect();
        json!({"violations": [
            {"id": "color-contrast", "impact": "serious", "help": "Contrast", "helpUrl": "https://x/cc", "nodes": nodes},
            {"id": "region", "impact": "moderate", "help": "Landmarks", "helpUrl": "https://x/r", "nodes": []},
            {"id": "button-name", "impact": "critical", "help": "Names", "helpUrl": "https://x/bn",
             "nodes": [{"target": "form > button", "html": "<button></button>"}]},
            {"id": "odd", "impact": null, "help": "?", "helpUrl": "https://x/o", "nodes": []},
        ]})
    }

    #[test]
    fn axe_keeps_the_serious_and_critical_violations_and_their_first_elements() {
        let v = serious_violations(&axe_answer());
        let ids: Vec<&str> = v.iter().map(|v| v.id.as_str()).collect();
        assert_eq!(ids, ["color-contrast", "button-name"]);
        assert_eq!(v[0].node_count, 5);
        assert_eq!(v[0].nodes.len(), AXE_NODES_KEPT);
        assert_eq!(v[0].nodes[0].html, r#"<button id="b0"> x</button>"#);
        assert_eq!(
            v[0].to_string(),
            "[serious] color-contrast: Contrast (https://x/cc)\n    at #b0: <button id=\"b0\"> x</button>\n    at #b1: \
             <button id=\"b1\"> x</button>\n    at #b2: <button id=\"b2\"> x</button>\n    and 2 more"
        );
        let listed = format_violations(&v);
        assert!(listed.starts_with("2 serious or critical"), "{listed}");
        assert!(
            listed
                .contains("\n  [critical] button-name: Names (https://x/bn)\n    at form > button: <button></button>")
        );
        assert_eq!(
            format_violations(&[]),
            "no serious or critical accessibility violations"
        );
    }

    #[test]
    #[should_panic(expected = "axe-core failed in the page: boom")]
    fn an_axe_error_fails_instead_of_reading_as_clean() {
        serious_violations(&json!({"error": "boom"}));
    }

    #[test]
    #[should_panic(expected = "not the expected shape")]
    fn an_axe_answer_of_another_shape_fails_instead_of_reading_as_clean() {
        serious_violations(&Value::Null);
    }

    #[test]
    fn long_html_is_shortened_on_one_line() {
        assert_eq!(shorten("a\n   b", 10), "a b");
        assert_eq!(shorten("日本語のテキスト", 3), "日本語…");
    }
}
