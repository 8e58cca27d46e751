//! The `anteroom` binary: parse the command line, load the configuration, hand over to the
//! library.

use std::process::ExitCode;

use anteroom::cli::{Cli, Command};
use anteroom::config::Config;
use anteroom::users::FirstAdmin;
use anteroom::{app, store, telemetry};
use clap::Parser;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.command == Some(Command::Openapi) {
        let spec = anteroom::http::openapi_document();
        println!("{}", spec.to_pretty_json().expect("the spec serialises"));
        return ExitCode::SUCCESS;
    }
    let config = match Config::load(&cli.overrides(), &|k| std::env::var(k).ok()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("anteroom: {e}");
            return ExitCode::from(2);
        }
    };
    telemetry::init(config.log_format, &config.log_filter);
    for warning in &config.warnings {
        tracing::warn!("{warning}");
    }
    let result = match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => serve(config).await,
        Command::Migrate => migrate(config).await,
        Command::Openapi => unreachable!("handled above"),
        Command::Healthcheck => anteroom::healthcheck::check(config.listen).map_err(anyhow::Error::msg),
        Command::Backup { file } => store::backup::backup(&config.database_url, &file)
            .await
            .map(|r| println!("backed up {} jobs to {} ({} bytes)", r.jobs, r.file.display(), r.bytes))
            .map_err(anyhow::Error::from),
        Command::Restore { file } => store::backup::restore(&config.database_url, &file, config.listen)
            .await
            .map(|jobs| {
                println!(
                    "restored {jobs} jobs from {}; start the server to use them",
                    file.display()
                )
            })
            .map_err(anyhow::Error::from),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e:#}");
            eprintln!("anteroom: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(config: Config) -> anyhow::Result<()> {
    let listen = config.listen;
    // Bind first: a port in use is a common failure, and like every other one it must come
    // before the first admin is created (`app::prepare` creates it last).
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {listen} (ANTEROOM_LISTEN): {e}"))?;
    let prepared = app::prepare(config).await?;
    if let FirstAdmin::Generated(password) = &prepared.first_admin {
        // Printed on the terminal only (never into the log stream), and kept owner-only in the
        // data directory so `./anteroom.sh run` can show it again.
        let kept = prepared.state.config.data_dir.join(app::ADMIN_PASSWORD_FILE);
        println!("Created the first admin. Username: admin  Password: {password}");
        println!(
            "The password is also in {} (owner-only); changing it through the API removes that file.",
            kept.display()
        );
    }
    let local = listener.local_addr()?;
    tracing::info!(listen = %local, cluster = prepared.state.cluster.kind(), "Anteroom is serving");
    println!("Anteroom is serving on http://{local}");
    // On SIGTERM/Ctrl-C stop accepting and let in-flight requests finish, but never take more
    // than 10 s: an orchestrator's kill would follow anyway.
    let (stopping_tx, stopping_rx) = tokio::sync::oneshot::channel::<()>();
    let shutdown = async move {
        app::shutdown_signal().await;
        let _ = stopping_tx.send(());
    };
    let server = app::serve(listener, prepared.state, shutdown);
    tokio::pin!(server);
    tokio::select! {
        result = &mut server => result?,
        _ = async {
            if stopping_rx.await.is_ok() {
                tokio::time::sleep(std::time::Duration::from_secs(10)).await;
            } else {
                std::future::pending::<()>().await;
            }
        } => tracing::warn!("in-flight requests did not finish within 10 s; exiting anyway"),
    }
    Ok(())
}

async fn migrate(config: Config) -> anyhow::Result<()> {
    anteroom::files::create_private_dir(&config.data_dir)?;
    let db = store::connect(&config.database_url).await?;
    store::migrate(&db).await?;
    println!("migrations applied");
    Ok(())
}
