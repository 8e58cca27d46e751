//! A write of the prequeue settings that names any subset of them (`spec/prequeue.md` §3,
//! "Compatibility of writes"): what it leaves out keeps its stored value.

use serde::{Deserialize, Serialize};

use super::ActivationOrder;
use super::config::{DefaultRequests, PrequeueConfig, Weight};

/// `PUT /api/v1/admin/prequeue-config` body (`spec/prequeue.md` §3, "Compatibility of
/// writes"): any subset of the settings. A field left out keeps its stored value — never a
/// default — so a client written for an earlier version of the table (a script, the terminal
/// client, an older UI) goes on working and never resets a setting it does not know.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PrequeueConfigChange {
    /// See [`PrequeueConfig::backfill_enabled`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backfill_enabled: Option<bool>,
    /// See [`PrequeueConfig::queue_quota_enabled`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_quota_enabled: Option<bool>,
    /// See [`PrequeueConfig::normal_job_waiting_tolerance_seconds`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub normal_job_waiting_tolerance_seconds: Option<i64>,
    /// See [`PrequeueConfig::activate_ticker_interval_seconds`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub activate_ticker_interval_seconds: Option<i64>,
    /// See [`PrequeueConfig::max_total_activations_per_round`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub max_total_activations_per_round: Option<i64>,
    /// See [`PrequeueConfig::prequeue_candidate_size`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub prequeue_candidate_size: Option<i64>,
    /// See [`PrequeueConfig::backfill_min_runtime_seconds`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 0))]
    pub backfill_min_runtime_seconds: Option<i64>,
    /// See [`PrequeueConfig::max_prequeued_jobs_per_user`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub max_prequeued_jobs_per_user: Option<i64>,
    /// See [`PrequeueConfig::activation_order`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activation_order: Option<ActivationOrder>,
    /// See [`PrequeueConfig::preemption_grace_period_seconds`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 0))]
    pub preemption_grace_period_seconds: Option<i64>,
    /// See [`PrequeueConfig::max_unfinished_jobs_per_user`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub max_unfinished_jobs_per_user: Option<i64>,
    /// See [`PrequeueConfig::preemption_plan_window_seconds`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 0))]
    pub preemption_plan_window_seconds: Option<i64>,
    /// See [`PrequeueConfig::default_requests`] (whole: every kind's CPU and memory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_requests: Option<DefaultRequests>,
    /// See [`PrequeueConfig::requeue_by_default`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeue_by_default: Option<bool>,
    /// See [`PrequeueConfig::max_requeues`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 1000))]
    pub max_requeues: Option<i64>,
    /// See [`PrequeueConfig::time_aware_backfill`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_aware_backfill: Option<bool>,
    /// See [`PrequeueConfig::reclaim_delay_seconds`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 0))]
    pub reclaim_delay_seconds: Option<i64>,
    /// See [`PrequeueConfig::usage_half_life_seconds`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 315_360_000))]
    pub usage_half_life_seconds: Option<i64>,
    /// See [`PrequeueConfig::backfill_usage_weight`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<f64>, minimum = 0, maximum = 1000))]
    pub backfill_usage_weight: Option<Weight>,
    /// See [`PrequeueConfig::usage_weights`]; `{}` goes back to the derived weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<std::collections::BTreeMap<String, f64>>))]
    pub usage_weights: Option<std::collections::BTreeMap<String, Weight>>,
}

impl PrequeueConfigChange {
    /// `stored` with the fields this change names.
    pub fn apply_to(&self, stored: &PrequeueConfig) -> PrequeueConfig {
        // Destructured without `..`: a setting added to the table does not compile until it
        // is carried here too.
        let PrequeueConfigChange {
            backfill_enabled,
            queue_quota_enabled,
            normal_job_waiting_tolerance_seconds,
            activate_ticker_interval_seconds,
            max_total_activations_per_round,
            prequeue_candidate_size,
            backfill_min_runtime_seconds,
            max_prequeued_jobs_per_user,
            activation_order,
            preemption_grace_period_seconds,
            max_unfinished_jobs_per_user,
            preemption_plan_window_seconds,
            default_requests,
            requeue_by_default,
            max_requeues,
            time_aware_backfill,
            reclaim_delay_seconds,
            usage_half_life_seconds,
            backfill_usage_weight,
            usage_weights,
        } = self.clone();
        let s = stored.clone();
        PrequeueConfig {
            backfill_enabled: backfill_enabled.unwrap_or(s.backfill_enabled),
            queue_quota_enabled: queue_quota_enabled.unwrap_or(s.queue_quota_enabled),
            normal_job_waiting_tolerance_seconds: normal_job_waiting_tolerance_seconds
                .unwrap_or(s.normal_job_waiting_tolerance_seconds),
            activate_ticker_interval_seconds: activate_ticker_interval_seconds
                .unwrap_or(s.activate_ticker_interval_seconds),
            max_total_activations_per_round: max_total_activations_per_round
                .unwrap_or(s.max_total_activations_per_round),
            prequeue_candidate_size: prequeue_candidate_size.unwrap_or(s.prequeue_candidate_size),
            backfill_min_runtime_seconds: backfill_min_runtime_seconds.unwrap_or(s.backfill_min_runtime_seconds),
            max_prequeued_jobs_per_user: max_prequeued_jobs_per_user.unwrap_or(s.max_prequeued_jobs_per_user),
            activation_order: activation_order.unwrap_or(s.activation_order),
            preemption_grace_period_seconds: preemption_grace_period_seconds
                .unwrap_or(s.preemption_grace_period_seconds),
            max_unfinished_jobs_per_user: max_unfinished_jobs_per_user.unwrap_or(s.max_unfinished_jobs_per_user),
            preemption_plan_window_seconds: preemption_plan_window_seconds.unwrap_or(s.preemption_plan_window_seconds),
            default_requests: default_requests.unwrap_or(s.default_requests),
            requeue_by_default: requeue_by_default.unwrap_or(s.requeue_by_default),
            max_requeues: max_requeues.unwrap_or(s.max_requeues),
            time_aware_backfill: time_aware_backfill.unwrap_or(s.time_aware_backfill),
            reclaim_delay_seconds: reclaim_delay_seconds.unwrap_or(s.reclaim_delay_seconds),
            usage_half_life_seconds: usage_half_life_seconds.unwrap_or(s.usage_half_life_seconds),
            backfill_usage_weight: backfill_usage_weight.unwrap_or(s.backfill_usage_weight),
            usage_weights: usage_weights.unwrap_or(s.usage_weights),
        }
    }
}

impl From<PrequeueConfig> for PrequeueConfigChange {
    /// Every setting named: what a form that shows them all saves.
    fn from(c: PrequeueConfig) -> Self {
        PrequeueConfigChange {
            backfill_enabled: Some(c.backfill_enabled),
            queue_quota_enabled: Some(c.queue_quota_enabled),
            normal_job_waiting_tolerance_seconds: Some(c.normal_job_waiting_tolerance_seconds),
            activate_ticker_interval_seconds: Some(c.activate_ticker_interval_seconds),
            max_total_activations_per_round: Some(c.max_total_activations_per_round),
            prequeue_candidate_size: Some(c.prequeue_candidate_size),
            backfill_min_runtime_seconds: Some(c.backfill_min_runtime_seconds),
            max_prequeued_jobs_per_user: Some(c.max_prequeued_jobs_per_user),
            activation_order: Some(c.activation_order),
            preemption_grace_period_seconds: Some(c.preemption_grace_period_seconds),
            max_unfinished_jobs_per_user: Some(c.max_unfinished_jobs_per_user),
            preemption_plan_window_seconds: Some(c.preemption_plan_window_seconds),
            default_requests: Some(c.default_requests),
            requeue_by_default: Some(c.requeue_by_default),
            max_requeues: Some(c.max_requeues),
            time_aware_backfill: Some(c.time_aware_backfill),
            reclaim_delay_seconds: Some(c.reclaim_delay_seconds),
            usage_half_life_seconds: Some(c.usage_half_life_seconds),
            backfill_usage_weight: Some(c.backfill_usage_weight),
            usage_weights: Some(c.usage_weights),
        }
    }
}

#[cfg(test)]
mod change_tests {
    use super::*;

    #[test]
    fn a_change_keeps_what_it_leaves_out_and_every_setting_round_trips() {
        let stored = PrequeueConfig {
            max_unfinished_jobs_per_user: 7,
            requeue_by_default: true,
            time_aware_backfill: true,
            ..PrequeueConfig::default()
        };
        // The spec's first ten fields alone, as a client of that table sends them.
        let old_client: PrequeueConfigChange = serde_json::from_value(serde_json::json!({
            "backfillEnabled": true, "queueQuotaEnabled": true,
            "normalJobWaitingToleranceSeconds": 60, "activateTickerIntervalSeconds": 2,
            "maxTotalActivationsPerRound": 50, "prequeueCandidateSize": 5,
            "backfillMinRuntimeSeconds": 0, "maxPrequeuedJobsPerUser": 10,
            "activationOrder": "fairShare", "preemptionGracePeriodSeconds": 30
        }))
        .unwrap();
        let merged = old_client.apply_to(&stored);
        assert_eq!(merged.normal_job_waiting_tolerance_seconds, 60);
        assert_eq!(merged.activation_order, ActivationOrder::FairShare);
        assert_eq!(merged.max_unfinished_jobs_per_user, 7, "not known to it: kept");
        assert!(merged.requeue_by_default && merged.time_aware_backfill, "kept");
        assert_eq!(
            PrequeueConfigChange::default().apply_to(&stored),
            stored,
            "nothing named, nothing changed"
        );
        let all = PrequeueConfigChange::from(merged.clone());
        assert_eq!(all.apply_to(&PrequeueConfig::default()), merged, "every setting named");
        assert!(serde_json::from_value::<PrequeueConfigChange>(serde_json::json!({"colour": "blue"})).is_err());
    }

    #[test]
    fn fair_share_settings_default_safely_and_weights_read_as_numbers() {
        // An old client's settings without the new fields: a week's half-life, never 0.
        let stored = PrequeueConfig::default();
        let merged = PrequeueConfigChange::default().apply_to(&stored);
        assert_eq!(merged.usage_half_life_seconds, 7 * 24 * 3600);
        let explicit: PrequeueConfigChange = serde_json::from_value(
            serde_json::json!({"usageHalfLifeSeconds": 0, "backfillUsageWeight": 0.25,
                                                      "usageWeights": {"nvidia.com/a100": 2, "cpu": 0.125}}),
        )
        .unwrap();
        let merged = explicit.apply_to(&stored);
        assert_eq!(merged.usage_half_life_seconds, 0, "0 when written");
        assert_eq!(merged.backfill_usage_weight.thousandths(), 250);
        assert_eq!(merged.usage_weights["cpu"].thousandths(), 125);
        let json = serde_json::to_value(&merged).unwrap();
        assert_eq!(json["backfillUsageWeight"], 0.25);
        assert_eq!(json["usageWeights"]["nvidia.com/a100"], 2.0);
        for bad in [
            serde_json::json!(-1),
            serde_json::json!(1000.5),
            serde_json::json!(0.0005),
            serde_json::json!("1"),
        ] {
            assert!(serde_json::from_value::<Weight>(bad.clone()).is_err(), "{bad}");
        }
        assert_eq!(
            serde_json::from_value::<Weight>(serde_json::json!(1000))
                .unwrap()
                .thousandths(),
            1_000_000
        );
    }
}
