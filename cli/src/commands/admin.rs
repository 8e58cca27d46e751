//! `ar admin …`: the edits an admin makes most from a terminal — a queue's quota rule, a queue
//! from a file, the prequeue's settings — over the same admin API the UI uses.

use anteroom_shared::api::queues::{AdminQueue, QueueBody, QueueQuotaBody, QueueQuotaRule};
use anteroom_shared::scheduling::{Quantity, ResourceList};
use reqwest::Method;
use serde_json::Value;

use crate::args::{AdminCommand, AdminQueue as QueueCommand, AdminQuota, AdminSettings};
use crate::client::{Repeat, segment};
use crate::commands::queues::{QueueRow, queue_table};
use crate::context::Ctx;
use crate::error::{CliError, CliResult};
use crate::{jobfile, output};

const QUOTAS: &str = "/api/v1/admin/queue-quotas";
const QUEUES: &str = "/api/v1/admin/queues";
const SETTINGS: &str = "/api/v1/admin/prequeue-config";

/// `ar admin …`.
pub async fn admin(ctx: &Ctx, command: AdminCommand) -> CliResult<()> {
    ctx.require_login()?;
    match command {
        AdminCommand::Quota(AdminQuota::Ls) => quota_list(ctx).await,
        AdminCommand::Quota(AdminQuota::Set {
            queue,
            limits,
            max_active,
        }) => quota_set(ctx, queue, &limits, max_active).await,
        AdminCommand::Quota(AdminQuota::Rm { queue }) => {
            let rule = rule_of(ctx, &queue).await?;
            ctx.api.delete(&format!("{QUOTAS}/{}", rule.id)).await?;
            done(ctx, &ctx.i18n.tf("cli.admin.quotaDeleted", &[("queue", &queue)]));
            Ok(())
        }
        AdminCommand::Queue(QueueCommand::Ls) => queue_list(ctx).await,
        AdminCommand::Queue(QueueCommand::Apply { file }) => queue_apply(ctx, &file).await,
        AdminCommand::Queue(QueueCommand::Rm { name }) => {
            ctx.api.delete(&format!("{QUEUES}/{}", segment(&name))).await?;
            done(ctx, &ctx.i18n.tf("cli.admin.queueDeleted", &[("queue", &name)]));
            Ok(())
        }
        AdminCommand::Settings(AdminSettings::Show) => {
            let settings: Value = ctx.api.get(SETTINGS, &[]).await?;
            print_document(ctx, &settings);
            Ok(())
        }
        AdminCommand::Settings(AdminSettings::Set { fields }) => settings_set(ctx, &fields).await,
    }
}

fn done(ctx: &Ctx, text: &str) {
    if !ctx.json {
        println!("{text}");
    }
}

fn print_document(ctx: &Ctx, value: &Value) {
    if ctx.json {
        ctx.print_json(value);
    } else {
        print!("{}", serde_norway::to_string(value).unwrap_or_default());
    }
}

/// `resource=quantity` pairs as a resource list.
pub fn parse_limits(pairs: &[String]) -> CliResult<ResourceList> {
    let mut limits = ResourceList::new();
    for pair in pairs {
        let (name, quantity) = pair
            .split_once('=')
            .filter(|(n, _)| !n.is_empty())
            .ok_or_else(|| CliError::Usage(format!("{pair:?}: expected resource=quantity (cpu=32)")))?;
        let quantity = Quantity::parse(quantity).map_err(|e| CliError::Usage(format!("{pair:?}: {e}")))?;
        limits.insert(name, quantity);
    }
    Ok(limits)
}

async fn quota_list(ctx: &Ctx) -> CliResult<()> {
    let rules: Vec<QueueQuotaRule> = ctx.api.get(QUOTAS, &[]).await?;
    if ctx.json {
        ctx.print_json(&rules);
        return Ok(());
    }
    let i = &ctx.i18n;
    let headers = [
        i.t("cli.admin.queue"),
        i.t("cli.admin.limits"),
        i.t("cli.admin.maxActive"),
    ];
    let rows: Vec<Vec<String>> = rules
        .iter()
        .map(|r| {
            vec![
                r.queue.clone(),
                output::resources(&r.limits),
                r.max_active_jobs.map(|n| n.to_string()).unwrap_or_default(),
            ]
        })
        .collect();
    print!("{}", output::table(&headers, &rows));
    Ok(())
}

async fn rule_of(ctx: &Ctx, queue: &str) -> CliResult<QueueQuotaRule> {
    let rules: Vec<QueueQuotaRule> = ctx.api.get(QUOTAS, &[]).await?;
    rules
        .into_iter()
        .find(|r| r.queue == queue)
        .ok_or_else(|| CliError::Api {
            status: 404,
            code: "quota_not_found".into(),
            message: format!("queue {queue} has no quota rule"),
            details: None,
        })
}

async fn quota_set(ctx: &Ctx, queue: String, limits: &[String], max_active: Option<u32>) -> CliResult<()> {
    let body = QueueQuotaBody {
        queue: queue.clone(),
        limits: parse_limits(limits)?,
        max_active_jobs: max_active,
    };
    let rule: QueueQuotaRule = match rule_of(ctx, &queue).await {
        Ok(existing) => {
            ctx.api
                .send_json(Method::PUT, &format!("{QUOTAS}/{}", existing.id), &body, Repeat::Safe)
                .await?
        }
        Err(CliError::Api { status: 404, .. }) => ctx.api.send_json(Method::POST, QUOTAS, &body, Repeat::Once).await?,
        Err(e) => return Err(e),
    };
    if ctx.json {
        ctx.print_json(&rule);
    } else {
        println!("{}", ctx.i18n.tf("cli.admin.quotaSet", &[("queue", &rule.queue)]));
    }
    Ok(())
}

async fn queue_list(ctx: &Ctx) -> CliResult<()> {
    let queues: Vec<AdminQueue> = ctx.api.get(QUEUES, &[]).await?;
    if ctx.json {
        ctx.print_json(&queues);
        return Ok(());
    }
    let rows = queues.iter().map(|q| QueueRow {
        name: &q.name,
        parent: q.parent.as_deref(),
        open: q.open,
        fourth: q.members.join(","),
        capacity: q.capacity.as_ref(),
    });
    print!("{}", queue_table(ctx, "cli.admin.members", rows));
    Ok(())
}

async fn queue_apply(ctx: &Ctx, file: &std::path::Path) -> CliResult<()> {
    let path = file.display().to_string();
    let text = if path == "-" {
        std::io::read_to_string(std::io::stdin()).map_err(|source| CliError::File {
            path: "stdin".into(),
            source,
        })?
    } else {
        std::fs::read_to_string(file).map_err(|source| CliError::File {
            path: path.clone(),
            source,
        })?
    };
    let body: QueueBody = jobfile::parse(&text)
        .map_err(|e| CliError::Usage(format!("{path}: {e}")))
        .and_then(|v| serde_json::from_value(v).map_err(|e| CliError::Usage(format!("{path}: {e}"))))?;
    let queues: Vec<AdminQueue> = ctx.api.get(QUEUES, &[]).await?;
    let answer: AdminQueue = if queues.iter().any(|q| q.name == body.name) {
        ctx.api
            .send_json(
                Method::PUT,
                &format!("{QUEUES}/{}", segment(&body.name)),
                &body,
                Repeat::Safe,
            )
            .await?
    } else {
        ctx.api.send_json(Method::POST, QUEUES, &body, Repeat::Once).await?
    };
    if ctx.json {
        ctx.print_json(&answer);
    } else {
        println!("{}", ctx.i18n.tf("cli.admin.queueApplied", &[("queue", &answer.name)]));
    }
    Ok(())
}

/// Applies `field=value` pairs to the settings document: only fields it has, values read as
/// YAML scalars (`false`, `20`, `null`).
pub fn apply_fields(settings: &mut Value, fields: &[String]) -> CliResult<()> {
    let Value::Object(map) = settings else {
        return Err(CliError::Usage("the server's settings are not an object".into()));
    };
    for field in fields {
        let (name, raw) = field
            .split_once('=')
            .ok_or_else(|| CliError::Usage(format!("{field:?}: expected field=value")))?;
        if !map.contains_key(name) {
            let known: Vec<&str> = map.keys().map(String::as_str).collect();
            return Err(CliError::Usage(format!(
                "{name:?} is not a setting; the settings are: {}",
                known.join(", ")
            )));
        }
        let value = serde_norway::from_str::<Value>(raw).unwrap_or_else(|_| Value::String(raw.to_owned()));
        map.insert(name.to_owned(), value);
    }
    Ok(())
}

/// Reads the settings with their version, checks and applies the fields, and sends only them
/// with `If-Match`: a setting this client does not name is never sent (a newer server's keep
/// their values), and a change someone made in between is not overwritten (412, exit 1).
async fn settings_set(ctx: &Ctx, fields: &[String]) -> CliResult<()> {
    let response = ctx
        .api
        .send(Repeat::Safe, || ctx.api.request(Method::GET, SETTINGS))
        .await?;
    let etag = response
        .headers()
        .get(reqwest::header::ETAG)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let mut settings: Value = ctx.api.json(response).await?;
    apply_fields(&mut settings, fields)?;
    let change = changed_fields(&settings, fields);
    let sent = ctx
        .api
        .send(Repeat::Safe, || {
            let request = ctx.api.request(Method::PUT, SETTINGS).json(&change);
            match &etag {
                Some(etag) => request.header(reqwest::header::IF_MATCH, etag),
                None => request,
            }
        })
        .await;
    let saved: Value = match sent {
        Ok(response) => ctx.api.json(response).await?,
        // Refused as changed since it was read: by someone else, or by this very change when
        // the answer to a first attempt was lost and the repeat carried the old version. The
        // settings as they are now tell: if they already say what was asked, it is done.
        Err(CliError::Api { code, .. }) if code == "precondition_failed" => {
            let now: Value = ctx.api.get(SETTINGS, &[]).await?;
            if changed_fields(&now, fields) != change {
                return Err(CliError::Api {
                    status: 412,
                    code,
                    message: "the settings were changed by someone else since they were read: run the command again"
                        .into(),
                    details: None,
                });
            }
            now
        }
        Err(e) => return Err(e),
    };
    print_document(ctx, &saved);
    Ok(())
}

/// The fields `fields` names (`name=value`), with their values in `settings`: what a change
/// sends.
fn changed_fields(settings: &Value, fields: &[String]) -> Value {
    let mut change = serde_json::Map::new();
    for name in fields.iter().filter_map(|f| f.split_once('=').map(|(n, _)| n)) {
        if let Some(value) = settings.get(name) {
            change.insert(name.to_owned(), value.clone());
        }
    }
    Value::Object(change)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn limits_parse_as_quantities_and_refuse_nonsense() {
        let limits = parse_limits(&["cpu=32".into(), "nvidia.com/a100=4".into(), "memory=128Gi".into()]).unwrap();
        assert_eq!(limits.get("nvidia.com/a100").to_string(), "4");
        assert_eq!(limits.len(), 3);
        assert!(parse_limits(&["cpu".into()]).is_err());
        assert!(parse_limits(&["=4".into()]).is_err());
        assert!(parse_limits(&["cpu=lots".into()]).is_err());
    }

    #[test]
    fn settings_change_only_fields_that_exist() {
        let mut s = json!({"backfillEnabled": true, "maxJobsPerRound": 10});
        apply_fields(&mut s, &["backfillEnabled=false".into(), "maxJobsPerRound=20".into()]).unwrap();
        assert_eq!(s, json!({"backfillEnabled": false, "maxJobsPerRound": 20}));
        let before = s.clone();
        let e = apply_fields(&mut s, &["colour=blue".into()]).unwrap_err();
        assert!(e.to_string().contains("backfillEnabled"), "{e}");
        assert_eq!(s, before);
        assert!(apply_fields(&mut s, &["nothing".into()]).is_err());
        // What is sent: the named fields only.
        assert_eq!(
            changed_fields(&s, &["maxJobsPerRound=20".into()]),
            json!({"maxJobsPerRound": 20})
        );
    }
}
