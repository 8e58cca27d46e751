//! The index that lets a walk skip the jobs that cannot fit: a tournament tree over one group's
//! waiting jobs in consideration order whose every node keeps, per column, the least demand of
//! the live jobs below it. "The first live job at or after position `i` whose demand is within
//! the slack on every column" then descends only into subtrees where some job may fit; at
//! 100 000 waiting jobs in a full cluster, that is a few dozen nodes instead of every job.
//!
//! The tree only prunes: a job it returns is checked exactly by the caller. Pruning must
//! therefore never drop a job that fits, which is why values are clamped into `i64`
//! monotonically (`d ≤ s` stays true after clamping both) and why a per-column minimum, which
//! may let through a subtree where no single job fits every column, is enough.

/// Column 0 of every row: 0 for a live job, 1 for a started, parked or padding one; its
/// slack is 0, so a subtree without a live job is always pruned.
const DEAD: i64 = 1;

/// One group's tree. Rows are `width` values: the liveness column, then one per column.
#[derive(Debug)]
pub(super) struct FitTree {
    width: usize,
    /// Leaves (a power of two, padded with dead rows).
    size: usize,
    /// Node `n`'s row at `n * width`; node 1 is the root, leaf `i` is node `size + i`.
    mins: Vec<i64>,
    /// The demand row of each job, restored when a parked job comes back.
    rows: Vec<i64>,
}

impl FitTree {
    /// A tree over `rows` (one row of `width` values per job, liveness column 0), all live.
    pub(super) fn new(width: usize, rows: Vec<i64>) -> Self {
        let jobs = rows.len() / width;
        let size = jobs.next_power_of_two().max(1);
        let mut mins = vec![i64::MAX; 2 * size * width];
        for leaf in size..2 * size {
            mins[leaf * width] = DEAD;
        }
        mins[size * width..(size + jobs) * width].copy_from_slice(&rows);
        let mut tree = FitTree {
            width,
            size,
            mins,
            rows,
        };
        for node in (1..size).rev() {
            tree.pull(node);
        }
        tree
    }

    /// Node `node`'s row from its two children.
    fn pull(&mut self, node: usize) {
        let w = self.width;
        for c in 0..w {
            self.mins[node * w + c] = self.mins[2 * node * w + c].min(self.mins[(2 * node + 1) * w + c]);
        }
    }

    /// Marks job `pos` live (with its demand) or not (started or parked).
    pub(super) fn set_live(&mut self, pos: usize, live: bool) {
        let w = self.width;
        let leaf = self.size + pos;
        if live {
            self.mins[leaf * w..(leaf + 1) * w].copy_from_slice(&self.rows[pos * w..(pos + 1) * w]);
        } else {
            self.mins[leaf * w] = DEAD;
            self.mins[leaf * w + 1..(leaf + 1) * w].fill(i64::MAX);
        }
        let mut node = leaf / 2;
        while node >= 1 {
            self.pull(node);
            node /= 2;
        }
    }

    /// The first live job at or after `from` whose row is within `slack` on every column
    /// (`slack[0]` is 0, the liveness column's).
    pub(super) fn first_fit(&self, from: usize, slack: &[i64]) -> Option<usize> {
        self.descend(1, 0, self.size, from, slack)
    }

    fn descend(&self, node: usize, lo: usize, hi: usize, from: usize, slack: &[i64]) -> Option<usize> {
        if hi <= from || !self.may_fit(node, slack) {
            return None;
        }
        if hi - lo == 1 {
            return Some(lo);
        }
        let mid = (lo + hi) / 2;
        self.descend(2 * node, lo, mid, from, slack)
            .or_else(|| self.descend(2 * node + 1, mid, hi, from, slack))
    }

    fn may_fit(&self, node: usize, slack: &[i64]) -> bool {
        let row = &self.mins[node * self.width..(node + 1) * self.width];
        row.iter().zip(slack).all(|(min, s)| min <= s)
    }
}

/// `v` clamped into `i64`: monotone, so comparisons that hold in `i128` hold after it.
pub(super) fn clamp(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v > 0 { i64::MAX } else { i64::MIN })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(rows: &[[i64; 2]]) -> FitTree {
        let flat = rows.iter().flat_map(|r| [0, r[0], r[1]]).collect();
        FitTree::new(3, flat)
    }

    #[test]
    fn the_first_fit_is_the_first_job_within_the_slack_on_every_column() {
        let t = tree(&[[5, 1], [1, 5], [2, 2], [1, 1], [3, 0]]);
        assert_eq!(t.first_fit(0, &[0, 2, 2]), Some(2));
        assert_eq!(t.first_fit(3, &[0, 2, 2]), Some(3));
        assert_eq!(t.first_fit(4, &[0, 2, 2]), None);
        assert_eq!(t.first_fit(0, &[0, 0, 0]), None);
        assert_eq!(t.first_fit(0, &[0, i64::MAX, i64::MAX]), Some(0));
    }

    #[test]
    fn a_job_set_dead_is_skipped_until_it_is_live_again() {
        let mut t = tree(&[[1, 1], [1, 1], [9, 9]]);
        t.set_live(0, false);
        assert_eq!(t.first_fit(0, &[0, 1, 1]), Some(1));
        t.set_live(1, false);
        assert_eq!(t.first_fit(0, &[0, 1, 1]), None);
        // Padding and dead jobs never fit, whatever the slack.
        assert_eq!(t.first_fit(0, &[0, i64::MAX, i64::MAX]), Some(2));
        t.set_live(0, true);
        assert_eq!(t.first_fit(0, &[0, 1, 1]), Some(0));
    }

    #[test]
    fn an_empty_tree_has_no_fit() {
        assert_eq!(FitTree::new(3, Vec::new()).first_fit(0, &[0, 1, 1]), None);
    }

    #[test]
    fn clamping_keeps_the_order() {
        assert_eq!(clamp(i128::MAX), i64::MAX);
        assert_eq!(clamp(i128::MIN), i64::MIN);
        assert_eq!(clamp(-5), -5);
    }
}
