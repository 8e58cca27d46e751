//! `ar submit -f job.yaml`: a job file, changed by `--set`, previewed or submitted under an
//! `Idempotency-Key` so that running the command again does not submit twice.

use std::io::Read as _;

use anteroom_shared::api::jobs::{Decision, IDEMPOTENT_REPLAYED_HEADER, JobBody, Preview, SubmitResponse};
use anteroom_shared::api::templates::JobTemplate;
use reqwest::Method;

use crate::args::SubmitArgs;
use crate::client::Repeat;
use crate::context::Ctx;
use crate::error::{CliError, CliResult};
use crate::{jobfile, output, reasons};

/// Now, for the idempotency window: the clock, or `ANTEROOM_CLI_NOW` (RFC 3339), which tests
/// set to run the same command minutes apart without waiting.
pub fn now() -> chrono::DateTime<chrono::Utc> {
    std::env::var("ANTEROOM_CLI_NOW")
        .ok()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(&t).ok())
        .map_or_else(chrono::Utc::now, |t| t.to_utc())
}

/// Reads the file (or stdin, or the template), applies the `--set`s, and gives the job body
/// with the stamp of its default `Idempotency-Key`: the ten-minute window the command runs in,
/// whatever the body came from ([`jobfile::default_key`]).
pub async fn body_of(ctx: &Ctx, args: &SubmitArgs) -> CliResult<(JobBody, i64)> {
    let stamp = jobfile::window_stamp(now().timestamp());
    let (doc, source) = match (&args.file, &args.template) {
        (_, Some(name)) => (template_doc(ctx, name).await?, name.clone()),
        (Some(file), None) => {
            let path = file.display().to_string();
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
                std::fs::read_to_string(file).map_err(|source| CliError::File {
                    path: path.clone(),
                    source,
                })?
            };
            let doc = jobfile::parse(&text).map_err(|e| bad_file(ctx, &path, e))?;
            (doc, path)
        }
        (None, None) => return Err(CliError::Usage("--file or --template".into())),
    };
    let mut doc = doc;
    for assignment in &args.set {
        jobfile::set(&mut doc, assignment).map_err(|e| bad_file(ctx, &source, e))?;
    }
    Ok((jobfile::to_body(doc).map_err(|e| bad_file(ctx, &source, e))?, stamp))
}

/// A job file (or template) that does not make a job body.
fn bad_file(ctx: &Ctx, source: &str, e: jobfile::JobFileError) -> CliError {
    CliError::Usage(format!(
        "{}: {e}",
        ctx.i18n.tf("cli.submit.badFile", &[("file", source)])
    ))
}

/// The template `name` as a job document named after it: the caller's own template of that
/// name first, else a published one.
async fn template_doc(ctx: &Ctx, name: &str) -> CliResult<serde_json::Value> {
    ctx.require_login()?;
    let templates: Vec<JobTemplate> = ctx.api.get("/api/v1/templates", &[]).await?;
    let me = ctx.saved.username.as_deref();
    let found = templates
        .iter()
        .filter(|t| t.name == name)
        .min_by_key(|t| (Some(t.owner.as_str()) != me, !t.published, t.id));
    let Some(template) = found else {
        return Err(CliError::Usage(ctx.i18n.tf("cli.templates.unknown", &[("name", name)])));
    };
    let body = template.body.clone().into_job_body(template.name.clone());
    serde_json::to_value(&body).map_err(|e| CliError::Usage(e.to_string()))
}

/// `ar templates`: yours and the published ones.
pub async fn templates(ctx: &Ctx) -> CliResult<()> {
    ctx.require_login()?;
    let templates: Vec<JobTemplate> = ctx.api.get("/api/v1/templates", &[]).await?;
    if ctx.json {
        ctx.print_json(&templates);
        return Ok(());
    }
    if templates.is_empty() {
        println!("{}", ctx.i18n.t("cli.templates.empty"));
        return Ok(());
    }
    let i = &ctx.i18n;
    let headers = [
        i.t("cli.ls.id"),
        i.t("cli.ls.name"),
        i.t("cli.templates.kind"),
        i.t("cli.ls.queue"),
        i.t("cli.ls.owner"),
        i.t("cli.templates.shared"),
        i.t("cli.templates.description"),
    ];
    let rows: Vec<Vec<String>> = templates
        .iter()
        .map(|t| {
            let shared = match (t.published, t.default_for_kind) {
                (true, true) => i.t("cli.templates.default"),
                (true, false) => i.t("cli.templates.published"),
                (false, _) => String::new(),
            };
            vec![
                t.id.to_string(),
                t.name.clone(),
                t.body.kind.as_str().to_owned(),
                t.body.queue.clone(),
                t.owner.clone(),
                shared,
                t.description.clone(),
            ]
        })
        .collect();
    print!("{}", output::table(&headers, &rows));
    Ok(())
}

/// `ar submit`.
pub async fn submit(ctx: &Ctx, args: SubmitArgs) -> CliResult<()> {
    let (body, stamp) = body_of(ctx, &args).await?;
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
    let now = now();
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
    print_submitted(ctx, response, args.quiet).await
}

/// Prints the answer of a submission (a new job, or the first answer again under its key).
pub async fn print_submitted(ctx: &Ctx, response: reqwest::Response, quiet: bool) -> CliResult<()> {
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
    if quiet {
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
