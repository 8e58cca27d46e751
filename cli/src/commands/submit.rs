//! `ar submit -f job.yaml`: a job file, changed by `--set`, previewed or submitted under an
//! `Idempotency-Key` so that running the command again does not submit twice.

use std::io::Read as _;

use anteroom_shared::api::jobs::{Decision, IDEMPOTENT_REPLAYED_HEADER, JobBody, Preview, SubmitResponse};
use reqwest::Method;

use crate::args::SubmitArgs;
use crate::client::Repeat;
use crate::context::Ctx;
use crate::error::{CliError, CliResult};
use crate::{jobfile, reasons};

/// Reads the file (or stdin), applies the `--set`s, and gives the job body with the stamp of
/// its default `Idempotency-Key` (the file's modification time; for stdin, the window).
pub fn body_of(ctx: &Ctx, args: &SubmitArgs) -> CliResult<(JobBody, i64)> {
    let path = args.file.display().to_string();
    let stamp = if path == "-" {
        jobfile::window_stamp(chrono::Utc::now().timestamp())
    } else {
        std::fs::metadata(&args.file)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i64)
    };
    let text = if path == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|source| CliError::File {
                path: "stdin".into(),
                source,
            })?;
        text
    } else {
        std::fs::read_to_string(&args.file).map_err(|source| CliError::File {
            path: path.clone(),
            source,
        })?
    };
    let bad = |e: jobfile::JobFileError| {
        CliError::Usage(format!(
            "{}: {e}",
            ctx.i18n.tf("cli.submit.badFile", &[("file", &path)])
        ))
    };
    let mut doc = jobfile::parse(&text).map_err(bad)?;
    for assignment in &args.set {
        jobfile::set(&mut doc, assignment).map_err(bad)?;
    }
    Ok((jobfile::to_body(doc).map_err(bad)?, stamp))
}

/// `ar submit`.
pub async fn submit(ctx: &Ctx, args: SubmitArgs) -> CliResult<()> {
    let (body, stamp) = body_of(ctx, &args)?;
    if let Some(key) = &args.idempotency_key
        && (key.is_empty() || key.len() > 255 || !key.bytes().all(|b| b.is_ascii_graphic()))
    {
        return Err(CliError::Usage(
            "--idempotency-key: 1 to 255 visible ASCII characters".into(),
        ));
    }
    ctx.require_login()?;
    if args.preview {
        let preview: Preview = ctx
            .api
            .send_json(Method::POST, "/api/v1/jobs/preview", &body, Repeat::Safe)
            .await?;
        if ctx.json {
            ctx.print_json(&preview);
        } else {
            let key = match preview.decision {
                Decision::Activated => "cli.submit.previewActivated",
                Decision::Prequeued => "cli.submit.previewPrequeued",
            };
            println!("{}", ctx.i18n.t(key));
            print!("{}", reasons::render(ctx.i18n, ctx.style, &preview.reasons));
        }
        return Ok(());
    }
    let now = chrono::Utc::now();
    let key = match (&args.idempotency_key, args.again) {
        (Some(key), _) => key.clone(),
        (None, true) => format!("ar-again-{}", now.timestamp_nanos_opt().unwrap_or_default()),
        (None, false) => jobfile::default_key(&body, stamp),
    };
    // Keyed, so safe to send again when no answer came: the server answers the first job.
    let response = ctx
        .api
        .send(Repeat::Safe, || {
            ctx.api
                .request(Method::POST, "/api/v1/jobs")
                .header("Idempotency-Key", &key)
                .json(&body)
        })
        .await?;
    let replayed = response
        .headers()
        .get(IDEMPOTENT_REPLAYED_HEADER)
        .is_some_and(|v| v.as_bytes() == b"true");
    let answer: SubmitResponse = ctx.api.json(response).await?;
    if ctx.json {
        let mut value = serde_json::to_value(&answer).unwrap_or_default();
        value["replayed"] = serde_json::Value::Bool(replayed);
        ctx.print_json(&value);
        return Ok(());
    }
    let id = answer.job.id.to_string();
    if replayed {
        // On stderr: `-q` keeps stdout to the id, and a script still sees why no job is new.
        eprintln!("{}", ctx.i18n.tf("cli.submit.replayed", &[("id", &id)]));
    }
    if args.quiet {
        println!("{id}");
        return Ok(());
    }
    match answer.admission.decision {
        Decision::Activated => println!(
            "{}",
            ctx.i18n
                .tf("cli.submit.activated", &[("id", &id), ("queue", &answer.job.queue)])
        ),
        Decision::Prequeued => {
            println!(
                "{}",
                ctx.i18n
                    .tf("cli.submit.prequeued", &[("id", &id), ("queue", &answer.job.queue)])
            );
            print!("{}", reasons::render(ctx.i18n, ctx.style, &answer.admission.reasons));
        }
    }
    Ok(())
}
