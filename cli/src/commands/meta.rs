//! What describes `ar` itself: shell completions and the manual page, generated from the same
//! command-line definition so they cannot fall behind it.

use clap::CommandFactory as _;

use crate::args::Cli;
use crate::error::{CliError, CliResult};

/// `ar completions SHELL`: the script on stdout.
pub fn completions(shell: clap_complete::Shell) -> CliResult<()> {
    let mut command = Cli::command();
    clap_complete::generate(shell, &mut command, "ar", &mut std::io::stdout());
    Ok(())
}

/// `ar man`: the page in roff on stdout.
pub fn man() -> CliResult<()> {
    let page = clap_mangen::Man::new(Cli::command());
    page.render(&mut std::io::stdout()).map_err(|source| CliError::File {
        path: "stdout".into(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn the_manual_names_every_command() {
        let mut out = Vec::new();
        clap_mangen::Man::new(Cli::command()).render(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        for command in [
            "login", "submit", "ls", "why", "watch", "cancel", "logs", "queues", "quota", "admin",
        ] {
            assert!(
                text.contains(&format!("ar\\-{command}(1)")),
                "{command} missing from the man page's commands"
            );
        }
    }
}
