//! `ar`: see the library.

fn main() -> std::process::ExitCode {
    anteroom_cli::main()
}
