//! The command line: `anteroom [serve]`, `anteroom migrate`, `anteroom openapi`, `--version`.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::config::CliOverrides;

/// Anteroom: a quota-aware job portal and admission layer for Kubernetes + Volcano GPU clusters.
#[derive(Debug, Parser)]
#[command(name = "anteroom", version, about)]
pub struct Cli {
    /// What to do (default: serve).
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Configuration file (default: ./anteroom.toml when present; env ANTEROOM_CONFIG).
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
    /// Address to listen on (env ANTEROOM_LISTEN).
    #[arg(long, global = true)]
    pub listen: Option<String>,
    /// Data directory (env ANTEROOM_DATA_DIR).
    #[arg(long, global = true)]
    pub data_dir: Option<PathBuf>,
    /// Database URL (env ANTEROOM_DATABASE_URL).
    #[arg(long, global = true)]
    pub database_url: Option<String>,
    /// `sim` or `kube` (env ANTEROOM_CLUSTER).
    #[arg(long, global = true)]
    pub cluster: Option<String>,
    /// `human` or `json` (env ANTEROOM_LOG_FORMAT).
    #[arg(long, global = true)]
    pub log_format: Option<String>,
}

/// Subcommands.
#[derive(Debug, Subcommand, PartialEq, Eq)]
pub enum Command {
    /// Run the server (the default).
    Serve,
    /// Apply pending database migrations and exit.
    Migrate,
    /// Print the OpenAPI document and exit.
    Openapi,
    /// Ask the server at the configured listen address whether it is up (exit 0) or not (1).
    Healthcheck,
    /// Write a consistent copy of the SQLite database to FILE, while the server runs.
    Backup {
        /// Where (must not exist).
        file: std::path::PathBuf,
    },
    /// Put the backup FILE in place of the SQLite database (the server stopped).
    Restore {
        /// The backup.
        file: std::path::PathBuf,
    },
}

impl Cli {
    /// The flags that override configuration.
    pub fn overrides(&self) -> CliOverrides {
        CliOverrides {
            config_file: self.config.clone(),
            listen: self.listen.clone(),
            data_dir: self.data_dir.clone(),
            database_url: self.database_url.clone(),
            cluster: self.cluster.clone(),
            log_format: self.log_format.clone(),
        }
    }
}
