//! Schemathesis against the real server: every check, the stateful phase
//! following the document's links, signed in, with billing configured
//! against the local Stripe of `tests/fake_stripe`. Exits 0 or the
//! test fails with schemathesis' report. The run's settings (statuses the
//! schema cannot promise, per operation) are in `tests/schemathesis.toml`.
//!
//! Needs the `schemathesis` CLI (`scripts/setup.sh --test` installs it).

#![recursion_limit = "256"]

use std::process::Command;

mod common;
mod fake_stripe;
use common::spawn_app_with;
use serde_json::json;

/// Examples per operation and phase: bounds the run to a few minutes.
const MAX_EXAMPLES: &str = "12";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_nothing() {
    let version = Command::new("schemathesis").arg("--version").output();
    let Ok(version) = version else {
        panic!("the schemathesis CLI is missing: run scripts/setup.sh --test");
    };
    eprintln!("{}", String::from_utf8_lossy(&version.stdout).trim());

    let (_stripe, stripe_base) = fake_stripe::start_stripe().await;
    let env = fake_stripe::app_env(
        &stripe_base,
        "https://app.example/billing/success",
        "https://app.example/billing",
    );
    // Projects are created from an upload (below) and fail fast at
    // transcription without a model: the run exercises their routes
    // (get, status, cancel, delete, bulk-schedule) without the CPU cost.
    let no_model = tempfile::tempdir().unwrap();
    let no_model_dir = no_model.path().to_str().unwrap().to_string();
    let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    env.push(("CLIPFORGE_PIPELINE_MODEL_DIR", &no_model_dir));
    env.push(("CLIPFORGE_PIPELINE_STAGE_RETRIES", "0"));
    // A contract run, not a flood test (tests/hardening.rs covers the
    // limits): thousands of generated requests from one address would
    // otherwise meet the per-address rate limits and sign-in lockout.
    for (name, value) in [
        ("CLIPFORGE_LIMITS_SIGN_UP_PER_IP", "100000"),
        ("CLIPFORGE_LIMITS_SIGN_IN_PER_IP", "100000"),
        ("CLIPFORGE_LIMITS_META_PER_IP", "100000"),
        ("CLIPFORGE_LIMITS_META_PER_ACCOUNT", "100000"),
        ("CLIPFORGE_LIMITS_CREATE_PROJECT_PER_IP", "100000"),
        ("CLIPFORGE_LIMITS_CREATE_PROJECT_PER_ACCOUNT", "100000"),
        ("CLIPFORGE_LIMITS_UPLOAD_PER_IP", "100000"),
        ("CLIPFORGE_LIMITS_UPLOAD_PER_ACCOUNT", "100000"),
        ("CLIPFORGE_LIMITS_SIGN_IN_FAILURES_PER_EMAIL", "100000"),
        ("CLIPFORGE_LIMITS_SIGN_IN_FAILURES_PER_IP", "100000"),
    ] {
        env.push((name, value));
    }
    // Webhooks the run registers point anywhere: their deliveries go to a
    // closed port on 127.0.0.1 instead.
    let nowhere = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    env.push(("CLIPFORGE_WEBHOOKS_PROXY_URL", &nowhere));
    let app = spawn_app_with(tempfile::tempdir().unwrap(), &env);
    let token = app.sign_up("schemathesis@example.com").await;
    // Sign-out and password changes end sessions: they get a session of
    // their own, so the rest of the run stays signed in.
    let (s, v) = app
        .call(
            reqwest::Method::POST,
            "/api/auth/sign-in/email",
            None,
            Some(json!({"email": "schemathesis@example.com", "password": "correct horse"})),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    let spare = v["token"].as_str().unwrap().to_string();

    // A real upload, offered as `fileKey` to project creation.
    let media = tempfile::tempdir().unwrap();
    let video = common::speech_video_saying(media.path(), "Open with a question instead.", 150);
    let (s, v) = common::upload(&app, &token, &video, "talk.mp4").await;
    assert_eq!(s, 200, "{v}");
    let file_key = v["fileKey"].as_str().unwrap().to_string();

    let reports = tempfile::tempdir().unwrap();
    let config = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/schemathesis.toml"
    ))
    .unwrap()
    .replace("MAIN_TOKEN", &token)
    .replace("SPARE_TOKEN", &spare)
    .replace("UPLOADED_FILE_KEY", &file_key);
    let config_path = reports.path().join("schemathesis.toml");
    std::fs::write(&config_path, config).unwrap();

    let out = tokio::task::spawn_blocking({
        let (base, dir) = (app.base.clone(), reports.path().to_owned());
        move || {
            Command::new("schemathesis")
                .arg("--config-file")
                .arg(&config_path)
                .arg("--no-color")
                .args(["run", &format!("{base}/api/openapi.json")])
                .args(["--checks", "all"])
                .args(["--phases", "examples,coverage,fuzzing,stateful"])
                .args(["--max-examples", MAX_EXAMPLES])
                .args(["--workers", "2"])
                .args(["--seed", "20261123"])
                .args(["--generation-database", "none"])
                .args(["--request-timeout", "30"])
                // Hypothesis' health checks time the data generation, not
                // the API: on a busy machine they fail a run that found
                // nothing.
                .args(["--suppress-health-check", "all"])
                .arg("--report-dir")
                .arg(&dir)
                .current_dir(&dir)
                .output()
                .expect("run schemathesis")
        }
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}\n{stderr}");
    assert!(
        out.status.success(),
        "schemathesis found failures (exit {:?}):\n{}",
        out.status.code(),
        problems(&stdout)
    );
}

/// The report's failures and errors sections (a long run's output is cut
/// where CI keeps only its tail).
fn problems(report: &str) -> String {
    let mut keep = false;
    let mut out = String::new();
    for line in report.lines() {
        if line.starts_with("=====") {
            keep = line.contains("FAILURES") || line.contains("ERRORS");
        }
        if keep {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}
