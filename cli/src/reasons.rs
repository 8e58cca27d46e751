//! Why a job waits, for a terminal: each reason as a sentence in the user's language (the UI's
//! texts, by the reason's code and details) and, for a quota, a queue capacity or the cluster's
//! room beyond guarantees (sharing), one bar per resource — used, this job's request, the limit.

use anteroom_shared::api::jobs::WaitReason;
use anteroom_shared::scheduling::reasons::{
    BlockedByDetails, BorrowingLimitDetails, BudgetExhaustedDetails, MaxActiveJobsDetails, QueueCapacityDetails,
    QuotaDetails, ReclaimingDetails, ResourceCheck, RoundLimitDetails,
};

use crate::i18n::I18n;
use crate::output::{self, Style};

fn read<T: serde::de::DeserializeOwned>(reason: &WaitReason) -> Option<T> {
    serde_json::from_value(reason.details.clone()?).ok()
}

/// The reason's sentence (the API's English message for a code `ar` does not know).
pub fn text(i18n: I18n, reason: &WaitReason) -> String {
    let known = match reason.code.as_str() {
        "quota" => read::<QuotaDetails>(reason).map(|d| i18n.tf("reason.quota", &[("queue", &d.queue)])),
        "queue_capacity" => read::<QueueCapacityDetails>(reason).map(|d| {
            if d.job_queue != d.queue {
                i18n.tf(
                    "reason.queueCapacityAncestor",
                    &[("queue", &d.queue), ("jobQueue", &d.job_queue)],
                )
            } else {
                i18n.tf("reason.queueCapacity", &[("queue", &d.queue)])
            }
        }),
        "max_active_jobs" => read::<MaxActiveJobsDetails>(reason).map(|d| {
            i18n.tf(
                "reason.maxActiveJobs",
                &[
                    ("queue", &d.queue),
                    ("active", &d.active.to_string()),
                    ("limit", &d.limit.to_string()),
                ],
            )
        }),
        "blocked_by" => read::<BlockedByDetails>(reason).map(|d| {
            i18n.tf(
                "reason.blockedBy",
                &[("job", &d.job_id.to_string()), ("queue", &d.queue)],
            )
        }),
        "backfill_disabled" => Some(i18n.t("reason.backfillDisabled")),
        "round_limit" => {
            read::<RoundLimitDetails>(reason).map(|d| i18n.tf("reason.roundLimit", &[("limit", &d.limit.to_string())]))
        }
        "borrowing_limit" => read::<BorrowingLimitDetails>(reason).map(|d| {
            let key = if d.may_borrow {
                "reason.borrowingLimit"
            } else {
                "reason.borrowingLimitNever"
            };
            i18n.tf(key, &[("queue", &d.job_queue)])
        }),
        "reclaiming" => read::<ReclaimingDetails>(reason).map(|d| {
            if d.nothing_to_take {
                return i18n.tf("reason.nothingToTake", &[("queue", &d.job_queue)]);
            }
            let mut text = i18n.tf("reason.reclaiming", &[("queue", &d.job_queue)]);
            if !d.victims.is_empty() {
                let ids: Vec<String> = d.victims.iter().map(|v| format!("#{v}")).collect();
                text.push(' ');
                text.push_str(&i18n.tf("cli.why.reclaimVictims", &[("jobs", &ids.join(", "))]));
            } else if let Some(at) = d.reclaim_at {
                text.push(' ');
                text.push_str(&i18n.tf("reason.reclaimAt", &[("time", &output::local_time(at))]));
            }
            text
        }),
        "budget_exhausted" => read::<BudgetExhaustedDetails>(reason).map(|d| {
            i18n.tf(
                "reason.budgetExhausted",
                &[
                    ("queue", &d.queue),
                    ("used", &d.used_gpu_hours.hours().to_string()),
                    ("budget", &d.budget_gpu_hours.hours().to_string()),
                    ("resets", &output::local_time(d.resets_at)),
                ],
            )
        }),
        _ => None,
    };
    known.unwrap_or_else(|| reason.message.clone())
}

/// The resources a quota or capacity reason compares, one line each with its bar.
pub fn bars(i18n: I18n, style: Style, reason: &WaitReason) -> Vec<String> {
    let checks: Vec<ResourceCheck> = match reason.code.as_str() {
        "quota" => read::<QuotaDetails>(reason).map(|d| d.resources),
        "queue_capacity" => read::<QueueCapacityDetails>(reason).map(|d| d.resources),
        "borrowing_limit" => read::<BorrowingLimitDetails>(reason).map(|d| d.resources),
        "reclaiming" => read::<ReclaimingDetails>(reason).map(|d| d.resources),
        _ => None,
    }
    .unwrap_or_default();
    let name_width = checks.iter().map(|c| output::width(&c.resource)).max().unwrap_or(0);
    checks
        .iter()
        .map(|c| {
            let value = |q: anteroom_shared::scheduling::Quantity| q.milli() as f64 / 1000.0;
            let bar = output::bar(value(c.usage), value(c.request), value(c.limit), 20);
            let sentence = i18n.tf(
                "reason.bar",
                &[
                    ("resource", &c.resource),
                    ("used", &c.usage.to_string()),
                    ("request", &c.request.to_string()),
                    ("limit", &c.limit.to_string()),
                ],
            );
            let pad = " ".repeat(name_width - output::width(&c.resource));
            let over = if c.exceeded {
                format!("  {}", style.red(&i18n.t("reason.exceeded")))
            } else {
                String::new()
            };
            format!("{}{pad}  {bar}  {sentence}{over}", c.resource)
        })
        .collect()
}

/// Every reason as printed by `ar submit` and `ar why`: a bullet, then its bars indented.
pub fn render(i18n: I18n, style: Style, reasons: &[WaitReason]) -> String {
    if reasons.is_empty() {
        return format!("  {}\n", i18n.t("reason.none"));
    }
    let mut out = String::new();
    for reason in reasons {
        out.push_str(&format!(
            "  • {}  {}\n",
            text(i18n, reason),
            style.dim(&format!("[{}]", reason.code))
        ));
        for line in bars(i18n, style, reason) {
            out.push_str(&format!("      {line}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn quota_reason() -> WaitReason {
        WaitReason {
            code: "quota".into(),
            message: "english".into(),
            details: Some(json!({
                "queue": "gpu", "user": 1,
                "resources": [
                    {"resource": "cpu", "usage": "3", "request": "2", "limit": "4", "exceeded": true},
                    {"resource": "memory", "usage": "1Gi", "request": "1Gi", "limit": "8Gi", "exceeded": false}
                ]
            })),
        }
    }

    #[test]
    fn a_quota_reason_reads_in_the_users_language_with_a_bar_per_resource() {
        let plain = Style { color: false };
        let en = render(I18n::new("en"), plain, &[quota_reason()]);
        assert!(en.contains("Your quota in queue gpu would be exceeded."), "{en}");
        assert!(
            en.contains("cpu     ███████████████▒▒▒▒▒  cpu: 3 used + 2 for this job, limit 4"),
            "{en}"
        );
        assert!(en.contains("over the limit"), "{en}");
        assert!(en.contains("memory  ███▒▒░░░░░░░░░░░░░░░"), "{en}");
        let ja = render(I18n::new("ja"), plain, &[quota_reason()]);
        assert!(!ja.contains("Your quota"), "{ja}");
        assert!(ja.contains("gpu"), "{ja}");
    }

    #[test]
    fn an_unknown_code_or_broken_details_fall_back_to_the_servers_sentence() {
        let mut r = quota_reason();
        r.details = Some(json!({"queue": 3}));
        assert_eq!(text(I18n::new("en"), &r), "english");
        r.code = "something_new".into();
        assert_eq!(text(I18n::new("ja"), &r), "english");
        assert!(bars(I18n::new("en"), Style { color: false }, &r).is_empty());
    }

    #[test]
    fn sharing_reasons_read_in_the_users_language_with_the_clusters_room() {
        let plain = Style { color: false };
        let check =
            json!([{"resource": "nvidia.com/a100", "usage": "8", "request": "1", "limit": "8", "exceeded": true}]);
        let borrow = WaitReason {
            code: "borrowing_limit".into(),
            message: "english".into(),
            details: Some(json!({"jobQueue": "nlp", "mayBorrow": true, "resources": check})),
        };
        let en = render(I18n::new("en"), plain, std::slice::from_ref(&borrow));
        assert!(en.contains("guarantee of queue nlp"), "{en}");
        assert!(en.contains("nvidia.com/a100  "), "a bar per resource: {en}");
        let mut never = borrow.clone();
        never.details = Some(json!({"jobQueue": "nlp", "mayBorrow": false, "resources": []}));
        assert_ne!(text(I18n::new("en"), &never), text(I18n::new("en"), &borrow));
        let reclaiming = WaitReason {
            code: "reclaiming".into(),
            message: "english".into(),
            details: Some(json!({"jobQueue": "cv", "resources": [], "victims": [7, 8]})),
        };
        let en = text(I18n::new("en"), &reclaiming);
        assert!(en.contains("queue cv") && en.contains("#7, #8"), "{en}");
        for lang in ["zh", "ja", "ko"] {
            let t = text(I18n::new(lang), &reclaiming);
            assert!(!t.contains("english") && t.contains("#7"), "{lang}: {t}");
        }
        // Nothing borrows the room: it says so instead of promising a reclaim.
        let mut nothing = reclaiming.clone();
        nothing.details = Some(json!({"jobQueue": "cv", "resources": [], "victims": [], "nothingToTake": true}));
        let en = text(I18n::new("en"), &nothing);
        assert!(
            en.contains("nothing can be taken back") && !en.contains("being taken back"),
            "{en}"
        );
    }
}
