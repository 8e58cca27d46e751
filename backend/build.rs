//! Embeds the built web UI (`frontend/dist`, written by `cargo xtask ui`) into the binary, so
//! `anteroom serve` needs nothing beside itself. Without a built UI a placeholder page is
//! embedded instead, so the server still builds and its API still works.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-env-changed=ANTEROOM_UI_DIST");
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let dist = std::env::var_os("ANTEROOM_UI_DIST")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("../frontend/dist"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo")).join("ui_assets.rs");

    let mut code = String::from(
        "/// Files of the built web UI, embedded at compile time.\npub static ASSETS: &[EmbeddedAsset] = &[\n",
    );
    let built = dist.join("index.html").is_file();
    if built {
        println!("cargo:rerun-if-changed={}", dist.display());
        let mut files = Vec::new();
        walk(&dist, &mut files);
        files.sort();
        for file in files {
            if file.extension().is_some_and(|e| e == "gz") {
                continue;
            }
            let rel = file
                .strip_prefix(&dist)
                .expect("under dist")
                .to_string_lossy()
                .replace('\\', "/");
            let gz = PathBuf::from(format!("{}.gz", file.display()));
            let gzip = if gz.is_file() {
                format!("Some(include_bytes!({:?}))", gz.display().to_string())
            } else {
                "None".to_string()
            };
            writeln!(
                code,
                "    EmbeddedAsset {{ path: {rel:?}, bytes: include_bytes!({:?}), gzip: {gzip} }},",
                file.display().to_string()
            )
            .expect("write to string");
        }
    } else {
        // Rebuild once the UI appears.
        println!("cargo:rerun-if-changed={}", manifest.join("../frontend").display());
        code.push_str(
            "    EmbeddedAsset { path: \"index.html\", bytes: b\"<!doctype html><html lang=en><meta charset=utf-8><title>Anteroom</title><p>The web UI was not built into this binary. Build it with <code>cargo xtask build</code>; the API is at <a href=/api/docs>/api/docs</a>.</p></html>\", gzip: None },\n",
        );
    }
    code.push_str("];\n");
    writeln!(
        code,
        "/// Whether a real UI build was embedded.\npub const UI_BUILT: bool = {built};"
    )
    .expect("write");
    std::fs::write(out, code).expect("write ui_assets.rs");
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read dist").flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, files);
        } else {
            files.push(path);
        }
    }
}
