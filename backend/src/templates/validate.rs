//! A template's own rules, checked before anything is read or written. Its body passes the
//! structural rules of a submission (`jobs::validate`) under a placeholder name, so a saved
//! template can always be submitted as far as its own fields go; what depends on the caller
//! and the moment — the queue's access, quotas, the image allowlist, the catalogue, the
//! cluster's nodes — is left to the submission, since it may change after the save.

use anteroom_shared::api::templates::{MAX_TEMPLATE_DESCRIPTION, TemplateWrite};
use anteroom_shared::scheduling::{DefaultRequests, ScheduleType, TaskResources, job_resources};

use crate::field_rule::Rule;
use crate::jobs::validate::{Problem, problems as job_problems, with_default_requests};
use crate::queues::dns_label_problem;
use crate::volumes::MAX_VOLUMES_PER_JOB;

/// The name the body is checked under: any valid job name does, the job gets its own.
const PLACEHOLDER_NAME: &str = "template";

/// Every problem of a template write as (field, problem), the body's fields under `body.`;
/// empty when valid. `defaults` are the kinds' default requests a submission fills in, so a
/// body that leaves CPU or memory out passes here as it would there.
pub fn problems(write: &TemplateWrite, defaults: &DefaultRequests) -> Vec<Problem> {
    let mut out: Vec<Problem> = Vec::new();
    if let Some(p) = dns_label_problem(&write.name) {
        out.push(("name".into(), p));
    }
    if write.description.chars().count() > MAX_TEMPLATE_DESCRIPTION {
        out.push((
            "description".into(),
            Rule::with(
                "atMostCharacters",
                "at most 1,024 characters",
                serde_json::json!({ "max": MAX_TEMPLATE_DESCRIPTION }),
            ),
        ));
    }
    if write.default_for_kind && !write.published {
        out.push((
            "defaultForKind".into(),
            "only a published template can be the default of its kind".into(),
        ));
    }
    let job = with_default_requests(&write.body.clone().into_job_body(PLACEHOLDER_NAME), defaults);
    let in_body = |(field, problem): Problem| (format!("body.{field}"), problem);
    let body_problems = job_problems(&job);
    let structural = body_problems.is_empty();
    out.extend(body_problems.into_iter().map(in_body));
    // The core's own refusals that need nothing but the body (`backfill_kind_unsupported`,
    // negative or overflowing requests), named as fields here: a template has no admission.
    if job.schedule_type == ScheduleType::Backfill && !job.kind.may_backfill() {
        out.push((
            "body.scheduleType".into(),
            "backfill is only supported for jupyter, webide and custom jobs".into(),
        ));
    }
    if structural {
        let tasks: Vec<TaskResources> = job
            .tasks
            .iter()
            .map(anteroom_shared::api::jobs::TaskBody::scheduling)
            .collect();
        if let Err(e) = job_resources(&tasks) {
            out.push(in_body((e.field().to_owned(), e.to_string().into())));
        }
    }
    if job.volumes.len() > MAX_VOLUMES_PER_JOB {
        out.push((
            "body.volumes".into(),
            format!("at most {MAX_VOLUMES_PER_JOB} volumes").into(),
        ));
    }
    for (i, name) in job.volumes.iter().enumerate() {
        if job.volumes[..i].contains(name) {
            out.push((format!("body.volumes[{i}]"), "named twice".into()));
        }
    }
    out
}
