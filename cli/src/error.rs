//! What can go wrong, and the exit code a script sees for it: 0 ok, 1 refused by the server,
//! 2 a usage mistake, 3 the server unreachable (or failing), 4 not logged in or the token (or
//! password) refused. A 403 (logged in, not allowed) is a refusal: 1.

use std::io::Write as _;
use std::process::ExitCode;

use crate::i18n::I18n;

/// The exit codes, one per kind of failure a script may want to tell apart.
pub mod exit {
    /// The server refused the request (a 4xx other than 401), or a job was rejected.
    pub const REFUSED: u8 = 1;
    /// The command line, a job file or a `--set` was wrong; nothing was sent.
    pub const USAGE: u8 = 2;
    /// The server could not be reached, timed out or answered 5xx.
    pub const UNREACHABLE: u8 = 3;
    /// No token, an expired or revoked one, or a wrong password.
    pub const UNAUTHORIZED: u8 = 4;
}

/// A failure of one command. The API's own code and sentence are kept so that the message a
/// user reads names what the server said.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A mistake on the command line or in a file.
    #[error("{0}")]
    Usage(String),
    /// The server answered with an error (`{"error": {code, message, details}}`).
    #[error("{code}: {message}")]
    Api {
        /// The HTTP status.
        status: u16,
        /// The API's stable code (`quota_request_exceeds_limit`).
        code: String,
        /// The API's English sentence.
        message: String,
        /// The API's details, when it gave some.
        details: Option<serde_json::Value>,
    },
    /// No answer from the server.
    #[error("cannot reach {url}: {reason}")]
    Unreachable {
        /// The server's URL.
        url: String,
        /// What the HTTP client said.
        reason: String,
    },
    /// No token saved (`ar login` first).
    #[error("not logged in")]
    NotLoggedIn,
    /// Reading or writing a local file.
    #[error("{path}: {source}")]
    File {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
}

impl CliError {
    /// The process exit code for this failure.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => exit::USAGE,
            CliError::Api { status: 401, .. } | CliError::NotLoggedIn => exit::UNAUTHORIZED,
            CliError::Api { status, .. } if *status >= 500 => exit::UNREACHABLE,
            CliError::Api { .. } => exit::REFUSED,
            CliError::Unreachable { .. } => exit::UNREACHABLE,
            CliError::File { .. } => exit::USAGE,
        }
    }

    /// The API's code, when the server gave one.
    pub fn code(&self) -> Option<&str> {
        match self {
            CliError::Api { code, .. } => Some(code),
            _ => None,
        }
    }

    /// As a process exit code.
    pub fn exit(&self) -> ExitCode {
        ExitCode::from(self.exit_code())
    }
}

/// The result of a command.
pub type CliResult<T = ()> = Result<T, CliError>;

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

#[cfg(test)]
mod tests {
    use super::*;

    fn api(status: u16) -> CliError {
        CliError::Api {
            status,
            code: "x".into(),
            message: "m".into(),
            details: None,
        }
    }

    #[test]
    fn each_kind_of_failure_has_its_exit_code() {
        assert_eq!(CliError::Usage("u".into()).exit_code(), 2);
        assert_eq!(api(422).exit_code(), 1);
        assert_eq!(api(409).exit_code(), 1);
        assert_eq!(api(403).exit_code(), 1);
        assert_eq!(api(401).exit_code(), 4);
        assert_eq!(CliError::NotLoggedIn.exit_code(), 4);
        assert_eq!(api(503).exit_code(), 3);
        let unreachable = CliError::Unreachable {
            url: "u".into(),
            reason: "r".into(),
        };
        assert_eq!(unreachable.exit_code(), 3);
    }
}
