//! `ar usage` against the real server: a running job's use read back as a table, JSON and
//! CSV, the caller's fair share, and a date it cannot read.

use std::time::Duration;

use anteroom_tests::TestApp;

mod common;

use common::{JOB, user};

#[tokio::test]
async fn usage_reads_back_as_a_table_json_csv_and_a_fair_share() {
    let app = TestApp::builder().start().await;
    let ar = user(&app, "una").await;
    let job = ar.file("job.yaml", JOB);
    ar.run(&["submit", "-f", &job]).await.ok();
    // The job starts on the simulated cluster within a few of its steps; its run is then in
    // the usage history (counted until now).
    let mut rows = serde_json::Value::Null;
    for _ in 0..200 {
        let report = ar.run(&["usage", "--json"]).await.ok().json();
        if report["rows"].as_array().is_some_and(|r| !r.is_empty()) {
            rows = report["rows"].clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(rows[0]["user"], "una", "{rows}");
    assert_eq!(rows[0]["queue"], "default", "{rows}");
    assert_eq!(rows[0]["jobs"], 1, "{rows}");
    let table = ar.run(&["usage"]).await.ok();
    assert!(
        table.stdout.contains("PERIOD") && table.stdout.contains("una"),
        "{table:?}"
    );
    let csv = ar.run(&["usage", "--csv", "--by", "month"]).await.ok();
    let mut lines = csv.stdout.lines();
    assert_eq!(lines.next(), Some(anteroom_shared::api::usage::CSV_HEADER));
    assert!(lines.any(|l| l.contains(",default,una,cpu,")), "{csv:?}");
    let share = ar.run(&["usage", "--fair-share"]).await.ok();
    assert!(
        share.stdout.contains("does not order by fair share over time"),
        "{share:?}"
    );
    let bad = ar.run(&["usage", "--from", "last tuesday"]).await;
    assert_eq!(bad.code, 2, "a usage mistake: {bad:?}");
}
