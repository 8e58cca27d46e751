//! The server as `anteroom serve` runs it — configuration from the environment, migrations,
//! the simulated cluster persisted in the database, the watcher, the status sync — for tests
//! that kill it with SIGKILL mid-work and start it again on the same data directory
//! (`tests/tests/usage_crash.rs`): a real process whose death no destructor softens. Prints
//! `listening <address>` once it accepts connections.

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config =
        anteroom::config::Config::load(&anteroom::config::CliOverrides::default(), &|k| std::env::var(k).ok())?;
    let listener = tokio::net::TcpListener::bind(config.listen).await?;
    let prepared = anteroom::app::prepare(config).await?;
    println!("listening {}", listener.local_addr()?);
    anteroom::app::serve(listener, prepared.state, std::future::pending()).await?;
    Ok(())
}
