//! The reasons of waiting jobs, rewritten where the API reads them (`spec/prequeue.md` §8).
//!
//! Every round knows why each waiting job waits (compact [`WaitCauses`]); turning all of them
//! into full reasons with their figures costs ~42 ms at 100,000 jobs (docs/performance.md),
//! and writing every one would cost far more. So a round writes only what changed:
//!
//! - jobs whose causes changed since the reasons this watcher last wrote (a new cause, a
//!   cause gone, another blocker) — every one, up to [`CHANGED_PER_ROUND`], oldest first;
//! - plus a rolling slice of [`REFRESH_PER_ROUND`] others whose figures (usage, limits) may
//!   have moved while their causes stayed: explained again, written if the text differs.
//!
//! What was written is remembered by a hash of the stored JSON, for the current lease term; a
//! job not written in this term (a new leader, a restart, a lease lost and taken again) is
//! compared with its stored reasons, so a takeover does not rewrite 100,000 rows and never
//! trusts what another holder may have overwritten. Positions are not stored: the API counts them at read time,
//! exactly.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

use anteroom_shared::scheduling::JobPhase;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QuerySelect};

use super::{Watcher, WatcherError};
use crate::jobs::entity::job;
use crate::prequeue::{PreparedRound, RoundOutcome, WaitCauses};
use crate::store::lease::Fence;

/// Jobs with changed causes explained and written per round at most.
pub const CHANGED_PER_ROUND: usize = 5_000;
/// Other waiting jobs explained per round to refresh their figures.
pub const REFRESH_PER_ROUND: usize = 1_000;
/// Stored reasons read per query (a bound on the `IN` list).
const READ_CHUNK: usize = 500;

/// What this watcher last wrote per waiting job, and where the refresh goes on — valid for
/// one lease term only: another holder may have written since.
#[derive(Debug, Default)]
pub(super) struct ReasonCache {
    written: HashMap<i64, (WaitCauses, u64)>,
    cursor: usize,
    /// The fence of the term it was filled in.
    term: Option<i64>,
}

fn fingerprint(text: Option<&str>) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

/// Starts the waiting clock (`waitingSince`, and `timeoutAt` with it) of the waiting jobs found
/// waiting for shared room for the first time (`spec/prequeue.md` §1); answers how many.
pub(super) async fn start_waiting_clocks(
    w: &Watcher,
    fence: &Fence,
    prepared: &PreparedRound<'_>,
    outcome: &RoundOutcome,
) -> Result<usize, WatcherError> {
    // Grouped by tolerance (one value in practice: the setting at submission).
    let mut groups: HashMap<Option<i64>, Vec<i64>> = HashMap::new();
    for job in prepared.clocks_to_start(outcome) {
        groups.entry(job.waiting_tolerance_seconds).or_default().push(job.id);
    }
    if groups.is_empty() {
        return Ok(0);
    }
    let Some((txn, now)) = w.writer(fence).begin().await? else {
        return Err(WatcherError::LeaseLost);
    };
    let mut started = 0;
    for (tolerance, ids) in groups {
        let timeout_at = crate::jobs::timeout_at(Some(now), tolerance);
        for chunk in ids.chunks(READ_CHUNK) {
            let done = job::Entity::update_many()
                .col_expr(job::Column::WaitingSince, Expr::value(now))
                .col_expr(job::Column::TimeoutAt, Expr::value(timeout_at))
                .filter(job::Column::Id.is_in(chunk.iter().copied()))
                .filter(job::Column::Phase.eq(JobPhase::Prequeue.as_str()))
                .filter(job::Column::WaitingSince.is_null())
                .exec(&txn)
                .await?;
            started += done.rows_affected as usize;
        }
    }
    txn.commit().await?;
    Ok(started)
}

/// Writes the reasons of `outcome`'s waiting jobs that changed; answers how many rows.
pub(super) async fn write(
    w: &Watcher,
    fence: &Fence,
    prepared: &PreparedRound<'_>,
    outcome: &RoundOutcome,
) -> Result<usize, WatcherError> {
    let mut cache = w.reasons.lock().await;
    if cache.term != Some(fence.token) {
        // A new term: what the last holder wrote is unknown; compare with the store again.
        *cache = ReasonCache {
            term: Some(fence.token),
            ..ReasonCache::default()
        };
    }
    let waiting = &outcome.waiting;
    if cache.written.len() > waiting.len() {
        let ids: HashSet<i64> = waiting.iter().map(|j| j.id).collect();
        cache.written.retain(|id, _| ids.contains(id));
    }
    let mut chosen: Vec<usize> = waiting
        .iter()
        .enumerate()
        .filter(|(_, j)| cache.written.get(&j.id).map(|e| e.0) != Some(j.causes))
        .map(|(i, _)| i)
        .take(CHANGED_PER_ROUND)
        .collect();
    if !waiting.is_empty() {
        let picked: HashSet<usize> = chosen.iter().copied().collect();
        let start = cache.cursor % waiting.len();
        let slice = REFRESH_PER_ROUND.min(waiting.len());
        chosen.extend(
            (0..slice)
                .map(|k| (start + k) % waiting.len())
                .filter(|i| !picked.contains(i)),
        );
        cache.cursor = (start + slice) % waiting.len();
    }

    let mut texts: Vec<(usize, String, u64)> = Vec::with_capacity(chosen.len());
    for i in chosen {
        let reasons: Vec<_> = prepared
            .explain(outcome, &waiting[i])
            .iter()
            .map(crate::jobs::wait_reason)
            .collect();
        let text = serde_json::to_string(&reasons).map_err(|e| sea_orm::DbErr::Custom(e.to_string()))?;
        let print = fingerprint(Some(&text));
        texts.push((i, text, print));
    }

    // Jobs this watcher has not written: compare with what is stored.
    let unknown: Vec<i64> = texts
        .iter()
        .map(|(i, _, _)| waiting[*i].id)
        .filter(|id| !cache.written.contains_key(id))
        .collect();
    let mut stored: HashMap<i64, u64> = HashMap::with_capacity(unknown.len());
    for chunk in unknown.chunks(READ_CHUNK) {
        let rows: Vec<(i64, Option<String>)> = job::Entity::find()
            .select_only()
            .column(job::Column::Id)
            .column(job::Column::WaitReasons)
            .filter(job::Column::Id.is_in(chunk.iter().copied()))
            .into_tuple()
            .all(&w.db_read)
            .await?;
        stored.extend(rows.into_iter().map(|(id, text)| (id, fingerprint(text.as_deref()))));
    }

    let changed: Vec<&(usize, String, u64)> = texts
        .iter()
        .filter(|(i, _, print)| {
            let id = waiting[*i].id;
            let before = cache.written.get(&id).map(|e| e.1).or_else(|| stored.get(&id).copied());
            before != Some(*print)
        })
        .collect();
    if !changed.is_empty() {
        let Some((txn, _)) = w.writer(fence).begin().await? else {
            return Err(WatcherError::LeaseLost);
        };
        for (i, text, _) in &changed {
            job::Entity::update_many()
                .col_expr(job::Column::WaitReasons, Expr::value(text.as_str()))
                .filter(job::Column::Id.eq(waiting[*i].id))
                .filter(job::Column::Phase.eq(JobPhase::Prequeue.as_str()))
                .exec(&txn)
                .await?;
        }
        txn.commit().await?;
    }
    for (i, _, print) in &texts {
        let job = &waiting[*i];
        cache.written.insert(job.id, (job.causes, *print));
    }
    Ok(changed.len())
}
