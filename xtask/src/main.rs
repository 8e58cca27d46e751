//! `cargo xtask`: builds the web UI and the server that embeds it, with nothing but cargo and
//! crates from crates.io (no cargo-leptos, no Node, no downloaded binaries).
//!
//! - `cargo xtask ui`: WASM client → wasm-bindgen → wasm-opt (when present) → CSS → index.html,
//!   hashed under `frontend/dist/pkg/<hash>/`, each file with a gzip twin.
//! - `cargo xtask build`: `ui`, then the release server with the UI embedded.
//! - `cargo xtask run [ARGS]`: `build`, then `anteroom serve ARGS`.
//! - `cargo xtask dist`: `build`, then copy the self-contained binary to `dist/anteroom`.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

const WEB_CRATE: &str = "anteroom-web";
const WASM_PROFILE: &str = "wasm-release";
const WASM_TARGET: &str = "wasm32-unknown-unknown";

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let command = args.next().unwrap_or_default();
    let rest: Vec<String> = args.collect();
    let ws = workspace_root();
    match command.as_str() {
        "ui" => build_ui(&ws).map(|_| ()),
        "build" => {
            build_ui(&ws)?;
            build_server(&ws)
        }
        "run" => {
            build_ui(&ws)?;
            build_server(&ws)?;
            let bin = target_dir(&ws).join("release/anteroom");
            let status = Command::new(&bin)
                .arg("serve")
                .args(&rest)
                .status()
                .context("starting anteroom")?;
            std::process::exit(status.code().unwrap_or(1));
        }
        "dist" => {
            build_ui(&ws)?;
            build_server(&ws)?;
            let out = ws.join("dist");
            std::fs::create_dir_all(&out)?;
            std::fs::copy(target_dir(&ws).join("release/anteroom"), out.join("anteroom"))?;
            println!("xtask: self-contained binary at {}", out.join("anteroom").display());
            Ok(())
        }
        _ => {
            eprintln!("usage: cargo xtask <ui|build|run|dist> [args for `anteroom serve`]");
            std::process::exit(2);
        }
    }
}

/// True under CI: `CI` set to anything but empty, `false` or `0`. The same rule as `is_ci` in
/// `anteroom.sh` and `anteroom_tests::in_ci`; keep the three alike.
fn in_ci() -> bool {
    means_ci(std::env::var("CI").ok().as_deref())
}

fn means_ci(value: Option<&str>) -> bool {
    value.is_some_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// The checkout this xtask was run from. `cargo run` sets `CARGO_MANIFEST_DIR` for the run
/// itself; the value baked in at compile time is only the fallback, since one target directory
/// shared by two checkouts may hand this checkout a binary compiled in the other.
fn workspace_root() -> PathBuf {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    manifest.parent().expect("xtask lives in the workspace").to_path_buf()
}

fn target_dir(ws: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| ws.join("target"))
}

/// A cargo command without the variables `cargo run` set for the xtask itself: build scripts that
/// read them (ring reads `CARGO_MANIFEST_DIR`) would otherwise see a change between a build from
/// here and a plain `cargo build`, and everything above them would rebuild each time.
fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    for (key, _) in std::env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        let set_for_xtask = key == "CARGO_MANIFEST_DIR"
            || key == "CARGO_MANIFEST_PATH"
            || key == "CARGO_PRIMARY_PACKAGE"
            || key == "CARGO_CRATE_NAME"
            || key.starts_with("CARGO_PKG_")
            || key.starts_with("CARGO_BIN_");
        if set_for_xtask {
            cmd.env_remove(key);
        }
    }
    cmd
}

fn step(name: &str) -> Instant {
    println!("xtask: {name}…");
    let _ = std::io::stdout().flush();
    Instant::now()
}

fn done(start: Instant) {
    println!("xtask:   done in {:.1} s", start.elapsed().as_secs_f64());
}

/// Builds the UI into `frontend/dist`; returns the hash directory name.
fn build_ui(ws: &Path) -> Result<String> {
    let t = step("compiling the web UI to WebAssembly");
    let status = cargo()
        .current_dir(ws)
        .args([
            "build",
            "-p",
            WEB_CRATE,
            "--target",
            WASM_TARGET,
            "--profile",
            WASM_PROFILE,
        ])
        .status()
        .context("running cargo")?;
    if !status.success() {
        bail!("the web UI did not compile");
    }
    done(t);

    let wasm_in = target_dir(ws)
        .join(WASM_TARGET)
        .join(WASM_PROFILE)
        .join("anteroom_web.wasm");
    let staging = target_dir(ws).join("xtask-ui");
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging)?;

    let t = step("generating JS bindings (wasm-bindgen)");
    wasm_bindgen_cli_support::Bindgen::new()
        .input_path(&wasm_in)
        .web(true)?
        // Used as a library, the generated init() has no default module path; we pass it
        // explicitly from index.html anyway.
        .omit_default_module_path(false)
        .typescript(false)
        .remove_producers_section(true)
        .generate(&staging)
        .map_err(|e| anyhow::anyhow!("wasm-bindgen: {e}"))?;
    done(t);

    let wasm = staging.join("anteroom_web_bg.wasm");
    optimise_wasm(&wasm, &target_dir(ws).join("wasm-opt-cache"));

    // The page boots from a file, not an inline script, so the Content-Security-Policy needs no
    // 'unsafe-inline'. Paths are relative to the file itself, so it needs no hash inside.
    std::fs::write(staging.join("boot.js"), BOOT_JS)?;
    std::fs::write(staging.join("theme.js"), THEME_JS)?;

    let t = step("generating CSS (encre-css, Tailwind utilities)");
    let css = generate_css(&ws.join("frontend/src"))?;
    std::fs::write(staging.join("app.css"), &css)?;
    done(t);

    // One hash over everything under pkg/: any change gives new URLs, so they can be cached
    // forever while index.html (always revalidated) points at the current ones.
    let mut hasher = Sha256::new();
    let mut staged = Vec::new();
    collect_files(&staging, &mut staged)?;
    staged.sort();
    for f in &staged {
        hasher.update(f.strip_prefix(&staging)?.to_string_lossy().as_bytes());
        hasher.update(std::fs::read(f)?);
    }
    let hash: String = hasher.finalize().iter().take(6).map(|b| format!("{b:02x}")).collect();

    let dist = ws.join("frontend/dist");
    // Leave an identical build untouched: rewriting it would change its mtimes and make cargo
    // rebuild the server that embeds it.
    let index = index_html(&hash);
    if dist.join("pkg").join(&hash).is_dir()
        && std::fs::read_to_string(dist.join("index.html")).ok() == Some(index.clone())
    {
        println!("xtask: UI unchanged ({})", dist.display());
        return Ok(hash);
    }
    let _ = std::fs::remove_dir_all(&dist);
    let pkg = dist.join("pkg").join(&hash);
    std::fs::create_dir_all(&pkg)?;
    for f in &staged {
        let rel = f.strip_prefix(&staging)?;
        let dest = pkg.join(rel);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::copy(f, dest)?;
    }
    std::fs::write(dist.join("index.html"), &index)?;
    std::fs::write(dist.join("favicon.svg"), FAVICON)?;

    let t = step("precompressing (gzip)");
    let mut all = Vec::new();
    collect_files(&dist, &mut all)?;
    for f in &all {
        gzip_twin(f)?;
    }
    done(t);

    let wasm_size = std::fs::metadata(pkg.join("anteroom_web_bg.wasm"))?.len();
    let wasm_gz = std::fs::metadata(pkg.join("anteroom_web_bg.wasm.gz"))
        .map(|m| m.len())
        .unwrap_or(wasm_size);
    println!(
        "xtask: UI written to {} (wasm {} KiB, {} KiB gzipped)",
        dist.display(),
        wasm_size / 1024,
        wasm_gz / 1024
    );
    Ok(hash)
}

/// Runs `wasm-opt -Oz` when it is there and accepts the module: the one `ANTEROOM_WASM_OPT`
/// names (`./anteroom.sh` installs binaryen from npm and sets it), else `wasm-opt` on the PATH
/// (Debian's binaryen is old and may reject newer WASM features); otherwise the module stays
/// as it is. The result is kept by the input's hash, so an unchanged UI is not optimised again
/// (the optimiser takes tens of seconds).
fn optimise_wasm(wasm: &Path, cache: &Path) {
    let tool = std::env::var_os("ANTEROOM_WASM_OPT")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("wasm-opt"), PathBuf::from);
    let Ok(probe) = Command::new(&tool).arg("--version").output() else {
        println!("xtask: wasm-opt not installed; skipping (./anteroom.sh installs it from npm)");
        return;
    };
    if !probe.status.success() {
        return;
    }
    let Ok(input) = std::fs::read(wasm) else {
        return;
    };
    // The features the module declares (its target_features section), no others: with
    // `--all-features` the optimiser may use instructions browsers do not run.
    const FLAGS: [&str; 2] = ["-Oz", "--strip-debug"];
    let mut hasher = Sha256::new();
    hasher.update(&probe.stdout);
    hasher.update(FLAGS.join(" "));
    hasher.update(&input);
    let key: String = hasher.finalize().iter().take(12).map(|b| format!("{b:02x}")).collect();
    let cached = cache.join(format!("{key}.wasm"));
    // A cached file is whole (it is renamed into place), but check it is a module anyway.
    if let Ok(module) = std::fs::read(&cached)
        && module.starts_with(b"\0asm")
        && std::fs::write(wasm, &module).is_ok()
    {
        println!("xtask: wasm-opt -Oz: unchanged module, optimised before");
        return;
    }
    let t = step(&format!("optimising with {} -Oz", tool.display()));
    let out = wasm.with_extension("opt.wasm");
    let result = Command::new(&tool).args(FLAGS).arg(wasm).arg("-o").arg(&out).output();
    match result {
        Ok(o) if o.status.success() => {
            // Only the newest result is kept; written beside and renamed, so a reader never
            // finds half a file.
            let _ = std::fs::remove_dir_all(cache);
            let partial = cache.join(format!("{key}.{}.partial", std::process::id()));
            if std::fs::create_dir_all(cache).is_ok() && std::fs::copy(&out, &partial).is_ok() {
                let _ = std::fs::rename(&partial, &cached);
            }
            let _ = std::fs::rename(&out, wasm);
            done(t);
        }
        _ => {
            let _ = std::fs::remove_file(&out);
            println!("xtask:   wasm-opt rejected the module; keeping it unoptimised");
        }
    }
}

fn generate_css(src: &Path) -> Result<String> {
    let mut files = Vec::new();
    collect_files(src, &mut files)?;
    let mut sources = Vec::new();
    for f in files.iter().filter(|f| f.extension().is_some_and(|e| e == "rs")) {
        sources.push(std::fs::read_to_string(f)?);
    }
    let mut config = encre_css::Config::default();
    // `dark:` utilities apply under `<html class="dark">`, set by theme.js from the user's
    // choice or the system's preference (a media query alone could not honour a choice).
    config.theme.dark_mode = encre_css::config::DarkMode::new_class("html.dark");
    let mut css = encre_css::generate(sources.iter().map(String::as_str), &config);
    // Native controls, scrollbars and the canvas beyond the page follow the theme too.
    css.push_str("\nhtml.dark {\n  color-scheme: dark;\n  background-color: #020617;\n}\n");
    // The header stays on top of the page: whatever scrolls into view (a focused field, an
    // anchor) stops below it, not under it.
    css.push_str("\nhtml {\n  scroll-padding-top: 4rem;\n}\n");
    // Text layout per script: Korean breaks between words (spaces), never inside one; Japanese
    // between phrases (Chromium's auto-phrase; elsewhere the default); a word longer than its
    // box still wraps rather than overflow it (without widening table columns).
    css.push_str(
        "\nhtml:lang(ko) body {\n  word-break: keep-all;\n  overflow-wrap: break-word;\n}\n\
         html:lang(ja) body {\n  word-break: auto-phrase;\n  overflow-wrap: break-word;\n}\n",
    );
    Ok(css)
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            collect_files(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

fn gzip_twin(file: &Path) -> Result<()> {
    let data = std::fs::read(file)?;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(&data)?;
    let gz = enc.finish()?;
    if gz.len() < data.len() {
        std::fs::write(format!("{}.gz", file.display()), gz)?;
    }
    Ok(())
}

fn index_html(hash: &str) -> String {
    format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Anteroom</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<script src="/pkg/{hash}/theme.js"></script>
<link rel="stylesheet" href="/pkg/{hash}/app.css">
</head>
<body>
<noscript>Anteroom needs JavaScript and WebAssembly. · 需要启用 JavaScript。 · JavaScript を有効にしてください。 · JavaScript를 켜 주세요.</noscript>
<script type="module" src="/pkg/{hash}/boot.js"></script>
</body>
</html>
"#
    )
}

/// Starts the WASM client; loaded by `index.html` as a module script.
const BOOT_JS: &str = "import init from './anteroom_web.js';\n\
init({ module_or_path: new URL('./anteroom_web_bg.wasm', import.meta.url) });\n";

/// Applies the colour theme before the first paint, and again when the system's preference
/// changes: the saved choice (`anteroom.theme`: light or dark), else the system's. A classic
/// script in `<head>`, so it runs before the body is drawn; the WASM's switch writes the same key.
const THEME_JS: &str = r#"(function () {
  var query = window.matchMedia('(prefers-color-scheme: dark)');
  function apply() {
    var saved = null;
    try { saved = window.localStorage.getItem('anteroom.theme'); } catch (e) {}
    var dark = saved === 'dark' || (saved !== 'light' && query.matches);
    document.documentElement.className = dark ? 'dark' : '';
  }
  apply();
  query.addEventListener('change', apply);
})();
"#;

const FAVICON: &str = r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#0f172a"/><path d="M9 24 16 8l7 16M11.6 18h8.8" stroke="#38bdf8" stroke-width="3" fill="none" stroke-linecap="round" stroke-linejoin="round"/></svg>"##;

fn build_server(ws: &Path) -> Result<()> {
    let t = step("compiling the server (release) with the UI embedded");
    let mut cmd = cargo();
    cmd.current_dir(ws).args(["build", "--release", "-p", "anteroom"]);
    if in_ci() {
        cmd.arg("--locked");
    }
    if !cmd.status().context("running cargo")?.success() {
        bail!("the server did not compile");
    }
    done(t);
    println!("xtask: server at {}", target_dir(ws).join("release/anteroom").display());
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn ci_is_any_value_but_empty_false_or_zero() {
        for v in ["true", "1", "yes", "github"] {
            assert!(super::means_ci(Some(v)), "{v}");
        }
        for v in [None, Some(""), Some("false"), Some("0")] {
            assert!(!super::means_ci(v), "{v:?}");
        }
    }
}
