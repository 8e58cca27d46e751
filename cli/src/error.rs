//! What can go wrong, and the exit code a script sees for it: 0 ok, 1 refused by the server,
//! 2 a usage mistake, 3 the server unreachable (or failing), 4 not logged in or the token (or
//! password) refused. A 403 (logged in, not allowed) is a refusal: 1.

use std::process::ExitCode;

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
