//! `ar logs ID [-f]`: a pod's log as the API gives it, copied to stdout as it arrives — to a
//! terminal without its control characters ([`crate::terminal`]: a job's output must not drive
//! the terminal of whoever reads it), to a pipe or a file as it came.

use std::io::{IsTerminal as _, Write as _};

use reqwest::Method;

use crate::args::LogsArgs;
use crate::client::Repeat;
use crate::context::Ctx;
use crate::error::{CliError, CliResult};

/// `ar logs`.
pub async fn logs(ctx: &Ctx, args: LogsArgs) -> CliResult<()> {
    ctx.require_login()?;
    let mut query = vec![("replica", args.replica.to_string())];
    if let Some(task) = &args.task {
        query.push(("task", task.clone()));
    }
    if let Some(tail) = args.tail {
        query.push(("tailLines", tail.to_string()));
    }
    if args.follow {
        query.push(("follow", "true".to_owned()));
    }
    let path = format!("/api/v1/jobs/{}/logs", args.id);
    let repeat = if args.follow { Repeat::Once } else { Repeat::Safe };
    let mut response = ctx
        .api
        .send(repeat, || ctx.api.request(Method::GET, &path).query(&query))
        .await?;
    let mut out = std::io::stdout().lock();
    let mut terminal = out
        .is_terminal()
        .then(|| crate::terminal::TerminalText::for_locale(|name| std::env::var(name).ok()));
    while let Some(chunk) = response.chunk().await.map_err(|e| CliError::Unreachable {
        url: ctx.api.base().to_owned(),
        reason: e.to_string(),
    })? {
        let written = match terminal.as_mut() {
            Some(t) => out.write_all(&t.clean(&chunk)),
            None => out.write_all(&chunk),
        };
        if written.and_then(|()| out.flush()).is_err() {
            // The reader went away (`ar logs 7 | head`): that is not a failure.
            return Ok(());
        }
    }
    if let Some(t) = terminal.as_mut() {
        let _ = out.write_all(&t.finish()).and_then(|()| out.flush());
    }
    Ok(())
}
