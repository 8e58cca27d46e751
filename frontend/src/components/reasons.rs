//! Why a job waits, as words and as a picture: for a quota or a queue capacity, one bar per
//! resource of current usage plus this job's request against the limit, at the level that holds
//! it (the user's quota, the job's queue, or the ancestor queue named); the blocking job as a
//! link; and the job's position when it has one.

use anteroom_shared::api::jobs::WaitReason;
use leptos::prelude::*;
use serde::Deserialize;

use crate::components::LINK;
use crate::components::bars::{UsageBar, vendor_colour};
use crate::format;
use crate::i18n::{k, use_i18n};

/// One resource of a quota or capacity reason (`details.resources[]`).
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Check {
    resource: String,
    usage: anteroom_shared::scheduling::Quantity,
    request: anteroom_shared::scheduling::Quantity,
    limit: anteroom_shared::scheduling::Quantity,
    exceeded: bool,
}

/// The details of the reasons the UI draws; the rest show their text.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Details {
    queue: Option<String>,
    job_queue: Option<String>,
    resources: Vec<Check>,
    job_id: Option<i64>,
    active: Option<u32>,
    limit: Option<u64>,
}

/// A reason's sentence in the user's language (the API's English message for a code the UI
/// does not know).
pub fn reason_text(i18n: crate::i18n::I18n, reason: &WaitReason) -> String {
    let d: Details = reason
        .details
        .clone()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default();
    let queue = d.queue.clone().unwrap_or_default();
    match reason.code.as_str() {
        "quota" => i18n.tf(k!("reason.quota"), &[("queue", &queue)]),
        "queue_capacity" => match d.job_queue.as_deref() {
            Some(own) if own != queue => i18n.tf(
                k!("reason.queueCapacityAncestor"),
                &[("queue", &queue), ("jobQueue", own)],
            ),
            _ => i18n.tf(k!("reason.queueCapacity"), &[("queue", &queue)]),
        },
        "max_active_jobs" => i18n.tf(
            k!("reason.maxActiveJobs"),
            &[
                ("queue", &queue),
                ("active", &d.active.unwrap_or_default().to_string()),
                ("limit", &d.limit.unwrap_or_default().to_string()),
            ],
        ),
        "blocked_by" => i18n.tf(
            k!("reason.blockedBy"),
            &[("job", &d.job_id.unwrap_or_default().to_string()), ("queue", &queue)],
        ),
        "backfill_disabled" => i18n.t(k!("reason.backfillDisabled")).to_owned(),
        "round_limit" => i18n.tf(
            k!("reason.roundLimit"),
            &[("limit", &d.limit.unwrap_or_default().to_string())],
        ),
        _ => reason.message.clone(),
    }
}

/// The reasons of a waiting job, each with its picture.
#[component]
pub fn Reasons(reasons: Vec<WaitReason>) -> impl IntoView {
    let i18n = use_i18n();
    if reasons.is_empty() {
        return view! { <p class="text-sm text-slate-600" data-testid="no-reasons">{move || i18n.t(k!("reason.none"))}</p> }.into_any();
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
    let d: Details = reason
        .details
        .clone()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default();
    let code = reason.code.clone();
    let text = {
        let reason = reason.clone();
        move || reason_text(i18n, &reason)
    };
    let level = match code.as_str() {
        "quota" => Some(k!("reason.level.quota")),
        "queue_capacity" if d.job_queue.is_some() && d.job_queue != d.queue => Some(k!("reason.level.ancestor")),
        "queue_capacity" => Some(k!("reason.level.queue")),
        _ => None,
    };
    let blocker = (code == "blocked_by").then_some(d.job_id).flatten();
    let bars = d.resources.clone();
    view! {
        <li class="rounded border border-violet-200 bg-violet-50 p-3" data-testid="reason" data-code=code.clone()>
            <p class="text-sm text-slate-900">
                {level.map(|l| view! { <span class="mr-2 rounded bg-white px-1.5 py-0.5 text-xs font-semibold text-violet-900">{move || i18n.t(l)}</span> })}
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
fn CheckBar(check: Check) -> impl IntoView {
    let i18n = use_i18n();
    let usage = format::value(&check.usage);
    let request = format::value(&check.request);
    let limit = format::value(&check.limit);
    let scale = limit.max(usage + request);
    let resource = check.resource.clone();
    let words = {
        let resource = resource.clone();
        move || {
            let l = i18n.locale();
            i18n.tf(
                k!("reason.bar"),
                &[
                    ("resource", format::resource_short(&resource)),
                    ("used", &format::amount(l, &resource, usage)),
                    ("request", &format::amount(l, &resource, request)),
                    ("limit", &format::amount(l, &resource, limit)),
                ],
            )
        }
    };
    let over = check.exceeded;
    let colour = vendor_colour(&resource);
    view! {
        <div class="grid grid-cols-[8rem_1fr] items-center gap-2 text-xs" data-testid="reason-bar" data-resource=resource.clone() data-exceeded=over.to_string()>
            <span class="font-medium text-slate-800">{format::resource_short(&resource).to_owned()}</span>
            <div class="space-y-0.5">
                {
                    let words = words.clone();
                    move || view! { <UsageBar solid=usage light=request scale=scale over=over label=words() colour=colour /> }
                }
                <span class="text-slate-700">
                    {words}
                    {over.then(|| view! { <strong class="ml-1 text-red-800">{move || i18n.t(k!("reason.exceeded"))}</strong> })}
                </span>
            </div>
        </div>
    }
}
