//! Headless Chromium (Debian's) driven through chromedriver with fantoccini. Each browser gets
//! its own chromedriver on a free port and a fresh profile directory. Besides driving pages, a
//! [`Browser`] audits them for accessibility (axe-core), saves screenshots under
//! `target/screenshots/` and reads the page's paint timings.

mod artifacts;
mod axe;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::process::{Child, Command};

pub use axe::{AXE_JS_ENV, AXE_TAGS, AxeNode, AxeViolation, format_violations};

/// Fails a browser test run without the web UI embedded (`cargo xtask ui`), instead of letting
/// it pass by checking a page that is not there. The browser tests are `#[ignore = "needs
/// Chromium"]`: a plain `cargo nextest run` reports them as skipped, `./anteroom.sh test` runs
/// them (`--run-ignored all`) after building the UI.
pub fn require_ui() {
    assert!(
        anteroom::http::assets::ui_built(),
        "this test needs the web UI embedded: run `cargo xtask ui` first (./anteroom.sh test does)"
    );
}

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
        Self::start_with(accept_language, &[]).await
    }

    /// [`Browser::start`] with more Chromium flags (`--force-dark-mode`: the system prefers
    /// dark).
    pub async fn start_with(accept_language: &str, flags: &[&str]) -> Browser {
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
        args.extend(flags.iter().map(|f| f.to_string()));
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

    /// Opens the closed menu (a `<details>`, the user menu) the element matching `css` sits in,
    /// by clicking its summary as a person would; nothing when it is in none or already open.
    async fn open_menu_of(&self, css: &str) {
        let script = format!(
            "const d = document.querySelector({css:?})?.closest('details'); \
             if (d && !d.open) {{ d.querySelector('summary').click(); return true; }} return false;"
        );
        if let Ok(Value::Bool(true)) = self.client.execute(&script, vec![]).await {
            let _ = self
                .wait_until(
                    "the menu opens",
                    &format!("document.querySelector({css:?})?.closest('details')?.open"),
                )
                .await;
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

    /// Clicks the element matching `css`. The UI re-renders what a live event changes, so the
    /// element found may be replaced before the click lands ("stale element reference"): then
    /// it is found again, a bounded number of times.
    pub async fn click(&self, css: &str) {
        const ATTEMPTS: usize = 10;
        for attempt in 1..=ATTEMPTS {
            let el = self.wait_for(css).await.unwrap_or_else(|e| panic!("{e}"));
            self.open_menu_of(css).await;
            // To the middle of the window, as a person would scroll it: WebDriver's own
            // scrolling puts it at the top edge, under the sticky header.
            let _ = self
                .client
                .execute(
                    &format!("document.querySelector({css:?})?.scrollIntoView({{block: 'center', inline: 'nearest'}})"),
                    vec![],
                )
                .await;
            match el.click().await {
                Ok(()) => return,
                Err(e) if attempt < ATTEMPTS && e.to_string().contains("stale element") => continue,
                Err(e) => panic!("clicking {css}: {e}"),
            }
        }
    }

    /// Picks the option `value` of the select matching `css`, opening the menu it sits in
    /// (the language and theme live in the user menu) as a person would.
    pub async fn select(&self, css: &str, value: &str) {
        let el = self.wait_for(css).await.unwrap_or_else(|e| panic!("{e}"));
        self.open_menu_of(css).await;
        el.select_by_value(value)
            .await
            .unwrap_or_else(|e| panic!("selecting {value} in {css}: {e}"));
    }

    /// Checks or unchecks (`toggles`) the choice `value` of a job list's filter of several
    /// values (`filter-phase`), opening its list of choices and closing it again.
    pub async fn toggle_filter(&self, filter: &str, value: &str) {
        self.click(&format!("#{filter}")).await;
        self.click(&format!("[data-testid={filter}] input[value='{value}']"))
            .await;
        self.click(&format!("#{filter}")).await;
    }

    /// The path and query of the page shown (`/jobs?phase=Running`).
    pub async fn path(&self) -> String {
        let url = self
            .client
            .current_url()
            .await
            .unwrap_or_else(|e| panic!("the URL: {e}"));
        match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_owned(),
        }
    }

    /// The handle of a tab other than `besides` once one opens (up to 15 s): what a click that
    /// opens a new tab opened.
    pub async fn new_tab_besides(&self, besides: &fantoccini::wd::WindowHandle) -> fantoccini::wd::WindowHandle {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let windows = self.client.windows().await.expect("the tabs");
            if let Some(other) = windows.into_iter().find(|w| w != besides) {
                return other;
            }
            assert!(Instant::now() < deadline, "no new tab opened");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
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

    /// Asserts the page shown now is clean: no console error (which includes CSP violations)
    /// and no serious or critical axe-core violation. `page` names it in the failure.
    pub async fn assert_clean(&self, page: &str) {
        let violations = self.axe_violations().await;
        assert!(
            violations.is_empty(),
            "{page}: accessibility violations:\n{}",
            format_violations(&violations)
        );
        let errors = self.console_errors().await;
        assert!(errors.is_empty(), "{page}: console errors: {errors:?}");
    }

    /// The Latin-letter words the page shows people (closed `<details>` opened for the look)
    /// — its text and the `placeholder`,
    /// `aria-label`, `title` and `alt` of its elements — except inside `translate="no"` (user
    /// data, product names) and the language menu: on a page in Chinese, Japanese or Korean,
    /// each is English left untranslated unless `allowed` names it. Each word once, in order.
    pub async fn latin_words(&self, allowed: &[&str]) -> Vec<String> {
        let script = r#"
            const out = [];
            // Closed disclosures (a list's filter choices) are read too, then closed again.
            const closed = Array.from(document.querySelectorAll('details:not([open])'));
            closed.forEach(d => d.open = true);
            const skip = el => el.closest('[translate=no], script, style, #lang-select, noscript');
            const add = text => { for (const w of (text || '').match(/[A-Za-z][A-Za-z0-9'’]*/g) || []) out.push(w); };
            const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
            for (let n = walker.nextNode(); n; n = walker.nextNode()) {
                const el = n.parentElement;
                if (!el || skip(el) || !el.checkVisibility()) continue;
                add(n.textContent);
            }
            for (const el of document.body.querySelectorAll('[placeholder], [aria-label], [title], [alt]')) {
                if (skip(el)) continue;
                for (const a of ['placeholder', 'aria-label', 'title', 'alt']) add(el.getAttribute(a));
            }
            closed.forEach(d => d.open = false);
            return out;
        "#;
        let words = self
            .client
            .execute(script, vec![])
            .await
            .unwrap_or_else(|e| panic!("reading the page's words: {e}"));
        let mut seen = std::collections::BTreeSet::new();
        words
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|w| w.as_str())
            .filter(|w| !allowed.contains(w))
            .filter(|w| seen.insert(w.to_string()))
            .map(str::to_owned)
            .collect()
    }

    /// Ends the session (Chromium exits) and stops chromedriver.
    pub async fn close(mut self) {
        let _ = self.client.clone().close().await;
        let _ = self.driver.kill().await;
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

/// Latin-letter words a page in Chinese, Japanese or Korean may show (the browser tests'
/// stray-English check): product and technical names, units, and what the tests seed (job,
/// queue, volume and template names).
pub const LATIN_ALLOWED: &[&str] = &[
    // Product and technical names, kept as written in every language.
    "Anteroom",
    // The prefix of the names Anteroom gives its objects in the cluster (`ar-7`, the pod
    // `ar-7-main-0`), shown where a sentence names one.
    "ar",
    "Jupyter",
    "WebIDE",
    "PyTorch",
    "TensorFlow",
    "Kubernetes",
    "Volcano",
    "CPU",
    "GPU",
    "API",
    "Pod",
    // The glossary keeps it in zh (as Chinese UIs do).
    "Notebook",
    "PVC",
    "NFS",
    "PersistentVolumeClaim",
    "Equal",
    "Exists",
    "UTC",
    "shell",
    "Webhook",
    "URL",
    "HMAC",
    "SHA256",
    "X",
    "Signature",
    // Units.
    "Gi",
    "Mi",
    "Ki",
    "Ti",
    "m",
    // The command and environment examples of the submit form (code, not words).
    "bash",
    "c",
    "python",
    "train",
    "py",
    "echo",
    "done",
    "dev",
    "shm",
    "NAME",
    "value",
    // What the test and the first start seed: the admin, the default queue (and its display
    // name), the custom kind's task, the helper's image and command, the nodes' accelerator
    // models; the test's own names are not words ("qr", "qh", "qv", "qm", "qt", "Qz"), so an
    // English word left untranslated cannot pass as data.
    "Administrator",
    "admin",
    "default",
    "Default",
    "main",
    "busybox",
    "sleep",
    "pytorch",
    "nvidia",
    "com",
    "a100",
    "v100",
    "qr",
    "qh",
    "qv",
    "qm",
    "qt",
    "Qz",
];

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
}
