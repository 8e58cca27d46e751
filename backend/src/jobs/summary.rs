//! The caller's view of a queue: the resource summary (`spec/prequeue.md` §7) and the limit
//! check of a request (`POST /api/v1/me/resource-limit-check`), both from the core's
//! [`QuotaView`] over a snapshot of the queue's tree.

use std::collections::BTreeSet;
use std::str::FromStr;

use anteroom_shared::api::jobs::{LimitCheck, LimitDetail};
use anteroom_shared::api::prequeue::{BackfillUsage, JobCounts, QueueCapacityUse, ResourceSummary, ResourceUsage};
use anteroom_shared::scheduling::{JobPhase, PrequeueConfig, ResourceList, ScheduleType};
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, FromQueryResult, QueryFilter, QuerySelect};

use super::entity::job;
use crate::prequeue::{QueueTree, QuotaView, Snapshot};
use crate::store::compact;
use crate::{queues, quotas};

/// The core's limit check as the API's.
pub fn limit_check_to_api(check: crate::prequeue::LimitCheck) -> LimitCheck {
    LimitCheck {
        enabled: check.enabled,
        exceeded: check.exceeded,
        details: check
            .details
            .into_iter()
            .map(|d| LimitDetail {
                resource: d.resource,
                used: d.usage,
                request: d.request,
                limit: d.limit,
                exceeded: d.exceeded,
            })
            .collect(),
    }
}

/// Quotas and the usage of `queue`'s whole tree (every user), as a snapshot the core's
/// [`QuotaView`] reads.
async fn quota_snapshot(
    db: &impl ConnectionTrait,
    config: PrequeueConfig,
    queue: &str,
) -> Result<(Snapshot, QueueTree), DbErr> {
    let (specs, tree) = queues::tree(db).await?;
    let root = tree.turn_of(queue).to_owned();
    let family: Vec<String> = specs
        .iter()
        .filter(|s| tree.turn_of(&s.name) == root)
        .map(|s| s.name.clone())
        .collect();
    let snapshot = Snapshot {
        config,
        queues: specs,
        quotas: quotas::all(db).await?,
        usage: queues::usage::usage_rows(db, Some(&family), None).await?,
        ..Snapshot::default()
    };
    Ok((snapshot, tree))
}

/// `POST /api/v1/me/resource-limit-check`: the caller's usage + `request` against the queue's
/// rule (access to the queue already checked).
pub async fn limit_check(
    db: &impl ConnectionTrait,
    config: PrequeueConfig,
    owner: i64,
    queue: &str,
    request: &ResourceList,
) -> Result<LimitCheck, DbErr> {
    let (snapshot, tree) = quota_snapshot(db, config, queue).await?;
    Ok(limit_check_to_api(
        QuotaView::new(&snapshot, &tree).limit_check(owner, queue, request),
    ))
}

#[derive(FromQueryResult)]
struct Row {
    phase: String,
    schedule_type: String,
    request_milli: String,
}

/// The guarantee, borrowed and lent room (§9) of every level of `queue`'s path that has a
/// guarantee, added to its capacity entry or as an entry of its own, nearest first.
fn add_sharing(
    queues: &mut Vec<QueueCapacityUse>,
    tree: &QueueTree,
    model: &crate::prequeue::sharing::SharingTree,
    state: &crate::prequeue::sharing::SharingState,
    snapshot: &Snapshot,
    queue: &str,
) {
    let mut out = Vec::new();
    for &level in tree.path_of(queue) {
        let name = tree.name(level);
        let share = model.queue_use(state, level);
        let guaranteed = share.guarantee.iter().any(|(_, v)| v.is_positive());
        let entry = match queues.iter().position(|q| q.queue == name) {
            Some(i) => Some(queues[i].clone()),
            None if guaranteed => {
                // What all users use below it, as the capacity entries say.
                let mut used = ResourceList::new();
                for row in &snapshot.usage {
                    if tree.path_of(&row.queue).contains(&level) {
                        used.saturating_add_assign(&row.resources);
                    }
                }
                Some(QueueCapacityUse {
                    queue: name.to_owned(),
                    capacity: ResourceList::new(),
                    used,
                    guarantee: ResourceList::new(),
                    borrowed: ResourceList::new(),
                    lent: ResourceList::new(),
                })
            }
            None => None,
        };
        if let Some(mut entry) = entry {
            if guaranteed {
                entry.guarantee = share.guarantee;
                entry.borrowed = share.borrowed;
                entry.lent = share.lent;
            }
            out.push(entry);
        }
    }
    *queues = out;
}

/// `GET /api/v1/me/resource-summary?queue=` (`spec/prequeue.md` §7).
pub async fn resource_summary(
    db: &impl ConnectionTrait,
    config: PrequeueConfig,
    owner: i64,
    queue: &str,
) -> Result<ResourceSummary, DbErr> {
    let mut phases = queues::usage::occupying_phases();
    phases.push(JobPhase::Prequeue.as_str());
    let rows = job::Entity::find()
        .select_only()
        .column(job::Column::Phase)
        .column(job::Column::ScheduleType)
        .column(job::Column::RequestMilli)
        .filter(job::Column::OwnerId.eq(owner))
        .filter(job::Column::Queue.eq(queue))
        .filter(job::Column::Phase.is_in(phases))
        .into_model::<Row>()
        .all(db)
        .await?;
    let (mut jobs, mut backfill_jobs) = (JobCounts::default(), JobCounts::default());
    let (mut used, mut running, mut pending, mut prequeued, mut backfill_used) = (
        ResourceList::new(),
        ResourceList::new(),
        ResourceList::new(),
        ResourceList::new(),
        ResourceList::new(),
    );
    for row in rows {
        let Ok(phase) = JobPhase::from_str(&row.phase) else {
            continue;
        };
        let Ok(request) = compact::decode_request(&row.request_milli) else {
            continue;
        };
        let backfill = row.schedule_type == ScheduleType::Backfill.as_str();
        let counts = if backfill { &mut backfill_jobs } else { &mut jobs };
        match phase {
            JobPhase::Prequeue => counts.prequeued += 1,
            JobPhase::Activating | JobPhase::Pending => counts.pending += 1,
            _ => counts.running += 1,
        }
        if backfill {
            if phase.is_occupying() {
                backfill_used.saturating_add_assign(&request);
            }
            continue;
        }
        match phase {
            JobPhase::Prequeue => prequeued.saturating_add_assign(&request),
            JobPhase::Activating | JobPhase::Pending => {
                pending.saturating_add_assign(&request);
                used.saturating_add_assign(&request);
            }
            _ => {
                running.saturating_add_assign(&request);
                used.saturating_add_assign(&request);
            }
        }
    }
    let (snapshot, tree) = quota_snapshot(db, config.clone(), queue).await?;
    let view = QuotaView::new(&snapshot, &tree);
    let limits = view.rule(queue).map(|r| r.limits.clone()).unwrap_or_default();
    let mut names: BTreeSet<String> = ["cpu".to_string(), "memory".to_string()].into();
    for list in [&used, &prequeued, &limits] {
        names.extend(list.iter().filter(|(_, q)| !q.is_zero()).map(|(n, _)| n.to_string()));
    }
    names.extend(limits.iter().map(|(n, _)| n.to_string()));
    let resources = names
        .into_iter()
        .map(|name| ResourceUsage {
            used: used.get(&name),
            running: running.get(&name),
            pending: pending.get(&name),
            prequeued: prequeued.get(&name),
            limit: limits.get_named(&name),
            resource: name,
        })
        .collect();
    let mut queues: Vec<QueueCapacityUse> = view
        .capacity_usage(queue)
        .into_iter()
        .map(|c| QueueCapacityUse {
            queue: c.queue,
            capacity: c.capacity,
            used: c.used,
            guarantee: ResourceList::new(),
            borrowed: ResourceList::new(),
            lent: ResourceList::new(),
        })
        .collect();
    if let Some((model, state)) = view.sharing() {
        add_sharing(&mut queues, &tree, model, state, &snapshot, queue);
    }
    Ok(ResourceSummary {
        queue: queue.to_owned(),
        quota_enabled: config.queue_quota_enabled,
        jobs,
        resources,
        backfill: BackfillUsage {
            jobs: backfill_jobs,
            used: backfill_used,
        },
        queues,
    })
}
