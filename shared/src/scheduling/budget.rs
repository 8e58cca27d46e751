//! Budgets per queue (`spec/prequeue.md` §10, issue 44): GPU-hours a queue's subtree may use
//! per week or month, shown against its use; when an admin chose so, its normal jobs are held
//! (`budget_exhausted`) once the budget is spent, until the next period. Shared so the server,
//! the UI and the CLI read one definition.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A number of GPU-hours, kept in thousandths so budgets compare and store exactly; written as
/// a JSON number (`12.5`), rounded to three decimals when read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct GpuHours(u64);

impl GpuHours {
    /// The largest amount, a billion GPU-hours: past any cluster's lifetime, far inside `u64`.
    pub const MAX: f64 = 1e9;

    /// `hours`, rounded to thousandths; `None` when negative, not a number, or past [`Self::MAX`].
    pub fn from_hours(hours: f64) -> Option<GpuHours> {
        (hours.is_finite() && (0.0..=Self::MAX).contains(&hours)).then(|| GpuHours((hours * 1000.0).round() as u64))
    }

    /// `hours`, clamped into range (a use read from the history, never refused).
    pub fn saturating(hours: f64) -> GpuHours {
        let clamped = if hours.is_finite() {
            hours.clamp(0.0, Self::MAX)
        } else {
            0.0
        };
        GpuHours((clamped * 1000.0).round() as u64)
    }

    /// The amount as a number of hours.
    pub fn hours(self) -> f64 {
        self.0 as f64 / 1000.0
    }
}

impl Serialize for GpuHours {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.hours())
    }
}

impl<'de> Deserialize<'de> for GpuHours {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = f64::deserialize(d)?;
        GpuHours::from_hours(v).ok_or_else(|| serde::de::Error::custom("GPU-hours are a number from 0 to 1e9"))
    }
}

/// How often a budget renews: ISO weeks (Monday 00:00 UTC) or calendar months (the 1st, UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub enum BudgetPeriod {
    /// Renews every Monday.
    Week,
    /// Renews on the first of every month.
    #[default]
    Month,
}

/// A queue's budget, as an admin sets it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct QueueBudget {
    /// How often it renews.
    pub period: BudgetPeriod,
    /// GPU-hours (every accelerator, summed) the queue's subtree's normal jobs may use per
    /// period; Elastic (backfill) jobs run on idle room and do not spend it.
    #[cfg_attr(feature = "openapi", schema(value_type = f64, minimum = 0, maximum = 1_000_000_000))]
    pub gpu_hours: GpuHours,
    /// Whether the queue's normal jobs are held (`budget_exhausted`) once it is spent, until
    /// the next period; off: the budget is only shown against the use. Off when not sent.
    #[serde(default)]
    pub hold_when_exhausted: bool,
}

/// A budget as `PUT /api/v1/admin/queues/{name}/budget` takes it: `holdWhenExhausted` may be
/// left out, and then keeps what the queue's budget had (off for a new one), so a client that
/// only knows `{period, gpuHours}` never switches a hold off by changing the amount.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct QueueBudgetBody {
    /// How often it renews.
    pub period: BudgetPeriod,
    /// GPU-hours per period (see [`QueueBudget::gpu_hours`]).
    #[cfg_attr(feature = "openapi", schema(value_type = f64, minimum = 0, maximum = 1_000_000_000))]
    pub gpu_hours: GpuHours,
    /// See [`QueueBudget::hold_when_exhausted`]; absent: unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_when_exhausted: Option<bool>,
}

impl QueueBudgetBody {
    /// The budget it sets over `stored` (the queue's budget now, if any).
    pub fn applied_to(&self, stored: Option<&QueueBudget>) -> QueueBudget {
        QueueBudget {
            period: self.period,
            gpu_hours: self.gpu_hours,
            hold_when_exhausted: self
                .hold_when_exhausted
                .unwrap_or_else(|| stored.is_some_and(|b| b.hold_when_exhausted)),
        }
    }
}

/// A spent budget that holds its queue's normal jobs: what the hold shows and when it ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetHold {
    /// The end of the period: the hold lifts then, whatever is stored.
    pub until: DateTime<Utc>,
    /// What the subtree had used when the budget was found spent.
    pub used: GpuHours,
    /// The budget.
    pub budget: GpuHours,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_hours_round_to_thousandths_and_refuse_what_is_out_of_range() {
        assert_eq!(GpuHours::from_hours(12.5).map(GpuHours::hours), Some(12.5));
        assert_eq!(GpuHours::from_hours(0.0004).map(GpuHours::hours), Some(0.0));
        assert_eq!(GpuHours::from_hours(-1.0), None);
        assert_eq!(GpuHours::from_hours(f64::NAN), None);
        assert_eq!(GpuHours::from_hours(2e9), None);
        assert_eq!(GpuHours::saturating(-3.0).hours(), 0.0);
        assert_eq!(GpuHours::saturating(f64::INFINITY).hours(), 0.0);
        let json: QueueBudget = serde_json::from_str(r#"{"period": "week", "gpuHours": 100}"#).expect("parses");
        assert!(!json.hold_when_exhausted, "off when not sent");
        assert!(serde_json::from_str::<QueueBudget>(r#"{"period": "day", "gpuHours": 1}"#).is_err());
        assert!(serde_json::from_str::<QueueBudget>(r#"{"period": "week", "gpuHours": -1}"#).is_err());
    }

    #[test]
    fn a_body_without_the_hold_keeps_the_stored_one() {
        let body: QueueBudgetBody = serde_json::from_str(r#"{"period": "month", "gpuHours": 50}"#).expect("parses");
        let held = QueueBudget {
            period: BudgetPeriod::Week,
            gpu_hours: GpuHours::saturating(10.0),
            hold_when_exhausted: true,
        };
        assert!(body.applied_to(Some(&held)).hold_when_exhausted);
        assert!(!body.applied_to(None).hold_when_exhausted);
        let off: QueueBudgetBody =
            serde_json::from_str(r#"{"period": "month", "gpuHours": 50, "holdWhenExhausted": false}"#).expect("parses");
        assert!(!off.applied_to(Some(&held)).hold_when_exhausted);
        assert_eq!(off.applied_to(Some(&held)).gpu_hours.hours(), 50.0);
    }
}
