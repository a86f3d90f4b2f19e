//! Supervision, black-box: the real binary with `CLIPFORGE_FAULTS` making
//! actors panic on purpose (docs/guide.md, "Supervision and fault injection").

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

/// Uploads the speech video and creates a project; returns its id.
async fn start_project(app: &App, token: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let video = speech_video(dir.path());
    let (s, up) = upload(app, token, &video, "talk.mp4").await;
    assert_eq!(s, 200, "{up}");
    let (s, created) = app
        .post(
            "/api/projects",
            token,
            json!({"fileKey": up["fileKey"], "title": "Supervised", "clipDurationPreset": "15-30"}),
        )
        .await;
    assert_eq!(s, 201, "{created}");
    let (_, credits) = app.get("/api/credits", token).await;
    assert_eq!(credits["credits"], 59, "one minute reserved");
    created["projectId"].as_str().unwrap().to_string()
}

async fn notifications_of_kind(app: &App, token: &str, kind: &str) -> usize {
    let (s, v) = app.get("/api/notifications", token).await;
    assert_eq!(s, 200, "{v}");
    v["notifications"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["type"] == kind)
        .count()
}

async fn admin_actors(app: &App) -> Vec<Value> {
    let (s, v) = app.get("/admin/actors", "admin-secret").await;
    assert_eq!(s, 200, "{v}");
    v["actors"].as_array().unwrap().clone()
}

#[tokio::test]
async fn a_stage_that_always_panics_fails_the_project_and_releases_its_credits() {
    let app = spawn_app_with(
        tempfile::tempdir().unwrap(),
        &[
            ("CLIPFORGE_FAULTS", "stage-panic:transcribe:always"),
            ("CLIPFORGE_PIPELINE_STAGE_RETRIES", "2"),
        ],
    );
    let token = app.sign_up("fails@example.com").await;
    let pid = start_project(&app, &token).await;

    let events = follow_sse(&app, &token, &pid).await;
    let last = events.last().expect("events");
    assert_eq!(last.0, "failed", "{events:?}");
    assert!(
        last.2["message"].as_str().unwrap().contains("transcribe"),
        "{last:?}"
    );
    let (s, p) = app.get(&format!("/api/projects/{pid}"), &token).await;
    assert_eq!(s, 200, "{p}");
    assert_eq!(p["project"]["status"], "Falhou", "{p}");
    let (_, credits) = app.get("/api/credits", &token).await;
    assert_eq!(credits["credits"], 60, "the reservation is released");
    assert_eq!(
        notifications_of_kind(&app, &token, "project_failed").await,
        1
    );
    // Retried before giving up: the transcribe stage actor crashed three
    // times (one run + two retries), each a supervision event of the project.
    let (_, ledger) = app.get("/api/credits/ledger", &token).await;
    assert!(
        !ledger.to_string().contains("\"charge\""),
        "nothing charged: {ledger}"
    );
    // The node keeps serving, and the project's actor is gone.
    let actors = admin_actors(&app).await;
    assert!(
        !actors.iter().any(|a| a["id"] == pid.as_str()),
        "{actors:?}"
    );
    let other = app.sign_up("other@example.com").await;
    let (s, _) = app.get("/api/projects", &other).await;
    assert_eq!(s, 200);
}

#[tokio::test]
async fn a_stage_that_panics_once_is_retried_and_the_project_completes() {
    let app = spawn_app_with(
        tempfile::tempdir().unwrap(),
        &[("CLIPFORGE_FAULTS", "stage-panic:transcribe:once")],
    );
    let token = app.sign_up("once@example.com").await;
    let pid = start_project(&app, &token).await;
    let events = follow_sse(&app, &token, &pid).await;
    assert_eq!(events.last().unwrap().0, "completed", "{events:?}");
    // The transcribe stage started twice (the crash, then the retry).
    let transcribing = events
        .iter()
        .filter(|e| {
            e.0 == "progress"
                && e.2["stage"] == "transcribe"
                && e.2["stepProgress"]["transcribe"] == 0
        })
        .count();
    assert!(transcribing >= 2, "{events:?}");
    let (_, credits) = app.get("/api/credits", &token).await;
    assert_eq!(credits["credits"], 59, "charged once");
    assert_eq!(
        notifications_of_kind(&app, &token, "project_failed").await,
        0
    );
}

#[tokio::test]
async fn a_project_actor_that_panics_is_restarted_from_its_record() {
    let app = spawn_app_with(
        tempfile::tempdir().unwrap(),
        &[("CLIPFORGE_FAULTS", "project-panic:once")],
    );
    let token = app.sign_up("project@example.com").await;
    let pid = start_project(&app, &token).await;
    let deadline = Instant::now() + Duration::from_secs(600);
    let (status, project) = loop {
        let (s, p) = app.get(&format!("/api/projects/{pid}"), &token).await;
        assert_eq!(s, 200, "{p}");
        let st = p["project"]["status"].as_str().unwrap().to_string();
        if st == "Concluído" || st == "Falhou" {
            break (st, p);
        }
        assert!(Instant::now() < deadline, "still {st}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert_eq!(status, "Concluído", "{project}");
    let (_, credits) = app.get("/api/credits", &token).await;
    assert_eq!(credits["credits"], 59, "charged once");
    assert!(
        !project["clips"].as_array().unwrap().is_empty(),
        "{project}"
    );
}

#[tokio::test]
async fn a_panicking_account_actor_is_restarted_and_the_next_request_succeeds() {
    let app = spawn_app_with(
        tempfile::tempdir().unwrap(),
        &[("CLIPFORGE_FAULTS", "account-panic:once")],
    );
    // Sign-up is the account's first command: it reaches the account's
    // actor, which panics before writing anything.
    let (s, v) = app
        .call(
            reqwest::Method::POST,
            "/api/auth/sign-up/email",
            None,
            Some(json!({"email": "acct@example.com", "password": "correct horse", "name": "Ana"})),
        )
        .await;
    assert_error(s, &v, 500);
    // The very next request for the account is served by the restarted
    // actor (which loads the account afresh): the sign-up succeeds.
    let token = app.sign_up("acct@example.com").await;
    let (_, session) = app.get("/api/auth/get-session", &token).await;
    let uid = session["user"]["id"].as_str().unwrap().to_string();
    let (s, v) = app.get("/api/notifications", &token).await;
    assert_eq!(s, 200, "{v}");
    let (s, v) = app.get("/api/caption-templates", &token).await;
    assert_eq!(s, 200, "{v}");
    let actors = admin_actors(&app).await;
    let me = actors
        .iter()
        .find(|a| a["kind"] == "user" && a["id"] == uid.as_str())
        .expect("the account's actor is live");
    assert_eq!(me["supervisor"], "supervisor:accounts", "{me}");
    assert_eq!(me["restarts"], 1, "{me}");
    let branches: Vec<&Value> = actors
        .iter()
        .filter(|a| a["kind"] == "supervisor")
        .collect();
    let names: Vec<&str> = branches
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    for b in [
        "supervisor:node",
        "supervisor:accounts",
        "supervisor:projects",
        "supervisor:scheduler",
    ] {
        assert!(names.contains(&b), "{names:?}");
    }
}

/// The node's periodic work runs as supervised actors: a passivation sweep
/// that panics is started again by the housekeeping branch (its restart in
/// `/admin/actors`), and sweeps again — an idle account's actor is stopped;
/// so is the platform token refresh (an async job).
#[tokio::test]
async fn a_housekeeping_job_that_panics_is_restarted_and_runs_again() {
    let app = spawn_app_with(
        tempfile::tempdir().unwrap(),
        &[
            (
                "CLIPFORGE_FAULTS",
                "housekeeping-panic:passivation:once,housekeeping-panic:token-refresh:once",
            ),
            ("CLIPFORGE_PIPELINE_IDLE_SECS", "1"),
            ("CLIPFORGE_PUBLISH_REFRESH_EVERY_SECS", "1"),
        ],
    );
    let token = app.sign_up("idle@example.com").await;
    let (_, session) = app.get("/api/auth/get-session", &token).await;
    let uid = session["user"]["id"].as_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let actors = admin_actors(&app).await;
        let job = |name: &str| actors.iter().find(|a| a["name"] == name).cloned();
        let sweep = job("passivation");
        let account_live = actors
            .iter()
            .any(|a| a["kind"] == "user" && a["id"] == uid.as_str());
        if let (Some(sweep), false) = (&sweep, account_live) {
            if sweep["restarts"] == 1 {
                assert_eq!(sweep["supervisor"], "supervisor:housekeeping", "{sweep}");
                let prune = job("rate-prune").expect("the rate-limit sweep runs");
                assert_eq!(prune["restarts"], 0, "{prune}");
                // The platform token refresh too.
                let refresh = job("token-refresh").expect("the token refresh runs");
                assert_eq!(
                    refresh["supervisor"], "supervisor:housekeeping",
                    "{refresh}"
                );
                if refresh["restarts"] == 1 {
                    break;
                }
            }
        }
        assert!(
            Instant::now() < deadline,
            "no restarted sweep that stopped the idle account: {sweep:?}, account live {account_live}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test]
async fn a_typo_in_the_faults_is_refused_at_start() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_clipforge"))
        .args([
            "serve",
            "--port",
            "0",
            "--config",
            "/nonexistent/cluster.toml",
        ])
        .env("CLIPFORGE_FAULTS", "stage-panik:cut:once")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("CLIPFORGE_FAULTS"), "{err}");
}
