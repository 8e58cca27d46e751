//! The admin's prequeue settings (`spec/prequeue.md` §3), shared so the settings form validates
//! exactly as the server does before it sends anything.

use serde::{Deserialize, Serialize};

use super::{ActivationOrder, JobKind, Quantity};

/// The admin's prequeue settings (`spec/prequeue.md` §3), with the API's field names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PrequeueConfig {
    /// Allows backfill submissions; with `queue_quota_enabled`, switches on blocking and
    /// preemption.
    pub backfill_enabled: bool,
    /// Master switch for per-user quotas and queue capacities.
    pub queue_quota_enabled: bool,
    /// Copied into each new normal job: how long it may wait before it blocks others.
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub normal_job_waiting_tolerance_seconds: i64,
    /// Watcher ticker period.
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub activate_ticker_interval_seconds: i64,
    /// Upper bound on activations per round (combined with the candidate size by `min`).
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub max_total_activations_per_round: i64,
    /// Batch size of a round.
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub prequeue_candidate_size: i64,
    /// A backfill job younger than this (since it started running) is not preempted.
    #[cfg_attr(feature = "openapi", schema(minimum = 0))]
    pub backfill_min_runtime_seconds: i64,
    /// Submissions beyond this many prequeued jobs of one user are refused.
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub max_prequeued_jobs_per_user: i64,
    /// `fcfs` or `fairShare`.
    pub activation_order: ActivationOrder,
    /// Grace period of a preempted job's pods.
    #[cfg_attr(feature = "openapi", schema(minimum = 0))]
    pub preemption_grace_period_seconds: i64,
    /// Submissions beyond this many unfinished jobs of one user (waiting, starting or running)
    /// are refused (429 `too_many_unfinished_jobs`): with quotas off, nothing else bounds what
    /// one user holds.
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub max_unfinished_jobs_per_user: i64,
    /// After a preemption plan for a job, no other plan for it for this long (0: its waiting
    /// tolerance): if the scheduler gives the room the victims freed to someone else, the
    /// prequeue does not go on deleting Elastic jobs for it.
    #[cfg_attr(feature = "openapi", schema(minimum = 0))]
    pub preemption_plan_window_seconds: i64,
    /// The CPU and memory a task of each kind requests when its body leaves them out. Every
    /// task requests both above zero: a request of nothing passes every quota and capacity
    /// check, and its pods run BestEffort.
    pub default_requests: DefaultRequests,
    /// Whether a job whose body does not say goes back to the prequeue when preempted
    /// (`requeue`); absent in a write: off.
    #[serde(default)]
    pub requeue_by_default: bool,
    /// How many times a preemption may send one job back to the prequeue; the next preemption
    /// ends it. Absent in a write: 3.
    #[serde(default = "default_max_requeues")]
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 1000))]
    pub max_requeues: i64,
    /// Backfill that knows time (Slurm's rule): a job held only because a job that waited past
    /// its tolerance goes first may start anyway when its runtime limit ends it before that
    /// job's estimated start. Absent in a write: off.
    #[serde(default)]
    pub time_aware_backfill: bool,
    /// How long a job owed guaranteed room (§9) waits before borrowers are reclaimed for it:
    /// lets jobs that end and placements in flight settle first. Absent in a write: 10.
    #[serde(default = "default_reclaim_delay_seconds")]
    #[cfg_attr(feature = "openapi", schema(minimum = 0))]
    pub reclaim_delay_seconds: i64,
    /// Fair share over time (§10): past usage counts at `2^(-age / usageHalfLifeSeconds)`.
    /// Absent in a write: 7 days (Slurm's default); 0 — no decay — only when written.
    #[serde(default = "default_usage_half_life_seconds")]
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 315_360_000))]
    pub usage_half_life_seconds: i64,
    /// How much an Elastic job's usage counts against its owner's fair share, as a fraction of
    /// a normal job's. Absent in a write: 0.5.
    #[serde(default = "default_backfill_usage_weight")]
    #[cfg_attr(feature = "openapi", schema(value_type = f64, minimum = 0, maximum = 1000))]
    pub backfill_usage_weight: Weight,
    /// Usage units per resource-hour (per GiB-hour for memory), by resource. Absent or empty:
    /// each accelerator 1 per GPU-hour, and `cpu` and `memory` each the GPUs of the cluster's
    /// GPU nodes divided by their CPUs (GiB), so a GPU node's full CPU (or memory) counts as
    /// much as its GPUs.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = std::collections::BTreeMap<String, f64>))]
    pub usage_weights: std::collections::BTreeMap<String, Weight>,
}

fn default_reclaim_delay_seconds() -> i64 {
    10
}

fn default_usage_half_life_seconds() -> i64 {
    7 * 24 * 3600
}

fn default_backfill_usage_weight() -> Weight {
    Weight::from_thousandths(500).unwrap_or_default()
}

/// A non-negative weight written as a JSON number with at most three decimals (`0.5`), at most
/// [`Weight::MAX`]; kept in thousandths so settings compare and store exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Weight(u32);

impl Weight {
    /// The largest weight, 1000.
    pub const MAX: f64 = 1000.0;

    /// A weight of `thousandths` / 1000; `None` past [`Weight::MAX`].
    pub fn from_thousandths(thousandths: u32) -> Option<Weight> {
        (thousandths <= 1_000_000).then_some(Weight(thousandths))
    }

    /// The weight in thousandths.
    pub fn thousandths(self) -> u32 {
        self.0
    }

    /// The weight as a number.
    pub fn as_f64(self) -> f64 {
        f64::from(self.0) / 1000.0
    }
}

impl Serialize for Weight {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.as_f64())
    }
}

impl<'de> Deserialize<'de> for Weight {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = f64::deserialize(d)?;
        if !v.is_finite() || !(0.0..=Weight::MAX).contains(&v) {
            return Err(serde::de::Error::custom("a weight is a number from 0 to 1000"));
        }
        let thousandths = (v * 1000.0).round();
        if (thousandths / 1000.0 - v).abs() > 1e-9 {
            return Err(serde::de::Error::custom("a weight has at most three decimals"));
        }
        Ok(Weight(thousandths as u32))
    }
}

fn default_max_requeues() -> i64 {
    3
}

/// The CPU and memory of one task when its body names none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskDefaults {
    /// CPU, above zero.
    pub cpu: DefaultQuantity,
    /// Memory, above zero.
    pub memory: DefaultQuantity,
}

/// What a default request accepts, exactly as the OpenAPI document states it (a contract tester
/// generates from the schema, so the server may accept neither more nor less): a plain decimal
/// above zero with an optional suffix, no sign, no exponent, at most
/// [`POSITIVE_QUANTITY_MAX_LENGTH`] characters so it never overflows. A test checks that
/// [`is_plain_positive_quantity`] accepts exactly the strings it matches.
pub const POSITIVE_QUANTITY_PATTERN: &str =
    r"^0*([1-9][0-9]*(\.[0-9]+)?|\.[0-9]*[1-9][0-9]*)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$";

/// The longest default request the API accepts.
pub const POSITIVE_QUANTITY_MAX_LENGTH: usize = 16;

/// Whether `text` is a default request the API accepts ([`POSITIVE_QUANTITY_PATTERN`], written
/// out by hand: the shared crate, compiled to WASM too, carries no regex engine).
pub fn is_plain_positive_quantity(text: &str) -> bool {
    const SUFFIXES: [&str; 14] = [
        "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "m", "k", "M", "G", "T", "P", "E", "",
    ];
    if text.len() > POSITIVE_QUANTITY_MAX_LENGTH {
        return false;
    }
    let number = SUFFIXES
        .iter()
        .find_map(|suffix| text.strip_suffix(suffix))
        .unwrap_or(text);
    let (whole, fraction) = match number.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (number, None),
    };
    let digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    let non_zero = |part: &str| part.bytes().any(|b| (b'1'..=b'9').contains(&b));
    match fraction {
        None => digits(whole) && non_zero(whole),
        // "1.5": a whole part above zero needs fraction digits; ".5", "0.5": the fraction
        // carries the value.
        Some(fraction) if non_zero(whole) => digits(whole) && !fraction.is_empty() && digits(fraction),
        Some(fraction) => digits(whole) && digits(fraction) && non_zero(fraction),
    }
}

/// A default request as the admin wrote it: what is PUT is what is read back (a canonical
/// form such as `1209462790553600m` for `1.1Ti` would neither read well nor stay within the
/// documented pattern), and it is above zero by construction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultQuantity {
    text: String,
    value: Quantity,
}

impl DefaultQuantity {
    /// `text` when it is a default request the API accepts ([`POSITIVE_QUANTITY_PATTERN`]).
    pub fn parse(text: &str) -> Result<Self, String> {
        if !is_plain_positive_quantity(text) {
            return Err(format!(
                "{text:?} is not a quantity above zero such as \"2\", \"500m\" or \"16Gi\" \
                 (no sign, no exponent, at most {POSITIVE_QUANTITY_MAX_LENGTH} characters)"
            ));
        }
        let value = Quantity::parse(text).map_err(|e| e.to_string())?;
        Ok(DefaultQuantity {
            text: text.to_owned(),
            value,
        })
    }

    /// The quantity, for the task that names none.
    pub fn value(&self) -> Quantity {
        self.value
    }
}

impl std::fmt::Display for DefaultQuantity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for DefaultQuantity {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for DefaultQuantity {
    /// A string of [`POSITIVE_QUANTITY_PATTERN`], nothing else (not a JSON number either: the
    /// schema says string).
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        DefaultQuantity::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for DefaultQuantity {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .description(Some(
                "A resource quantity above zero: a plain decimal with an optional suffix \
                 (m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei), no sign, no exponent.",
            ))
            .pattern(Some(POSITIVE_QUANTITY_PATTERN))
            .max_length(Some(POSITIVE_QUANTITY_MAX_LENGTH))
            .examples(["2", "500m", "16Gi"])
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for DefaultQuantity {}

impl TaskDefaults {
    fn of(cpu: i64, memory_gi: i64) -> Self {
        TaskDefaults {
            cpu: DefaultQuantity::parse(&cpu.to_string()).expect("a valid default"),
            memory: DefaultQuantity::parse(&format!("{memory_gi}Gi")).expect("a valid default"),
        }
    }
}

/// [`TaskDefaults`] per job kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DefaultRequests {
    /// Jupyter notebooks.
    pub jupyter: TaskDefaults,
    /// Web IDEs.
    pub webide: TaskDefaults,
    /// Custom jobs.
    pub custom: TaskDefaults,
    /// Each PyTorch task.
    pub pytorch: TaskDefaults,
    /// Each TensorFlow task.
    pub tensorflow: TaskDefaults,
}

impl Default for DefaultRequests {
    fn default() -> Self {
        DefaultRequests {
            jupyter: TaskDefaults::of(2, 8),
            webide: TaskDefaults::of(2, 8),
            custom: TaskDefaults::of(1, 4),
            pytorch: TaskDefaults::of(4, 16),
            tensorflow: TaskDefaults::of(4, 16),
        }
    }
}

impl DefaultRequests {
    /// The defaults of `kind`.
    pub fn of(&self, kind: JobKind) -> &TaskDefaults {
        match kind {
            JobKind::Jupyter => &self.jupyter,
            JobKind::Webide => &self.webide,
            JobKind::Custom => &self.custom,
            JobKind::Pytorch => &self.pytorch,
            JobKind::Tensorflow => &self.tensorflow,
        }
    }
}

impl Default for PrequeueConfig {
    /// The defaults of `spec/prequeue.md` §3.
    fn default() -> Self {
        PrequeueConfig {
            backfill_enabled: false,
            queue_quota_enabled: false,
            normal_job_waiting_tolerance_seconds: 300,
            activate_ticker_interval_seconds: 5,
            max_total_activations_per_round: 500,
            prequeue_candidate_size: 10,
            backfill_min_runtime_seconds: 0,
            max_prequeued_jobs_per_user: 100,
            activation_order: ActivationOrder::Fcfs,
            preemption_grace_period_seconds: 30,
            max_unfinished_jobs_per_user: 1000,
            preemption_plan_window_seconds: 0,
            default_requests: DefaultRequests::default(),
            requeue_by_default: false,
            max_requeues: default_max_requeues(),
            time_aware_backfill: false,
            reclaim_delay_seconds: default_reclaim_delay_seconds(),
            usage_half_life_seconds: default_usage_half_life_seconds(),
            backfill_usage_weight: default_backfill_usage_weight(),
            usage_weights: std::collections::BTreeMap::new(),
        }
    }
}

/// One invalid field of a [`PrequeueConfig`] write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ConfigFieldError {
    /// The API field name.
    pub field: std::borrow::Cow<'static, str>,
    /// What the field must be.
    pub message: &'static str,
}

impl PrequeueConfig {
    /// "Blocking and preemption are on" ⇔ `backfillEnabled || queueQuotaEnabled`.
    pub fn blocking_enabled(&self) -> bool {
        self.backfill_enabled || self.queue_quota_enabled
    }

    /// The number of jobs a round may select: `min(prequeueCandidateSize,
    /// maxTotalActivationsPerRound)`, at least 1.
    ///
    /// [`validate`](Self::validate) refuses either field below 1; the floor is for a value
    /// that reached the store some other way. A limit of 0 would select nothing while
    /// candidates remain, so the watcher would report more work and run again for ever.
    pub fn round_limit(&self) -> usize {
        let limit = self
            .prequeue_candidate_size
            .min(self.max_total_activations_per_round)
            .max(1);
        usize::try_from(limit).unwrap_or(usize::MAX)
    }

    /// Validates a whole write; every offending field is listed so the API answers one 422
    /// naming all of them and nothing invalid reaches the database.
    pub fn validate(&self) -> Result<(), Vec<ConfigFieldError>> {
        const AT_LEAST_ONE: &str = "must be an integer of at least 1";
        const NOT_NEGATIVE: &str = "must be an integer of at least 0";
        let checks: [(&'static str, i64, i64, &'static str); 12] = [
            (
                "normalJobWaitingToleranceSeconds",
                self.normal_job_waiting_tolerance_seconds,
                1,
                AT_LEAST_ONE,
            ),
            (
                "activateTickerIntervalSeconds",
                self.activate_ticker_interval_seconds,
                1,
                AT_LEAST_ONE,
            ),
            (
                "maxTotalActivationsPerRound",
                self.max_total_activations_per_round,
                1,
                AT_LEAST_ONE,
            ),
            ("prequeueCandidateSize", self.prequeue_candidate_size, 1, AT_LEAST_ONE),
            (
                "backfillMinRuntimeSeconds",
                self.backfill_min_runtime_seconds,
                0,
                NOT_NEGATIVE,
            ),
            (
                "maxPrequeuedJobsPerUser",
                self.max_prequeued_jobs_per_user,
                1,
                AT_LEAST_ONE,
            ),
            (
                "preemptionGracePeriodSeconds",
                self.preemption_grace_period_seconds,
                0,
                NOT_NEGATIVE,
            ),
            (
                "maxUnfinishedJobsPerUser",
                self.max_unfinished_jobs_per_user,
                1,
                AT_LEAST_ONE,
            ),
            (
                "preemptionPlanWindowSeconds",
                self.preemption_plan_window_seconds,
                0,
                NOT_NEGATIVE,
            ),
            ("maxRequeues", self.max_requeues, 0, NOT_NEGATIVE),
            ("reclaimDelaySeconds", self.reclaim_delay_seconds, 0, NOT_NEGATIVE),
            ("usageHalfLifeSeconds", self.usage_half_life_seconds, 0, NOT_NEGATIVE),
        ];
        let mut errors: Vec<ConfigFieldError> = Vec::new();
        for (field, value, min, message) in checks {
            if value < min {
                errors.push(ConfigFieldError {
                    field: field.into(),
                    message,
                });
            }
        }
        if self.usage_half_life_seconds > 315_360_000 {
            errors.push(ConfigFieldError {
                field: "usageHalfLifeSeconds".into(),
                message: "must be at most 315360000 (ten years)",
            });
        }
        if self.usage_weights.len() > 64 {
            errors.push(ConfigFieldError {
                field: "usageWeights".into(),
                message: "names at most 64 resources",
            });
        }
        if self.usage_weights.keys().any(|k| k.is_empty() || k.len() > 253) {
            errors.push(ConfigFieldError {
                field: "usageWeights".into(),
                message: "keys are resource names of 1 to 253 characters",
            });
        }
        if self.max_requeues > 1000 {
            errors.push(ConfigFieldError {
                field: "maxRequeues".into(),
                message: "must be an integer of at most 1000",
            });
        }
        if errors.is_empty() { Ok(()) } else { Err(errors) }
    }
}
