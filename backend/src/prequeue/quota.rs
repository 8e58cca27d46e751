//! Per-user quota and per-queue capacity checks on one request (`spec/prequeue.md` §1, §4
//! steps 5 and 7, §7): what submission, preview, the limit-check endpoint and the resource
//! summary use. The round re-implements the same rules on interned vectors for speed
//! (`round.rs`); the property tests check both against the same invariants.

use std::collections::HashMap;

use std::sync::OnceLock;

use anteroom_shared::scheduling::reasons::{BorrowedRoom, BorrowingLimitDetails, ReclaimingDetails};
use anteroom_shared::scheduling::{BorrowPolicy, ResourceList, ScheduleType};
use serde::Serialize;

use super::queue_tree::QueueIdx;
use super::queue_tree::QueueTree;
use super::reason::{MaxActiveJobsDetails, QueueCapacityDetails, QuotaDetails, Reason, ResourceCheck};
use super::sharing::{SharingState, SharingTree};
use super::snapshot::{QueueQuota, Snapshot, UserId};

/// The answer of the limit-check endpoint and the `quota` part of a preview.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LimitCheck {
    /// Quotas are on and the queue has a rule.
    pub enabled: bool,
    /// Some resource is exceeded (usage + request > limit).
    pub exceeded: bool,
    /// One entry per resource the rule names.
    pub details: Vec<ResourceCheck>,
}

/// A queue's capacity and what all users occupy in it and its descendants (resource summary).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueCapacityUsage {
    /// The queue (the job's queue or an ancestor).
    pub queue: String,
    /// Its capacity.
    pub capacity: ResourceList,
    /// Occupying normal jobs of every user in it and below it.
    pub used: ResourceList,
}

/// Quota and capacity views of one snapshot for single requests (submission, preview, limit
/// check, resource summary). Usage is summed on demand for the queues asked about, in one pass
/// over the usage rows, so one decision costs O(rows) and builds no index of all users.
#[derive(Debug)]
pub struct QuotaView<'s> {
    snapshot: &'s Snapshot,
    tree: &'s QueueTree,
    quotas: HashMap<&'s str, &'s QueueQuota>,
    /// The guarantees and what the usage rows hold of them, built on first use; `None` while
    /// no queue guarantees anything or quotas are off.
    sharing: OnceLock<Option<(SharingTree, SharingState)>>,
}

/// What sharing (§9) says about one normal request: what it would borrow, and the reason that
/// holds it, if any.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SharingVerdict {
    /// Per queue on its path that would go beyond its guarantee: how much. Empty: it does not
    /// borrow (or nothing is guaranteed anywhere).
    pub borrowed: Vec<BorrowedRoom>,
    /// `borrowing_limit` or `reclaiming`.
    pub reason: Option<Reason>,
}

impl<'s> QuotaView<'s> {
    /// Indexes the quota rules of a snapshot (the first rule of a queue wins).
    pub fn new(snapshot: &'s Snapshot, tree: &'s QueueTree) -> Self {
        let mut quotas = HashMap::new();
        for q in &snapshot.quotas {
            quotas.entry(q.queue.as_str()).or_insert(q);
        }
        QuotaView {
            snapshot,
            tree,
            quotas,
            sharing: OnceLock::new(),
        }
    }

    /// The sharing model of the snapshot and the state of its usage rows (every queue's: the
    /// caller loads all of them while queues share, [`QueueTree::turn_of`]).
    pub fn sharing(&self) -> Option<&(SharingTree, SharingState)> {
        self.sharing
            .get_or_init(|| {
                if !self.enabled() {
                    return None;
                }
                let model = SharingTree::new(&self.snapshot.queues, self.tree, &self.snapshot.nodes)?;
                let state = model.state(
                    self.snapshot
                        .usage
                        .iter()
                        .map(|row| (self.tree.index_of(&row.queue), &row.resources)),
                );
                Some((model, state))
            })
            .as_ref()
    }

    /// What admitting a normal `request` into `queue` does to sharing: what it borrows, and
    /// whether the cluster's room holds it (`borrowing_limit` for a borrower or a job that
    /// will not borrow, `reclaiming` for one within its guarantee).
    pub fn sharing_verdict(&self, queue: &str, request: &ResourceList, borrow: BorrowPolicy) -> SharingVerdict {
        let Some((model, state)) = self.sharing() else {
            return SharingVerdict::default();
        };
        let q = self.tree.index_of(queue);
        let demand = model.demand(request);
        let assessment = model.assess(state, q, &demand);
        let borrowed = model
            .borrowed_by(state, q, &demand)
            .into_iter()
            .map(|(a, entries)| BorrowedRoom {
                queue: a.map_or_else(|| queue.to_owned(), |a| self.tree.name(a).to_owned()),
                resources: model.to_list(&entries),
            })
            .collect();
        let resources = || model.checks(state, &demand, &assessment);
        let reason = if !assessment.fits && assessment.owed() {
            Some(Reason::Reclaiming(ReclaimingDetails {
                job_queue: queue.to_owned(),
                resources: resources(),
                victims: Vec::new(),
                reclaim_at: None,
                nothing_to_take: false,
            }))
        } else if !assessment.fits || (assessment.borrowing && borrow == BorrowPolicy::Never) {
            Some(Reason::BorrowingLimit(BorrowingLimitDetails {
                job_queue: queue.to_owned(),
                may_borrow: borrow != BorrowPolicy::Never,
                resources: resources(),
            }))
        } else {
            None
        };
        SharingVerdict { borrowed, reason }
    }

    /// The queue and its ancestors that have a capacity: the only levels a capacity check or
    /// summary looks at, so uncapped levels cost no usage scan.
    fn capped_path(&self, queue: &str) -> Vec<QueueIdx> {
        self.tree
            .path_of(queue)
            .iter()
            .copied()
            .filter(|&q| self.tree.capacity(q).is_some())
            .collect()
    }

    /// All users' usage in each of `queues` and its descendants, in the order given.
    fn queue_usage(&self, queues: &[QueueIdx]) -> Vec<ResourceList> {
        let mut totals = vec![ResourceList::new(); queues.len()];
        if queues.is_empty() {
            return totals;
        }
        for row in &self.snapshot.usage {
            // A job counts against its queue and every ancestor.
            for &a in self.tree.path_of(&row.queue) {
                if let Some(i) = queues.iter().position(|&q| q == a) {
                    totals[i].saturating_add_assign(&row.resources);
                }
            }
        }
        totals
    }

    /// True when per-user quotas and capacities are enforced at all.
    pub fn enabled(&self) -> bool {
        self.snapshot.config.queue_quota_enabled
    }

    /// The quota rule of a queue when quotas are on.
    pub fn rule(&self, queue: &str) -> Option<&'s QueueQuota> {
        if self.enabled() {
            self.quotas.get(queue).copied()
        } else {
            None
        }
    }

    /// What a user occupies in a queue and how many occupying normal jobs they have there.
    pub fn user_usage(&self, owner: UserId, queue: &str) -> (ResourceList, u32) {
        let mut used = ResourceList::new();
        let mut active = 0_u32;
        // Rows are unique per (owner, queue) from the store; summing tolerates duplicates.
        for row in self
            .snapshot
            .usage
            .iter()
            .filter(|r| r.owner == owner && r.queue == queue)
        {
            used.saturating_add_assign(&row.resources);
            active = active.saturating_add(row.active_jobs);
        }
        (used, active)
    }

    /// The soft check (usage + request against every limit the rule names), as the limit-check
    /// endpoint answers it.
    pub fn limit_check(&self, owner: UserId, queue: &str, request: &ResourceList) -> LimitCheck {
        let Some(rule) = self.rule(queue) else {
            return LimitCheck {
                enabled: false,
                exceeded: false,
                details: Vec::new(),
            };
        };
        let (used, _) = self.user_usage(owner, queue);
        let details = checks(&used, request, &rule.limits);
        LimitCheck {
            enabled: true,
            exceeded: details.iter().any(|d| d.exceeded),
            details,
        }
    }

    /// Hard check: the request alone over a limit of the queue's rule (§4 step 5). Returns the
    /// checks of every named resource when one is exceeded.
    pub fn request_over_limit(&self, queue: &str, request: &ResourceList) -> Option<Vec<ResourceCheck>> {
        let rule = self.rule(queue)?;
        let details = checks(&ResourceList::new(), request, &rule.limits);
        details.iter().any(|d| d.exceeded).then_some(details)
    }

    /// Hard check: the request alone over the capacity of its queue or an ancestor (§4 step 5);
    /// the nearest such queue is reported.
    pub fn request_over_capacity(&self, queue: &str, request: &ResourceList) -> Option<QueueCapacityDetails> {
        if !self.enabled() {
            return None;
        }
        self.tree.path_of(queue).iter().find_map(|&q| {
            let capacity = self.tree.capacity(q)?;
            let details = checks(&ResourceList::new(), request, capacity);
            details.iter().any(|d| d.exceeded).then(|| QueueCapacityDetails {
                queue: self.tree.name(q).to_owned(),
                job_queue: queue.to_owned(),
                resources: details,
            })
        })
    }

    /// Whether a normal job of `owner` in `queue` asking `request` is held *privately*: by the
    /// owner's own quota or `maxActiveJobs` (`spec/prequeue.md` §1). Nothing another user's
    /// job does can help such a job, so it blocks nobody.
    pub fn holds_privately(&self, owner: UserId, queue: &str, request: &ResourceList) -> bool {
        if !self.enabled() {
            return false;
        }
        let Some(rule) = self.rule(queue) else {
            return false;
        };
        let (used, active) = self.user_usage(owner, queue);
        rule.max_active_jobs.is_some_and(|max| active >= max)
            || checks(&used, request, &rule.limits).iter().any(|d| d.exceeded)
    }

    /// Soft checks of §4 step 7 for a normal job: quota, `maxActiveJobs`, the capacity of the
    /// queue and every ancestor (usage of all users + request), and sharing (§9: the cluster's
    /// room beyond guarantees, `borrow` saying whether it may borrow). Empty when the job may go.
    pub fn soft_reasons(
        &self,
        owner: UserId,
        queue: &str,
        schedule_type: ScheduleType,
        request: &ResourceList,
        borrow: BorrowPolicy,
    ) -> Vec<Reason> {
        let mut reasons = Vec::new();
        if schedule_type != ScheduleType::Normal || !self.enabled() {
            return reasons;
        }
        if let Some(rule) = self.rule(queue) {
            let (used, active) = self.user_usage(owner, queue);
            let details = checks(&used, request, &rule.limits);
            if details.iter().any(|d| d.exceeded) {
                reasons.push(Reason::Quota(QuotaDetails {
                    queue: queue.to_owned(),
                    user: owner,
                    resources: details,
                }));
            }
            if let Some(max) = rule.max_active_jobs
                && active >= max
            {
                reasons.push(Reason::MaxActiveJobs(MaxActiveJobsDetails {
                    queue: queue.to_owned(),
                    user: owner,
                    active,
                    limit: max,
                }));
            }
        }
        let path = self.capped_path(queue);
        for (&q, used) in path.iter().zip(self.queue_usage(&path)) {
            let Some(capacity) = self.tree.capacity(q) else {
                continue;
            };
            let details = checks(&used, request, capacity);
            if details.iter().any(|d| d.exceeded) {
                reasons.push(Reason::QueueCapacity(QueueCapacityDetails {
                    queue: self.tree.name(q).to_owned(),
                    job_queue: queue.to_owned(),
                    resources: details,
                }));
            }
        }
        reasons.extend(self.sharing_verdict(queue, request, borrow).reason);
        reasons
    }

    /// For the resource summary: the queue and each ancestor that has a capacity, with what all
    /// users occupy there.
    pub fn capacity_usage(&self, queue: &str) -> Vec<QueueCapacityUsage> {
        let path = self.capped_path(queue);
        path.iter()
            .zip(self.queue_usage(&path))
            .filter_map(|(&q, used)| {
                Some(QueueCapacityUsage {
                    queue: self.tree.name(q).to_owned(),
                    capacity: self.tree.capacity(q)?.clone(),
                    used,
                })
            })
            .collect()
    }
}

/// `used + request` against every resource `limits` names.
fn checks(used: &ResourceList, request: &ResourceList, limits: &ResourceList) -> Vec<ResourceCheck> {
    limits
        .iter()
        .map(|(name, limit)| {
            let usage = used.get(name);
            let req = request.get(name);
            let total = usage.milli().saturating_add(req.milli());
            ResourceCheck {
                resource: name.to_owned(),
                usage,
                request: req,
                limit,
                exceeded: total > limit.milli(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prequeue::tests::fixtures::{queue, rl, usage};

    fn snapshot() -> Snapshot {
        let mut s = Snapshot::default();
        s.config.queue_quota_enabled = true;
        s.queues = vec![
            queue("root", None, Some(rl(&[("cpu", "2"), ("memory", "4Gi")]))),
            queue("sub-0", Some("root"), None),
            queue("sub-1", Some("root"), None),
        ];
        s.quotas = vec![QueueQuota {
            queue: "sub-0".into(),
            limits: rl(&[("cpu", "1500m")]),
            max_active_jobs: Some(1),
        }];
        s.usage = vec![usage(7, "sub-0", &[("cpu", "1"), ("memory", "1Gi")], 1)];
        s
    }

    #[test]
    fn the_limit_check_adds_usage_to_the_request() {
        let s = snapshot();
        let tree = QueueTree::new(&s.queues).expect("valid");
        let view = QuotaView::new(&s, &tree);
        let check = view.limit_check(7, "sub-0", &rl(&[("cpu", "1")]));
        assert!(check.enabled && check.exceeded);
        assert_eq!(check.details[0].usage.to_string(), "1");
        let other_queue = view.limit_check(7, "sub-1", &rl(&[("cpu", "1")]));
        assert!(!other_queue.enabled);
    }

    #[test]
    fn capacity_usage_reports_the_queue_and_every_ancestor_with_a_capacity() {
        let s = snapshot();
        let tree = QueueTree::new(&s.queues).expect("valid");
        let view = QuotaView::new(&s, &tree);
        let summary = view.capacity_usage("sub-1");
        assert_eq!(summary.len(), 1);
        assert_eq!(summary[0].queue, "root");
        assert_eq!(summary[0].used.get("cpu").to_string(), "1");
    }

    #[test]
    fn max_active_jobs_holds_a_user_at_the_maximum() {
        let s = snapshot();
        let tree = QueueTree::new(&s.queues).expect("valid");
        let view = QuotaView::new(&s, &tree);
        let reasons = view.soft_reasons(
            7,
            "sub-0",
            ScheduleType::Normal,
            &rl(&[("cpu", "100m")]),
            BorrowPolicy::IfIdle,
        );
        assert_eq!(
            reasons.iter().map(Reason::code).collect::<Vec<_>>(),
            ["max_active_jobs"]
        );
    }

    #[test]
    fn backfill_jobs_are_never_limited_by_quotas() {
        let s = snapshot();
        let tree = QueueTree::new(&s.queues).expect("valid");
        let view = QuotaView::new(&s, &tree);
        assert!(
            view.soft_reasons(
                7,
                "sub-0",
                ScheduleType::Backfill,
                &rl(&[("cpu", "64")]),
                BorrowPolicy::IfIdle
            )
            .is_empty()
        );
    }
}
