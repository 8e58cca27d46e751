//! Anteroom's schema, one file per change. Never edit a migration that has shipped: add one.

pub use sea_orm_migration::prelude::*;

mod m20261122_000001_create_users;
mod m20261122_000002_create_sim_cluster;
mod m20261122_000003_user_token_version;
mod m20261122_000004_installation;
mod m20261122_000005_sim_queues;
mod m20261123_000006_queues;
mod m20261123_000007_jobs;
mod m20261123_000008_job_events;
mod m20261123_000009_queue_quotas;
mod m20261123_000010_prequeue_config;
mod m20261123_000011_leases;
mod m20261123_000012_idempotency_keys;
mod m20261123_000013_preemptions;
mod m20261124_000014_waiting_since;
mod m20261124_000015_safety_settings;
mod m20261125_000016_job_cluster_uid;
mod m20261125_000017_cluster_preemptable;
mod m20261125_000018_toleration_rules;
mod m20261125_000019_volumes;
mod m20261125_000020_job_templates;
mod m20261125_000021_job_failure;
mod m20261126_000022_job_changes;
mod m20261126_000023_job_counts;
mod m20261127_000024_job_counts_on_postgres;
mod m20261127_000025_runtime_limits;
mod m20261127_000026_webhooks;
mod m20261128_000027_notebook_handoffs;
mod m20261128_000028_run_as_user;
mod m20261128_000029_forecast_board;
mod m20261129_000030_queue_sharing;
mod m20261129_000031_usage_intervals;
mod m20261129_000032_fair_share_settings;
mod m20261129_000033_queue_budgets;

/// Applies the migrations in order; used at start and by `anteroom migrate`.
pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m20261122_000001_create_users::Migration),
            Box::new(m20261122_000002_create_sim_cluster::Migration),
            Box::new(m20261122_000003_user_token_version::Migration),
            Box::new(m20261122_000004_installation::Migration),
            Box::new(m20261122_000005_sim_queues::Migration),
            Box::new(m20261123_000006_queues::Migration),
            Box::new(m20261123_000007_jobs::Migration),
            Box::new(m20261123_000008_job_events::Migration),
            Box::new(m20261123_000009_queue_quotas::Migration),
            Box::new(m20261123_000010_prequeue_config::Migration),
            Box::new(m20261123_000011_leases::Migration),
            Box::new(m20261123_000012_idempotency_keys::Migration),
            Box::new(m20261123_000013_preemptions::Migration),
            Box::new(m20261124_000014_waiting_since::Migration),
            Box::new(m20261124_000015_safety_settings::Migration),
            Box::new(m20261125_000016_job_cluster_uid::Migration),
            Box::new(m20261125_000017_cluster_preemptable::Migration),
            Box::new(m20261125_000018_toleration_rules::Migration),
            Box::new(m20261125_000019_volumes::Migration),
            Box::new(m20261125_000020_job_templates::Migration),
            Box::new(m20261125_000021_job_failure::Migration),
            Box::new(m20261126_000022_job_changes::Migration),
            Box::new(m20261126_000023_job_counts::Migration),
            Box::new(m20261127_000024_job_counts_on_postgres::Migration),
            Box::new(m20261127_000025_runtime_limits::Migration),
            Box::new(m20261127_000026_webhooks::Migration),
            Box::new(m20261128_000027_notebook_handoffs::Migration),
            Box::new(m20261128_000028_run_as_user::Migration),
            Box::new(m20261128_000029_forecast_board::Migration),
            Box::new(m20261129_000030_queue_sharing::Migration),
            Box::new(m20261129_000031_usage_intervals::Migration),
            Box::new(m20261129_000032_fair_share_settings::Migration),
            Box::new(m20261129_000033_queue_budgets::Migration),
        ]
    }
}
