//! Wake-ups: "the prequeue changed, run a full round" for the watcher, and "job events were
//! written" for the event streams. Both are hints only: the watcher also runs on its ticker and
//! the streams also poll the store. In one process they are a [`Notify`]; on PostgreSQL every
//! replica also publishes its wake-ups to the others and hears theirs ([`replicas`]), so a
//! job submitted or ended through one replica wakes the leader's watcher, wherever it runs, at
//! once instead of at its next tick.

pub mod replicas;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::{Notify, watch};

/// The wake-ups, cheap to clone.
#[derive(Clone, Debug)]
pub struct Signals {
    watcher: Arc<Notify>,
    events: Arc<Notify>,
    forecast: Arc<Notify>,
    closing: Arc<watch::Sender<bool>>,
    outgoing: Arc<Outgoing>,
}

/// Wake-ups raised here that the other replicas have not been told of yet ([`replicas`]
/// sends them; without other replicas nobody reads them, and setting a flag costs nothing).
#[derive(Debug, Default)]
struct Outgoing {
    watcher: AtomicBool,
    events: AtomicBool,
    settings: AtomicBool,
    forecast: AtomicBool,
    raised: Notify,
}

/// What a replica tells the others: which wake-ups were raised.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Raised {
    /// [`Signals::wake_watcher`].
    pub watcher: bool,
    /// [`Signals::events_written`].
    pub events: bool,
    /// [`Signals::settings_written`].
    pub settings: bool,
    /// [`Signals::forecast_written`].
    pub forecast: bool,
}

impl Default for Signals {
    fn default() -> Self {
        Signals {
            watcher: Arc::default(),
            events: Arc::default(),
            forecast: Arc::default(),
            closing: Arc::new(watch::Sender::new(false)),
            outgoing: Arc::default(),
        }
    }
}

impl Signals {
    /// Asks the watcher for a full round (`spec/prequeue.md` §5: a job prequeued, deleted or
    /// finished, a quota or the config written, a node made schedulable), here and on every
    /// other replica (only the leader's runs one). A signal sent while the watcher is busy is
    /// kept (one permit) and wakes its next wait.
    pub fn wake_watcher(&self) {
        self.wake_watcher_here();
        self.outgoing.watcher.store(true, Ordering::Release);
        self.outgoing.raised.notify_one();
    }

    /// [`Signals::wake_watcher`] in this process only: for a wake-up heard from another
    /// replica, which must not be sent back.
    pub fn wake_watcher_here(&self) {
        self.watcher.notify_one();
    }

    /// What the watcher waits on.
    pub fn watcher(&self) -> &Notify {
        &self.watcher
    }

    /// Job events were committed: every open stream reads the store again now.
    pub fn events_written(&self) {
        self.events_written_here();
        self.outgoing.events.store(true, Ordering::Release);
        self.outgoing.raised.notify_one();
    }

    /// [`Signals::events_written`] in this process only (heard from another replica).
    pub fn events_written_here(&self) {
        self.events.notify_waiters();
    }

    /// The prequeue settings were written here (this replica already holds them): the other
    /// replicas read them again at once instead of at their next refresh. Only they hear it.
    pub fn settings_written(&self) {
        self.outgoing.settings.store(true, Ordering::Release);
        self.outgoing.raised.notify_one();
    }

    /// The leader wrote a new forecast board (`crate::forecasts`): readers waiting for a job's
    /// standing read it again, here and on every other replica.
    pub fn forecast_written(&self) {
        self.forecast_written_here();
        self.outgoing.forecast.store(true, Ordering::Release);
        self.outgoing.raised.notify_one();
    }

    /// [`Signals::forecast_written`] in this process only (heard from another replica).
    pub fn forecast_written_here(&self) {
        self.forecast.notify_waiters();
    }

    /// What readers waiting for a new forecast board wait on (register with
    /// `Notified::enable` before reading the store).
    pub fn forecast(&self) -> &Notify {
        &self.forecast
    }

    /// Waits until a wake-up was raised here since the last call, then answers which, and
    /// clears them: what [`replicas`] publishes.
    async fn raised(&self) -> Raised {
        loop {
            let raised = self.take_raised();
            if raised != Raised::default() {
                return raised;
            }
            self.outgoing.raised.notified().await;
        }
    }

    /// The wake-ups raised since the last call (none, without waiting), cleared.
    fn take_raised(&self) -> Raised {
        Raised {
            watcher: self.outgoing.watcher.swap(false, Ordering::AcqRel),
            events: self.outgoing.events.swap(false, Ordering::AcqRel),
            settings: self.outgoing.settings.swap(false, Ordering::AcqRel),
            forecast: self.outgoing.forecast.swap(false, Ordering::AcqRel),
        }
    }

    /// Raises `raised` again for the other replicas (their sending failed).
    fn raise_again(&self, raised: Raised) {
        let again = [
            (raised.watcher, &self.outgoing.watcher),
            (raised.events, &self.outgoing.events),
            (raised.settings, &self.outgoing.settings),
            (raised.forecast, &self.outgoing.forecast),
        ];
        for (on, flag) in again {
            if on {
                flag.store(true, Ordering::Release);
            }
        }
        self.outgoing.raised.notify_one();
    }

    /// What the event streams wait on (register with `Notified::enable` before reading, so a
    /// commit between the read and the wait is not missed).
    pub fn events(&self) -> &Notify {
        &self.events
    }

    /// The server is shutting down: long-lived answers (event streams) end, so the graceful
    /// shutdown does not wait for them for ever.
    pub fn close(&self) {
        self.closing.send_replace(true);
    }

    /// True once [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        *self.closing.borrow()
    }

    /// Resolves once [`close`](Self::close) was called (at once if it already was).
    pub async fn closed(&self) {
        let mut rx = self.closing.subscribe();
        let _ = rx.wait_for(|closing| *closing).await;
    }
}
