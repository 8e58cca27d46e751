//! Why a job waits, as words and as a picture: for a quota or a queue capacity, one bar per
//! resource of current usage plus this job's request against the limit, at the level that holds
//! it (the user's quota, the job's queue, or the ancestor queue named); for sharing between
//! queues (`borrowing_limit`, `reclaiming`), the cluster's room held by guarantees and jobs, the
//! jobs being reclaimed for it and when reclaim may start; the blocking job as a link; and the
//! job's position when it has one.

use anteroom_shared::api::jobs::WaitReason;
use anteroom_shared::scheduling::reasons::{
    BlockedByDetails, BorrowingLimitDetails, BudgetExhaustedDetails, MaxActiveJobsDetails, QueueCapacityDetails,
    QuotaDetails, ReclaimingDetails, ResourceCheck, RoundLimitDetails,
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
    BorrowingLimit(BorrowingLimitDetails),
    Reclaiming(ReclaimingDetails),
    BudgetExhausted(BudgetExhaustedDetails),
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
        "borrowing_limit" => read(reason).map(Details::BorrowingLimit),
        "reclaiming" => read(reason).map(Details::Reclaiming),
        "budget_exhausted" => read(reason).map(Details::BudgetExhausted),
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
        ("borrowing_limit", Details::BorrowingLimit(d)) if d.may_borrow => {
            i18n.tf(k!("reason.borrowingLimit"), &[("queue", &d.job_queue)])
        }
        // It said `borrow: never`: it waits for guaranteed room by choice.
        ("borrowing_limit", Details::BorrowingLimit(d)) => {
            i18n.tf(k!("reason.borrowingLimitNever"), &[("queue", &d.job_queue)])
        }
        ("reclaiming", Details::Reclaiming(d)) if d.nothing_to_take => {
            i18n.tf(k!("reason.nothingToTake"), &[("queue", &d.job_queue)])
        }
        ("reclaiming", Details::Reclaiming(d)) => i18n.tf(k!("reason.reclaiming"), &[("queue", &d.job_queue)]),
        ("budget_exhausted", Details::BudgetExhausted(d)) => {
            let locale = i18n.locale();
            i18n.tf(
                k!("reason.budgetExhausted"),
                &[
                    ("queue", &d.queue),
                    ("used", &format::number(locale, d.used_gpu_hours.hours(), 3)),
                    ("budget", &format::number(locale, d.budget_gpu_hours.hours(), 3)),
                    ("resets", &format::datetime(locale, d.resets_at)),
                ],
            )
        }
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
        "borrowing_limit" => k!("reason.short.borrowingLimit"),
        "reclaiming" => k!("reason.short.reclaiming"),
        "budget_exhausted" => k!("reason.short.budgetExhausted"),
        _ => k!("reason.short.other"),
    }
}

/// [`reason_short`] for a reason with its details: a job that will not borrow waits for
/// guaranteed room, which "no idle room to borrow" would misstate.
pub fn reason_short_of(reason: &WaitReason) -> crate::i18n::Key {
    match details(reason) {
        Details::BorrowingLimit(d) if !d.may_borrow => k!("reason.short.guaranteedOnly"),
        _ => reason_short(&reason.code),
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
    // For sharing, the bars are the cluster's room (held by guarantees and jobs), said so.
    let mut cluster_room = false;
    let mut reclaim: Option<ReclaimingDetails> = None;
    let (level, bars, blocker) = match d {
        Details::Quota(q) => (Some(k!("reason.level.quota")), q.resources, None),
        Details::QueueCapacity(q) if q.job_queue != q.queue => (Some(k!("reason.level.ancestor")), q.resources, None),
        Details::QueueCapacity(q) => (Some(k!("reason.level.queue")), q.resources, None),
        Details::BlockedBy(b) => (None, Vec::new(), Some(b.job_id)),
        Details::BorrowingLimit(b) => {
            cluster_room = true;
            (Some(k!("reason.level.cluster")), b.resources, None)
        }
        Details::Reclaiming(r) => {
            cluster_room = true;
            let resources = r.resources.clone();
            reclaim = Some(r);
            (Some(k!("reason.level.cluster")), resources, None)
        }
        _ => (None, Vec::new(), None),
    };
    let admin = crate::auth::use_auth().is_admin();
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
                {blocker.filter(|_| admin).map(|id| view! {
                    " "
                    <a class=LINK href=format!("/jobs/{id}") data-testid="blocker-link">{move || i18n.tf(k!("reason.openJob"), &[("job", &id.to_string())])}</a>
                })}
            </p>
            {reclaim.map(|r| view! { <Reclaim details=r admin=admin /> })}
            {(!bars.is_empty()).then(|| view! {
                <div class="mt-2 space-y-2">
                    {bars.into_iter().map(|c| view! { <CheckBar check=c cluster_room=cluster_room /> }).collect_view()}
                </div>
            })}
        </li>
    }
}

/// The jobs being reclaimed for a job owed room (links for an admin: they are often other
/// users' jobs) and when reclaim may start.
#[component]
fn Reclaim(details: ReclaimingDetails, admin: bool) -> impl IntoView {
    let i18n = use_i18n();
    let count = details.victims.len() as u64;
    let at = details.reclaim_at;
    view! {
        {(count > 0).then(|| view! {
            <p class="mt-1 text-xs text-slate-700 dark:text-slate-300" data-testid="reclaim-victims">
                {move || i18n.tp(k!("reason.reclaimVictims.one"), k!("reason.reclaimVictims.other"), count, &[])}
                {details.victims.iter().map(|id| {
                    let id = *id;
                    if admin {
                        view! { " " <a class=LINK href=format!("/jobs/{id}")>{format!("#{id}")}</a> }.into_any()
                    } else {
                        view! { " " <span>{format!("#{id}")}</span> }.into_any()
                    }
                }).collect_view()}
            </p>
        })}
        {at.map(|at| view! {
            <p class="mt-1 text-xs text-slate-700 dark:text-slate-300" data-testid="reclaim-at">
                {move || i18n.tf(k!("reason.reclaimAt"), &[("time", &format::datetime(i18n.locale(), at))])}
            </p>
        })}
    }
}

/// One resource of a reason against its limit; `cluster_room`: against the cluster's room
/// (sharing), which the words say.
#[component]
fn CheckBar(check: ResourceCheck, cluster_room: bool) -> impl IntoView {
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
                if cluster_room {
                    k!("reason.barCluster")
                } else {
                    k!("reason.bar")
                },
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

    fn sharing_reason(code: &str, details: serde_json::Value) -> WaitReason {
        WaitReason {
            code: code.into(),
            message: "the server's English".into(),
            details: Some(details),
        }
    }

    #[test]
    fn sharing_reasons_say_whether_the_job_may_borrow_and_what_is_reclaimed() {
        use crate::i18n::{I18n, Locale};
        let en = I18n::fixed(Locale::En);
        let check = serde_json::json!([{"resource": "nvidia.com/a100", "usage": "8", "request": "1", "limit": "8", "exceeded": true}]);
        let borrows = sharing_reason(
            "borrowing_limit",
            serde_json::json!({"jobQueue": "nlp", "mayBorrow": true, "resources": check}),
        );
        let never = sharing_reason(
            "borrowing_limit",
            serde_json::json!({"jobQueue": "nlp", "mayBorrow": false, "resources": check}),
        );
        let text = |r: &WaitReason| reason_text(en, r);
        assert_eq!(
            text(&borrows),
            "It would use room beyond the guarantee of queue nlp, and no other queue lends idle room now."
        );
        assert_eq!(
            text(&never),
            "It waits for room within the guarantee of queue nlp, as it does not borrow; that room is in use now."
        );
        assert_eq!(reason_short_of(&borrows), k!("reason.short.borrowingLimit"));
        assert_eq!(reason_short_of(&never), k!("reason.short.guaranteedOnly"));
        let reclaiming = sharing_reason(
            "reclaiming",
            serde_json::json!({"jobQueue": "cv", "resources": check, "victims": [7, 8], "reclaimAt": null}),
        );
        match details(&reclaiming) {
            Details::Reclaiming(r) => assert_eq!((r.victims, r.reclaim_at), (vec![7, 8], None)),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            text(&reclaiming),
            "Room guaranteed to queue cv is being taken back from borrowing jobs of other queues."
        );
        assert_eq!(reason_short_of(&reclaiming), k!("reason.short.reclaiming"));
        let nothing = sharing_reason(
            "reclaiming",
            serde_json::json!({"jobQueue": "cv", "resources": check, "victims": [], "nothingToTake": true}),
        );
        assert_eq!(
            text(&nothing),
            "Room guaranteed to queue cv is held by jobs that do not borrow it: nothing can be taken back, and it frees as they end."
        );
        // Details this UI cannot read: the server's message, never a wrong sentence.
        let odd = sharing_reason("borrowing_limit", serde_json::json!({"jobQueue": 3}));
        assert_eq!(text(&odd), "the server's English");
    }
}
