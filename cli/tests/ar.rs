//! The `ar` binary against the real server (SQLite, the simulated cluster, the watcher
//! running): every command as a researcher or a script runs it, exit codes included.

use std::process::Stdio;
use std::time::Duration;

use anteroom_tests::{ADMIN_PASSWORD, TestApp, USER_PASSWORD};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, BufReader};

mod common;

use common::{Ar, JOB, jobs_total, user};

#[tokio::test]
async fn login_keeps_a_private_token_and_logout_ends_it() {
    let app = TestApp::builder().start().await;
    app.user_token("ann").await;
    let ar = Ar::new(&app);

    let wrong = ar.login("ann", "not-the-password").await;
    assert_eq!(wrong.code, 4, "{wrong:?}");
    assert!(wrong.stderr.contains("invalid_credentials"), "{wrong:?}");
    let before = ar.run(&["ls"]).await;
    assert_eq!(before.code, 4, "not logged in: {before:?}");

    let login = ar.login("ann", USER_PASSWORD).await.ok();
    assert!(login.stdout.contains("Logged in as ann"), "{login:?}");
    let file = ar.home.path().join("config.json");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the token file is its owner's only");
    }
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let token = saved["token"].as_str().unwrap().to_owned();
    assert_eq!(ar.run(&["whoami", "--json"]).await.ok().json()["username"], "ann");
    // The same server written with a trailing slash is the same server.
    let slash = format!("{}/", ar.url);
    ar.run(&["--url", &slash, "whoami"]).await.ok();
    // Another server gets no token, and logging out of it leaves this one's alone.
    let other = ar.run(&["--url", "http://127.0.0.1:1", "logout"]).await;
    assert_eq!(other.code, 4, "{other:?}");
    let kept: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(kept["token"], saved["token"]);

    ar.run(&["logout"]).await.ok();
    assert_eq!(ar.run(&["whoami"]).await.code, 4, "the saved token is forgotten");
    // And the server no longer takes the old token either.
    let (status, _) = anteroom_tests::api::call(&app, "GET", "/api/v1/auth/me", &token, None).await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn usage_mistakes_and_an_unreachable_server_have_their_exit_codes() {
    let app = TestApp::builder().start().await;
    let ar = user(&app, "bob").await;
    let job = ar.file("job.yaml", JOB);

    assert_eq!(ar.run(&["submit"]).await.code, 2, "no file");
    assert_eq!(ar.run(&["submit", "-f", "/nonexistent.yaml"]).await.code, 2);
    let bad_set = ar.run(&["submit", "-f", &job, "--set", "nonsense"]).await;
    assert_eq!(bad_set.code, 2, "{bad_set:?}");
    assert!(bad_set.stderr.contains("--set"), "{bad_set:?}");
    let not_a_job = ar.file("bad.yaml", "name: x\ncolour: blue\n");
    assert_eq!(ar.run(&["submit", "-f", &not_a_job]).await.code, 2);
    assert_eq!(jobs_total(&ar).await, 0, "nothing was sent");

    // Refused by the server: 1, with the API's code and sentence.
    let too_big = ar
        .run(&["submit", "-f", &job, "--set", "tasks.0.resources.cpu=100000"])
        .await;
    assert_eq!(too_big.code, 1, "{too_big:?}");
    assert!(too_big.stderr.contains("unschedulable"), "{too_big:?}");

    let mut gone = Ar::new(&app);
    gone.url = "http://127.0.0.1:1".into();
    let unreachable = gone.login("bob", USER_PASSWORD).await;
    assert_eq!(unreachable.code, 3, "{unreachable:?}");
    let json_error = gone
        .run_with_stdin(&["--json", "login", "-u", "bob", "--password-stdin"], "x\n")
        .await;
    assert_eq!(json_error.code, 3);
    let error: Value = serde_json::from_str(json_error.stderr.trim()).unwrap();
    assert_eq!(error["error"]["code"], "unreachable");
    assert_eq!(error["exitCode"], 3);
}

#[tokio::test]
async fn submit_from_yaml_preview_and_a_retried_submit_make_one_job() {
    let app = TestApp::builder().start().await;
    let ar = user(&app, "cy").await;
    let job = ar.file("job.yaml", JOB);

    let preview = ar.run(&["submit", "-f", &job, "--preview"]).await.ok();
    assert!(preview.stdout.contains("Would start now"), "{preview:?}");
    assert_eq!(jobs_total(&ar).await, 0, "a preview submits nothing");

    let first = ar
        .run(&["submit", "-f", &job, "--set", "name=sweep-1", "--json"])
        .await
        .ok()
        .json();
    assert_eq!(first["job"]["name"], "sweep-1");
    assert_eq!(first["job"]["tasks"][0]["resources"]["cpu"], "1");
    assert_eq!(first["admission"]["decision"], "activated");
    assert_eq!(first["replayed"], false);
    // The same command again (a timeout, a script re-run): the first job, nothing new.
    let again = ar
        .run(&["submit", "-f", &job, "--set", "name=sweep-1", "--json"])
        .await
        .ok()
        .json();
    assert_eq!(again["job"]["id"], first["job"]["id"]);
    assert_eq!(again["replayed"], true);
    let text = ar.run(&["submit", "-f", &job, "--set", "name=sweep-1"]).await.ok();
    assert!(text.stderr.contains("this is job"), "{text:?}");
    assert_eq!(jobs_total(&ar).await, 1);

    // `--again`, or another body, is another job; `-q` prints just its id.
    let id = ar
        .run(&["submit", "-f", &job, "--set", "name=sweep-1", "--again", "-q"])
        .await
        .ok()
        .stdout;
    let id: i64 = id.trim().parse().expect("an id");
    assert_ne!(Value::from(id), first["job"]["id"]);
    ar.run(&["submit", "-f", &job, "--set", "name=sweep-2", "-q"])
        .await
        .ok();
    assert_eq!(jobs_total(&ar).await, 3);

    // From standard input, as JSON.
    let json_job = serde_json::to_string(&serde_norway::from_str::<Value>(JOB).unwrap()).unwrap();
    ar.run_with_stdin(&["submit", "-f", "-", "--set", "name=from-stdin", "-q"], &json_job)
        .await
        .ok();
    let list = ar.run(&["ls", "--json"]).await.ok().json();
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"from-stdin"), "{names:?}");
    let table = ar.run(&["ls"]).await.ok();
    assert!(table.stdout.starts_with("ID"), "{table:?}");
    assert!(table.stdout.contains("sweep-2"), "{table:?}");
}

#[tokio::test]
async fn a_held_job_says_why_watch_sees_it_start_after_a_cancel() {
    let app = TestApp::builder().start().await;
    let admin = Ar::new(&app);
    admin.login("admin", ADMIN_PASSWORD).await.ok();
    admin
        .run(&["admin", "settings", "set", "queueQuotaEnabled=true"])
        .await
        .ok();
    admin
        .run(&["admin", "quota", "set", "default", "cpu=1", "--max-active", "5"])
        .await
        .ok();
    let rules = admin.run(&["admin", "quota", "ls", "--json"]).await.ok().json();
    assert_eq!(rules[0]["limits"]["cpu"], "1", "{rules}");
    assert_eq!(rules[0]["maxActiveJobs"], 5);

    let ar = user(&app, "dee").await;
    let job = ar.file("job.yaml", JOB);
    let first = ar.run(&["submit", "-f", &job, "--set", "name=first", "-q"]).await.ok();
    let first = first.stdout.trim().to_owned();
    let held = ar.run(&["submit", "-f", &job, "--set", "name=held"]).await.ok();
    assert!(held.stdout.contains("waits in the prequeue"), "{held:?}");
    assert!(
        held.stdout.contains("Your quota in queue default would be exceeded"),
        "{held:?}"
    );
    let held = ar.run(&["ls", "--json", "--phase", "Prequeue"]).await.ok().json();
    let held = held["items"][0]["id"].as_i64().unwrap().to_string();

    let why = ar.run(&["why", &held]).await.ok();
    assert!(why.stdout.contains("Position 1 in queue default"), "{why:?}");
    assert!(why.stdout.contains("over the limit"), "{why:?}");
    assert!(why.stdout.contains("cpu: 1 used + 1 for this job, limit 1"), "{why:?}");
    let why_json = ar.run(&["why", &held, "--json"]).await.ok().json();
    assert_eq!(why_json["prequeue"]["reasons"][0]["code"], "quota");
    let ja = Ar {
        lang: "ja_JP.UTF-8",
        ..Ar::new(&app)
    };
    std::fs::copy(ar.home.path().join("config.json"), ja.home.path().join("config.json")).unwrap();
    let why_ja = ja.run(&["why", &held]).await.ok();
    let quota_ja = anteroom_cli::i18n::I18n::new("ja").tf("reason.quota", &[("queue", "default")]);
    assert!(!quota_ja.contains("Your quota"));
    assert!(why_ja.stdout.contains(&quota_ja), "{why_ja:?}");
    let quota = ar.run(&["quota", "--json"]).await.ok().json();
    assert_eq!(quota["jobs"]["prequeued"], 1);
    let quota = ar.run(&["quota"]).await.ok();
    assert!(quota.stdout.contains("1 waiting in the prequeue"), "{quota:?}");
    let queues = ar.run(&["queues", "--json"]).await.ok().json();
    assert_eq!(queues[0]["name"], "default");
    let yaml = ar.run(&["ls", "-o", "yaml"]).await.ok();
    let yaml: Value = serde_norway::from_str(&yaml.stdout).unwrap();
    assert_eq!(yaml["total"], 2);
    // The first job's pod writes its (simulated) log; `ar logs` copies it.
    // (polled: a pod still waiting for its node has written nothing yet)
    let started = format!("pod ar-{first}-main-0 started");
    let mut logs = ar.run(&["logs", &first]).await.ok();
    for _ in 0..100 {
        if logs.stdout.contains(&started) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        logs = ar.run(&["logs", &first]).await.ok();
    }
    assert!(logs.stdout.contains(&started), "{logs:?}");
    let no_pod = ar.run(&["logs", &held]).await;
    assert_eq!(no_pod.code, 1, "a waiting job has no pod: {no_pod:?}");
    assert!(no_pod.stderr.contains("pod_not_found"), "{no_pod:?}");

    // Watch the held job; cancel the first; the watcher starts the held one.
    let mut watch = ar
        .command(&["watch", "--json", "--job", &held, "--since", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    // `--since 0` resumes from the first event: nothing is missed however late the stream
    // opens.
    let cancel = ar.run(&["cancel", &first]).await.ok();
    assert!(cancel.stdout.contains(&format!("Job {first} cancelled")), "{cancel:?}");
    let mut kinds = Vec::new();
    let seen = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let event: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(
                event["jobId"].as_i64().unwrap().to_string(),
                held,
                "only the job asked for"
            );
            kinds.push(event["kind"].as_str().unwrap().to_owned());
            if kinds.iter().any(|k| k == "activated") {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(seen, Ok(true), "events seen: {kinds:?}");
    watch.kill().await.unwrap();

    let again = ar.run(&["cancel", &first]).await;
    assert_eq!(again.code, 1, "{again:?}");
    assert!(again.stderr.contains("already_finished"), "{again:?}");
    let not_waiting = ar.run(&["why", &first]).await.ok();
    assert!(not_waiting.stdout.contains("Not waiting"), "{not_waiting:?}");
}

#[tokio::test]
async fn completions_and_the_manual_need_no_server() {
    let app = TestApp::builder().start().await;
    let mut ar = Ar::new(&app);
    ar.url = String::new();
    let bash = ar.run(&["completions", "bash"]).await.ok();
    assert!(
        bash.stdout.contains("_ar()"),
        "{}",
        &bash.stdout[..200.min(bash.stdout.len())]
    );
    let man = ar.run(&["man"]).await.ok();
    assert!(
        man.stdout.contains(".TH ar"),
        "{}",
        &man.stdout[..200.min(man.stdout.len())]
    );
    let no_server = ar.run(&["ls"]).await;
    assert_eq!(no_server.code, 2, "{no_server:?}");
    assert!(no_server.stderr.contains("ANTEROOM_URL"), "{no_server:?}");
}
