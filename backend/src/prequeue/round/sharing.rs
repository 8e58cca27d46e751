//! Sharing between queues (§9) in a round: the cluster's room beyond guarantees, checked for
//! every normal candidate with quotas on once some queue guarantees something, and counted for
//! every selection — the same [`SharingTree`] rules as a submission, so round and submission
//! agree. With no guarantee anywhere none of this exists and the round is what it was.

use super::{Cand, PreparedRound, State};
use crate::prequeue::queue_tree::{QueueIdx, QueueTree};
use crate::prequeue::sharing::{Assessment, ReclaimOutlook, SharedDemand, SharingState, SharingTree, reclaim_outlook};
use crate::prequeue::snapshot::Snapshot;

/// The round's sharing model: the tree's guarantees and each prequeued job's shared demand.
#[derive(Debug)]
pub(super) struct RoundSharing {
    pub(super) model: SharingTree,
    /// Per job of the snapshot (by index): its shared demand; empty for jobs not prequeued.
    demand: Vec<SharedDemand>,
    /// Per round queue: its index in the tree (`None`: a name only jobs use).
    tree_index: Vec<Option<QueueIdx>>,
    /// Per tree queue, when borrowers may be taken back for it: computed on the first
    /// `reclaiming` explanation of the round, once for all.
    outlook: std::sync::OnceLock<Vec<ReclaimOutlook>>,
}

impl RoundSharing {
    /// `None` with quotas off or nothing guaranteed. `queue_names` are the round's queues (the
    /// tree's first, in tree order).
    pub(super) fn new(snapshot: &Snapshot, tree: &QueueTree, queue_names: &[&str], quotas_on: bool) -> Option<Self> {
        if !quotas_on {
            return None;
        }
        let model = SharingTree::new(&snapshot.queues, tree, &snapshot.nodes)?;
        let demand = snapshot
            .jobs
            .iter()
            .map(|job| {
                if job.phase == anteroom_shared::scheduling::JobPhase::Prequeue {
                    model.demand(&job.resources)
                } else {
                    Vec::new()
                }
            })
            .collect();
        let tree_index = queue_names.iter().map(|name| tree.index_of(name)).collect();
        Some(RoundSharing {
            model,
            demand,
            tree_index,
            outlook: std::sync::OnceLock::new(),
        })
    }

    /// The state of the snapshot's usage rows.
    pub(super) fn initial(&self, snapshot: &Snapshot, tree: &QueueTree) -> SharingState {
        self.model.state(
            snapshot
                .usage
                .iter()
                .map(|row| (tree.index_of(&row.queue), &row.resources)),
        )
    }
}

impl PreparedRound<'_> {
    /// What admitting `cand` does to sharing, against the round's state; `None` when sharing
    /// does not apply to it (off, or a backfill job).
    pub(super) fn sharing_of(&self, cand: &Cand, st: &State) -> Option<Assessment> {
        let sharing = self.sharing.as_ref()?;
        let state = st.sharing.as_ref()?;
        if cand.backfill {
            return None;
        }
        let queue = sharing.tree_index[cand.queue as usize];
        Some(sharing.model.assess(state, queue, &sharing.demand[cand.job as usize]))
    }

    /// Counts a selected normal job in the sharing state.
    pub(super) fn apply_sharing(&self, cand: &Cand, st: &mut State) {
        let (Some(sharing), Some(state)) = (self.sharing.as_ref(), st.sharing.as_mut()) else {
            return;
        };
        let queue = sharing.tree_index[cand.queue as usize];
        sharing.model.add(state, queue, &sharing.demand[cand.job as usize], 1);
    }

    /// Whether `cand` would borrow (the FCFS walk serves jobs within their guarantee first).
    pub(super) fn would_borrow(&self, cand: &Cand, st: &State) -> bool {
        self.sharing_of(cand, st).is_some_and(|a| a.borrowing)
    }

    /// When borrowers may be taken back for `cand` (`None`: sharing does not apply).
    pub(super) fn reclaim_outlook(&self, cand: &Cand) -> Option<ReclaimOutlook> {
        let sharing = self.sharing.as_ref()?;
        let queue = sharing.tree_index[cand.queue as usize]?;
        let all = sharing.outlook.get_or_init(|| {
            // The tree the round was prepared with (`prepare.rs`), built the same way.
            let tree = QueueTree::new_lenient(&self.snapshot.queues);
            reclaim_outlook(self.snapshot, &tree, &sharing.model, self.now)
        });
        all.get(queue).copied()
    }

    /// The shared demand and tree queue of `cand`, for explanations.
    pub(super) fn shared_parts(&self, cand: &Cand) -> Option<(&SharingTree, Option<QueueIdx>, &SharedDemand)> {
        let sharing = self.sharing.as_ref()?;
        Some((
            &sharing.model,
            sharing.tree_index[cand.queue as usize],
            &sharing.demand[cand.job as usize],
        ))
    }
}
