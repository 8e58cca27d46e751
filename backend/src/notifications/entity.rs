//! The `webhooks`, `webhook_deliveries` and `webhook_destinations` tables (migration 26).

/// One row of `webhooks`: a user's subscription.
pub mod webhook {
    use sea_orm::entity::prelude::*;

    /// A subscription.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "webhooks")]
    pub struct Model {
        /// Id.
        #[sea_orm(primary_key)]
        pub id: i64,
        /// Whose jobs it is told about.
        pub owner_id: i64,
        /// Where deliveries go.
        pub url: String,
        /// The HMAC key (hex).
        pub secret: String,
        /// What it is told about: a JSON array of words (`"started"`, …).
        pub events: String,
        /// The wait after which `waited` is sent.
        pub waited_seconds: Option<i64>,
        /// When it was made.
        pub created_at: DateTimeUtc,
    }

    /// None.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// One row of `webhook_deliveries`: the outbox.
pub mod delivery {
    use sea_orm::entity::prelude::*;

    /// A delivery to make, or made.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "webhook_deliveries")]
    pub struct Model {
        /// Id: the order of deliveries, per (subscription, job) and overall.
        #[sea_orm(primary_key)]
        pub id: i64,
        /// The subscription.
        pub webhook_id: i64,
        /// Its owner (a user reads their deliveries by it).
        pub owner_id: i64,
        /// The job.
        pub job_id: i64,
        /// What happened (`started`, …).
        pub event: String,
        /// When it happened.
        pub created_at: DateTimeUtc,
        /// Tries so far.
        pub attempts: i32,
        /// The next try after a failed one; `None` for a new delivery (due at once) and once
        /// delivered or given up.
        pub next_attempt_at: Option<DateTimeUtc>,
        /// When the receiver answered 2xx.
        pub delivered_at: Option<DateTimeUtc>,
        /// No more tries.
        pub given_up: bool,
        /// The last answer's status.
        pub last_status: Option<i32>,
        /// Why the last try failed.
        pub last_error: Option<String>,
    }

    /// None.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// The one row of `webhook_destinations`.
pub mod destinations {
    use sea_orm::entity::prelude::*;

    /// The admins' list of hosts.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "webhook_destinations")]
    pub struct Model {
        /// Always 1.
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i32,
        /// JSON array of host patterns.
        pub hosts: String,
    }

    /// None.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}
