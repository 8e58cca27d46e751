//! What the chart draws and the table lists, from a report (pure, so the numbers are tested
//! without a browser): one bar per period of the range, empty periods included, stacked by queue
//! or user, normal use apart from Elastic use; the table's rows and totals in the same hours.

use std::collections::BTreeMap;

use anteroom_shared::api::usage::{UsageReport, UsageRow, next_period, period_start};
use chrono::{DateTime, Utc};

use super::query::{Resource, Stack};

/// The groups that get a shade of their own; the rest of a report is drawn together as
/// [`Group::Other`] (a stack of thirty shades reads as none).
const SHADES: usize = crate::components::palette::USAGE_SHADES;

/// A part of a stack: a queue or a user, or the smaller ones together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Group {
    /// A queue's or a user's name.
    Named(String),
    /// Every group past the first [`SHADES`].
    Other,
}

/// One part of one bar.
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    /// Index into [`Chart::groups`] (its shade and legend entry).
    pub group: usize,
    /// Elastic (backfill) use rather than normal use.
    pub elastic: bool,
    /// Its hours.
    pub hours: f64,
}

/// One period's bar: normal parts first (bottom), then Elastic parts, each in legend order.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    /// The period's first instant.
    pub start: DateTime<Utc>,
    /// Its parts with some use.
    pub parts: Vec<Part>,
}

impl Bar {
    /// The bar's height in hours.
    pub fn total(&self) -> f64 {
        self.parts.iter().map(|p| p.hours).sum()
    }
}

/// The chart of a report.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// The groups in legend order: the largest first, [`Group::Other`] last when there is one.
    pub groups: Vec<Group>,
    /// A bar per period of the range.
    pub bars: Vec<Bar>,
    /// The axis: its top and the distance between its ticks, in hours.
    pub scale: (f64, f64),
}

/// The name a row goes under when bars stack by `stack`.
pub fn group_of(row: &UsageRow, stack: Stack) -> &str {
    match stack {
        Stack::Queue => &row.queue,
        Stack::User => &row.user,
    }
}

/// The chart of `report` counting `resource`, stacked by `stack`.
pub fn chart(report: &UsageReport, resource: Resource, stack: Stack) -> Chart {
    // Each group's hours over the whole range decide its place in the legend.
    let mut sizes: BTreeMap<&str, f64> = BTreeMap::new();
    for row in &report.rows {
        *sizes.entry(group_of(row, stack)).or_default() += resource.hours(&row.used) + resource.hours(&row.backfill);
    }
    let mut order: Vec<(&str, f64)> = sizes.into_iter().collect();
    order.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    let folded = order.len() > SHADES;
    let named = if folded { SHADES } else { order.len() };
    let index_of = |name: &str| order[..named].iter().position(|(n, _)| *n == name).unwrap_or(named);
    let mut groups: Vec<Group> = order[..named]
        .iter()
        .map(|(n, _)| Group::Named((*n).to_owned()))
        .collect();
    if folded {
        groups.push(Group::Other);
    }
    let mut starts = Vec::new();
    let mut start = period_start(report.from, report.by);
    while start < report.to {
        starts.push(start);
        start = next_period(start, report.by);
    }
    let bars = starts
        .into_iter()
        .map(|start| {
            // (elastic, group) → hours: normal before Elastic, each in legend order.
            let mut sums: BTreeMap<(bool, usize), f64> = BTreeMap::new();
            for row in report.rows.iter().filter(|r| r.period_start == start) {
                let group = index_of(group_of(row, stack));
                *sums.entry((false, group)).or_default() += resource.hours(&row.used);
                *sums.entry((true, group)).or_default() += resource.hours(&row.backfill);
            }
            let parts = sums
                .into_iter()
                .filter(|(_, hours)| *hours > 0.0)
                .map(|((elastic, group), hours)| Part { group, elastic, hours })
                .collect();
            Bar { start, parts }
        })
        .collect::<Vec<_>>();
    let highest = bars.iter().map(Bar::total).fold(0.0, f64::max);
    Chart {
        groups,
        bars,
        scale: scale(highest),
    }
}

/// An axis for values up to `highest`: a top at a round number and a tick step of 1, 2, 2.5 or
/// 5 times a power of ten, at most four steps up to it (an empty chart: 0 to 1).
pub fn scale(highest: f64) -> (f64, f64) {
    if !(highest.is_finite() && highest > 0.0) {
        return (1.0, 0.25);
    }
    let rough = highest / 4.0;
    let power = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|s| *s >= rough)
        .unwrap_or(10.0 * power);
    ((highest / step).ceil() * step, step)
}

/// One line of the table: a row of the report with the counted resource's hours.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// The report's row (period, queue, user, runs, waits, preemptions, reclaims).
    pub row: UsageRow,
    /// Normal use.
    pub normal: f64,
    /// Elastic use.
    pub elastic: f64,
}

/// The table's lines: every row of the report, by period, then the group its bar stacks it
/// under, then the other name.
pub fn lines(report: &UsageReport, resource: Resource, stack: Stack) -> Vec<Line> {
    let mut lines: Vec<Line> = report
        .rows
        .iter()
        .map(|row| Line {
            row: row.clone(),
            normal: resource.hours(&row.used),
            elastic: resource.hours(&row.backfill),
        })
        .collect();
    let other = |row: &UsageRow| match stack {
        Stack::Queue => row.user.clone(),
        Stack::User => row.queue.clone(),
    };
    lines.sort_by(|a, b| {
        (a.row.period_start, group_of(&a.row, stack), other(&a.row)).cmp(&(
            b.row.period_start,
            group_of(&b.row, stack),
            other(&b.row),
        ))
    });
    lines
}

/// The table's totals. Waits have none: a median of medians is no median.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Totals {
    /// Normal use.
    pub normal: f64,
    /// Elastic use.
    pub elastic: f64,
    /// Runs started.
    pub runs: u64,
    /// Runs preempted.
    pub preempted: u64,
    /// Runs reclaimed.
    pub reclaimed: u64,
}

/// The sums of `lines`.
pub fn totals(lines: &[Line]) -> Totals {
    lines.iter().fold(Totals::default(), |t, l| Totals {
        normal: t.normal + l.normal,
        elastic: t.elastic + l.elastic,
        runs: t.runs + l.row.jobs,
        preempted: t.preempted + l.row.preempted,
        reclaimed: t.reclaimed + l.row.reclaimed,
    })
}

#[cfg(test)]
mod tests {
    use anteroom_shared::api::usage::UsagePeriod;

    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().expect("an RFC 3339 time")
    }

    fn row(day: &str, queue: &str, user: &str, gpu: f64, elastic: f64) -> UsageRow {
        UsageRow {
            period: day.to_owned(),
            period_start: at(&format!("{day}T00:00:00Z")),
            queue: queue.to_owned(),
            user: user.to_owned(),
            used: BTreeMap::from([("nvidia.com/a100".to_owned(), gpu), ("cpu".to_owned(), 4.0)]),
            backfill: BTreeMap::from([("nvidia.com/a100".to_owned(), elastic)]),
            jobs: 1,
            wait_median_seconds: Some(30.0),
            wait_p90_seconds: Some(60.0),
            preempted: 0,
            reclaimed: 1,
        }
    }

    fn report(rows: Vec<UsageRow>) -> UsageReport {
        UsageReport {
            from: at("2026-11-22T00:00:00Z"),
            to: at("2026-11-25T00:00:00Z"),
            by: UsagePeriod::Day,
            rows,
        }
    }

    #[test]
    fn every_period_has_a_bar_and_its_parts_add_up_to_the_rows() {
        let r = report(vec![
            row("2026-11-23", "default", "nina", 3.5, 1.0 / 3.0),
            row("2026-11-23", "default", "carl", 8.0, 0.0),
            row("2026-11-24", "nlp", "nina", 1.0, 0.0),
        ]);
        let c = chart(&r, Resource::Gpu, Stack::User);
        let days: Vec<String> = c.bars.iter().map(|b| b.start.format("%d").to_string()).collect();
        assert_eq!(days, ["22", "23", "24"], "the empty 22nd has its place");
        assert!(c.bars[0].parts.is_empty());
        // carl used more over the range, so he comes first; normal parts before Elastic ones.
        assert_eq!(c.groups, [Group::Named("carl".into()), Group::Named("nina".into())]);
        let parts: Vec<(usize, bool, f64)> = c.bars[1].parts.iter().map(|p| (p.group, p.elastic, p.hours)).collect();
        assert_eq!(parts, [(0, false, 8.0), (1, false, 3.5), (1, true, 1.0 / 3.0)]);
        assert_eq!(c.bars[2].total(), 1.0);
        assert_eq!(c.scale, (15.0, 5.0), "11.83 hours on the 23rd");
        // By queue, the same day is one group.
        let by_queue = chart(&r, Resource::Gpu, Stack::Queue);
        assert_eq!(by_queue.bars[1].parts.len(), 2);
        assert_eq!(by_queue.bars[1].parts[0].hours, 11.5);
    }

    #[test]
    fn groups_past_the_shades_are_drawn_together() {
        let rows = (0..SHADES + 2)
            .map(|i| row("2026-11-23", &format!("q{i}"), "nina", 1.0 + i as f64, 0.0))
            .collect();
        let c = chart(&report(rows), Resource::Gpu, Stack::Queue);
        assert_eq!(c.groups.len(), SHADES + 1);
        assert_eq!(c.groups[0], Group::Named(format!("q{}", SHADES + 1)));
        assert_eq!(c.groups[SHADES], Group::Other);
        // The two smallest (1 and 2 hours) are the one "other" part.
        let other: Vec<f64> = c.bars[1]
            .parts
            .iter()
            .filter(|p| p.group == SHADES)
            .map(|p| p.hours)
            .collect();
        assert_eq!(other, [3.0]);
    }

    #[test]
    fn an_axis_ends_on_a_round_number_above_the_highest_bar() {
        assert_eq!(scale(0.0), (1.0, 0.25));
        assert_eq!(scale(3.5), (4.0, 1.0));
        assert_eq!(scale(8.0), (8.0, 2.0));
        let (top, step) = scale(0.33);
        assert!((top - 0.4).abs() < 1e-12 && (step - 0.1).abs() < 1e-12, "{top} {step}");
        assert_eq!(scale(950.0), (1000.0, 250.0));
        for highest in [0.01, 0.7, 1.0, 9.99, 17.0, 123.4, 5e6] {
            let (top, step) = scale(highest);
            assert!(top >= highest && top / step <= 4.0 + 1e-9, "{highest}: {top} {step}");
        }
    }

    #[test]
    fn the_table_lists_each_row_by_period_then_group_and_totals_what_adds_up() {
        let r = report(vec![
            row("2026-11-24", "nlp", "nina", 1.0, 0.0),
            row("2026-11-23", "default", "nina", 3.5, 0.5),
            row("2026-11-23", "default", "carl", 8.0, 0.0),
        ]);
        let by_user = lines(&r, Resource::Gpu, Stack::User);
        let order: Vec<(&str, &str)> = by_user
            .iter()
            .map(|l| (l.row.period.as_str(), l.row.user.as_str()))
            .collect();
        assert_eq!(
            order,
            [("2026-11-23", "carl"), ("2026-11-23", "nina"), ("2026-11-24", "nina")]
        );
        let t = totals(&by_user);
        assert_eq!((t.normal, t.elastic, t.runs, t.reclaimed), (12.5, 0.5, 3, 3));
        assert_eq!(lines(&r, Resource::Cpu, Stack::Queue)[0].normal, 4.0);
    }
}
