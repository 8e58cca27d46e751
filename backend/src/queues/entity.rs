//! The `queues` and `queue_members` tables.

/// One row of `queues`.
pub mod queue {
    use sea_orm::entity::prelude::*;

    /// A queue of the tree.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "queues")]
    pub struct Model {
        /// Volcano queue name.
        #[sea_orm(primary_key, auto_increment = false)]
        pub name: String,
        /// Name shown in the UI.
        pub display_name: String,
        /// Open to every user.
        pub open: bool,
        /// Parent queue.
        pub parent: Option<String>,
        /// Aggregate capacity (JSON map of quantity strings).
        pub capacity: Option<String>,
        /// The runtime limit of its jobs that name none; NULL: none.
        pub default_runtime_seconds: Option<i64>,
        /// The largest runtime limit a job of the queue may ask for; NULL: any.
        pub max_runtime_seconds: Option<i64>,
        /// The user id its jobs run as, never root; NULL: as each image says, root included.
        pub run_as_user: Option<i64>,
        /// Guarantee, lending limit, weight and per-job rules (JSON of
        /// `anteroom_shared::scheduling::QueueSharing`); NULL: the defaults, which share nothing.
        pub sharing: Option<String>,
        /// Its budget (JSON of `anteroom_shared::scheduling::QueueBudget`); NULL: none (§10).
        pub budget: Option<String>,
        /// While its budget is spent and holds its normal jobs: JSON of
        /// `anteroom_shared::scheduling::BudgetHold`, written when budgets are measured (by the
        /// watcher, and by a budget's write) — not a change of the queue's definition: its
        /// `updated_at`, and so its `ETag`, stay; NULL: no hold.
        pub budget_hold: Option<String>,
        /// Created.
        pub created_at: DateTimeUtc,
        /// Last change.
        pub updated_at: DateTimeUtc,
    }

    /// Members are read by queue name.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// One row of `queue_members`: a user allowed into a queue that is not open.
pub mod member {
    use sea_orm::entity::prelude::*;

    /// A membership.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "queue_members")]
    pub struct Model {
        /// The queue.
        #[sea_orm(primary_key, auto_increment = false)]
        pub queue: String,
        /// The user.
        #[sea_orm(primary_key, auto_increment = false)]
        pub user_id: i64,
    }

    /// None.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}
