//! One module per group of commands; each takes the [`Ctx`] and its arguments and prints what
//! it got, as text for people or JSON with `--json`.

pub mod admin;
pub mod again;
pub mod auth;
pub mod jobs;
pub mod logs;
pub mod meta;
pub mod pods;
pub mod queues;
pub mod submit;
pub mod usage;
pub mod watch;

use crate::args::Command;
use crate::context::Ctx;
use crate::error::CliResult;

/// Runs a command that talks to the server.
pub async fn dispatch(ctx: &Ctx, command: Command) -> CliResult<()> {
    match command {
        Command::Login(args) => auth::login(ctx, args).await,
        Command::Logout => auth::logout(ctx).await,
        Command::Whoami => auth::whoami(ctx).await,
        Command::Submit(args) => submit::submit(ctx, args).await,
        Command::Again(args) => again::again(ctx, args).await,
        Command::Templates => submit::templates(ctx).await,
        Command::Pods(args) => pods::pods(ctx, args.id).await,
        Command::Ls(args) => jobs::list(ctx, args).await,
        Command::Why(args) => jobs::why(ctx, args.id).await,
        Command::Watch(args) => watch::watch(ctx, args).await,
        Command::Cancel(args) => jobs::cancel(ctx, &args.ids).await,
        Command::Logs(args) => logs::logs(ctx, args).await,
        Command::Queues => queues::queues(ctx).await,
        Command::Quota(args) => queues::quota(ctx, &args.queue).await,
        Command::Usage(args) => usage::usage(ctx, args).await,
        Command::Admin(command) => admin::admin(ctx, command).await,
        Command::Completions(_) | Command::Man => Ok(()),
    }
}
