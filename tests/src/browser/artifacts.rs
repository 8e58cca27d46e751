//! What a test keeps of a page besides its verdict: screenshots under the target directory,
//! and the page's paint timings.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::Browser;

impl Browser {
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
}

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

#[cfg(test)]
mod tests {
    use super::*;

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
