//! [`PreparedRound::explain`]: compact [`WaitCauses`](super::WaitCauses) into full
//! [`Reason`]s with their details, only for the waiting jobs whose reasons are shown.

use anteroom_shared::scheduling::{Quantity, ResourceList};

use super::{PreparedRound, RoundOutcome, WaitingJob};
use crate::prequeue::reason::{
    BlockedByDetails, BorrowingLimitDetails, BudgetExhaustedDetails, MaxActiveJobsDetails, QueueCapacityDetails,
    QuotaDetails, Reason, ReclaimingDetails, ResourceCheck, RoundLimitDetails,
};
use crate::prequeue::sharing::ReclaimOutlook;
use crate::prequeue::snapshot::JobId;

impl PreparedRound<'_> {
    /// The full reasons of one waiting job of `outcome` (which must come from this
    /// `PreparedRound`), with details against the end state of the round.
    pub fn explain(&self, outcome: &RoundOutcome, waiting: &WaitingJob) -> Vec<Reason> {
        let st = &outcome.state;
        let cand = &self.cands[waiting.cand as usize];
        let job = &self.snapshot.jobs[cand.job as usize];
        let causes = waiting.causes;
        let q = cand.queue as usize;
        let p = cand.pair as usize;
        let mut reasons = Vec::new();
        // Quantities print in the format the limit was written in (e.g. "4Gi"), the request
        // in its own.
        let check = |r: u16, used: i128, limit: Quantity| {
            let name = self.res_names[r as usize];
            let request = job.resources.get(name);
            ResourceCheck {
                resource: name.to_owned(),
                usage: Quantity::from_milli_saturating(used, limit.format_kind()),
                request,
                limit,
                exceeded: used.saturating_add(request.milli()) > limit.milli(),
            }
        };
        let named = |list: Option<&ResourceList>, r: u16, milli: i128| {
            list.and_then(|l| l.get_named(self.res_names[r as usize]))
                .unwrap_or_else(|| Quantity::from_milli_saturating(milli, Default::default()))
        };
        if causes.backfill_disabled() {
            reasons.push(Reason::BackfillDisabled);
        }
        if causes.budget_exhausted()
            && let Some(a) = self.budget_holder(q)
            && let Some(details) = budget_details(self.snapshot, self.queue_names[a as usize], &job.queue, self.now)
        {
            reasons.push(Reason::BudgetExhausted(details));
        }
        if causes.quota() {
            let rule = self.quota_rule[q].and_then(|i| self.snapshot.quotas.get(i as usize));
            reasons.push(Reason::Quota(QuotaDetails {
                queue: self.queue_names[q].to_owned(),
                user: job.owner,
                resources: self.quota_limits[q]
                    .iter()
                    .map(|&(r, limit)| {
                        let limit = named(rule.map(|rule| &rule.limits), r, limit);
                        check(r, st.pair_used[p * self.resources + r as usize], limit)
                    })
                    .collect(),
            }));
        }
        if causes.max_active_jobs() {
            reasons.push(Reason::MaxActiveJobs(MaxActiveJobsDetails {
                queue: self.queue_names[q].to_owned(),
                user: job.owner,
                active: st.pair_active[p],
                limit: self.max_active[q].unwrap_or(0),
            }));
        }
        if causes.queue_capacity() {
            for &a in &self.paths[q] {
                let a = a as usize;
                let spec = self.snapshot.queues.iter().find(|s| s.name == self.queue_names[a]);
                let details: Vec<ResourceCheck> = self.capacity[a]
                    .iter()
                    .map(|&(r, cap)| {
                        let cap = named(spec.and_then(|s| s.capacity.as_ref()), r, cap);
                        check(r, st.queue_used[a * self.resources + r as usize], cap)
                    })
                    .collect();
                if details.iter().any(|d| d.exceeded) {
                    reasons.push(Reason::QueueCapacity(QueueCapacityDetails {
                        queue: self.queue_names[a].to_owned(),
                        job_queue: self.queue_names[q].to_owned(),
                        resources: details,
                    }));
                }
            }
        }
        if let Some(id) = causes.blocked_by() {
            let blocker = &self.snapshot.jobs[causes.blocker_index as usize];
            reasons.push(Reason::BlockedBy(BlockedByDetails {
                job_id: id,
                phase: blocker.phase,
                queue: blocker.queue.clone(),
                domain: blocker.resources.domain().to_string(),
            }));
        }
        if (causes.borrowing_limit() || causes.reclaiming())
            && let (Some((model, queue, demand)), Some(state)) = (self.shared_parts(cand), st.sharing.as_ref())
        {
            let assessment = model.assess(state, queue, demand);
            let resources = model.checks(state, demand, &assessment);
            let job_queue = self.queue_names[q].to_owned();
            if causes.reclaiming() {
                let victims: Vec<JobId> = self
                    .snapshot
                    .preemptions_in_flight
                    .iter()
                    .filter(|p| p.beneficiary == job.id)
                    .flat_map(|p| p.terminating_victims.iter().copied())
                    .collect();
                let delay = chrono::Duration::seconds(self.snapshot.config.reclaim_delay_seconds.max(0));
                let after_delay = job.waiting_since.and_then(|since| since.checked_add_signed(delay));
                let outlook = if victims.is_empty() {
                    self.reclaim_outlook(cand)
                } else {
                    None
                };
                let (reclaim_at, nothing_to_take) = match outlook {
                    _ if !victims.is_empty() => (None, false),
                    Some(ReclaimOutlook::NothingToTake) => (None, true),
                    Some(ReclaimOutlook::Later) => (None, false),
                    Some(ReclaimOutlook::From(at)) => (after_delay.map(|d| d.max(at)), false),
                    None => (after_delay, false),
                };
                reasons.push(Reason::Reclaiming(ReclaimingDetails {
                    job_queue,
                    resources,
                    reclaim_at,
                    victims,
                    nothing_to_take,
                }));
            } else {
                reasons.push(Reason::BorrowingLimit(BorrowingLimitDetails {
                    job_queue,
                    may_borrow: !cand.borrow_never,
                    resources,
                }));
            }
        }
        if causes.round_limit() {
            reasons.push(Reason::RoundLimit(RoundLimitDetails {
                limit: self.snapshot.config.round_limit(),
            }));
        }
        reasons
    }

    /// Reasons of every waiting job: (job, position, reasons), in submission order.
    pub fn explain_all(&self, outcome: &RoundOutcome) -> Vec<(JobId, u32, Vec<Reason>)> {
        outcome
            .waiting
            .iter()
            .map(|w| (w.id, w.position, self.explain(outcome, w)))
            .collect()
    }
}

/// The `budget_exhausted` details of `holder`'s hold for a job of `job_queue`, if it holds at
/// `now` (the submission and the round say the same).
pub(crate) fn budget_details(
    snapshot: &crate::prequeue::Snapshot,
    holder: &str,
    job_queue: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Option<BudgetExhaustedDetails> {
    let spec = snapshot.queues.iter().find(|s| s.name == holder)?;
    let hold = spec.holding_budget(now)?;
    Some(BudgetExhaustedDetails {
        queue: holder.to_owned(),
        job_queue: job_queue.to_owned(),
        used_gpu_hours: hold.used,
        budget_gpu_hours: hold.budget,
        resets_at: hold.until,
    })
}

/// The hold of the first queue on `queue`'s path to the root (itself first) whose spent budget
/// holds normal jobs at `now`, as a reason's details: what a submission, a round and a claim
/// all check, so none lets a held job through.
pub fn budget_hold_on_path(
    snapshot: &crate::prequeue::Snapshot,
    tree: &crate::prequeue::QueueTree,
    queue: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Option<BudgetExhaustedDetails> {
    tree.names_to_root(queue)
        .into_iter()
        .find_map(|holder| budget_details(snapshot, holder, queue, now))
}
