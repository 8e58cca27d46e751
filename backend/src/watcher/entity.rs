//! The watcher's table: preemptions it executed (migration `000013`).

/// One row of `preemptions`: a victim, the job it made room for, and how far its removal got.
pub mod preemption {
    use sea_orm::entity::prelude::*;

    /// A preempted job.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "preemptions")]
    pub struct Model {
        /// The victim (a job id).
        #[sea_orm(primary_key, auto_increment = false)]
        pub victim_id: i64,
        /// The timed-out normal job the room is for.
        pub beneficiary_id: i64,
        /// The node the victim runs on.
        pub node: String,
        /// The pods' termination grace (the admin's `preemptionGracePeriodSeconds` then).
        pub grace_seconds: i64,
        /// When the plan was executed.
        pub created_at: DateTimeUtc,
        /// When the cluster accepted the delete; `None`: the next round issues it (again).
        pub deleted_at: Option<DateTimeUtc>,
        /// When the victim was seen gone from the cluster; `None`: still terminating, so its
        /// room stays reserved for the beneficiary.
        pub gone_at: Option<DateTimeUtc>,
        /// The victim goes back to the prequeue once its pods are gone (its `requeue`, within
        /// `maxRequeues`, decided when it was preempted).
        pub requeue: bool,
    }

    /// None: read by victim or in flight.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}
