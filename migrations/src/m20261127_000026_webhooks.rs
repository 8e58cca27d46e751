//! Notifications by webhook (issue 27).
//!
//! - `webhooks`: a user's subscriptions (URL, signing secret, events as a JSON array, the
//!   wait after which `waited` is sent).
//! - `webhook_deliveries`: the outbox. A row is written in the transaction that records what
//!   happened (the event, the status), so nothing is sent that did not happen and nothing that
//!   happened is lost with a crash; the sender marks it delivered, or retries it later.
//! - `webhook_destinations`: one row, the admins' list of hosts webhooks may point at.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::ConnectionTrait;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Webhooks {
    Table,
    Id,
    OwnerId,
    Url,
    Secret,
    Events,
    WaitedSeconds,
    CreatedAt,
}

#[derive(DeriveIden)]
enum WebhookDeliveries {
    Table,
    Id,
    WebhookId,
    OwnerId,
    JobId,
    Event,
    CreatedAt,
    Attempts,
    NextAttemptAt,
    DeliveredAt,
    GivenUp,
    LastStatus,
    LastError,
}

#[derive(DeriveIden)]
enum WebhookDestinations {
    Table,
    Id,
    Hosts,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Webhooks::Table)
                    .col(
                        ColumnDef::new(Webhooks::Id)
                            .big_integer()
                            .not_null()
                            .auto_increment()
                            .primary_key(),
                    )
                    .col(ColumnDef::new(Webhooks::OwnerId).big_integer().not_null())
                    .col(ColumnDef::new(Webhooks::Url).text().not_null())
                    .col(ColumnDef::new(Webhooks::Secret).text().not_null())
                    .col(ColumnDef::new(Webhooks::Events).text().not_null())
                    .col(ColumnDef::new(Webhooks::WaitedSeconds).big_integer().null())
                    .col(
                        ColumnDef::new(Webhooks::CreatedAt)
                            .timestamp_with_time_zone()
                            .not_null(),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("webhooks_by_owner")
                    .table(Webhooks::Table)
                    .col(Webhooks::OwnerId)
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(WebhookDeliveries::Table)
                    .col(
                        ColumnDef::new(WebhookDeliveries::Id)
                            .big_integer()
                            .not_null()
                            .auto_increment()
                            .primary_key(),
                    )
                    .col(ColumnDef::new(WebhookDeliveries::WebhookId).big_integer().not_null())
                    .col(ColumnDef::new(WebhookDeliveries::OwnerId).big_integer().not_null())
                    .col(ColumnDef::new(WebhookDeliveries::JobId).big_integer().not_null())
                    .col(ColumnDef::new(WebhookDeliveries::Event).string_len(16).not_null())
                    .col(
                        ColumnDef::new(WebhookDeliveries::CreatedAt)
                            .timestamp_with_time_zone()
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(WebhookDeliveries::Attempts)
                            .integer()
                            .not_null()
                            .default(0),
                    )
                    .col(
                        ColumnDef::new(WebhookDeliveries::NextAttemptAt)
                            .timestamp_with_time_zone()
                            .null(),
                    )
                    .col(
                        ColumnDef::new(WebhookDeliveries::DeliveredAt)
                            .timestamp_with_time_zone()
                            .null(),
                    )
                    .col(
                        ColumnDef::new(WebhookDeliveries::GivenUp)
                            .boolean()
                            .not_null()
                            .default(false),
                    )
                    .col(ColumnDef::new(WebhookDeliveries::LastStatus).integer().null())
                    .col(ColumnDef::new(WebhookDeliveries::LastError).text().null())
                    .to_owned(),
            )
            .await?;
        // The sender's scan: what is not delivered yet, oldest first.
        manager
            .create_index(
                Index::create()
                    .name("webhook_deliveries_due")
                    .table(WebhookDeliveries::Table)
                    .col(WebhookDeliveries::DeliveredAt)
                    .col(WebhookDeliveries::GivenUp)
                    .col(WebhookDeliveries::Id)
                    .to_owned(),
            )
            .await?;
        // In order per (subscription, job), and `waited` once per pair.
        manager
            .create_index(
                Index::create()
                    .name("webhook_deliveries_by_pair")
                    .table(WebhookDeliveries::Table)
                    .col(WebhookDeliveries::WebhookId)
                    .col(WebhookDeliveries::JobId)
                    .col(WebhookDeliveries::Id)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("webhook_deliveries_by_owner")
                    .table(WebhookDeliveries::Table)
                    .col(WebhookDeliveries::OwnerId)
                    .col(WebhookDeliveries::Id)
                    .to_owned(),
            )
            .await?;
        // `waited` once per (subscription, job), even from two senders at once (a lease
        // handover): inserts skip a pair that has one.
        manager
            .get_connection()
            .execute_unprepared(
                "CREATE UNIQUE INDEX webhook_deliveries_waited_once ON webhook_deliveries (webhook_id, job_id) \
                 WHERE event = 'waited'",
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(WebhookDestinations::Table)
                    .col(
                        ColumnDef::new(WebhookDestinations::Id)
                            .integer()
                            .not_null()
                            .primary_key(),
                    )
                    .col(ColumnDef::new(WebhookDestinations::Hosts).text().not_null())
                    .to_owned(),
            )
            .await?;
        manager
            .exec_stmt(
                Query::insert()
                    .into_table(WebhookDestinations::Table)
                    .columns([WebhookDestinations::Id, WebhookDestinations::Hosts])
                    .values_panic([1.into(), "[]".into()])
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in ["webhook_destinations", "webhook_deliveries", "webhooks"] {
            manager
                .drop_table(Table::drop().table(Alias::new(table)).to_owned())
                .await?;
        }
        Ok(())
    }
}
