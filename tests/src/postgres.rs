//! PostgreSQL for store tests. The test command starts a throwaway server and exports
//! `ANTEROOM_TEST_POSTGRES_URL` (e.g. `postgres://postgres@127.0.0.1:PORT`); each test gets a
//! database of its own on it, so tests stay parallel-safe.
//!
//! Tests that need PostgreSQL are marked `#[ignore = "needs PostgreSQL"]`, so a plain
//! `cargo nextest run` reports them as skipped; `./anteroom.sh test` provides the server and
//! runs them with `--run-ignored all`. Run without a server they fail: they never pass by
//! doing nothing.

use std::path::{Path, PathBuf};

use sea_orm::ConnectionTrait;

/// The server URL from `ANTEROOM_TEST_POSTGRES_URL`. Panics when it is unset: a test that
/// needs PostgreSQL and runs without it must fail, not pass.
pub fn server_url() -> String {
    match std::env::var("ANTEROOM_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => panic!(
            "this test needs PostgreSQL and ANTEROOM_TEST_POSTGRES_URL is unset: run it through ./anteroom.sh test"
        ),
    }
}

/// Creates an empty database with a unique name and returns its URL.
pub async fn fresh_database(server: &str) -> String {
    let name = format!("anteroom_test_{:016x}", rand::random::<u64>());
    let admin = anteroom::store::connect(&format!("{server}/postgres"))
        .await
        .expect("connect to postgres");
    admin
        .execute_unprepared(&format!("CREATE DATABASE {name}"))
        .await
        .expect("create database");
    admin.close().await.ok();
    format!("{server}/{name}")
}

/// A PostgreSQL server of the test's own, which the test may stop and start again (the shared
/// server of `ANTEROOM_TEST_POSTGRES_URL` must stay up for the other tests). Built like the
/// test command's: `initdb` into a temporary directory, trust authentication, loopback only.
pub struct OwnServer {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
}

impl OwnServer {
    /// Initialises and starts a server. Panics when PostgreSQL is not installed.
    pub fn start() -> OwnServer {
        let bin = install_dir().expect("this test needs PostgreSQL's initdb and pg_ctl (apt-get install postgresql)");
        let dir = tempfile::Builder::new()
            .prefix("anteroom-own-pg")
            .tempdir()
            .expect("temp dir");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        if is_root() {
            run(Path::new("chown"), &["postgres", dir.path().to_str().unwrap()]);
        }
        let data = dir.path().join("data");
        let server = OwnServer { bin, dir, port };
        server.pg(
            "initdb",
            &[
                "-D",
                data.to_str().unwrap(),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
            ],
        );
        server.start_again();
        server
    }

    /// The server's URL (no database).
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}", self.port)
    }

    /// Stops the server (fast: open connections are ended) and waits until it is down.
    pub fn stop(&self) {
        let data = self.dir.path().join("data");
        self.pg("pg_ctl", &["-D", data.to_str().unwrap(), "-m", "fast", "-w", "stop"]);
    }

    /// Starts the stopped server again on the same port and waits until it accepts connections.
    pub fn start_again(&self) {
        let data = self.dir.path().join("data");
        let log = self.dir.path().join("server.log");
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off",
            self.port,
            self.dir.path().display()
        );
        self.pg(
            "pg_ctl",
            &[
                "-D",
                data.to_str().unwrap(),
                "-l",
                log.to_str().unwrap(),
                "-o",
                &opts,
                "-w",
                "start",
            ],
        );
    }

    fn pg(&self, tool: &str, args: &[&str]) {
        let exe = self.bin.join(tool);
        if is_root() {
            let mut all = vec!["-u", "postgres", "--", exe.to_str().unwrap()];
            all.extend_from_slice(args);
            run(Path::new("runuser"), &all);
        } else {
            run(&exe, args);
        }
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        let data = self.dir.path().join("data");
        let exe = self.bin.join("pg_ctl");
        let args = ["-D", data.to_str().unwrap(), "-m", "immediate", "stop"];
        let _ = if is_root() {
            std::process::Command::new("runuser")
                .args(["-u", "postgres", "--", exe.to_str().unwrap()])
                .args(args)
                .output()
        } else {
            std::process::Command::new(&exe).args(args).output()
        };
    }
}

/// The newest `/usr/lib/postgresql/*/bin` with `initdb`, or the one on `PATH`.
fn install_dir() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("initdb").is_file())
        .collect();
    found.sort();
    found.pop().or_else(|| {
        std::env::var_os("PATH")
            .and_then(|p| std::env::split_paths(&p).find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file()))
    })
}

fn is_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn run(exe: &Path, args: &[&str]) {
    let out = std::process::Command::new(exe)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", exe.display()));
    assert!(
        out.status.success(),
        "{} {args:?} failed: {}{}",
        exe.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
