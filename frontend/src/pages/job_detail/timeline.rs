//! The job page's timeline: each event said in the reader's language from its kind and its
//! structured details, never from the server's English message (kept for the API and logs).

use std::str::FromStr;

use anteroom_shared::api::jobs::{JobEventItem, WaitReason};
use anteroom_shared::api::pods::JobFailure;
use anteroom_shared::scheduling::JobPhase;
use serde_json::Value;

use crate::components::badges::phase_label;
use crate::components::job_table::failure_reason;
use crate::components::reasons::reason_text;
use crate::i18n::{I18n, k, key_named};

/// The event's name: `event.{kind}`, or the kind as written for one this UI does not know.
pub fn event_title(i18n: I18n, e: &JobEventItem) -> String {
    match key_named(&format!("event.{}", e.kind)) {
        Some(key) => i18n.t(key).to_owned(),
        None => e.kind.clone(),
    }
}

/// The values of an event's details that are data, not words: names of cluster objects,
/// nodes and people, a Kubernetes reason word (marked as such where the description shows
/// them: [`crate::components::marked`]).
pub fn event_data(e: &JobEventItem) -> Vec<String> {
    let Some(details) = e.details.as_ref() else {
        return Vec::new();
    };
    let mut data = Vec::new();
    for name in ["clusterName", "node", "by", "beneficiaryName"] {
        if let Some(v) = details.get(name).and_then(Value::as_str) {
            data.push(v.to_owned());
        }
    }
    if let Some(nodes) = details.get("nodes").and_then(Value::as_array) {
        data.extend(nodes.iter().filter_map(Value::as_str).map(str::to_owned));
    }
    if let Some(failure) = details.get("failure") {
        for name in ["reason", "pod"] {
            if let Some(v) = failure.get(name).and_then(Value::as_str) {
                data.push(v.to_owned());
            }
        }
    }
    data
}

/// What the event says beyond its name, from its details (`queue` the job's, for events
/// written before their details named it); `None` when the details say nothing more. A date
/// in it is written by `date`.
pub fn event_description(
    i18n: I18n,
    queue: &str,
    e: &JobEventItem,
    date: impl Fn(chrono::DateTime<chrono::Utc>) -> String,
) -> Option<String> {
    let details = e.details.as_ref().unwrap_or(&Value::Null);
    let text = |name: &str| details.get(name).and_then(Value::as_str).map(str::to_owned);
    let int = |name: &str| details.get(name).and_then(Value::as_i64);
    let described = match e.kind.as_str() {
        "submitted" => i18n.tf(
            k!("event.detail.submitted"),
            &[("queue", &text("queue").unwrap_or_else(|| queue.to_owned()))],
        ),
        "prequeued" => {
            let reasons: Vec<WaitReason> = serde_json::from_value(details.get("reasons")?.clone()).ok()?;
            if reasons.is_empty() {
                return None;
            }
            reasons
                .iter()
                .map(|r| reason_text(i18n, r))
                .collect::<Vec<_>>()
                .join(" ")
        }
        "activated" => i18n.tf(k!("event.detail.activated"), &[("name", &text("clusterName")?)]),
        "started" => {
            let nodes: Vec<&str> = details
                .get("nodes")?
                .as_array()?
                .iter()
                .filter_map(Value::as_str)
                .collect();
            if nodes.is_empty() {
                return None;
            }
            i18n.tf(k!("event.detail.started"), &[("nodes", &nodes.join(", "))])
        }
        "activation_failed" => i18n.tf(
            k!("event.detail.activationFailed"),
            &[
                ("attempt", &int("attempts")?.to_string()),
                ("max", &int("maxAttempts")?.to_string()),
            ],
        ),
        "failed" => match text("code").as_deref() {
            Some("cluster_create_failed") => i18n.tp(
                k!("event.detail.gaveUp.one"),
                k!("event.detail.gaveUp.other"),
                u64::try_from(int("attempts")?).ok()?,
                &[],
            ),
            Some("vanished") => i18n.t(k!("jobs.failureVanished")).to_owned(),
            Some("cluster_failed") => {
                let failure: Option<JobFailure> = details
                    .get("failure")
                    .and_then(|f| serde_json::from_value(f.clone()).ok());
                match failure {
                    Some(f) => i18n.tf(
                        k!("event.detail.failedInCluster"),
                        &[("why", &failure_reason(i18n, &f))],
                    ),
                    None => return None,
                }
            }
            _ => return None,
        },
        "finished" => {
            let phase = JobPhase::from_str(&text("phase")?).ok()?;
            i18n.tf(k!("event.detail.finished"), &[("phase", i18n.t(phase_label(phase)))])
        }
        "deleted" | "unlocked" => i18n.tf(k!("event.detail.by"), &[("by", &text("by")?)]),
        "locked" => {
            let until = chrono::DateTime::parse_from_rfc3339(&text("until")?).ok()?;
            i18n.tf(
                k!("event.detail.locked"),
                &[("by", &text("by")?), ("until", &date(until.to_utc()))],
            )
        }
        // Preempted for a job past its tolerance, or reclaimed: the room it borrowed is taken
        // back for a job within its queue's guarantee (`queue`, the lender).
        "preempted" | "reclaimed" => {
            let said = if e.kind == "preempted" {
                i18n.tf(
                    k!("event.detail.preempted"),
                    &[("node", &text("node")?), ("name", &text("beneficiaryName")?)],
                )
            } else {
                i18n.tf(
                    k!("event.detail.reclaimed"),
                    &[
                        ("node", &text("node")?),
                        ("name", &text("beneficiaryName")?),
                        ("queue", &text("queue")?),
                    ],
                )
            };
            if details.get("requeue").and_then(Value::as_bool) == Some(true) {
                format!("{said} {}", i18n.t(k!("event.detail.willRequeue")))
            } else {
                said
            }
        }
        "requeued" => i18n.tf(k!("event.detail.requeued"), &[("count", &int("requeues")?.to_string())]),
        // Said with the error a submission would have got (`error.<code>`).
        "requeue_refused" => {
            let code = text("code")?;
            let why = match key_named(&format!("error.{code}")) {
                Some(key) => i18n.t(key).to_owned(),
                None => code,
            };
            i18n.tf(k!("event.detail.requeueRefused"), &[("why", &why)])
        }
        "preempted_for" => {
            let victims = details.get("victims")?.as_array()?.len() as u64;
            i18n.tp(
                k!("event.detail.preemptedFor.one"),
                k!("event.detail.preemptedFor.other"),
                victims,
                &[("node", &text("node")?)],
            )
        }
        "reclaimed_for" => {
            let victims = details.get("victims")?.as_array()?.len() as u64;
            i18n.tp(
                k!("event.detail.reclaimedFor.one"),
                k!("event.detail.reclaimedFor.other"),
                victims,
                &[("queue", &text("queue")?)],
            )
        }
        _ => return None,
    };
    Some(described)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::i18n::Locale;
    use serde_json::json;

    fn event(kind: &str, details: Value) -> JobEventItem {
        JobEventItem {
            id: 1,
            job_id: 7,
            kind: kind.to_owned(),
            message: "the server's English".to_owned(),
            details: (!details.is_null()).then_some(details),
            owner: None,
            phase: None,
            created_at: chrono::DateTime::UNIX_EPOCH,
        }
    }

    fn said(locale: Locale, kind: &str, details: Value) -> Option<String> {
        event_description(I18n::fixed(locale), "default", &event(kind, details), |_| {
            "DATE".to_owned()
        })
    }

    #[test]
    fn every_event_is_said_from_its_details_in_the_reader_s_language() {
        use Locale::*;
        assert_eq!(
            said(En, "submitted", json!({"queue": "team-a"})).unwrap(),
            "To queue team-a."
        );
        assert_eq!(
            said(En, "submitted", Value::Null).unwrap(),
            "To queue default.",
            "an old event"
        );
        assert_eq!(
            said(En, "activated", json!({"clusterName": "ar-7"})).unwrap(),
            "Created in the cluster as ar-7."
        );
        assert_eq!(
            said(En, "activation_failed", json!({"attempts": 2, "maxAttempts": 10})).unwrap(),
            "Attempt 2 of 10 failed; it is tried again later."
        );
        assert_eq!(
            said(
                En,
                "failed",
                json!({"code": "cluster_failed", "failure": {"reason": "OOMKilled", "exitCode": 137}})
            )
            .unwrap(),
            "In the cluster: OOMKilled, exit code 137."
        );
        assert_eq!(
            said(En, "finished", json!({"phase": "Completed"})).unwrap(),
            "Ended as Completed."
        );
        assert_eq!(
            said(En, "deleted", json!({"by": "ann", "phase": "Running"})).unwrap(),
            "By ann."
        );
        assert_eq!(
            said(En, "locked", json!({"by": "root", "until": "2099-01-01T00:00:00Z"})).unwrap(),
            "By root, until DATE."
        );
        assert_eq!(
            said(
                En,
                "preempted",
                json!({"node": "gpu-1", "beneficiary": 9, "beneficiaryName": "big"})
            )
            .unwrap(),
            "On node gpu-1, to make room for big, which waited past its tolerance."
        );
        assert_eq!(
            said(
                En,
                "reclaimed",
                json!({"node": "gpu-0", "beneficiary": 9, "beneficiaryName": "cv-0", "queue": "cv", "graceSeconds": 30, "requeue": true})
            )
            .unwrap(),
            "On node gpu-0: queue cv took back the guaranteed room this job borrowed, for cv-0. It returns to the prequeue once its pods have stopped."
        );
        assert_eq!(
            said(En, "reclaimed", json!({"node": "gpu-0"})),
            None,
            "details it cannot read"
        );
        for locale in [Zh, Ja, Ko] {
            let said = said(
                locale,
                "reclaimed",
                json!({"node": "gpu-0", "beneficiaryName": "cv-0", "queue": "cv", "requeue": false}),
            )
            .unwrap();
            let latin: String = said.chars().filter(|c| c.is_ascii_alphabetic()).collect();
            assert_eq!(latin, "gpucvcv", "{said}");
        }
        // (`preempted_for` and `reclaimed_for` count their victims and a given-up create its attempts with the
        // browser's plural rules, which a test outside a browser cannot call.)
        // Nothing more to say, or details this UI cannot read: no line, never the English.
        assert_eq!(said(En, "finished", Value::Null), None);
        assert_eq!(said(En, "failed", json!({"code": "something_new"})), None);
        assert_eq!(said(En, "activated", Value::Null), None);
        // In the other languages, with no Latin letters but the data.
        let zh = said(Zh, "finished", json!({"phase": "Failed"})).unwrap();
        assert!(!zh.chars().any(|c| c.is_ascii_alphabetic()), "{zh}");
        let ja = said(Ja, "deleted", json!({"by": "ann"})).unwrap();
        assert_eq!(
            ja.chars().filter(|c| c.is_ascii_alphabetic()).collect::<String>(),
            "ann",
            "{ja}"
        );
        let ko = said(Ko, "activation_failed", json!({"attempts": 1, "maxAttempts": 10})).unwrap();
        assert!(!ko.chars().any(|c| c.is_ascii_alphabetic()), "{ko}");
        assert_eq!(
            said(En, "started", json!({"nodes": ["gpu-1", "gpu-2"]})).unwrap(),
            "Its pods run on gpu-1, gpu-2."
        );
        assert_eq!(said(En, "started", json!({"nodes": []})), None);
        // A refused requeue says why with the error a submission would have got.
        assert_eq!(
            said(
                En,
                "requeue_refused",
                json!({"code": "queue_forbidden", "details": {"queue": "team"}})
            )
            .unwrap(),
            "It was not admitted again and stays preempted: You may not submit to this queue."
        );
        for locale in [Zh, Ja, Ko] {
            let said = said(locale, "requeue_refused", json!({"code": "backfill_disabled"})).unwrap();
            assert!(!said.chars().any(|c| c.is_ascii_alphabetic()), "{said}");
        }
    }
}
