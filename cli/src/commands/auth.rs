//! `ar login`, `ar logout`, `ar whoami`.

use std::io::BufRead as _;

use anteroom_shared::api::{LoginRequest, LoginResponse, User};
use reqwest::Method;

use crate::args::LoginArgs;
use crate::client::Repeat;
use crate::config::{self, Saved};
use crate::context::Ctx;
use crate::error::{CliError, CliResult};
use crate::output;

/// Logs in and saves the server, the user and the token.
pub async fn login(ctx: &Ctx, args: LoginArgs) -> CliResult<()> {
    let username = match args.username {
        Some(u) => u,
        None if args.password_stdin => {
            return Err(CliError::Usage(ctx.i18n.t("cli.login.usernameWithStdin")));
        }
        None => prompt_line(&format!("{}: ", ctx.i18n.t("cli.login.username")))?,
    };
    let password = if args.password_stdin {
        // Only the line ending is cut: a password may begin or end with spaces.
        stdin_line()?.trim_end_matches(['\n', '\r']).to_owned()
    } else {
        rpassword::prompt_password(format!("{}: ", ctx.i18n.t("cli.login.password"))).map_err(|source| {
            CliError::File {
                path: "/dev/tty".into(),
                source,
            }
        })?
    };
    if crate::client::is_cleartext_remote(ctx.api.base()) {
        eprintln!(
            "{}",
            ctx.style
                .red(&ctx.i18n.tf("cli.login.cleartext", &[("url", ctx.api.base())]))
        );
    }
    let anonymous = ctx.api.without_token();
    let answer: LoginResponse = anonymous
        .send_json(
            Method::POST,
            "/api/v1/auth/login",
            &LoginRequest {
                username: username.clone(),
                password,
            },
            Repeat::Once,
        )
        .await?;
    let saved = Saved {
        url: Some(ctx.api.base().to_owned()),
        username: Some(answer.user.username.clone()),
        token: Some(answer.token.clone()),
        expires_at: Some(answer.expires_at),
    };
    config::save(&ctx.config_path, &saved)?;
    if ctx.json {
        ctx.print_json(&answer.user);
    } else {
        println!(
            "{}",
            ctx.i18n.tf(
                "cli.login.done",
                &[
                    ("user", &answer.user.username),
                    ("url", ctx.api.base()),
                    ("until", &output::local_time(answer.expires_at)),
                ]
            )
        );
    }
    Ok(())
}

/// Ends the user's tokens on the server, then forgets the saved one. A token the server no
/// longer accepts is forgotten all the same.
pub async fn logout(ctx: &Ctx) -> CliResult<()> {
    // No token for this server (perhaps one for another, left alone): nothing to end.
    ctx.require_login()?;
    match ctx
        .api
        .send(Repeat::Safe, || ctx.api.request(Method::POST, "/api/v1/auth/logout"))
        .await
    {
        Ok(_) | Err(CliError::Api { status: 401, .. }) => {}
        Err(e) => return Err(e),
    }
    let saved = Saved {
        token: None,
        expires_at: None,
        ..ctx.saved.clone()
    };
    config::save(&ctx.config_path, &saved)?;
    if !ctx.json {
        println!("{}", ctx.i18n.t("cli.logout.done"));
    }
    Ok(())
}

/// Who the token belongs to.
pub async fn whoami(ctx: &Ctx) -> CliResult<()> {
    ctx.require_login()?;
    let user: User = ctx.api.get("/api/v1/auth/me", &[]).await?;
    if ctx.json {
        ctx.print_json(&user);
    } else {
        println!(
            "{} ({}) · {} · {}",
            user.username,
            user.display_name,
            serde_json::to_value(user.role)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            user.queues.join(", ")
        );
    }
    Ok(())
}

fn prompt_line(prompt: &str) -> CliResult<String> {
    eprint!("{prompt}");
    Ok(stdin_line()?.trim().to_owned())
}

/// One line of standard input, its ending included.
fn stdin_line() -> CliResult<String> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|source| CliError::File {
            path: "stdin".into(),
            source,
        })?;
    Ok(line)
}
