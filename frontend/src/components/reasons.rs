//! Why a job waits, as words and as a picture: for a quota or a queue capacity, one bar per
//! resource of current usage plus this job's request against the limit, at the level that holds
//! it (the user's quota, the job's queue, or the ancestor queue named); the blocking job as a
//! link; and the job's position when it has one.

use anteroom_shared::api::jobs::WaitReason;
use anteroom_shared::scheduling::reasons::{
    BlockedByDetails, MaxActiveJobsDetails, QueueCapacityDetails, QuotaDetails, ResourceCheck, RoundLimitDetails,
};
use leptos::prelude::*;

use crate::components::LINK;
use crate::components::bars::{Bar, BarInput, ResourceName};
use crate::components::palette;
use crate::format;
use crate::i18n::{k, use_i18n};

/// A reason's details, read as the server's own types (`shared::scheduling::reasons`).
#[derive(Clone, Debug)]
enum Details {
    Quota(QuotaDetails),
    QueueCapacity(QueueCapacityDetails),
    MaxActiveJobs(MaxActiveJobsDetails),
    BlockedBy(BlockedByDetails),
    RoundLimit(RoundLimitDetails),
    None,
}

fn details(reason: &WaitReason) -> Details {
    fn read<T: serde::de::DeserializeOwned>(reason: &WaitReason) -> Option<T> {
        serde_json::from_value(reason.details.clone()?).ok()
    }
    let read = match reason.code.as_str() {
        "quota" => read(reason).map(Details::Quota),
        "queue_capacity" => read(reason).map(Details::QueueCapacity),
        "max_active_jobs" => read(reason).map(Details::MaxActiveJobs),
        "blocked_by" => read(reason).map(Details::BlockedBy),
        "round_limit" => read(reason).map(Details::RoundLimit),
        _ => None,
    };
    read.unwrap_or(Details::None)
}

/// A reason's sentence in the user's language (the API's English message for a code the UI
/// does not know).
pub fn reason_text(i18n: crate::i18n::I18n, reason: &WaitReason) -> String {
    match (reason.code.as_str(), details(reason)) {
        ("quota", Details::Quota(d)) => i18n.tf(k!("reason.quota"), &[("queue", &d.queue)]),
        ("queue_capacity", Details::QueueCapacity(d)) if d.job_queue != d.queue => i18n.tf(
            k!("reason.queueCapacityAncestor"),
            &[("queue", &d.queue), ("jobQueue", &d.job_queue)],
        ),
        ("queue_capacity", Details::QueueCapacity(d)) => i18n.tf(k!("reason.queueCapacity"), &[("queue", &d.queue)]),
        ("max_active_jobs", Details::MaxActiveJobs(d)) => i18n.tf(
            k!("reason.maxActiveJobs"),
            &[
                ("queue", &d.queue),
                ("active", &d.active.to_string()),
                ("limit", &d.limit.to_string()),
            ],
        ),
        ("blocked_by", Details::BlockedBy(d)) => i18n.tf(
            k!("reason.blockedBy"),
            &[("job", &d.job_id.to_string()), ("queue", &d.queue)],
        ),
        ("backfill_disabled", _) => i18n.t(k!("reason.backfillDisabled")).to_owned(),
        ("round_limit", Details::RoundLimit(d)) => i18n.tf(k!("reason.roundLimit"), &[("limit", &d.limit.to_string())]),
        // A code (or details) this UI does not know: the API's English message.
        _ => reason.message.clone(),
    }
}

/// A reason code in a few words: the job list's line under a waiting job, and the jobs ahead
/// (another user's reasons come without their figures).
pub fn reason_short(code: &str) -> crate::i18n::Key {
    match code {
        "quota" => k!("reason.short.quota"),
        "queue_capacity" => k!("reason.short.queueCapacity"),
        "max_active_jobs" => k!("reason.short.maxActiveJobs"),
        "blocked_by" => k!("reason.short.blockedBy"),
        "backfill_disabled" => k!("reason.short.backfillDisabled"),
        "round_limit" => k!("reason.short.roundLimit"),
        _ => k!("reason.short.other"),
    }
}

/// The reasons of a waiting job, each with its picture.
#[component]
pub fn Reasons(
    /// The job's reasons, as the API sends them.
    reasons: Vec<WaitReason>,
) -> impl IntoView {
    let i18n = use_i18n();
    if reasons.is_empty() {
        return view! { <p class="text-sm text-slate-600 dark:text-slate-300" data-testid="no-reasons">{move || i18n.t(k!("reason.none"))}</p> }.into_any();
    }
    view! {
        <ul class="space-y-3" data-testid="reasons">
            {reasons
                .into_iter()
                .map(|r| view! { <ReasonItem reason=r /> })
                .collect_view()}
        </ul>
    }
    .into_any()
}

#[component]
fn ReasonItem(reason: WaitReason) -> impl IntoView {
    let i18n = use_i18n();
    let d = details(&reason);
    let code = reason.code.clone();
    let text = {
        let reason = reason.clone();
        move || reason_text(i18n, &reason)
    };
    let (level, bars, blocker) = match d {
        Details::Quota(q) => (Some(k!("reason.level.quota")), q.resources, None),
        Details::QueueCapacity(q) if q.job_queue != q.queue => (Some(k!("reason.level.ancestor")), q.resources, None),
        Details::QueueCapacity(q) => (Some(k!("reason.level.queue")), q.resources, None),
        Details::BlockedBy(b) => (None, Vec::new(), Some(b.job_id)),
        _ => (None, Vec::new(), None),
    };
    // A resource this job does not ask for holds nothing back: no "0 used + 0" bar.
    let bars: Vec<ResourceCheck> = bars
        .into_iter()
        .filter(|c| c.exceeded || !c.request.is_zero())
        .collect();
    view! {
        <li class=format!("{} p-3", palette::PANEL) data-testid="reason" data-code=code.clone()>
            <p class="text-sm text-slate-900 dark:text-slate-100">
                {level.map(|l| view! { <span class="mr-2 rounded bg-white dark:bg-slate-900 px-1.5 py-0.5 text-xs font-semibold text-slate-800 dark:text-slate-100 ring-1 ring-slate-300 dark:ring-slate-600">{move || i18n.t(l)}</span> })}
                <span data-testid="reason-text">{text}</span>
                // The blocker is often another user's job, which only an admin may open.
                {blocker.filter(|_| crate::auth::use_auth().is_admin()).map(|id| view! {
                    " "
                    <a class=LINK href=format!("/jobs/{id}") data-testid="blocker-link">{move || i18n.tf(k!("reason.openJob"), &[("job", &id.to_string())])}</a>
                })}
            </p>
            {(!bars.is_empty()).then(|| view! {
                <div class="mt-2 space-y-2">
                    {bars.into_iter().map(|c| view! { <CheckBar check=c /> }).collect_view()}
                </div>
            })}
        </li>
    }
}

#[component]
fn CheckBar(check: ResourceCheck) -> impl IntoView {
    let i18n = use_i18n();
    let usage = format::value(&check.usage);
    let request = format::value(&check.request);
    let limit = format::value(&check.limit);
    let input = BarInput {
        used: usage,
        added: request,
        limit: Some(limit),
        capacity: None,
    };
    let resource = check.resource.clone();
    let words = {
        let resource = resource.clone();
        move || {
            let l = i18n.locale();
            i18n.tf(
                k!("reason.bar"),
                &[
                    ("resource", &i18n.resource_name(&resource)),
                    ("used", &format::amount(l, &resource, usage)),
                    ("request", &format::amount(l, &resource, request)),
                    ("limit", &format::amount(l, &resource, limit)),
                ],
            )
        }
    };
    let over = check.exceeded;
    view! {
        <div class="grid grid-cols-[8rem_1fr] items-center gap-2 text-xs" data-testid="reason-bar" data-resource=resource.clone() data-exceeded=over.to_string()>
            <span class="text-slate-800 dark:text-slate-200"><ResourceName resource=resource.clone() /></span>
            <div class="space-y-0.5">
                {
                    let words = words.clone();
                    move || view! { <Bar input=input label=words() /> }
                }
                <span class="text-slate-700 dark:text-slate-300">
                    {words}
                    {over.then(|| view! { <strong class="ml-1 text-red-800 dark:text-red-200">{move || i18n.t(k!("reason.exceeded"))}</strong> })}
                </span>
            </div>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reasons_details_are_read_as_the_servers_types_and_an_unknown_code_as_none() {
        let quota = WaitReason {
            code: "quota".into(),
            message: "your quota…".into(),
            details: Some(serde_json::json!({
                "queue": "default", "user": 3,
                "resources": [{"resource": "cpu", "usage": "2", "request": "2", "limit": "3", "exceeded": true}]
            })),
        };
        match details(&quota) {
            Details::Quota(q) => {
                assert_eq!(q.queue, "default");
                assert_eq!(q.resources[0].limit.to_string(), "3");
                assert!(q.resources[0].exceeded);
            }
            other => panic!("{other:?}"),
        }
        let unknown = WaitReason {
            code: "a_future_code".into(),
            ..quota.clone()
        };
        assert!(matches!(details(&unknown), Details::None));
        let malformed = WaitReason {
            details: Some(serde_json::json!({"queue": 1})),
            ..quota
        };
        assert!(matches!(details(&malformed), Details::None));
    }
}
