//! [`Sim::new`]: one read of the snapshot into dense columns and indices, so that the
//! simulation does no string work. Columns are the resources some check compares: those ready,
//! schedulable nodes name (the room) and, with quotas on, those quota limits and capacities
//! name; any other request entry cannot change a check and is dropped, as are zero requests.

use anteroom_shared::scheduling::{JobPhase, ScheduleType};
use chrono::{DateTime, Utc};

use super::{Group, NO_LIMIT, NO_PAIR, Sim, SimJob};
use crate::prequeue::fast_map::FastMap;
use crate::prequeue::forecast::tree::{FitTree, clamp};
use crate::prequeue::queue_tree::QueueTree;
use crate::prequeue::snapshot::{JobSnapshot, QueueQuota, Snapshot, UserId};

/// Resource names into dense columns (a snapshot names a handful).
#[derive(Default)]
struct Columns<'s> {
    index: FastMap<&'s str, u32>,
}

impl<'s> Columns<'s> {
    fn intern(&mut self, name: &'s str) -> u32 {
        let next = self.index.len() as u32;
        *self.index.entry(name).or_insert(next)
    }

    fn find(&self, name: &str) -> Option<u32> {
        self.index.get(name).copied()
    }
}

/// Queue names into indices, with each queue's path (itself, then its ancestors).
#[derive(Default)]
struct Queues<'s> {
    index: FastMap<&'s str, u32>,
    paths: Vec<Vec<u32>>,
}

impl<'s> Queues<'s> {
    /// The index of a queue, added as a root when only jobs name it.
    fn of(&mut self, name: &'s str) -> u32 {
        if let Some(&q) = self.index.get(name) {
            return q;
        }
        let q = self.paths.len() as u32;
        self.paths.push(vec![q]);
        self.index.insert(name, q);
        q
    }
}

impl Sim {
    /// Interns the snapshot: the waiting jobs of `order` into their groups (backfill jobs while
    /// backfill is disabled and normal jobs a spent budget holds are left out: they do not
    /// start while the hold lasts), and the occupying jobs with the
    /// time their runtime counts from (`startedAt`, else `now`), not yet counted.
    pub(super) fn new(snapshot: &Snapshot, order: &[u32], now: DateTime<Utc>) -> (Sim, Vec<(SimJob, DateTime<Utc>)>) {
        let quotas_on = snapshot.config.queue_quota_enabled;
        let tree = QueueTree::new_lenient(&snapshot.queues);

        // Columns: the room's first, then the rules' (quota limits, capacities).
        let mut columns = Columns::default();
        let mut room: Vec<i128> = Vec::new();
        for node in snapshot.nodes.iter().filter(|n| n.ready && n.schedulable) {
            for (name, value) in node.allocatable.iter() {
                let c = columns.intern(name) as usize;
                if c == room.len() {
                    room.push(0);
                }
                room[c] = room[c].saturating_add(value.milli());
            }
        }
        // The first rule of a queue wins, as in the round and `QuotaView`.
        let mut rule_of: FastMap<&str, &QueueQuota> = FastMap::default();
        if quotas_on {
            for rule in &snapshot.quotas {
                if !rule_of.contains_key(rule.queue.as_str()) {
                    rule_of.insert(rule.queue.as_str(), rule);
                    for (name, _) in rule.limits.iter() {
                        columns.intern(name);
                    }
                }
            }
        }
        // Queues: the tree's (the first row of a name wins, with or without a capacity), then
        // names only jobs use (roots without a capacity).
        let mut queues = Queues::default();
        let mut capacity: Vec<Vec<(u32, i128)>> = vec![Vec::new(); tree.len()];
        // Queues whose spent budget holds their normal jobs (§10): no estimate for those.
        let mut budget_held = vec![false; tree.len()];
        for spec in &snapshot.queues {
            let Some(i) = tree.index_of(&spec.name) else {
                continue;
            };
            if queues.index.contains_key(spec.name.as_str()) {
                continue;
            }
            budget_held[i] = spec.holding_budget(now).is_some();
            queues.index.insert(spec.name.as_str(), i as u32);
            if quotas_on {
                for (name, value) in spec.capacity.iter().flat_map(|c| c.iter()) {
                    capacity[i].push((columns.intern(name), value.milli()));
                }
            }
        }
        queues.paths = (0..tree.len())
            .map(|q| tree.path(q).iter().map(|&a| a as u32).collect())
            .collect();
        let width = columns.index.len();
        room.resize(width, i128::MAX);

        let mut sim = Sim {
            columns: width,
            quotas_on,
            room_used: vec![0; width],
            room,
            quota_limits: Vec::new(),
            max_active: Vec::new(),
            capped_path: Vec::new(),
            pair_used: Vec::new(),
            pair_active: Vec::new(),
            queue_used: Vec::new(),
            demand_col: Vec::with_capacity(snapshot.jobs.len() * 3),
            demand_val: Vec::with_capacity(snapshot.jobs.len() * 3),
            groups: Vec::new(),
            parked: Vec::new(),
            waiting: 0,
            ending: Vec::new(),
            ends: Default::default(),
        };
        // Pairs exist only for waiting normal jobs under a rule: no other pair is ever checked.
        let mut pair_index: FastMap<(UserId, u32), u32> = FastMap::default();
        let mut waiting = Vec::with_capacity(order.len());
        for (slot, &j) in order.iter().enumerate() {
            let job = &snapshot.jobs[j as usize];
            let backfill = job.schedule_type == ScheduleType::Backfill;
            if backfill && !snapshot.config.backfill_enabled {
                continue;
            }
            let q = queues.of(&job.queue);
            if !backfill
                && queues.paths[q as usize]
                    .iter()
                    .any(|&a| budget_held.get(a as usize) == Some(&true))
            {
                continue;
            }
            let pair = if !backfill && rule_of.contains_key(job.queue.as_str()) {
                let next = pair_index.len() as u32;
                *pair_index.entry((job.owner, q)).or_insert(next)
            } else {
                NO_PAIR
            };
            waiting.push(sim.intern_job(&columns, job, slot as u32, q, pair));
        }
        let mut occupying = Vec::new();
        for job in snapshot
            .jobs
            .iter()
            .filter(|j| j.phase != JobPhase::Prequeue && j.phase.is_occupying())
        {
            let q = queues.of(&job.queue);
            let pair = if job.schedule_type == ScheduleType::Normal {
                pair_index.get(&(job.owner, q)).copied().unwrap_or(NO_PAIR)
            } else {
                NO_PAIR
            };
            let sim_job = sim.intern_job(&columns, job, 0, q, pair);
            occupying.push((sim_job, job.started_at.unwrap_or(now)));
        }

        // Rules and capacities per queue, now that every queue has its index.
        let count = queues.paths.len();
        capacity.resize(count, Vec::new());
        sim.quota_limits = vec![Vec::new(); count];
        sim.max_active = vec![None; count];
        for (&name, &q) in &queues.index {
            if let Some(rule) = rule_of.get(name) {
                sim.quota_limits[q as usize] = rule
                    .limits
                    .iter()
                    .filter_map(|(n, v)| Some((columns.find(n)?, v.milli())))
                    .collect();
                sim.max_active[q as usize] = rule.max_active_jobs;
            }
        }
        sim.capped_path = queues
            .paths
            .iter()
            .map(|path| {
                path.iter()
                    .copied()
                    .filter(|&a| !capacity[a as usize].is_empty())
                    .collect()
            })
            .collect();
        sim.pair_used = vec![0; pair_index.len() * width];
        sim.pair_active = vec![0; pair_index.len()];
        sim.parked = vec![Vec::new(); pair_index.len()];
        sim.queue_used = vec![0; count * width];
        sim.group(waiting, &capacity);
        (sim, occupying)
    }

    /// A job's demand entries on the columns (zero requests are no requests) and its indices.
    fn intern_job(&mut self, columns: &Columns<'_>, job: &JobSnapshot, slot: u32, queue: u32, pair: u32) -> SimJob {
        let demand_start = self.demand_col.len() as u32;
        for (name, value) in job.resources.iter() {
            if let Some(c) = columns.find(name).filter(|_| !value.is_zero()) {
                self.demand_col.push(c);
                self.demand_val.push(value.milli());
            }
        }
        SimJob {
            limit: job.max_runtime_seconds.map_or(NO_LIMIT, |s| s.max(0)),
            slot,
            pair,
            queue,
            demand_start,
            demand_len: self.demand_col.len() as u32 - demand_start,
            backfill: job.schedule_type == ScheduleType::Backfill,
        }
    }

    /// Splits the waiting jobs (in consideration order) into groups by the capped queues they
    /// are checked against, and builds each group's tree.
    fn group(&mut self, waiting: Vec<SimJob>, capacity: &[Vec<(u32, i128)>]) {
        let width = self.columns;
        let mut group_of: FastMap<&[u32], usize> = FastMap::default();
        let mut members: Vec<(Vec<SimJob>, Vec<i64>)> = Vec::new();
        let none: &[u32] = &[];
        for job in waiting {
            let path = if job.backfill || !self.quotas_on {
                none
            } else {
                self.capped_path[job.queue as usize].as_slice()
            };
            let g = *group_of.entry(path).or_insert_with(|| {
                members.push((Vec::new(), Vec::new()));
                members.len() - 1
            });
            let (jobs, rows) = &mut members[g];
            let row = rows.len();
            rows.resize(row + width + 1, 0);
            let range = job.demand_start as usize..(job.demand_start + job.demand_len) as usize;
            for i in range {
                rows[row + 1 + self.demand_col[i] as usize] = clamp(self.demand_val[i]);
            }
            jobs.push(job);
        }
        let mut paths: Vec<&[u32]> = vec![none; members.len()];
        for (path, &g) in &group_of {
            paths[g] = path;
        }
        let groups: Vec<Group> = members
            .into_iter()
            .zip(paths)
            .map(|((jobs, rows), path)| Group {
                jobs,
                tree: FitTree::new(width + 1, rows),
                checks: path
                    .iter()
                    .flat_map(|&a| {
                        capacity[a as usize]
                            .iter()
                            .map(move |&(c, cap)| (a * width as u32 + c, c, cap))
                    })
                    .collect(),
            })
            .collect();
        self.waiting = groups.iter().map(|g| g.jobs.len()).sum();
        self.groups = groups;
    }
}
