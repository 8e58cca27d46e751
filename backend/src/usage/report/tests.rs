//! Reports split runs across periods to the second; the property: whatever the grouping, the
//! rows add up to each run's time inside the range.

use chrono::Duration;
use proptest::prelude::*;

use super::*;

const GPU: &str = "nvidia.com/a100";

fn at(text: &str) -> DateTime<Utc> {
    text.parse().expect("an RFC 3339 time")
}

fn run(queue: &str, user: &str, resources: &[(&str, &str)], started: &str, ended: Option<&str>) -> Run {
    Run {
        queue: queue.into(),
        user: user.into(),
        schedule_type: ScheduleType::Normal,
        resources: ResourceList::parse_map(resources.iter().copied()).expect("quantities"),
        waiting_since: at(started),
        started_at: at(started),
        ended_at: ended.map(at),
        end_phase: ended.map(|_| "Completed".to_owned()),
    }
}

#[test]
fn a_run_across_midnight_is_split_to_the_second() {
    let runs = [run(
        "nlp",
        "nina",
        &[(GPU, "2"), ("cpu", "4"), ("memory", "8Gi")],
        "2026-11-27T23:00:00Z",
        Some("2026-11-28T01:30:00Z"),
    )];
    let rows = report(
        &runs,
        at("2026-11-01T00:00:00Z"),
        at("2026-12-01T00:00:00Z"),
        UsagePeriod::Day,
        at("2026-11-29T00:00:00Z"),
    );
    assert_eq!(rows.len(), 2);
    assert_eq!((rows[0].period.as_str(), rows[0].used[GPU]), ("2026-11-27", 2.0));
    assert_eq!((rows[1].period.as_str(), rows[1].used[GPU]), ("2026-11-28", 3.0));
    assert_eq!(rows[0].used["cpu"], 4.0);
    assert_eq!(rows[1].used["memory"], 12.0, "GiB-hours");
    // The run started on the 27th: its wait and count are there, not on the 28th.
    assert_eq!((rows[0].jobs, rows[1].jobs), (1, 0));
}

#[test]
fn weeks_are_iso_weeks_and_months_calendar_months() {
    // Sunday 29 November 2026 is in ISO week 48, which began on Monday the 23rd.
    let sunday = at("2026-11-29T12:00:00Z");
    assert_eq!(period_start(sunday, UsagePeriod::Week), at("2026-11-23T00:00:00Z"));
    assert_eq!(
        period_name(period_start(sunday, UsagePeriod::Week), UsagePeriod::Week),
        "2026-W48"
    );
    // 1 January 2027 (a Friday) belongs to 2026's week 53.
    let new_year = at("2027-01-01T08:00:00Z");
    assert_eq!(
        period_name(period_start(new_year, UsagePeriod::Week), UsagePeriod::Week),
        "2026-W53"
    );
    assert_eq!(period_start(sunday, UsagePeriod::Month), at("2026-11-01T00:00:00Z"));
    let runs = [run(
        "cv",
        "carl",
        &[(GPU, "1")],
        "2026-11-30T22:00:00Z",
        Some("2026-12-01T02:00:00Z"),
    )];
    let rows = report(
        &runs,
        at("2026-01-01T00:00:00Z"),
        at("2027-01-01T00:00:00Z"),
        UsagePeriod::Month,
        sunday,
    );
    let by: Vec<(&str, f64)> = rows.iter().map(|r| (r.period.as_str(), r.used[GPU])).collect();
    assert_eq!(by, [("2026-11", 2.0), ("2026-12", 2.0)]);
}

#[test]
fn elastic_use_waits_and_ends_are_counted_apart() {
    let mut elastic = run(
        "nlp",
        "nina",
        &[(GPU, "1")],
        "2026-11-27T10:00:00Z",
        Some("2026-11-27T11:00:00Z"),
    );
    elastic.schedule_type = ScheduleType::Backfill;
    elastic.end_phase = Some("Preempted".into());
    let mut waited = Vec::new();
    for (i, wait) in [10, 20, 30, 40, 50, 60, 70, 80, 90, 100].iter().enumerate() {
        let mut r = run(
            "nlp",
            "nina",
            &[(GPU, "1")],
            "2026-11-27T12:00:00Z",
            Some("2026-11-27T12:30:00Z"),
        );
        r.waiting_since = r.started_at - Duration::seconds(*wait);
        if i == 0 {
            r.end_phase = Some("Reclaimed".into());
        }
        waited.push(r);
    }
    let mut runs = vec![elastic];
    runs.extend(waited);
    let rows = report(
        &runs,
        at("2026-11-27T00:00:00Z"),
        at("2026-11-28T00:00:00Z"),
        UsagePeriod::Day,
        at("2026-11-28T00:00:00Z"),
    );
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(row.backfill[GPU], 1.0);
    assert_eq!(row.used[GPU], 5.0, "ten half-hour runs");
    assert_eq!(row.jobs, 11);
    // Waits: 0 (the Elastic run) and 10..100: nearest rank 6 of 11 and 10 of 11.
    assert_eq!(
        (row.wait_median_seconds, row.wait_p90_seconds),
        (Some(50.0), Some(90.0))
    );
    assert_eq!((row.preempted, row.reclaimed), (1, 1));
}

#[test]
fn a_running_run_counts_until_now_and_nothing_counts_outside_the_range() {
    let runs = [run("nlp", "nina", &[(GPU, "4")], "2026-11-27T06:00:00Z", None)];
    let rows = report(
        &runs,
        at("2026-11-27T08:00:00Z"),
        at("2026-11-27T20:00:00Z"),
        UsagePeriod::Day,
        at("2026-11-27T09:30:00Z"),
    );
    assert_eq!(rows[0].used[GPU], 6.0, "from 08:00 (the range) to 09:30 (now), 4 GPUs");
    assert_eq!(rows[0].jobs, 0, "it started before the range");
}

fn arb_runs() -> impl Strategy<Value = Vec<(i64, i64, Option<i64>, u8)>> {
    // (start offset, length, end or running, GPUs) in seconds around 2026-11-20.
    prop::collection::vec(
        (
            0_i64..40 * 86_400,
            1_i64..10 * 86_400,
            prop::option::weighted(0.8, Just(0_i64)),
            1_u8..9,
        ),
        0..12,
    )
    .prop_map(|v| v.into_iter().map(|(s, l, e, g)| (s, l, e.map(|_| s + l), g)).collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn rows_add_up_to_each_runs_time_in_the_range(
        runs in arb_runs(),
        from_off in 0_i64..20 * 86_400,
        span in 1_i64..30 * 86_400,
        now_off in 0_i64..50 * 86_400,
        by in prop::sample::select(vec![UsagePeriod::Day, UsagePeriod::Week, UsagePeriod::Month]),
    ) {
        let base = at("2026-11-20T00:00:00Z");
        let from = base + Duration::seconds(from_off);
        let to = from + Duration::seconds(span);
        let now = base + Duration::seconds(now_off);
        let built: Vec<Run> = runs
            .iter()
            .map(|(s, _, e, g)| Run {
                queue: "q".into(),
                user: "u".into(),
                schedule_type: ScheduleType::Normal,
                resources: ResourceList::parse_map([(GPU, g.to_string().as_str())]).expect("gpus"),
                waiting_since: base + Duration::seconds(*s),
                started_at: base + Duration::seconds(*s),
                ended_at: e.map(|e| base + Duration::seconds(e)),
                end_phase: None,
            })
            .collect();
        let expected: f64 = built
            .iter()
            .map(|r| {
                let end = r.ended_at.unwrap_or(now).min(to);
                let start = r.started_at.max(from);
                let seconds = (end - start).num_seconds().max(0) as f64;
                seconds * report_units(GPU, r.resources.get(GPU).milli()) / 3600.0
            })
            .sum();
        let rows = report(&built, from, to, by, now);
        let total: f64 = rows.iter().map(|r| r.used.get(GPU).copied().unwrap_or(0.0)).sum();
        prop_assert!((total - expected).abs() < 1e-6, "{total} vs {expected}");
        // Periods are in order, each named once per queue and user.
        let starts: Vec<_> = rows.iter().map(|r| r.period_start).collect();
        prop_assert!(starts.windows(2).all(|w| w[0] < w[1]), "{:?}", starts);
    }
}
