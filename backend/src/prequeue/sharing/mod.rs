//! Sharing between queues (`spec/prequeue.md` §9): guarantees, lending and borrowing on the
//! queue tree, as exact milli-unit arithmetic on dense per-(queue, resource) vectors.
//!
//! **The model.** Only resources some queue guarantees take part (usually accelerators); for
//! them every queue has an *effective guarantee*: what it names, or, when it names none, the
//! sum of its children's (a grouping queue neither adds nor removes entitlement). The cluster
//! is the root of the forest: its *pool* is the allocatable total of ready, schedulable nodes.
//!
//! Each queue *holds* room at its parent: `hold(q) = max(Σ hold(children) + own jobs, keep(q))`
//! where `keep(q) = guarantee − lendingLimit` (clamped at zero) is the part of its guarantee it
//! never lends. So a queue using less than its guarantee lends the difference (up to its
//! lending limit) and a queue using more borrows it; the roots' holds must fit the pool. With a
//! lending limit absent everywhere, `hold` is plain usage and the rule is "normal jobs fit the
//! cluster". A job **borrows** when, with it admitted, some queue on its path uses more than
//! its effective guarantee on a resource the job asks for; it is **owed** room when it would
//! stay within the guarantee at every level: if the pool is short then, borrowers are
//! reclaimed for it.
//!
//! Usage is counted in guarantee first at every level: a queue's usage is one number per
//! resource, compared with its guarantee, whichever job came first.
//!
//! With no guarantee anywhere, [`SharingTree::new`] answers `None` and every caller decides
//! exactly as before sharing existed.

pub mod priority;
mod reclaim;
#[cfg(test)]
mod tests;

pub use reclaim::{
    GangTasks, MAX_EXAMINED_PER_ROUND, ReclaimOutlook, ReclaimPlan, TakeKind, plan_reclaims, reclaim_outlook,
};

use anteroom_shared::scheduling::{Quantity, QuantityFormat, ResourceList};

use super::queue_tree::{QueueIdx, QueueTree};
use super::reason::ResourceCheck;
use super::snapshot::{NodeSnapshot, QueueSpec};

/// The guarantees of a tree, indexed for repeated checks (one per snapshot).
#[derive(Debug, Clone)]
pub struct SharingTree {
    /// The shared resources: those some guarantee names, sorted.
    resources: Vec<String>,
    /// Queues of the tree (queues beyond are unknown names: roots guaranteeing nothing).
    queues: usize,
    parents: Vec<Option<QueueIdx>>,
    /// Per queue: itself, then each ancestor.
    paths: Vec<Vec<QueueIdx>>,
    /// Queues deepest first: children before parents.
    bottom_up: Vec<QueueIdx>,
    /// Per queue: its children.
    children: Vec<Vec<QueueIdx>>,
    /// Per queue × resource: the effective guarantee.
    guarantee: Vec<i128>,
    /// Per queue × resource: guarantee − lending limit (≥ 0), never lent.
    keep: Vec<i128>,
    /// Per resource: the cluster's allocatable total on ready, schedulable nodes.
    pool: Vec<i128>,
    /// Per queue: its weight (≥ 1).
    weights: Vec<u32>,
    /// Per queue: `reclaimMinRuntimeSeconds`.
    min_runtime: Vec<i64>,
}

/// What all normal jobs hold, per queue and resource; grows with admissions and shrinks with
/// reclaims, always consistent with [`SharingTree`]'s rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharingState {
    /// Per queue × resource: occupying normal jobs of the queue itself.
    own: Vec<i128>,
    /// Per queue × resource: the queue and everything below it.
    used: Vec<i128>,
    /// Per queue × resource: Σ holds of its children.
    children_hold: Vec<i128>,
    /// Per queue × resource: what it holds at its parent.
    hold: Vec<i128>,
    /// Per resource: Σ holds of roots and unknown queues' jobs.
    total: Vec<i128>,
}

/// The shared part of one request: (resource column, milli) for its non-zero shared resources.
pub type SharedDemand = Vec<(usize, i128)>;

/// One level of a path that a job borrows at: the queue (`None`: an unknown queue, a root
/// guaranteeing nothing) and (column, milli) beyond its guarantee.
pub type LevelBorrowing = (Option<QueueIdx>, Vec<(usize, i128)>);

/// What admitting one request would do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assessment {
    /// Some queue on the path would use more than its guarantee on a resource the job asks for.
    pub borrowing: bool,
    /// The pool has room for it (every root's hold fits the cluster).
    pub fits: bool,
    /// Per resource column: how far the pool is short (0 where it fits).
    pub shortfall: Vec<i128>,
}

impl Assessment {
    /// Within its guarantee at every level: the room it lacks is owed to it and may be reclaimed.
    pub fn owed(&self) -> bool {
        !self.borrowing
    }
}

/// One queue's guarantee and what it borrows or lends now (resource summary, queue pages).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueSharingUse {
    /// Effective guarantee per shared resource.
    pub guarantee: ResourceList,
    /// Usage beyond the guarantee.
    pub borrowed: ResourceList,
    /// Unused guarantee others may use now (up to the lending limit): what it lends.
    pub lent: ResourceList,
}

impl SharingTree {
    /// Indexes the guarantees of `specs` (through its lenient `tree`) against the cluster's
    /// `nodes`; `None` when no queue guarantees anything, so callers skip sharing entirely.
    pub fn new(specs: &[QueueSpec], tree: &QueueTree, nodes: &[NodeSnapshot]) -> Option<Self> {
        let model = Self::build(specs, tree, nodes);
        (!model.resources.is_empty()).then_some(model)
    }

    /// The model whether or not anything is guaranteed: without a guarantee it has no shared
    /// resource, so nothing borrows, everything fits and no job is a reclaim victim — what
    /// preemption inside a queue (by priority) builds on when queues do not share.
    pub fn build(specs: &[QueueSpec], tree: &QueueTree, nodes: &[NodeSnapshot]) -> Self {
        // First definition of each name, in tree order (the lenient tree's rule).
        let mut spec_of: Vec<Option<&QueueSpec>> = vec![None; tree.len()];
        for spec in specs {
            if let Some(q) = tree.index_of(&spec.name)
                && spec_of[q].is_none()
            {
                spec_of[q] = Some(spec);
            }
        }
        let mut resources: Vec<String> = spec_of
            .iter()
            .flatten()
            .flat_map(|s| s.sharing.guarantee.iter().flat_map(|g| g.iter()))
            .filter(|(_, v)| v.milli() > 0)
            .map(|(name, _)| name.to_owned())
            .collect();
        resources.sort();
        resources.dedup();
        let r_count = resources.len();
        let queues = tree.len();
        let parents: Vec<Option<QueueIdx>> = (0..queues).map(|q| tree.parent(q)).collect();
        let paths: Vec<Vec<QueueIdx>> = (0..queues).map(|q| tree.path(q).to_vec()).collect();
        let mut children: Vec<Vec<QueueIdx>> = vec![Vec::new(); queues];
        for (q, parent) in parents.iter().enumerate() {
            if let Some(p) = parent {
                children[*p].push(q);
            }
        }
        let mut bottom_up: Vec<QueueIdx> = (0..queues).collect();
        bottom_up.sort_by_key(|&q| std::cmp::Reverse(paths[q].len()));

        let named = |q: QueueIdx, field: fn(&QueueSpec) -> Option<&ResourceList>, r: usize| {
            spec_of[q].and_then(field).and_then(|l| l.get_named(&resources[r]))
        };
        let mut guarantee = vec![0_i128; queues * r_count];
        for &q in &bottom_up {
            for r in 0..r_count {
                let value = match named(q, |s| s.sharing.guarantee.as_ref(), r) {
                    Some(v) => v.milli().max(0),
                    None => (0..queues)
                        .filter(|&c| parents[c] == Some(q))
                        .fold(0_i128, |sum, c| sum.saturating_add(guarantee[c * r_count + r])),
                };
                guarantee[q * r_count + r] = value;
            }
        }
        let mut keep = vec![0_i128; queues * r_count];
        for q in 0..queues {
            for r in 0..r_count {
                if let Some(limit) = named(q, |s| s.sharing.lending_limit.as_ref(), r) {
                    keep[q * r_count + r] = (guarantee[q * r_count + r] - limit.milli().max(0)).max(0);
                }
            }
        }
        let mut pool = vec![0_i128; r_count];
        for node in nodes.iter().filter(|n| n.ready && n.schedulable) {
            for (r, name) in resources.iter().enumerate() {
                pool[r] = pool[r].saturating_add(node.allocatable.get(name).milli().max(0));
            }
        }
        SharingTree {
            weights: (0..queues)
                .map(|q| spec_of[q].map_or(1, |s| s.sharing.weight.max(1)))
                .collect(),
            min_runtime: (0..queues)
                .map(|q| spec_of[q].map_or(0, |s| s.sharing.reclaim_min_runtime_seconds.max(0)))
                .collect(),
            resources,
            queues,
            parents,
            paths,
            bottom_up,
            children,
            guarantee,
            keep,
            pool,
        }
    }

    /// How long a job of `queue` runs before a higher-priority job of the same queue may take
    /// its place (the queue's own `reclaimMinRuntimeSeconds`).
    pub fn own_min_runtime(&self, queue: QueueIdx) -> i64 {
        self.min_runtime.get(queue).copied().unwrap_or(0)
    }

    /// The shared resources, in column order.
    pub fn resources(&self) -> &[String] {
        &self.resources
    }

    /// The cluster's pool per column.
    pub fn pool(&self) -> &[i128] {
        &self.pool
    }

    /// A queue's weight (1 for an unknown queue).
    pub fn weight(&self, queue: Option<QueueIdx>) -> u32 {
        queue.and_then(|q| self.weights.get(q).copied()).unwrap_or(1)
    }

    /// How long a job borrowing from `lender`'s subtree runs before it may be reclaimed for
    /// it: the largest `reclaimMinRuntimeSeconds` on the lender's path.
    pub fn reclaim_min_runtime(&self, lender: Option<QueueIdx>) -> i64 {
        lender.filter(|&q| q < self.queues).map_or(0, |q| {
            self.paths[q].iter().map(|&a| self.min_runtime[a]).max().unwrap_or(0)
        })
    }

    /// The shared part of a request.
    pub fn demand(&self, request: &ResourceList) -> SharedDemand {
        self.resources
            .iter()
            .enumerate()
            .filter_map(|(r, name)| {
                let v = request.get(name).milli();
                (v > 0).then_some((r, v))
            })
            .collect()
    }

    /// An empty state (nothing runs).
    pub fn empty_state(&self) -> SharingState {
        let cells = self.queues * self.resources.len();
        let mut state = SharingState {
            own: vec![0; cells],
            used: vec![0; cells],
            children_hold: vec![0; cells],
            hold: vec![0; cells],
            total: vec![0; self.resources.len()],
        };
        self.recompute(&mut state);
        state
    }

    /// The state of the given usage: `(queue, request)` of every occupying normal job (or
    /// usage row); `None` for a queue the tree does not know.
    pub fn state<'a, I>(&self, usage: I) -> SharingState
    where
        I: IntoIterator<Item = (Option<QueueIdx>, &'a ResourceList)>,
    {
        let r_count = self.resources.len();
        let mut state = self.empty_state();
        // Unknown queues' jobs hold room at the cluster directly.
        let mut unknown = vec![0_i128; r_count];
        for (queue, request) in usage {
            for (r, v) in self.demand(request) {
                match queue.filter(|&q| q < self.queues) {
                    Some(q) => state.own[q * r_count + r] = state.own[q * r_count + r].saturating_add(v),
                    None => unknown[r] = unknown[r].saturating_add(v),
                }
            }
        }
        self.recompute(&mut state);
        for (t, u) in state.total.iter_mut().zip(unknown) {
            *t = t.saturating_add(u);
        }
        state
    }

    /// Recomputes every derived sum from `own`, children before parents.
    fn recompute(&self, state: &mut SharingState) {
        let r_count = self.resources.len();
        state.used.copy_from_slice(&state.own);
        state.children_hold.iter_mut().for_each(|v| *v = 0);
        state.total.iter_mut().for_each(|v| *v = 0);
        for &q in &self.bottom_up {
            for r in 0..r_count {
                let i = q * r_count + r;
                let hold = state.children_hold[i].saturating_add(state.own[i]).max(self.keep[i]);
                state.hold[i] = hold;
                match self.parents[q] {
                    Some(p) => {
                        let pi = p * r_count + r;
                        state.children_hold[pi] = state.children_hold[pi].saturating_add(hold);
                        state.used[pi] = state.used[pi].saturating_add(state.used[i]);
                    }
                    None => state.total[r] = state.total[r].saturating_add(hold),
                }
            }
        }
    }

    /// What admitting `demand` into `queue` would do, without changing `state`.
    pub fn assess(&self, state: &SharingState, queue: Option<QueueIdx>, demand: &SharedDemand) -> Assessment {
        let r_count = self.resources.len();
        let mut borrowing = false;
        let mut shortfall = vec![0_i128; r_count];
        let mut fits = true;
        for &(r, v) in demand {
            let root_delta = match queue.filter(|&q| q < self.queues) {
                Some(q) => {
                    if self.beyond_guarantee(state, q, r, v).iter().any(|(_, over)| *over > 0) {
                        borrowing = true;
                    }
                    self.hold_delta_at_root(state, q, r, v)
                }
                None => {
                    borrowing = true;
                    v
                }
            };
            let after = state.total[r].saturating_add(root_delta);
            if root_delta > 0 && after > self.pool[r] {
                fits = false;
                // All the excess must go for it to fit, an overcommit already there included.
                shortfall[r] = after - self.pool[r];
            }
        }
        Assessment {
            borrowing,
            fits,
            shortfall,
        }
    }

    /// Per level of `queue`'s path: how much of a job's `v` of column `r` lies beyond that
    /// level's guarantee. At its own queue, the queue's own jobs (this one included) have the
    /// part of the guarantee no sub-queue is guaranteed; room a sub-queue is guaranteed but does
    /// not use is lent, to its own parent's jobs as to anyone. Above, what counts against a
    /// level is the job's branch (up to its guarantee), what every other child holds up to *its*
    /// guarantee, and the level's own jobs up to its own part: a sibling's borrowing is the
    /// sibling's, never charged to a job within its own guarantee.
    fn beyond_guarantee(&self, state: &SharingState, queue: QueueIdx, r: usize, v: i128) -> Vec<(QueueIdx, i128)> {
        let r_count = self.resources.len();
        let entitled = |c: QueueIdx| {
            let i = c * r_count + r;
            state.hold[i].min(self.guarantee[i])
        };
        // The part of a level's guarantee none of its children is guaranteed.
        let unallocated = |a: QueueIdx| {
            let given: i128 = self.children[a]
                .iter()
                .map(|&c| self.guarantee[c * r_count + r])
                .fold(0_i128, i128::saturating_add);
            (self.guarantee[a * r_count + r] - given).max(0)
        };
        let mut out = Vec::with_capacity(self.paths[queue].len());
        let mut below: Option<(QueueIdx, i128)> = None;
        for &a in &self.paths[queue] {
            let i = a * r_count + r;
            let g = self.guarantee[i];
            let others: i128 = self.children[a]
                .iter()
                .filter(|&&c| below.is_none_or(|(b, _)| b != c))
                .map(|&c| entitled(c))
                .fold(0_i128, i128::saturating_add);
            let (over, held) = match below {
                None => {
                    let own = state.own[i].saturating_add(v);
                    let part = unallocated(a);
                    let over = (own - part).clamp(0, v);
                    (over, others.saturating_add(own.min(part)).max(self.keep[i]))
                }
                Some((_, branch)) => {
                    let held = branch
                        .saturating_add(others)
                        .saturating_add(state.own[i].min(unallocated(a)))
                        .max(self.keep[i]);
                    ((held - g).clamp(0, v), held)
                }
            };
            out.push((a, over));
            below = Some((a, held.min(g)));
        }
        out
    }

    /// Walks `queue`'s path as its own usage of column `r` changes by `delta`: `visit(level,
    /// hold after, change of hold)` for each level whose hold changes (a level whose hold does
    /// not change stops the walk: nothing above it changes). Answers the change at the root.
    ///
    /// A queue is within its guarantee at a level when what its subtree *holds* there — its
    /// usage, and what children keep of their guarantees — fits the level's guarantee: a
    /// parent's own job does not fit room a child keeps.
    fn walk_holds(
        &self,
        state: &SharingState,
        queue: QueueIdx,
        r: usize,
        delta: i128,
        mut visit: impl FnMut(QueueIdx, i128, i128),
    ) -> i128 {
        let r_count = self.resources.len();
        let mut change = delta;
        let mut below = None::<i128>;
        for &a in &self.paths[queue] {
            let i = a * r_count + r;
            let (own, children) = match below {
                None => (state.own[i].saturating_add(change), state.children_hold[i]),
                Some(d) => (state.own[i], state.children_hold[i].saturating_add(d)),
            };
            let hold = children.saturating_add(own).max(self.keep[i]);
            change = hold - state.hold[i];
            if change == 0 {
                return 0;
            }
            visit(a, hold, change);
            below = Some(change);
        }
        change
    }

    /// How much the roots' holds grow when `queue`'s own usage of column `r` changes by `delta`.
    fn hold_delta_at_root(&self, state: &SharingState, queue: QueueIdx, r: usize, delta: i128) -> i128 {
        self.walk_holds(state, queue, r, delta, |_, _, _| {})
    }

    /// Per column: how much the cluster's held room shrinks when a job of `queue` asking
    /// `demand` is released alone (less than its demand where what a lending limit keeps
    /// absorbs it).
    pub fn release_gain(&self, state: &SharingState, queue: Option<QueueIdx>, demand: &SharedDemand) -> Vec<i128> {
        let mut gain = vec![0_i128; self.resources.len()];
        for &(r, v) in demand {
            gain[r] = match queue.filter(|&q| q < self.queues) {
                Some(q) => -self.hold_delta_at_root(state, q, r, -v),
                None => v,
            };
        }
        gain
    }

    /// Whether `queue` is `ancestor` or lies below it.
    pub fn is_within(&self, queue: Option<QueueIdx>, ancestor: Option<QueueIdx>) -> bool {
        match (queue, ancestor) {
            (Some(q), Some(a)) if q < self.queues => self.paths[q].contains(&a),
            (q, a) => q == a,
        }
    }

    /// Counts `demand` in `queue` (positive: admitted; the caller negates it to release).
    pub fn add(&self, state: &mut SharingState, queue: Option<QueueIdx>, demand: &SharedDemand, sign: i128) {
        let r_count = self.resources.len();
        for &(r, v) in demand {
            let v = v.saturating_mul(sign);
            let Some(q) = queue.filter(|&q| q < self.queues) else {
                state.total[r] = state.total[r].saturating_add(v);
                continue;
            };
            state.own[q * r_count + r] = state.own[q * r_count + r].saturating_add(v);
            let mut change: Option<i128> = None;
            for &a in &self.paths[q] {
                let i = a * r_count + r;
                state.used[i] = state.used[i].saturating_add(v);
                if let Some(d) = change {
                    state.children_hold[i] = state.children_hold[i].saturating_add(d);
                }
                let hold = state.children_hold[i].saturating_add(state.own[i]).max(self.keep[i]);
                let d = hold - state.hold[i];
                state.hold[i] = hold;
                change = Some(d);
            }
            if let Some(d) = change {
                state.total[r] = state.total[r].saturating_add(d);
            }
        }
    }

    /// Whether a job of `queue` asking `demand` is within its guarantee at every level given
    /// the usage in `state` that counts *before* it (its own usage excluded): what makes a
    /// running job safe from reclaim.
    pub fn within_guarantee(&self, state: &SharingState, queue: Option<QueueIdx>, demand: &SharedDemand) -> bool {
        let Some(q) = queue.filter(|&q| q < self.queues) else {
            return demand.is_empty();
        };
        demand
            .iter()
            .all(|&(r, v)| self.beyond_guarantee(state, q, r, v).iter().all(|(_, over)| *over == 0))
    }

    /// Per queue on the path that would go beyond its guarantee with `demand` admitted: the
    /// queue and, per column, how much of the demand lies beyond (at most the demand).
    pub fn borrowed_by(
        &self,
        state: &SharingState,
        queue: Option<QueueIdx>,
        demand: &SharedDemand,
    ) -> Vec<LevelBorrowing> {
        let Some(q) = queue.filter(|&q| q < self.queues) else {
            return if demand.is_empty() {
                Vec::new()
            } else {
                vec![(None, demand.clone())]
            };
        };
        let mut levels: Vec<LevelBorrowing> = Vec::new();
        for &(r, v) in demand {
            for (a, over) in self.beyond_guarantee(state, q, r, v) {
                if over > 0 {
                    match levels.iter_mut().find(|(l, _)| *l == Some(a)) {
                        Some((_, entries)) => entries.push((r, over)),
                        None => levels.push((Some(a), vec![(r, over)])),
                    }
                }
            }
        }
        // Path order: the job's queue first.
        levels.sort_by_key(|(l, _)| l.and_then(|l| self.paths[q].iter().position(|&a| a == l)));
        levels
    }

    /// A column list as a resource list.
    pub fn to_list(&self, entries: &[(usize, i128)]) -> ResourceList {
        entries
            .iter()
            .map(|&(r, v)| (self.resources[r].clone(), quantity(v)))
            .collect()
    }

    /// The pool checks of an assessment as reason entries: per shared resource the job asks
    /// for, what the pool holds now, the request and the pool.
    pub fn checks(&self, state: &SharingState, demand: &SharedDemand, assessment: &Assessment) -> Vec<ResourceCheck> {
        demand
            .iter()
            .map(|&(r, v)| ResourceCheck {
                resource: self.resources[r].clone(),
                usage: quantity(state.total[r]),
                request: quantity(v),
                limit: quantity(self.pool[r]),
                exceeded: assessment.shortfall[r] > 0,
            })
            .collect()
    }

    /// A queue's guarantee, what it borrows beyond it and what it lends now.
    pub fn queue_use(&self, state: &SharingState, queue: QueueIdx) -> QueueSharingUse {
        let r_count = self.resources.len();
        let mut out = QueueSharingUse {
            guarantee: ResourceList::new(),
            borrowed: ResourceList::new(),
            lent: ResourceList::new(),
        };
        if queue >= self.queues {
            return out;
        }
        for (r, name) in self.resources.iter().enumerate() {
            let i = queue * r_count + r;
            let g = self.guarantee[i];
            let hold = state.hold[i];
            out.guarantee.insert(name.clone(), quantity(g));
            // What it holds beyond its guarantee is borrowed; its guarantee it neither holds nor
            // keeps is idle room others may use now.
            out.borrowed.insert(name.clone(), quantity((hold - g).max(0)));
            out.lent.insert(name.clone(), quantity((g - hold).max(0)));
        }
        out
    }
}

/// A milli value as a quantity (saturating: shared sums never reach the limits in practice).
fn quantity(milli: i128) -> Quantity {
    Quantity::from_milli_saturating(milli, QuantityFormat::DecimalSi)
}
