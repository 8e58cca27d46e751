//! Wake-ups between replicas on PostgreSQL, through `NOTIFY` and `LISTEN` on one channel.
//!
//! The store is the truth and the watcher's change log (`job_changes`, see
//! `watcher::job_view`) says what changed; what a replica lacked was being *told* that
//! something did. A job prequeued, deleted or ended through a replica that does not hold the
//! watcher's lease woke only its own idle watcher, and the leader saw the change at its next
//! tick (`activateTickerIntervalSeconds`, up to an hour); an event stream open on another
//! replica saw new events at its next poll. Now every replica publishes its wake-ups and hears
//! the others':
//!
//! - **publishing**: each [`Signals::wake_watcher`], [`Signals::events_written`] or
//!   [`Signals::settings_written`] raised here sets a flag; one task sends what is flagged in
//!   one `pg_notify` and then waits [`MIN_GAP`], so a flood of submissions costs at most one
//!   notification per gap;
//! - **hearing**: one connection (outside the pool) listens; a notification from another
//!   replica re-reads the prequeue settings (before anything else it asks, so the round it
//!   wakes decides under them), wakes the watcher or the streams here, without publishing
//!   it again. When that connection is lost and made again (sqlx re-listens), or first made,
//!   notifications may have been missed meanwhile: everything is read again and woken, and
//!   the round reads the change log, which misses nothing.
//!
//! A notification is a hint, never the state: one lost (a replica killed between its commit
//! and its `pg_notify`) costs a wait until the leader's next tick (`activateTickerIntervalSeconds`),
//! as before. One that could not be sent is sent again with the next; a replica shutting down
//! sends what it raised while its last requests drained ([`Replicas::finish`]).

use std::time::Duration;

use sea_orm::sqlx::postgres::PgListener;
use std::sync::Arc;

use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, Statement};

use super::{Raised, Signals};
use crate::settings::Settings;

/// The channel every replica listens on.
pub const CHANNEL: &str = "anteroom_signals";

/// The shortest time between two notifications a replica sends: wake-ups raised meanwhile go
/// out together in the next one.
pub const MIN_GAP: Duration = Duration::from_millis(5);

/// How long to wait before trying again after the listening connection could not be made.
const RETRY: Duration = Duration::from_secs(1);

/// What the hearing side needs besides the signals: the settings to read again, from `db`.
#[derive(Clone)]
struct Hearing {
    url: String,
    db: DatabaseConnection,
    signals: Signals,
    settings: Arc<Settings>,
    me: String,
}

/// The running publisher, to be finished when the server has stopped serving.
#[derive(Debug)]
pub struct Replicas {
    stop: Arc<tokio::sync::Notify>,
    publisher: tokio::task::JoinHandle<()>,
}

impl Replicas {
    /// Sends what was raised while the server drained its last requests, then stops (at most
    /// a few seconds: the store may be gone).
    pub async fn finish(self) {
        self.stop.notify_one();
        if tokio::time::timeout(Duration::from_secs(5), self.publisher)
            .await
            .is_err()
        {
            tracing::warn!("the last wake-ups for the other replicas were not sent within 5 s");
        }
    }
}

/// Starts publishing this replica's wake-ups and hearing the others' (PostgreSQL only, `None`
/// on SQLite, whose store has one process). `url` is the database's, for the listening
/// connection; `db` sends and reads. Hearing ends when the server closes; publishing when
/// [`Replicas::finish`] is called, after the last request.
pub fn start(url: &str, db: &DatabaseConnection, signals: &Signals, settings: &Arc<Settings>) -> Option<Replicas> {
    if db.get_database_backend() != DbBackend::Postgres {
        return None;
    }
    // Who sent a notification: this process's own come back to it, and are dropped.
    let me = format!("{:016x}", rand::random::<u64>());
    let stop = Arc::new(tokio::sync::Notify::new());
    let publisher = tokio::spawn(publish(db.clone(), signals.clone(), me.clone(), stop.clone()));
    tokio::spawn(hear(Hearing {
        url: url.to_owned(),
        db: db.clone(),
        signals: signals.clone(),
        settings: settings.clone(),
        me,
    }));
    Some(Replicas { stop, publisher })
}

/// What one notification says: its sender, then `w` (wake the watcher), `e` (events were
/// written), `s` (the settings were written) and `f` (a forecast board was written), each when
/// raised.
fn payload(me: &str, raised: Raised) -> String {
    let mut p = format!("{me}:");
    for (on, letter) in [
        (raised.watcher, 'w'),
        (raised.events, 'e'),
        (raised.settings, 's'),
        (raised.forecast, 'f'),
    ] {
        if on {
            p.push(letter);
        }
    }
    p
}

/// What a notification asks of this replica; nothing when it came from `me` or is not one of
/// ours.
fn heard(me: &str, payload: &str) -> Raised {
    match payload.split_once(':') {
        Some((sender, what)) if sender != me => Raised {
            watcher: what.contains('w'),
            events: what.contains('e'),
            settings: what.contains('s'),
            forecast: what.contains('f'),
        },
        _ => Raised::default(),
    }
}

/// Does here what `raised` asks: the settings first, so a round woken decides under them.
async fn act_on(h: &Hearing, raised: Raised) {
    if raised.settings
        && let Err(e) = h.settings.refresh(&h.db).await
    {
        tracing::warn!(error = %e, "reading the settings another replica wrote failed; they arrive with the next refresh");
    }
    if raised.watcher {
        h.signals.wake_watcher_here();
    }
    if raised.events {
        h.signals.events_written_here();
    }
    if raised.forecast {
        h.signals.forecast_written_here();
    }
}

/// Everything, for when notifications may have been missed.
const ALL: Raised = Raised {
    watcher: true,
    events: true,
    settings: true,
    forecast: true,
};

async fn publish(db: DatabaseConnection, signals: Signals, me: String, stop: Arc<tokio::sync::Notify>) {
    let send = |raised: Raised| {
        let notify = Statement::from_sql_and_values(
            DbBackend::Postgres,
            "SELECT pg_notify($1, $2)",
            [CHANNEL.into(), payload(&me, raised).into()],
        );
        let db = db.clone();
        async move { db.execute_raw(notify).await }
    };
    let mut failing = false;
    loop {
        let raised = tokio::select! {
            raised = signals.raised() => raised,
            () = stop.notified() => {
                let last = signals.take_raised();
                if last != Raised::default() {
                    let _ = send(last).await;
                }
                return;
            }
        };
        match send(raised).await {
            Ok(_) if failing => {
                failing = false;
                tracing::info!("wake-ups reach the other replicas again");
            }
            Ok(_) => {}
            Err(e) => {
                // Sent with the next attempt; logged once per outage (the store being down
                // is reported by everything else).
                signals.raise_again(raised);
                if !failing {
                    tracing::warn!(error = %e, "telling the other replicas of a wake-up failed; trying again");
                }
                failing = true;
            }
        }
        tokio::time::sleep(if failing { RETRY } else { MIN_GAP }).await;
    }
}

async fn hear(h: Hearing) {
    let signals = &h.signals;
    // Logged once per outage, not at every retry.
    let mut failing = false;
    loop {
        let listening = async {
            let mut listener = PgListener::connect(&h.url).await?;
            listener.listen(CHANNEL).await?;
            Ok::<_, sea_orm::sqlx::Error>(listener)
        };
        let mut listener = tokio::select! {
            made = listening => match made {
                Ok(l) => l,
                Err(e) => {
                    if !failing {
                        tracing::warn!(error = %e, "listening for the other replicas' wake-ups failed; trying again every second");
                    }
                    failing = true;
                    tokio::select! {
                        () = tokio::time::sleep(RETRY) => continue,
                        () = signals.closed() => return,
                    }
                }
            },
            () = signals.closed() => return,
        };
        if failing {
            tracing::info!("listening for the other replicas' wake-ups again");
            failing = false;
        }
        // Whatever was sent before this connection listened is lost: catch up.
        act_on(&h, ALL).await;
        loop {
            let next = tokio::select! {
                next = listener.try_recv() => next,
                () = signals.closed() => return,
            };
            match next {
                Ok(Some(notification)) => act_on(&h, heard(&h.me, notification.payload())).await,
                // The connection was lost and made again (listening again): catch up.
                Ok(None) => act_on(&h, ALL).await,
                Err(e) => {
                    tracing::warn!(error = %e, "the connection hearing the other replicas failed; connecting again");
                    break;
                }
            }
        }
        tokio::select! {
            () = tokio::time::sleep(RETRY) => {}
            () = signals.closed() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replica_hears_what_others_send_and_drops_its_own() {
        let only = |watcher, events, settings, forecast| Raised {
            watcher,
            events,
            settings,
            forecast,
        };
        for raised in [
            only(true, false, false, false),
            only(false, true, false, false),
            only(false, false, true, false),
            only(false, false, false, true),
            only(true, true, true, true),
        ] {
            let sent = payload("aaaa", raised);
            assert_eq!(heard("bbbb", &sent), raised, "{sent}");
            assert_eq!(heard("aaaa", &sent), Raised::default(), "{sent}");
        }
        assert_eq!(heard("bbbb", "something else"), Raised::default());
    }
}
