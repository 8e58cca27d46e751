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
pub mod context;
pub mod error;
pub mod i18n;
pub mod jobfile;
pub mod output;
pub mod reasons;
pub mod sse;
pub mod terminal;

use std::process::ExitCode;

use clap::Parser as _;

use crate::args::{Cli, Command};
use crate::client::Api;
use crate::context::Ctx;
use crate::error::{CliError, CliResult, report};
use crate::i18n::I18n;
use crate::output::Style;

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
