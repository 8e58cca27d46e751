//! The submit handler's activations (`spec/prequeue.md` §4 step 9), in groups: one task takes
//! every admitted job waiting to be created at that moment and activates them together
//! ([`activation::activate_claimed_all`]): one call to the cluster (one transaction in the
//! simulated cluster) and one transaction for their `Pending` marks, instead of a create and a
//! transaction per job, each a turn of the single SQLite writer (see `docs/performance.md`).
//!
//! The task owns the activation, not the request: a client that hangs up after its admission
//! does not leave its job half-activated (the request only waits for the answer, up to its
//! timeout). A job whose group fails (a panic, the store down) stays `Activating`, which the
//! watcher's repair finishes, as it does after a crash.

use tokio::sync::{mpsc, oneshot};

use super::activation::{self, ActivationOutcome, ClusterTerms, Writer};
use super::entity::job;
use crate::cluster::Cluster;
use crate::cluster::clock::Clock;
use sea_orm::{DatabaseConnection, DbErr};

/// Most jobs activated together.
const MAX_GROUP: usize = 64;

type Answer = oneshot::Sender<Result<ActivationOutcome, DbErr>>;

/// The handle of the activation task; cheap to clone.
#[derive(Debug, Clone)]
pub struct Activator {
    queue: mpsc::Sender<(job::Model, ClusterTerms, Answer)>,
}

impl Activator {
    /// Starts the task. It ends when the last handle is dropped.
    pub fn start(
        db: DatabaseConnection,
        cluster: std::sync::Arc<dyn Cluster>,
        clock: std::sync::Arc<dyn Clock>,
    ) -> Activator {
        let (tx, rx) = mpsc::channel(4 * MAX_GROUP);
        tokio::spawn(run(db, cluster, clock, rx));
        Activator { queue: tx }
    }

    /// Activates the claimed (`Activating`) job `claimed` in the next group; its outcome.
    pub async fn activate(&self, claimed: job::Model, terms: ClusterTerms) -> Result<ActivationOutcome, DbErr> {
        let (answer, outcome) = oneshot::channel();
        let stopped = || DbErr::Custom("the activation task has stopped".into());
        self.queue.send((claimed, terms, answer)).await.map_err(|_| stopped())?;
        outcome.await.map_err(|_| stopped())?
    }
}

async fn run(
    db: DatabaseConnection,
    cluster: std::sync::Arc<dyn Cluster>,
    clock: std::sync::Arc<dyn Clock>,
    mut rx: mpsc::Receiver<(job::Model, ClusterTerms, Answer)>,
) {
    use futures::FutureExt;
    let mut waiting = Vec::with_capacity(MAX_GROUP);
    while rx.recv_many(&mut waiting, MAX_GROUP).await > 0 {
        // The settings of one moment are the same for every job; jobs admitted under other
        // settings go in a group of their own.
        while !waiting.is_empty() {
            let terms = waiting[0].1;
            let (group, rest): (Vec<_>, Vec<_>) = waiting.drain(..).partition(|(_, t, _)| *t == terms);
            waiting = rest;
            let claimed: Vec<job::Model> = group.iter().map(|(row, _, _)| row.clone()).collect();
            let w = Writer {
                db: &db,
                clock: clock.as_ref(),
                fence: None,
            };
            let activating = activation::activate_claimed_all(w, cluster.as_ref(), &claimed, terms);
            let outcomes = std::panic::AssertUnwindSafe(activating)
                .catch_unwind()
                .await
                .unwrap_or_else(|_| {
                    tracing::error!(
                        jobs = claimed.len(),
                        "activating a group of submitted jobs panicked; the watcher repairs them"
                    );
                    claimed
                        .iter()
                        .map(|_| Err(DbErr::Custom("activating the job failed".into())))
                        .collect()
                });
            for ((_, _, answer), outcome) in group.into_iter().zip(outcomes) {
                // No one waiting (the client hung up, or its request timed out) is fine.
                let _ = answer.send(outcome);
            }
        }
    }
}
