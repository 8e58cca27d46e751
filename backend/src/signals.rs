//! In-process wake-ups: "the prequeue changed, run a full round" for the watcher, and "job
//! events were written" for the event streams. Both are hints only: the watcher also runs on
//! its ticker and the streams also poll the store, so a replica that misses a signal (another
//! replica wrote) catches up within a tick.

use std::sync::Arc;

use tokio::sync::{Notify, watch};

/// The wake-ups, cheap to clone.
#[derive(Clone, Debug)]
pub struct Signals {
    watcher: Arc<Notify>,
    events: Arc<Notify>,
    closing: Arc<watch::Sender<bool>>,
}

impl Default for Signals {
    fn default() -> Self {
        Signals {
            watcher: Arc::default(),
            events: Arc::default(),
            closing: Arc::new(watch::Sender::new(false)),
        }
    }
}

impl Signals {
    /// Asks the watcher for a full round (`spec/prequeue.md` §5: a job prequeued, deleted or
    /// finished, a quota or the config written, a node made schedulable). A signal sent while
    /// the watcher is busy is kept (one permit) and wakes its next wait.
    pub fn wake_watcher(&self) {
        self.watcher.notify_one();
    }

    /// What the watcher waits on.
    pub fn watcher(&self) -> &Notify {
        &self.watcher
    }

    /// Job events were committed: every open stream reads the store again now.
    pub fn events_written(&self) {
        self.events.notify_waiters();
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
