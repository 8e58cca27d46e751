//! What the `ar` tests share: one person's `ar` (their own configuration directory, pointed at
//! the test app), a run's outcome, and a job file.
#![allow(dead_code)] // each test binary uses a part

use std::process::Stdio;

use anteroom_tests::{TestApp, USER_PASSWORD};
use serde_json::Value;
use tempfile::TempDir;
use tokio::io::AsyncWriteExt as _;
use tokio::process::Command;

/// One person's `ar`: their own configuration directory, pointed at the app.
pub struct Ar {
    pub url: String,
    pub home: TempDir,
    pub lang: &'static str,
}

/// What a run of `ar` gave.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {self:?}"))
    }

    pub fn ok(self) -> Self {
        assert_eq!(self.code, 0, "{self:?}");
        self
    }
}

impl Ar {
    pub fn new(app: &TestApp) -> Self {
        Self {
            url: app.url(""),
            home: tempfile::tempdir().unwrap(),
            lang: "C.UTF-8",
        }
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_ar"));
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("ANTEROOM_CONFIG_DIR", self.home.path())
            .env("ANTEROOM_URL", &self.url)
            .env("LANG", self.lang)
            .env("NO_COLOR", "1")
            .kill_on_drop(true);
        command
    }

    pub async fn run_with_stdin(&self, args: &[&str], stdin: &str) -> Run {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ar runs");
        let mut input = child.stdin.take().unwrap();
        input.write_all(stdin.as_bytes()).await.unwrap();
        drop(input);
        let out = child.wait_with_output().await.unwrap();
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    pub async fn run(&self, args: &[&str]) -> Run {
        self.run_with_stdin(args, "").await
    }

    /// `ar args` as if the clock said `now` (the idempotency window's clock).
    pub async fn run_at(&self, now: &str, args: &[&str]) -> Run {
        let out = self
            .command(args)
            .env("ANTEROOM_CLI_NOW", now)
            .stdin(Stdio::null())
            .output()
            .await
            .expect("ar runs");
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    pub async fn login(&self, user: &str, password: &str) -> Run {
        self.run_with_stdin(&["login", "-u", user, "--password-stdin"], &format!("{password}\n"))
            .await
    }

    pub fn file(&self, name: &str, text: &str) -> String {
        let path = self.home.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }
}

pub const JOB: &str = "
name: resnet
kind: custom
queue: default
tasks:
  - name: main
    replicas: 1
    image: busybox
    command: [sleep, '3600']
    resources:
      cpu: '1'
      memory: 1Gi
";

pub async fn user(app: &TestApp, name: &str) -> Ar {
    app.user_token(name).await;
    let ar = Ar::new(app);
    ar.login(name, USER_PASSWORD).await.ok();
    ar
}

pub async fn jobs_total(ar: &Ar) -> u64 {
    ar.run(&["ls", "--json"]).await.ok().json()["total"].as_u64().unwrap()
}
