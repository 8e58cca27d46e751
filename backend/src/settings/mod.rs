//! The prequeue settings (`spec/prequeue.md` §3): one row in the database, validated as a whole
//! before any write, held in memory for the handlers and the watcher (refreshed on every write
//! here and at least every ticker interval, so a write through another replica arrives too),
//! never re-seeded per request.

pub mod entity;
pub mod handlers;

use std::str::FromStr;
use std::time::Duration;

use anteroom_shared::scheduling::{ActivationOrder, ConfigFieldError, PrequeueConfig, PrequeueConfigChange};
use chrono::Utc;
use sea_orm::{ActiveModelTrait, ConnectionTrait, DbErr, EntityTrait, IntoActiveModel, Set};
use tokio::sync::watch;

/// The one row's id.
const ROW: i32 = 1;

/// What a settings write can fail on.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// Some fields are out of range; nothing was written.
    #[error("invalid prequeue settings")]
    Invalid(Vec<ConfigFieldError>),
    /// The write's `If-Match` names settings that are no longer the stored ones; nothing was
    /// written. Carries the stored settings' tag.
    #[error("the prequeue settings changed since they were read")]
    Stale(String),
    /// The database failed.
    #[error(transparent)]
    Db(#[from] DbErr),
}

/// The current settings, shared by the handlers and the watcher.
#[derive(Debug)]
pub struct Settings {
    current: watch::Sender<PrequeueConfig>,
}

impl Settings {
    /// Reads the row (the migration seeds it with the defaults).
    pub async fn load(db: &impl ConnectionTrait) -> Result<Settings, DbErr> {
        let config = read(db).await?;
        Ok(Settings {
            current: watch::Sender::new(config),
        })
    }

    /// Settings held in memory only, for tests of code that only reads them.
    pub fn fixed(config: PrequeueConfig) -> Settings {
        Settings {
            current: watch::Sender::new(config),
        }
    }

    /// The settings now.
    pub fn current(&self) -> PrequeueConfig {
        self.current.borrow().clone()
    }

    /// A receiver that sees every change (the watcher re-reads its ticker interval from it).
    pub fn subscribe(&self) -> watch::Receiver<PrequeueConfig> {
        self.current.subscribe()
    }

    /// Reads the row again (another replica may have written it).
    pub async fn refresh(&self, db: &impl ConnectionTrait) -> Result<(), DbErr> {
        let config = read(db).await?;
        self.current.send_if_modified(|current| {
            let changed = *current != config;
            *current = config;
            changed
        });
        Ok(())
    }

    /// Applies `change` to the stored settings (a field it leaves out keeps its stored value),
    /// validates the result as a whole and stores it; nothing is written when a field is
    /// invalid, nor when `if_match` (the tag the writer read, [`crate::etag`]) no longer names
    /// the stored settings.
    ///
    /// Writes take turns (the check and the write in one locked transaction), and the value
    /// kept in memory afterwards is read back from the database, so concurrent writes cannot
    /// leave memory holding the one that committed first.
    pub async fn save(
        &self,
        db: &sea_orm::DatabaseConnection,
        change: &PrequeueConfigChange,
        if_match: Option<&str>,
    ) -> Result<PrequeueConfig, SettingsError> {
        let txn = crate::store::write_transaction(db).await?;
        crate::store::lock_named(&txn, "anteroom-settings").await?;
        let row = entity::Entity::find_by_id(ROW)
            .one(&txn)
            .await?
            .ok_or_else(|| DbErr::RecordNotFound("prequeue_config row 1".into()))?;
        let stored = config_of(&row)?;
        // An invalid change is refused as such (422) whatever version it was made on.
        let config = change.apply_to(&stored);
        config.validate().map_err(SettingsError::Invalid)?;
        let tag = crate::etag::of(&stored);
        if let Some(if_match) = if_match
            && !crate::etag::matches(if_match, &tag)
        {
            return Err(SettingsError::Stale(tag));
        }
        let mut active = row.into_active_model();
        active.backfill_enabled = Set(config.backfill_enabled);
        active.queue_quota_enabled = Set(config.queue_quota_enabled);
        active.normal_job_waiting_tolerance_seconds = Set(config.normal_job_waiting_tolerance_seconds);
        active.activate_ticker_interval_seconds = Set(config.activate_ticker_interval_seconds);
        active.max_total_activations_per_round = Set(config.max_total_activations_per_round);
        active.prequeue_candidate_size = Set(config.prequeue_candidate_size);
        active.backfill_min_runtime_seconds = Set(config.backfill_min_runtime_seconds);
        active.max_prequeued_jobs_per_user = Set(config.max_prequeued_jobs_per_user);
        active.activation_order = Set(config.activation_order.as_str().to_string());
        active.preemption_grace_period_seconds = Set(config.preemption_grace_period_seconds);
        active.max_unfinished_jobs_per_user = Set(config.max_unfinished_jobs_per_user);
        active.preemption_plan_window_seconds = Set(config.preemption_plan_window_seconds);
        active.default_requests = Set(serde_json::to_string(&config.default_requests)
            .map_err(|e| DbErr::Custom(format!("serializing defaultRequests: {e}")))?);
        active.requeue_by_default = Set(config.requeue_by_default);
        active.max_requeues = Set(config.max_requeues);
        active.time_aware_backfill = Set(config.time_aware_backfill);
        active.reclaim_delay_seconds = Set(config.reclaim_delay_seconds);
        active.usage_half_life_seconds = Set(config.usage_half_life_seconds);
        active.backfill_usage_weight_milli =
            Set(i32::try_from(config.backfill_usage_weight.thousandths()).unwrap_or(i32::MAX));
        active.usage_weights = Set(serde_json::to_string(&config.usage_weights)
            .map_err(|e| DbErr::Custom(format!("serializing usageWeights: {e}")))?);
        active.updated_at = Set(Utc::now());
        active.update(&txn).await?;
        txn.commit().await?;
        if let Err(e) = self.refresh(db).await {
            // Stored: keep what was written until the next refresh reads it back.
            tracing::warn!(error = %e, "reading the prequeue settings back failed");
            self.current.send_replace(config.clone());
        }
        Ok(config)
    }

    /// Refreshes from the store every ticker interval until `shutdown` resolves, so writes
    /// made through another replica reach this one's handlers within a tick.
    pub async fn refresh_periodically(
        &self,
        db: &impl ConnectionTrait,
        shutdown: impl std::future::Future<Output = ()>,
    ) {
        tokio::pin!(shutdown);
        loop {
            let seconds = self.current().activate_ticker_interval_seconds.clamp(1, 3600) as u64;
            tokio::select! {
                () = &mut shutdown => return,
                () = tokio::time::sleep(Duration::from_secs(seconds)) => {}
            }
            if let Err(e) = self.refresh(db).await {
                tracing::warn!(error = %e, "refreshing the prequeue settings failed; keeping the last ones");
            }
        }
    }
}

/// The row as settings. A row that fails validation (edited by hand) is not used: the defaults
/// are, with an error in the log, so a bad value cannot stop the prequeue.
pub async fn read(db: &impl ConnectionTrait) -> Result<PrequeueConfig, DbErr> {
    let row = entity::Entity::find_by_id(ROW)
        .one(db)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound("prequeue_config row 1".into()))?;
    config_of(&row)
}

/// The settings a row holds; the defaults for a row that is invalid (edited by hand?).
fn config_of(row: &entity::Model) -> Result<PrequeueConfig, DbErr> {
    match from_row(row) {
        Some(config) if config.validate().is_ok() => Ok(config),
        _ => {
            tracing::error!("the prequeue_config row is invalid (edited by hand?); using the defaults");
            Ok(PrequeueConfig::default())
        }
    }
}

fn from_row(row: &entity::Model) -> Option<PrequeueConfig> {
    Some(PrequeueConfig {
        backfill_enabled: row.backfill_enabled,
        queue_quota_enabled: row.queue_quota_enabled,
        normal_job_waiting_tolerance_seconds: row.normal_job_waiting_tolerance_seconds,
        activate_ticker_interval_seconds: row.activate_ticker_interval_seconds,
        max_total_activations_per_round: row.max_total_activations_per_round,
        prequeue_candidate_size: row.prequeue_candidate_size,
        backfill_min_runtime_seconds: row.backfill_min_runtime_seconds,
        max_prequeued_jobs_per_user: row.max_prequeued_jobs_per_user,
        activation_order: ActivationOrder::from_str(&row.activation_order).ok()?,
        preemption_grace_period_seconds: row.preemption_grace_period_seconds,
        max_unfinished_jobs_per_user: row.max_unfinished_jobs_per_user,
        preemption_plan_window_seconds: row.preemption_plan_window_seconds,
        default_requests: serde_json::from_str(&row.default_requests).ok()?,
        requeue_by_default: row.requeue_by_default,
        max_requeues: row.max_requeues,
        time_aware_backfill: row.time_aware_backfill,
        reclaim_delay_seconds: row.reclaim_delay_seconds,
        usage_half_life_seconds: row.usage_half_life_seconds,
        backfill_usage_weight: anteroom_shared::scheduling::Weight::from_thousandths(
            u32::try_from(row.backfill_usage_weight_milli).ok()?,
        )?,
        usage_weights: serde_json::from_str(&row.usage_weights).ok()?,
    })
}
