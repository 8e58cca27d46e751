//! Headless Chromium (Debian's) driven through chromedriver with fantoccini. Each browser gets
//! its own chromedriver on a free port and a fresh profile directory. Besides driving pages, a
//! [`Browser`] audits them for accessibility (axe-core), saves screenshots under
//! `target/screenshots/` and reads the page's paint timings.

use std::ffi::OsStr;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde::Deserialize;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::process::{Child, Command};

/// Flags that make Chromium work headless, as root, on a machine with no outside network.
pub const CHROMIUM_FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1280,900",
];

fn find(candidates: &[&str]) -> Option<PathBuf> {
    candidates.iter().map(PathBuf::from).find(|p| p.is_file())
}

/// A browser session; close it with [`Browser::close`].
pub struct Browser {
    /// The WebDriver client.
    pub client: Client,
    driver: Child,
    _profile: TempDir,
}

impl Browser {
    /// Starts Chromium with `accept_language` as the browser's language list. Panics when
    /// Chromium or chromedriver is missing: tests that need a browser are
    /// `#[ignore = "needs Chromium"]` and must fail, not pass, when run without one.
    pub async fn start(accept_language: &str) -> Browser {
        let chromium = find(&["/usr/bin/chromium", "/usr/bin/chromium-browser"]);
        let driver_bin = find(&["/usr/bin/chromedriver"]);
        let (Some(chromium), Some(driver_bin)) = (chromium, driver_bin) else {
            panic!(
                "this test needs chromium and chromedriver (apt-get install chromium chromium-driver; ./anteroom.sh test installs them)"
            );
        };
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("free port");
            l.local_addr().expect("addr").port()
        };
        let driver = Command::new(driver_bin)
            .arg(format!("--port={port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start chromedriver");
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(res) = reqwest::get(format!("{base}/status")).await
                && res.status().is_success()
            {
                break;
            }
            assert!(Instant::now() < deadline, "chromedriver did not start");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let profile = tempfile::tempdir().expect("profile dir");
        let mut args: Vec<String> = CHROMIUM_FLAGS.iter().map(|s| s.to_string()).collect();
        args.push(format!("--user-data-dir={}", profile.path().display()));
        let caps = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": args,
                // chromedriver ignores --lang; this is what sets navigator.languages.
                "prefs": {"intl.accept_languages": accept_language},
            },
            "goog:loggingPrefs": {"browser": "ALL"},
        });
        let caps = match caps {
            Value::Object(m) => m,
            _ => unreachable!(),
        };
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(caps)
            .connect(&base)
            .await
            .expect("a WebDriver session");
        Browser {
            client,
            driver,
            _profile: profile,
        }
    }

    /// Waits until the element matching `css` has exactly `text` (trimmed), up to 15 s; returns
    /// the last text seen on failure.
    pub async fn wait_for_text(&self, css: &str, text: &str) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(15);
        let mut last = String::from("<no element>");
        while Instant::now() < deadline {
            if let Ok(el) = self.client.find(Locator::Css(css)).await
                && let Ok(t) = el.text().await
            {
                if t.trim() == text {
                    return Ok(());
                }
                last = t;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(format!("`{css}` never showed {text:?}; last seen {last:?}"))
    }

    /// Waits until an element matches `css`, up to 15 s, and returns it.
    pub async fn wait_for(&self, css: &str) -> Result<fantoccini::elements::Element, String> {
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(el) = self.client.find(Locator::Css(css)).await {
                return Ok(el);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(format!("`{css}` never appeared"))
    }

    /// Waits until the script `condition` (an expression) is true in the page, up to 15 s.
    pub async fn wait_until(&self, what: &str, condition: &str) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(15);
        let script = format!("return !!({condition});");
        let mut last = Value::Null;
        while Instant::now() < deadline {
            match self.client.execute(&script, vec![]).await {
                Ok(Value::Bool(true)) => return Ok(()),
                Ok(v) => last = v,
                Err(e) => last = Value::String(e.to_string()),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(format!("{what}: `{condition}` never held (last {last})"))
    }

    /// The trimmed text of the first element matching `css` (empty when there is none).
    pub async fn text(&self, css: &str) -> String {
        match self.client.find(Locator::Css(css)).await {
            Ok(el) => el.text().await.unwrap_or_default().trim().to_string(),
            Err(_) => String::new(),
        }
    }

    /// Clears the input matching `css` and types `value` into it, as a person would.
    pub async fn fill(&self, css: &str, value: &str) {
        let el = self.wait_for(css).await.unwrap_or_else(|e| panic!("{e}"));
        el.clear().await.unwrap_or_else(|e| panic!("clearing {css}: {e}"));
        if !value.is_empty() {
            el.send_keys(value)
                .await
                .unwrap_or_else(|e| panic!("typing into {css}: {e}"));
        }
    }

    /// Clicks the element matching `css`.
    pub async fn click(&self, css: &str) {
        let el = self.wait_for(css).await.unwrap_or_else(|e| panic!("{e}"));
        el.click().await.unwrap_or_else(|e| panic!("clicking {css}: {e}"));
    }

    /// Picks the option `value` of the select matching `css`.
    pub async fn select(&self, css: &str, value: &str) {
        let el = self.wait_for(css).await.unwrap_or_else(|e| panic!("{e}"));
        el.select_by_value(value)
            .await
            .unwrap_or_else(|e| panic!("selecting {value} in {css}: {e}"));
    }

    /// Logs in through the login page at `base` and waits for the page it lands on.
    pub async fn login(&self, base: &str, username: &str, password: &str) {
        self.client
            .goto(&format!("{base}/login"))
            .await
            .unwrap_or_else(|e| panic!("opening /login: {e}"));
        self.fill("#login-username", username).await;
        self.fill("#login-password", password).await;
        self.click("[data-testid=login-submit]").await;
        self.wait_for("[data-testid=whoami]")
            .await
            .unwrap_or_else(|e| panic!("login as {username}: {e}"));
    }

    /// Messages the page logged at error level (console errors, failed loads, exceptions,
    /// CSP violations) since the last call. Panics when the log cannot be read or is not the
    /// list chromedriver sends: "no errors" must mean the log was read and was clean, never
    /// that reading it failed.
    pub async fn console_errors(&self) -> Vec<String> {
        let logs = self
            .client
            .issue_cmd(GetBrowserLog)
            .await
            .unwrap_or_else(|e| panic!("reading the browser's console log failed: {e}"));
        severe_messages(&logs)
    }

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

    /// Saves a PNG of the browser's viewport as `<target dir>/screenshots/<name>.png` and returns
    /// its path: a picture of what a test saw, to look at when it fails or to check by eye how
    /// a page renders (fonts, layout). The target dir is `$CARGO_TARGET_DIR` when set
    /// (`./anteroom.sh test` sets it), else the workspace's `target/`; `name` keeps only
    /// `[a-z0-9-_.]` (uppercase is lowered, anything else becomes `-`), so it cannot leave the
    /// directory. Panics when the screenshot cannot be taken or written.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        let png = self
            .client
            .screenshot()
            .await
            .unwrap_or_else(|e| panic!("taking a screenshot failed: {e}"));
        let dir = target_dir(std::env::var_os("CARGO_TARGET_DIR").as_deref()).join("screenshots");
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
        let path = dir.join(format!("{}.png", screenshot_file_stem(name)));
        std::fs::write(&path, png).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        path
    }

    /// The current page's load and paint times, in milliseconds since its navigation started:
    /// `{"url", "paint": {"first-paint", "first-contentful-paint"}, "navigation": {"type",
    /// "responseEnd", "domContentLoadedEventEnd", "loadEventEnd"}}`, from
    /// `performance.getEntriesByType('paint' | 'navigation')`. For measuring how soon a page
    /// shows something: the UI is WebAssembly, so first contentful paint comes after the load
    /// event. Read it once the page shows its content; a paint not yet happened is absent
    /// from `paint`, and `navigation` is null when the browser recorded none. Panics when the
    /// script cannot run.
    pub async fn paint_timings(&self) -> Value {
        self.client
            .execute(PAINT_TIMINGS, vec![])
            .await
            .unwrap_or_else(|e| panic!("reading the page's performance entries failed: {e}"))
    }

    /// Ends the session (Chromium exits) and stops chromedriver.
    pub async fn close(mut self) {
        let _ = self.client.clone().close().await;
        let _ = self.driver.kill().await;
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

/// The paint and navigation entries [`Browser::paint_timings`] answers.
const PAINT_TIMINGS: &str = r#"
const nav = performance.getEntriesByType('navigation')[0];
return {
  url: location.href,
  paint: Object.fromEntries(performance.getEntriesByType('paint').map((e) => [e.name, e.startTime])),
  navigation: nav
    ? {
        type: nav.type,
        responseEnd: nav.responseEnd,
        domContentLoadedEventEnd: nav.domContentLoadedEventEnd,
        loadEventEnd: nav.loadEventEnd,
      }
    : null,
};
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

/// The cargo target directory: `CARGO_TARGET_DIR` (`var`) when set, relative to the workspace
/// when relative; else the workspace's `target/`.
fn target_dir(var: Option<&OsStr>) -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate sits in the workspace");
    match var.filter(|v| !v.is_empty()) {
        // An absolute path replaces `workspace` in the join.
        Some(dir) => workspace.join(dir),
        None => workspace.join("target"),
    }
}

/// `name` as a safe file name stem: `[a-z0-9-_.]` only (uppercase lowered, anything else `-`),
/// no leading dot (no hidden files, no `..`), never empty.
fn screenshot_file_stem(name: &str) -> String {
    let stem: String = name
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9' | '-' | '_' | '.') => c,
            _ => '-',
        })
        .collect();
    let stem = stem.trim_start_matches('.');
    if stem.is_empty() {
        "screenshot".to_string()
    } else {
        stem.to_string()
    }
}

/// The SEVERE entries of a chromedriver log answer; panics on anything but a list of entries.
fn severe_messages(logs: &Value) -> Vec<String> {
    let entries = logs
        .as_array()
        .unwrap_or_else(|| panic!("the browser's console log is not a list of entries: {logs}"));
    entries
        .iter()
        .filter(|e| e["level"] == "SEVERE")
        .map(|e| e["message"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// chromedriver's log endpoint (not in the W3C standard, so fantoccini has no method for it).
#[derive(Debug)]
struct GetBrowserLog;

impl fantoccini::wd::WebDriverCompatibleCommand for GetBrowserLog {
    fn endpoint(&self, base_url: &url::Url, session_id: Option<&str>) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!("session/{}/se/log", session_id.unwrap_or_default()))
    }

    fn method_and_body(&self, _request_url: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(r#"{"type":"browser"}"#.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn severe_console_entries_are_the_errors() {
        let logs = json!([
            {"level": "INFO", "message": "hello"},
            {"level": "SEVERE", "message": "Refused to load the script"},
        ]);
        assert_eq!(severe_messages(&logs), ["Refused to load the script"]);
    }

    #[test]
    #[should_panic(expected = "not a list of entries")]
    fn a_console_log_that_is_not_a_list_fails_instead_of_reading_as_clean() {
        severe_messages(&Value::Null);
    }

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

    #[test]
    fn screenshots_go_under_the_target_dir_the_build_uses() {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        assert_eq!(target_dir(None), workspace.join("target"));
        assert_eq!(target_dir(Some(OsStr::new(""))), workspace.join("target"));
        assert_eq!(target_dir(Some(OsStr::new("/tmp/t"))), Path::new("/tmp/t"));
        assert_eq!(target_dir(Some(OsStr::new("out"))), workspace.join("out"));
    }

    #[test]
    fn screenshot_names_cannot_leave_the_directory() {
        assert_eq!(screenshot_file_stem("login-ja_1.2"), "login-ja_1.2");
        assert_eq!(screenshot_file_stem("Login Page/ja"), "login-page-ja");
        assert_eq!(screenshot_file_stem("../../etc/passwd"), "-..-etc-passwd");
        assert_eq!(screenshot_file_stem(".."), "screenshot");
        assert_eq!(screenshot_file_stem("ログイン"), "----");
        assert_eq!(screenshot_file_stem(""), "screenshot");
    }
}
