//! The usage page (issue 44, point 3) on usage the simulated cluster ran with the hand clock, so
//! the hours are exact: a user sees a chart with bars and a table with the very GPU-hours the API
//! reports ("3.50"), the same total, a CSV link that downloads what `Accept: text/csv` answers,
//! and their fair share; an admin sees everyone's, stacks by user and filters to one user. In
//! Chinese, Japanese and Korean nothing is left in English; light and dark, axe finds nothing.

use anteroom_tests::api::{call, settings};
use anteroom_tests::browser::{Browser, LATIN_ALLOWED, require_ui};
use anteroom_tests::driven::{Driven, GPU_NODES, sleeping, submit};
use anteroom_tests::{ADMIN_PASSWORD, USER_PASSWORD};
use serde_json::{Value, json};

/// What this page may show in Latin letters besides [`LATIN_ALLOWED`]: the users the test
/// seeds, and the names of a format and a unit.
const SEEDED: &[&str] = &["nina", "carl", "CSV", "GiB"];

/// The day the runs happened, as the page's URL and the API name it.
const DAY: &str = "from=2026-11-23&to=2026-11-23";
const API_DAY: &str = "/api/v1/usage?from=2026-11-23T00:00:00Z&to=2026-11-24T00:00:00Z&by=day";

/// GPU-hours of a row's per-resource map (every accelerator), as the table writes them.
fn gpu_hours(hours: &Value) -> f64 {
    hours
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, _)| k.contains('/'))
                .filter_map(|(_, v)| v.as_f64())
                .sum()
        })
        .unwrap_or(0.0)
}

/// Per row of an API report, what the table must show: (period, queue, user, normal, Elastic,
/// runs), the hours with two decimals.
fn expected_rows(report: &Value) -> Vec<Vec<String>> {
    let mut rows: Vec<Vec<String>> = report["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            vec![
                r["period"].as_str().unwrap().to_owned(),
                r["queue"].as_str().unwrap().to_owned(),
                r["user"].as_str().unwrap().to_owned(),
                format!("{:.2}", gpu_hours(&r["used"])),
                format!("{:.2}", gpu_hours(&r["backfill"])),
                r["jobs"].to_string(),
            ]
        })
        .collect();
    rows.sort();
    rows
}

/// The same, as the page's table shows it.
async fn shown_rows(b: &Browser) -> Vec<Vec<String>> {
    let rows = b
        .client
        .execute(
            "return Array.from(document.querySelectorAll('[data-testid=usage-row]')).map(r => [\
               r.dataset.period, r.dataset.queue, r.dataset.user, \
               ...['usage-normal', 'usage-elastic', 'usage-runs'].map(c => \
                 r.querySelector(`[data-testid=${c}]`).textContent.trim())]);",
            vec![],
        )
        .await
        .expect("the table's rows");
    let mut rows: Vec<Vec<String>> = serde_json::from_value(rows).expect("rows of text");
    rows.sort();
    rows
}

/// The total line's (normal, Elastic) GPU-hours.
async fn shown_total(b: &Browser) -> (String, String) {
    (
        b.text("[data-testid=usage-total] [data-testid=usage-normal]").await,
        b.text("[data-testid=usage-total] [data-testid=usage-elastic]").await,
    )
}

/// The chart's bars, and its parts as (group, Elastic, hours, drawn height).
async fn chart(b: &Browser) -> (u64, Vec<(String, bool, f64, f64)>) {
    let bars = b
        .client
        .execute(
            "return document.querySelectorAll('[data-testid=usage-chart] [data-testid=chart-bar]').length",
            vec![],
        )
        .await
        .expect("the bars");
    let parts = b
        .client
        .execute(
            "return Array.from(document.querySelectorAll('[data-testid=chart-part]')).map(p => [\
               p.dataset.group, p.dataset.elastic === 'true', Number(p.dataset.hours), \
               Number(p.querySelector('rect').getAttribute('height'))]);",
            vec![],
        )
        .await
        .expect("the parts");
    (
        bars.as_u64().expect("a count"),
        serde_json::from_value(parts).expect("parts"),
    )
}

/// Opens `path` and waits for the report's rows (and nothing loading).
async fn open_report(b: &Browser, d: &Driven, path: &str) {
    b.client.goto(&d.app.url(path)).await.unwrap();
    b.wait_for("[data-testid=usage-row]")
        .await
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    b.wait_until(
        &format!("{path} loads"),
        "!document.querySelector('[data-testid=loading]')",
    )
    .await
    .unwrap();
}

/// The page in the dark theme: clean (axe checks every text's contrast there too), then light.
async fn in_the_dark(b: &Browser, page: &str) {
    b.select("#theme-select", "dark").await;
    b.wait_until(
        &format!("{page} turns dark"),
        "document.documentElement.className === 'dark'",
    )
    .await
    .unwrap();
    b.assert_clean(&format!("{page}, dark")).await;
    b.screenshot(&format!("{page}-dark")).await;
    b.select("#theme-select", "light").await;
    b.wait_until(
        &format!("{page} turns light"),
        "document.documentElement.className === ''",
    )
    .await
    .unwrap();
}

/// The page in Chinese, Japanese and Korean: translated, clean, no English left; then English.
async fn translated(b: &Browser, page: &str) {
    let allowed: Vec<&str> = LATIN_ALLOWED.iter().chain(SEEDED).copied().collect();
    for lang in ["zh", "ja", "ko"] {
        b.select("#lang-select", lang).await;
        b.wait_until(
            "the language is applied",
            &format!("document.documentElement.lang === '{lang}'"),
        )
        .await
        .unwrap();
        assert_ne!(b.text("[data-testid=page-title]").await, "Usage", "{page} in {lang}");
        b.assert_clean(&format!("{page} in {lang}")).await;
        let stray = b.latin_words(&allowed).await;
        assert!(stray.is_empty(), "{page} in {lang} shows untranslated words: {stray:?}");
        b.screenshot(&format!("{page}-{lang}")).await;
    }
    b.select("#lang-select", "en").await;
    b.wait_until("back in English", "document.documentElement.lang === 'en'")
        .await
        .unwrap();
}

#[tokio::test]
#[ignore = "needs Chromium"]
async fn browser_the_usage_page_shows_the_hours_the_api_reports_to_a_user_and_an_admin() {
    require_ui();
    let d = Driven::start(None, GPU_NODES).await;
    let admin = d.app.admin_token().await;
    settings(&d.app, &admin, json!({"backfillEnabled": true})).await;
    let nina = d.app.user_token("nina").await;
    let carl = d.app.user_token("carl").await;
    // 08:00 on Monday 23 November: nina's 2 GPUs for an hour and 1 GPU for 90 minutes (3.50
    // GPU-hours), an Elastic GPU for 20 minutes (0.33); carl's 4 GPUs for 2 hours (8.00).
    submit(&d, &nina, sleeping("short", 2, 3600, "normal")).await;
    submit(&d, &nina, sleeping("longer", 1, 5400, "normal")).await;
    submit(&d, &nina, sleeping("spare", 1, 1200, "backfill")).await;
    submit(&d, &carl, sleeping("night", 4, 7200, "normal")).await;
    d.settle().await;
    for _ in 0..14 {
        d.advance(10 * 60).await;
        d.round().await;
    }
    let (_, own) = call(&d.app, "GET", API_DAY, &nina, None).await;
    let (_, everyone) = call(&d.app, "GET", API_DAY, &admin, None).await;
    let (_, share) = call(&d.app, "GET", "/api/v1/me/fair-share", &nina, None).await;
    let csv = d
        .app
        .client
        .get(d.app.url(API_DAY))
        .bearer_auth(&nina)
        .header("Accept", "text/csv")
        .send()
        .await
        .expect("the CSV")
        .text()
        .await
        .expect("its text");
    let nina_rows = expected_rows(&own);
    assert_eq!(
        nina_rows,
        [["2026-11-23", "default", "nina", "3.50", "0.33", "3"]],
        "the runs were accounted as scripted: {own}"
    );

    let b = Browser::start("en-US,en").await;
    b.login(&d.app.url(""), "nina", USER_PASSWORD).await;
    // Every user has the page in the navigation.
    b.click("#sidebar a[href='/usage']").await;
    b.wait_for_text("[data-testid=page-title]", "Usage").await.unwrap();
    b.wait_until(
        "the page has loaded",
        "!document.querySelector('[data-testid=loading]')",
    )
    .await
    .unwrap();

    // The day of the runs: the table has the API's numbers, to the hundredth.
    let page = format!("/usage?{DAY}");
    open_report(&b, &d, &page).await;
    assert_eq!(shown_rows(&b).await, nina_rows);
    assert_eq!(shown_total(&b).await, ("3.50".into(), "0.33".into()));
    assert!(
        b.client.find(fantoccini::Locator::Css("#usage-user")).await.is_err(),
        "a user has no user filter"
    );
    // One bar (one day), of nina's normal and Elastic parts, as high as their hours.
    let (bars, parts) = chart(&b).await;
    assert_eq!(bars, 1);
    let drawn: Vec<(String, bool, f64)> = parts.iter().map(|(g, e, h, _)| (g.clone(), *e, *h)).collect();
    let hours = |field: &str| gpu_hours(&own["rows"][0][field]);
    assert_eq!(
        drawn,
        [
            ("default".to_owned(), false, hours("used")),
            ("default".to_owned(), true, hours("backfill"))
        ]
    );
    let (normal_h, elastic_h) = (parts[0].3, parts[1].3);
    assert!(
        normal_h > 0.0 && (normal_h / elastic_h - 3.5 / (1.0 / 3.0)).abs() < 0.05,
        "heights follow the hours: {parts:?}"
    );
    let name = b
        .client
        .execute(
            "const s = document.querySelector('[data-testid=usage-chart]'); return [s.getAttribute('role'), s.getAttribute('aria-label')];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(name[0], "img");
    assert!(
        name[1]
            .as_str()
            .unwrap()
            .starts_with("GPU-hours per period, stacked by queue"),
        "{name}"
    );
    // The download link gets, with the browser's session, what `Accept: text/csv` answers.
    let downloaded = b
        .client
        .execute_async(
            "const done = arguments[arguments.length - 1]; \
             fetch(document.querySelector('[data-testid=usage-csv]').href).then(r => r.text()).then(done);",
            vec![],
        )
        .await
        .expect("the download");
    assert_eq!(downloaded.as_str(), Some(csv.as_str()));
    assert!(csv.contains(",default,nina,nvidia.com/a100,3.5,"), "{csv}");
    // The fair share: the API's factor, and whether it orders anything (not by default).
    let factor = share["queues"][0]["factor"].as_f64().expect("a factor");
    b.wait_for_text(
        "[data-testid=fair-share-row][data-queue=default] [data-testid=fair-share-factor]",
        &format!("{factor:.3}"),
    )
    .await
    .unwrap();
    assert!(factor < 1.0, "nina used her share: {share}");
    b.wait_for("[data-testid=fair-share-mode][data-in-effect=false]")
        .await
        .unwrap();
    assert!(
        b.text("[data-testid=fair-share-mode]").await.contains("informational"),
        "{share}"
    );
    b.assert_clean(&page).await;
    b.screenshot("usage-user").await;
    b.client
        .execute(
            "document.querySelector('[data-testid=fair-share]').scrollIntoView()",
            vec![],
        )
        .await
        .unwrap();
    b.screenshot("usage-user-fair-share").await;
    in_the_dark(&b, "usage-user").await;
    translated(&b, "usage-user").await;

    // An admin: everyone's, stacked by user, then only carl's.
    b.click("[data-testid=logout]").await;
    b.login(&d.app.url(""), "admin", ADMIN_PASSWORD).await;
    let page = format!("/usage?{DAY}&stack=user");
    open_report(&b, &d, &page).await;
    let all_rows = expected_rows(&everyone);
    assert_eq!(all_rows.len(), 2, "{everyone}");
    assert_eq!(shown_rows(&b).await, all_rows);
    assert_eq!(shown_total(&b).await, ("11.50".into(), "0.33".into()));
    let (_, parts) = chart(&b).await;
    let groups: Vec<&str> = parts.iter().map(|(g, ..)| g.as_str()).collect();
    assert_eq!(
        groups,
        ["carl", "nina", "nina"],
        "by user, the largest first: {parts:?}"
    );
    b.assert_clean(&page).await;
    b.screenshot("usage-admin").await;
    in_the_dark(&b, "usage-admin").await;
    translated(&b, "usage-admin").await;
    b.wait_for("#usage-user option[value=carl]").await.unwrap();
    b.select("#usage-user", "carl").await;
    b.wait_until(
        "only carl's line",
        "document.querySelectorAll('[data-testid=usage-row]').length === 1 \
         && document.querySelector('[data-testid=usage-row]').dataset.user === 'carl'",
    )
    .await
    .unwrap();
    assert_eq!(shown_total(&b).await, ("8.00".into(), "0.00".into()));
    assert!(b.path().await.contains("user=carl"), "{}", b.path().await);
    // Another period starts again on that period's own range.
    b.select("#usage-by", "week").await;
    b.wait_until(
        "by week, on its default range",
        "location.search.includes('by=week') && !location.search.includes('from=')",
    )
    .await
    .unwrap();
    b.wait_until(
        "the weekly report loads",
        "!document.querySelector('[data-testid=loading]') && !!document.querySelector('[data-testid=usage-report] h2')",
    )
    .await
    .unwrap();
    assert_eq!(b.text("#usage-title").await, "GPU-hours per week");
    let errors = b.console_errors().await;
    b.close().await;
    assert!(errors.is_empty(), "console errors: {errors:?}");
}
