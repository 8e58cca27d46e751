//! Sharing between queues in the web UI (`spec/prequeue.md` §9; headless Chromium on the running
//! app, the simulated cluster and the watcher driven by hand): two teams guaranteed 4 of the
//! node's 8 GPUs each. The night team borrows the idle team's GPUs: its borrowing jobs carry
//! the Borrowing badge in the list and on their page, a job that finds no room lent says why
//! (and one that will not borrow says it waits for guaranteed room), the resource summary, the
//! capacity view and the queue tree show each team's guarantee with what it borrows and lends, the queue form shows a guarantee and sends
//! it back, and a borrower taken back for the idle team's job says so in its timeline.

use anteroom_tests::api::{call, queue, settings};
use anteroom_tests::browser::{Browser, LATIN_ALLOWED, require_ui};
use anteroom_tests::driven::{Driven, GPU_NODES, gpu_job, submit};
use anteroom_tests::{ADMIN_PASSWORD, USER_PASSWORD};
use serde_json::{Value, json};

/// What these tests seed besides [`LATIN_ALLOWED`]: the teams, their people and jobs, the
/// nodes' names; and the queue form's words for the user its containers run as ("user ID",
/// "root"), technical terms every language keeps.
const SEEDED: &[&str] = &["cv", "nlp", "nina", "carl", "gpu", "cpu", "patient", "ID", "root"];

/// Quotas on and the two teams, each guaranteed 4 A100s (`nlp` also allows priorities);
/// answers the admin's token.
async fn two_teams(d: &Driven) -> String {
    let admin = d.app.admin_token().await;
    settings(
        &d.app,
        &admin,
        json!({"queueQuotaEnabled": true, "reclaimDelaySeconds": 10}),
    )
    .await;
    queue(
        &d.app,
        &admin,
        json!({"name": "cv", "open": true, "guarantee": {"nvidia.com/a100": "4"}}),
    )
    .await;
    queue(
        &d.app,
        &admin,
        json!({"name": "nlp", "open": true, "guarantee": {"nvidia.com/a100": "4"}, "priorityRange": {"min": -5, "max": 5}}),
    )
    .await;
    admin
}

fn team_job(name: &str, team: &str, gpus: u32) -> Value {
    let mut body = gpu_job(name, "custom", gpus, "normal");
    body["queue"] = json!(team);
    body
}

/// Nina fills all 8 GPUs from `nlp`, one job each: the first four within its guarantee, the
/// last four borrowing `cv`'s idle four. Answers the ids.
async fn nlp_fills_the_node(d: &Driven, nina: &str) -> Vec<i64> {
    let mut ids = Vec::new();
    for i in 0..8 {
        let (id, answer) = submit(d, nina, team_job(&format!("nlp-{i}"), "nlp", 1)).await;
        assert_eq!(answer["admission"]["decision"], "activated", "{answer}");
        assert_eq!(answer["job"]["borrowing"], i >= 4, "{answer}");
        ids.push(id);
        d.advance(1).await;
    }
    ids
}

/// Waits until the element matching `css` contains `text` (up to 15 s).
async fn shows(b: &Browser, css: &str, text: &str) {
    let condition = format!("document.querySelector({css:?})?.textContent.includes({text:?})");
    if let Err(e) = b.wait_until(&format!("{css} shows {text:?}"), &condition).await {
        panic!("{e}; it shows {:?}", b.text(css).await);
    }
}

/// How many elements match `css`.
async fn count(b: &Browser, css: &str) -> i64 {
    b.client
        .execute(&format!("return document.querySelectorAll({css:?}).length"), vec![])
        .await
        .unwrap()
        .as_i64()
        .unwrap()
}

/// The width of the part `part` of the shared bar matching `css`, in percent of its track.
async fn part(b: &Browser, css: &str, part: &str) -> f64 {
    b.wait_for(css).await.unwrap_or_else(|e| panic!("{e}"));
    let script = format!(
        "const bar = document.querySelector({css:?}); const p = bar.querySelector('[data-part={part}]'); \
         return p.getBoundingClientRect().width / bar.getBoundingClientRect().width * 100;"
    );
    b.client.execute(&script, vec![]).await.unwrap().as_f64().unwrap()
}

fn near(got: f64, want: f64, what: &str) {
    assert!((got - want).abs() < 1.0, "{what}: {got} is not {want}");
}

/// Switches the language to `lang` and waits until it applies.
async fn language(b: &Browser, lang: &str) {
    b.select("#lang-select", lang).await;
    b.wait_until(
        "the language applies",
        &format!("document.documentElement.lang === '{lang}'"),
    )
    .await
    .unwrap();
}

/// The page shown now has no English left but data.
async fn no_english(b: &Browser, page: &str) {
    let allowed: Vec<&str> = LATIN_ALLOWED.iter().chain(SEEDED).copied().collect();
    let stray = b.latin_words(&allowed).await;
    assert!(stray.is_empty(), "{page} shows untranslated words: {stray:?}");
}

/// The page shown in zh, ja and ko: no English left but data.
async fn translated(b: &Browser, page: &str) {
    for lang in ["zh", "ja", "ko"] {
        language(b, lang).await;
        no_english(b, &format!("{page} in {lang}")).await;
    }
    language(b, "en").await;
}

#[tokio::test]
#[ignore = "needs Chromium"]
async fn browser_borrowing_jobs_wear_their_badge_and_waiting_ones_say_why() {
    require_ui();
    let d = Driven::start(None, GPU_NODES).await;
    two_teams(&d).await;
    let nina = d.app.user_token("nina").await;
    let ids = nlp_fills_the_node(&d, &nina).await;
    let (within, borrowing) = (ids[0], ids[5]);
    // A ninth would borrow and nothing is lent; one that will not borrow waits for its
    // queue's guaranteed room, which its own jobs fill.
    let (ninth, answer) = submit(&d, &nina, team_job("nlp-8", "nlp", 1)).await;
    assert_eq!(answer["admission"]["reasons"][0]["code"], "borrowing_limit", "{answer}");
    let mut body = team_job("patient", "nlp", 1);
    body["borrow"] = json!("never");
    body["priority"] = json!(2);
    let (patient, answer) = submit(&d, &nina, body).await;
    assert_eq!(answer["admission"]["reasons"][0]["code"], "borrowing_limit", "{answer}");
    assert_eq!(
        answer["admission"]["reasons"][0]["details"]["mayBorrow"], false,
        "{answer}"
    );

    let b = Browser::start("en-US,en").await;
    b.login(&d.app.url(""), "nina", USER_PASSWORD).await;

    // The list: the badge beside the schedule badge of a borrowing job only; the waiting
    // jobs' short reasons.
    b.client.goto(&d.app.url("/jobs")).await.unwrap();
    b.wait_for(&format!("[data-job-id='{borrowing}'] [data-testid=borrowing-badge]"))
        .await
        .unwrap();
    assert_eq!(
        b.text(&format!("[data-job-id='{borrowing}'] [data-testid=borrowing-badge]"))
            .await,
        "Borrowing"
    );
    assert_eq!(
        count(&b, &format!("[data-job-id='{within}'] [data-testid=borrowing-badge]")).await,
        0,
        "a job within its queue's guarantee borrows nothing"
    );
    assert_eq!(count(&b, "[data-testid=borrowing-badge]").await, 4);
    shows(
        &b,
        &format!("[data-job-id='{ninth}'] [data-testid=job-reason]"),
        "No idle room to borrow",
    )
    .await;
    shows(
        &b,
        &format!("[data-job-id='{patient}'] [data-testid=job-reason]"),
        "Waits for guaranteed room",
    )
    .await;
    b.assert_clean("/jobs with borrowing jobs").await;
    // The resource summary of nlp: its guarantee, and what it borrows beyond it now.
    b.select("#summary-queue", "nlp").await;
    b.wait_for_text(
        "[data-testid=summary-queue-capacity][data-queue=nlp] [data-testid=share-borrows]",
        "borrows 4",
    )
    .await
    .unwrap();
    shows(
        &b,
        "[data-testid=summary-queue-capacity][data-queue=nlp] [data-testid=share-words]",
        "a100: 8 used, 4 guaranteed",
    )
    .await;
    // The capacity view: both teams, cv lending its idle guarantee.
    b.client.goto(&d.app.url("/cluster")).await.unwrap();
    b.wait_for_text(
        "[data-testid=capacity-queue][data-queue=cv] [data-testid=share-lends]",
        "lends 4 idle",
    )
    .await
    .unwrap();
    b.wait_for_text(
        "[data-testid=capacity-queue][data-queue=nlp] [data-testid=share-borrows]",
        "borrows 4",
    )
    .await
    .unwrap();
    b.assert_clean("/cluster with sharing").await;

    // The borrowing job's page: the badge and what it means for it.
    b.client.goto(&d.app.url(&format!("/jobs/{borrowing}"))).await.unwrap();
    b.wait_for("[data-testid=job-detail] [data-testid=borrowing-badge]")
        .await
        .unwrap();
    shows(
        &b,
        "[data-testid=borrowing-note]",
        "runs on idle guaranteed room of another queue",
    )
    .await;
    shows(&b, "[data-testid=borrowing-note]", "ends as Preempted").await;
    b.assert_clean("a borrowing job's page").await;
    translated(&b, "a borrowing job's page").await;

    // The waiting jobs' pages: why, in words and against the cluster's room.
    b.client.goto(&d.app.url(&format!("/jobs/{ninth}"))).await.unwrap();
    b.wait_for_text(
        "[data-testid=reason][data-code=borrowing_limit] [data-testid=reason-text]",
        "It would use room beyond the guarantee of queue nlp, and no other queue lends idle room now.",
    )
    .await
    .unwrap();
    shows(
        &b,
        "[data-testid=reason-bar][data-resource='nvidia.com/a100']",
        "8 held by guarantees and jobs + 1 for this job, of 8 in the cluster",
    )
    .await;
    b.assert_clean("a job waiting for room to borrow").await;
    b.client.goto(&d.app.url(&format!("/jobs/{patient}"))).await.unwrap();
    b.wait_for_text(
        "[data-testid=reason][data-code=borrowing_limit] [data-testid=reason-text]",
        "It waits for room within the guarantee of queue nlp, as it does not borrow; that room is in use now.",
    )
    .await
    .unwrap();
    b.wait_for_text("[data-testid=job-priority]", "2").await.unwrap();
    b.wait_for_text("[data-testid=job-borrow]", "Never: it waits for guaranteed room")
        .await
        .unwrap();
    translated(&b, "a job that will not borrow").await;

    // The form: borrowing on by default; the priority only for a queue that allows one,
    // within its range; both sent.
    b.client.goto(&d.app.url("/jobs/new")).await.unwrap();
    b.wait_for("#kind-custom").await.unwrap();
    b.click("#kind-custom").await;
    assert_eq!(
        count(&b, "#job-priority").await,
        0,
        "the default queue allows no priorities"
    );
    b.wait_until(
        "nlp is offered",
        "!!document.querySelector(\"#job-queue option[value='nlp']\")",
    )
    .await
    .unwrap();
    b.select("#job-queue", "nlp").await;
    b.wait_for("#job-priority").await.unwrap();
    shows(&b, "#job-priority-help", "From -5 to 5").await;
    assert_eq!(
        b.client
            .execute("return document.querySelector('#may-borrow').checked", vec![])
            .await
            .unwrap(),
        json!(true)
    );
    b.fill("#job-name", "from-the-form").await;
    b.fill("#task0-image", "busybox").await;
    b.fill("#task0-command", "sleep 3600").await;
    b.fill("#task0-resources\\.cpu", "1").await;
    b.fill("#task0-resources\\.memory", "1Gi").await;
    b.fill("#job-priority", "9").await;
    b.click("[data-testid=submit-job]").await;
    shows(&b, "#job-priority-error", "A whole number from -5 to 5.").await;
    b.fill("#job-priority", "3").await;
    b.click("#may-borrow").await;
    b.click("[data-testid=submit-job]").await;
    b.wait_for_text("[data-testid=page-title]", "from-the-form")
        .await
        .unwrap();
    // (Read one by one: the SQLite list's own JSON does not carry priority and borrow yet.)
    let path = b.path().await;
    let (_, sent) = call(&d.app, "GET", &format!("/api/v1{path}"), &nina, None).await;
    assert_eq!(
        (&sent["name"], &sent["priority"], &sent["borrow"]),
        (&json!("from-the-form"), &json!(3), &json!("never")),
        "{sent}"
    );
    b.close().await;
}

/// Queue cv as the API holds it.
async fn cv_stored(d: &Driven, admin: &str) -> Value {
    let (_, q) = call(&d.app, "GET", "/api/v1/admin/queues/cv", admin, None).await;
    q
}

#[tokio::test]
#[ignore = "needs Chromium"]
async fn browser_the_queue_tree_shows_guarantees_lent_and_borrowed_and_the_form_round_trips_them() {
    require_ui();
    let d = Driven::start(None, GPU_NODES).await;
    let admin = two_teams(&d).await;
    let nina = d.app.user_token("nina").await;
    let carl = d.app.user_token("carl").await;
    let ids = nlp_fills_the_node(&d, &nina).await;

    let b = Browser::start("en-US,en").await;
    b.login(&d.app.url(""), "admin", ADMIN_PASSWORD).await;
    b.client.goto(&d.app.url("/admin/queues")).await.unwrap();
    b.wait_for("[data-testid=share-legend]").await.unwrap();
    // nlp: its 4 and cv's 4 in use, half of the bar beyond its guarantee.
    let nlp = "[data-testid=queue-row][data-queue=nlp] [data-testid=share-bar][data-resource='nvidia.com/a100']";
    b.wait_for_text(
        &format!("{nlp} [data-testid=share-words]"),
        "a100: 8 used, 4 guaranteed",
    )
    .await
    .unwrap();
    b.wait_for_text(&format!("{nlp} [data-testid=share-borrows]"), "borrows 4")
        .await
        .unwrap();
    assert_eq!(count(&b, &format!("{nlp} [data-testid=share-lends]")).await, 0);
    let bar = format!("{nlp} [data-testid=shared-bar]");
    near(part(&b, &bar, "within").await, 50.0, "nlp within its guarantee");
    near(part(&b, &bar, "borrowed").await, 50.0, "nlp borrowed");
    near(part(&b, &bar, "idle").await, 0.0, "nlp idle");
    // cv: nothing used, its whole guarantee lent.
    let cv = "[data-testid=queue-row][data-queue=cv] [data-testid=share-bar][data-resource='nvidia.com/a100']";
    b.wait_for_text(&format!("{cv} [data-testid=share-words]"), "a100: 0 used, 4 guaranteed")
        .await
        .unwrap();
    b.wait_for_text(&format!("{cv} [data-testid=share-lends]"), "lends 4 idle")
        .await
        .unwrap();
    let bar = format!("{cv} [data-testid=shared-bar]");
    near(part(&b, &bar, "idle").await, 50.0, "cv idle");
    near(part(&b, &bar, "borrowed").await, 0.0, "cv borrowed");
    shows(
        &b,
        "[data-testid=queue-row][data-queue=nlp] [data-testid=queue-sharing-settings]",
        "priorities -5 to 5",
    )
    .await;
    b.assert_clean("/admin/queues with sharing").await;
    b.screenshot("sharing-tree-en").await;
    translated(&b, "/admin/queues with sharing").await;
    // The form in another language (the menu that switches it sits behind the open drawer).
    for lang in ["zh", "ko"] {
        language(&b, lang).await;
        b.click("[data-testid=queue-row][data-queue=cv] [data-testid=edit-queue]")
            .await;
        b.wait_for("[data-testid=guarantee-row]").await.unwrap();
        no_english(&b, &format!("the queue form in {lang}")).await;
        b.click("[data-testid=drawer-close]").await;
        b.wait_until(
            "the drawer closes",
            "!document.querySelector('[data-testid=queue-form]')",
        )
        .await
        .unwrap();
    }
    language(&b, "en").await;

    // The form shows cv's guarantee; saved untouched, nothing changes.
    let before = cv_stored(&d, &admin).await;
    b.click("[data-testid=queue-row][data-queue=cv] [data-testid=edit-queue]")
        .await;
    b.wait_for("[data-testid=guarantee-row]").await.unwrap();
    assert_eq!(
        b.client
            .execute(
                "const r = document.querySelector('[data-testid=guarantee-row]'); \
                 return [r.querySelector('input[id$=resource]').value, r.querySelector('input[id$=amount]').value, \
                   document.querySelector('#queue-weight').value, document.querySelector('#queue-preempt').value];",
                vec![]
            )
            .await
            .unwrap(),
        json!(["nvidia.com/a100", "4", "1", "never"])
    );
    b.click("[data-testid=save-queue]").await;
    b.wait_for_text(
        "[data-testid=toast][data-tone=success] [data-testid=toast-text]",
        "Queue cv saved.",
    )
    .await
    .unwrap();
    let after = cv_stored(&d, &admin).await;
    for field in [
        "guarantee",
        "lendingLimit",
        "weight",
        "reclaimMinRuntimeSeconds",
        "priorityRange",
        "preemptWithinQueue",
        "maxPerJob",
    ] {
        assert_eq!(after[field], before[field], "{field}: {after}");
    }
    // Changed: a guarantee of 3, a lending limit of 1 and a weight of 2 go out and come back.
    b.click("[data-testid=queue-row][data-queue=cv] [data-testid=edit-queue]")
        .await;
    b.fill("[data-testid=guarantee-row] input[id$=amount]", "3").await;
    b.click("[data-testid=add-lendingLimit]").await;
    b.fill("[data-testid=lendingLimit-row] input[id$=resource]", "nvidia.com/a100")
        .await;
    b.fill("[data-testid=lendingLimit-row] input[id$=amount]", "1").await;
    b.fill("#queue-weight", "2").await;
    b.click("[data-testid=save-queue]").await;
    b.wait_until(
        "the drawer closes",
        "!document.querySelector('[data-testid=queue-form]')",
    )
    .await
    .unwrap();
    let after = cv_stored(&d, &admin).await;
    assert_eq!(after["guarantee"], json!({"nvidia.com/a100": "3"}), "{after}");
    assert_eq!(after["lendingLimit"], json!({"nvidia.com/a100": "1"}), "{after}");
    assert_eq!(after["weight"], 2, "{after}");
    b.click("[data-testid=queue-row][data-queue=cv] [data-testid=edit-queue]")
        .await;
    b.wait_until(
        "the form shows what was saved",
        "document.querySelector('[data-testid=guarantee-row] input[id$=amount]')?.value === '3' \
         && document.querySelector('[data-testid=lendingLimit-row] input[id$=amount]')?.value === '1' \
         && document.querySelector('#queue-weight').value === '2'",
    )
    .await
    .unwrap();
    // Emptied, the guarantee is cleared (sent as null), not kept.
    b.click("[data-testid=guarantee-row] button").await;
    b.click("[data-testid=lendingLimit-row] button").await;
    b.click("[data-testid=save-queue]").await;
    b.wait_until(
        "the drawer closes",
        "!document.querySelector('[data-testid=queue-form]')",
    )
    .await
    .unwrap();
    let after = cv_stored(&d, &admin).await;
    assert!(after["guarantee"].is_null(), "{after}");
    assert!(after["lendingLimit"].is_null(), "{after}");
    // Back to 4 through the API, for what follows.
    let mut body = json!({"name": "cv", "open": true, "guarantee": {"nvidia.com/a100": "4"}, "weight": 1});
    body["displayName"] = after["displayName"].clone();
    let (status, answer) = call(&d.app, "PUT", "/api/v1/admin/queues/cv", &admin, Some(body)).await;
    assert!(status.is_success(), "{answer}");

    // The reclaim delay is a setting of its own, with the preemption ones.
    b.client.goto(&d.app.url("/admin/prequeue")).await.unwrap();
    b.wait_until(
        "the reclaim delay shows",
        "document.querySelector('#reclaimDelaySeconds')?.value === '10' \
         && document.querySelector('#reclaimDelaySeconds-human')?.textContent.includes('10 sec')",
    )
    .await
    .unwrap();

    // Carl's team asks for 2 of its guaranteed GPUs: owed, they are taken back from the
    // newest borrowers after the delay; his job's page said so, the victim's timeline says so.
    let (owed, answer) = submit(&d, &carl, team_job("cv-0", "cv", 2)).await;
    assert_eq!(answer["admission"]["reasons"][0]["code"], "reclaiming", "{answer}");
    // A round before the delay takes nothing, and says when it may.
    assert!(d.round().await.reclaimed.is_empty());
    b.client.goto(&d.app.url(&format!("/jobs/{owed}"))).await.unwrap();
    b.wait_for_text(
        "[data-testid=reason][data-code=reclaiming] [data-testid=reason-text]",
        "Room guaranteed to queue cv is being taken back from borrowing jobs of other queues.",
    )
    .await
    .unwrap();
    shows(
        &b,
        "[data-testid=reclaim-at]",
        "Borrowing jobs may be reclaimed for it from",
    )
    .await;
    d.advance(10).await;
    let report = d.round().await;
    assert_eq!(report.reclaimed.len(), 2, "{report:?}");
    let victim = *report.reclaimed.iter().max().unwrap();
    assert!(ids.contains(&victim), "{report:?}");
    d.advance(31).await;
    b.client.goto(&d.app.url(&format!("/jobs/{victim}"))).await.unwrap();
    b.wait_for_text(
        "[data-testid=timeline-event][data-kind=reclaimed] [data-testid=timeline-detail]",
        "On node gpu-0: queue cv took back the guaranteed room this job borrowed, for cv-0.",
    )
    .await
    .unwrap();
    b.assert_clean("a reclaimed job's page").await;
    b.client.goto(&d.app.url(&format!("/jobs/{owed}"))).await.unwrap();
    shows(
        &b,
        "[data-testid=timeline-event][data-kind=reclaimed_for] [data-testid=timeline-detail]",
        "2 borrowing jobs were reclaimed to give queue cv its guaranteed room.",
    )
    .await;
    b.close().await;
}
