//! What every command is handed: the API client, the user's language, how to print.

use std::path::PathBuf;

use crate::client::Api;
use crate::config;
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
