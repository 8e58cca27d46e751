//! `ar`, Anteroom's terminal client: a researcher's `sbatch`/`squeue`/`scancel` habits over the
//! public REST API and the `shared` types only — no store, no server code, the same rule as the
//! browser client.
//!
//! `main.rs` only calls [`main`]; each command lives in [`commands`], the HTTP in [`client`],
//! what is pure (job files, the event-stream format, tables) in modules of its own.

pub mod args;
pub mod client;
pub mod commands;
pub mod config;
pub mod error;
pub mod i18n;
pub mod jobfile;
pub mod output;
pub mod reasons;
pub mod sse;

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser as _;

use crate::args::{Cli, Command};
use crate::client::Api;
use crate::error::{CliError, CliResult};
use crate::i18n::I18n;
use crate::output::Style;

/// What every command gets: the server, the user's language, how to print.
pub struct Ctx {
    /// The API client (with the saved token, if any).
    pub api: Api,
    /// The user's language.
    pub i18n: I18n,
    /// Colours or not.
    pub style: Style,
    /// `--json`: the API's answers for scripts.
    pub json: bool,
    /// The saved state's file.
    pub config_path: PathBuf,
    /// The saved state.
    pub saved: config::Saved,
}

impl Ctx {
    /// The token, or [`CliError::NotLoggedIn`] before any request is sent.
    pub fn require_login(&self) -> CliResult<()> {
        if self.saved.token.is_none() {
            return Err(CliError::NotLoggedIn);
        }
        Ok(())
    }

    /// Prints a value as JSON on stdout.
    pub fn print_json<T: serde::Serialize>(&self, value: &T) {
        println!("{}", serde_json::to_string_pretty(value).unwrap_or_default());
    }
}

/// The process: parse, run one command, print a failure on stderr, exit with its code.
pub fn main() -> ExitCode {
    #[cfg(unix)]
    // SAFETY: called first, before any thread exists; SIG_DFL is a valid disposition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let i18n = I18n::from_process_env();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version land here too, with exit code 0.
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { error::exit::USAGE } else { 0 });
        }
    };
    let json = cli.json;
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ar: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli, i18n)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            report(&e, i18n, json);
            e.exit()
        }
    }
}

/// Runs one parsed command.
pub async fn run(cli: Cli, i18n: I18n) -> CliResult<()> {
    match &cli.command {
        Command::Completions(args) => return commands::meta::completions(args.shell),
        Command::Man => return commands::meta::man(),
        _ => {}
    }
    let dir = config::dir(|name| std::env::var(name).ok())?;
    let config_path = config::file(&dir);
    let saved = config::load(&config_path)?;
    let url = cli
        .url
        .clone()
        .filter(|u| !u.trim().is_empty())
        .or_else(|| saved.url.clone())
        .map(|u| client::normalise(&u))
        .ok_or_else(|| CliError::Usage(i18n.t("cli.error.noServer")))?;
    // A token saved for another server is not sent to this one (URLs compared normalised).
    let same_server = saved.url.as_deref().map(client::normalise).as_deref() == Some(url.as_str());
    let token = saved.token.clone().filter(|_| same_server);
    let saved = config::Saved { token, ..saved };
    let extra_root = match &cli.cacert {
        Some(path) => Some(std::fs::read(path).map_err(|source| CliError::File {
            path: path.display().to_string(),
            source,
        })?),
        None => None,
    };
    let ctx = Ctx {
        api: Api::trusting(&url, saved.token.clone(), extra_root.as_deref())?,
        i18n,
        style: Style::detect(),
        json: cli.json,
        config_path,
        saved,
    };
    commands::dispatch(&ctx, cli.command).await
}

/// A failure on stderr: in the user's language when the API's code has a text, always with the
/// code and the server's own sentence; with `--json`, the API's error object.
pub fn report(e: &CliError, i18n: I18n, json: bool) {
    let mut err = std::io::stderr().lock();
    if json {
        let body = match e {
            CliError::Api {
                code, message, details, ..
            } => {
                serde_json::json!({"error": {"code": code, "message": message, "details": details}, "exitCode": e.exit_code()})
            }
            other => {
                serde_json::json!({"error": {"code": local_code(other), "message": other.to_string()}, "exitCode": e.exit_code()})
            }
        };
        let _ = writeln!(err, "{body}");
        return;
    }
    let text = match e {
        CliError::Api {
            code, message, details, ..
        } => {
            let mut text = match i18n.lookup(&format!("error.{code}")) {
                Some(local) if local != *message => format!("{local}\n  {code}: {message}"),
                _ => format!("{code}: {message}"),
            };
            for field in details
                .as_ref()
                .and_then(|d| d.get("fields"))
                .and_then(|f| f.as_array())
                .into_iter()
                .flatten()
            {
                let name = field.get("field").and_then(|v| v.as_str()).unwrap_or_default();
                let problem = field.get("message").and_then(|v| v.as_str()).unwrap_or_default();
                text.push_str(&format!("\n  - {name}: {problem}"));
            }
            if code == "unauthorized" {
                text.push_str(&format!("\n{}", i18n.t("cli.error.loginAgain")));
            }
            text
        }
        CliError::NotLoggedIn => i18n.t("cli.error.notLoggedIn"),
        CliError::Unreachable { url, reason } => {
            format!("{}\n  {reason}", i18n.tf("cli.error.unreachable", &[("url", url)]))
        }
        other => other.to_string(),
    };
    let _ = writeln!(err, "ar: {text}");
}

/// A stable code for failures that did not come from the server.
fn local_code(e: &CliError) -> &'static str {
    match e {
        CliError::Usage(_) => "usage",
        CliError::NotLoggedIn => "not_logged_in",
        CliError::Unreachable { .. } => "unreachable",
        CliError::File { .. } => "file",
        CliError::Api { .. } => "api",
    }
}
