//! Signed webhooks (issue 31) against the real server and a local
//! receiver: a completed project reaches the receiver with a signature it
//! verifies; a receiver that is down gets the event later under the same
//! delivery id, also across a SIGKILL of the server; private targets are
//! refused unless allowed; webhooks are managed with a session only.

mod common;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::receiver::{receiver, verify};
use common::{assert_error, spawn_app_with, App};
use serde_json::{json, Value};

const PRIVATE_OK: (&str, &str) = ("CLIPFORGE_WEBHOOKS_ALLOW_PRIVATE_TARGETS", "true");
const FAST_RETRY: (&str, &str) = ("CLIPFORGE_WEBHOOKS_RETRY_BASE_MS", "300");

async fn create_webhook(app: &App, token: &str, url: &str, events: &[&str]) -> Value {
    let (s, v) = app
        .post(
            "/api/webhooks",
            token,
            json!({"url": url, "events": events}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    v
}

async fn deliveries(app: &App, token: &str, hook: &str) -> Vec<Value> {
    let (s, v) = app
        .get(&format!("/api/webhooks/{hook}/deliveries"), token)
        .await;
    assert_eq!(s, 200, "{v}");
    v["deliveries"].as_array().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completed_project_reaches_a_verifying_receiver() {
    let app = spawn_app_with(tempfile::tempdir().unwrap(), &[PRIVATE_OK]);
    let token = app.sign_up("hooks@example.com").await;
    let (url, rx) = receiver().await;
    let hook = create_webhook(&app, &token, &url, &["project.completed", "project.failed"]).await;
    let secret = hook["secret"].as_str().unwrap().to_string();
    assert!(secret.starts_with("whsec_"), "{hook}");
    assert_eq!(hook["enabled"], true);
    // Listed without the secret.
    let (_, list) = app.get("/api/webhooks", &token).await;
    assert_eq!(list["webhooks"].as_array().unwrap().len(), 1, "{list}");
    assert!(list["webhooks"][0].get("secret").is_none(), "{list}");

    let media = tempfile::tempdir().unwrap();
    let video = common::speech_video(media.path());
    let (s, up) = common::upload(&app, &token, &video, "talk.mp4").await;
    assert_eq!(s, 200, "{up}");
    let (s, created) = app
        .post(
            "/api/projects",
            &token,
            json!({"fileKey": up["fileKey"], "title": "Hooked talk", "clipDurationPreset": "15-30"}),
        )
        .await;
    assert_eq!(s, 201, "{created}");
    let pid = created["projectId"].as_str().unwrap().to_string();
    common::follow_to_completion(&app, &token, &pid).await;

    let hits = rx.wait_for("project.completed", |h| !h.is_empty()).await;
    assert_eq!(hits.len(), 1, "one event, delivered once: {hits:?}");
    let hit = &hits[0];
    let signature = &hit.headers["clipforge-signature"];
    assert!(verify(&secret, signature, &hit.body), "{signature}");
    assert!(!verify("whsec_other", signature, &hit.body));
    let event: Value = serde_json::from_slice(&hit.body).unwrap();
    assert_eq!(event["type"], "project.completed");
    assert_eq!(hit.headers["clipforge-event"], "project.completed");
    assert_eq!(
        hit.headers["clipforge-delivery"],
        event["id"].as_str().unwrap()
    );
    // The project in the API's own shape, as completed.
    assert_eq!(event["data"]["id"], pid.as_str());
    assert_eq!(event["data"]["state"], "completed");
    assert_eq!(event["data"]["title"], "Hooked talk");
    assert!(event["data"]["clips"].as_u64().unwrap() >= 1, "{event}");

    // The delivery log has it, delivered on the first attempt.
    let hook_id = hook["id"].as_str().unwrap();
    let log = {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let log = deliveries(&app, &token, hook_id).await;
            if log.first().is_some_and(|d| d["status"] == "delivered") || Instant::now() > deadline
            {
                break log;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(log[0]["id"], event["id"]);
    assert_eq!(log[0]["status"], "delivered");
    assert_eq!(log[0]["attempts"], 1);
    assert_eq!(log[0]["responseCode"], 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_down_gets_the_event_later_even_across_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let env = [PRIVATE_OK, FAST_RETRY];
    let mut app = spawn_app_with(dir, &env);
    let token = app.sign_up("retries@example.com").await;
    let (url, rx) = receiver().await;
    let hook = create_webhook(&app, &token, &url, &["post.published"]).await;
    let hook_id = hook["id"].as_str().unwrap().to_string();

    // Down for the first attempts, then up: the same delivery id arrives.
    rx.status.store(503, Ordering::SeqCst);
    let (s, first) = app
        .post(&format!("/api/webhooks/{hook_id}/test"), &token, json!({}))
        .await;
    assert_eq!(s, 202, "{first}");
    assert_eq!(first["status"], "pending");
    let id = first["id"].as_str().unwrap().to_string();
    rx.wait_for("two failed attempts", |h| h.len() >= 2).await;
    let log = deliveries(&app, &token, &hook_id).await;
    assert_eq!(log[0]["status"], "pending", "{log:?}");
    assert_eq!(log[0]["responseCode"], 503, "{log:?}");
    assert!(log[0]["nextAttemptAt"].is_string(), "{log:?}");
    rx.status.store(200, Ordering::SeqCst);
    let hits = rx
        .wait_for("a delivered attempt", |h| {
            h.iter().any(|h| h.answered == 200)
        })
        .await;
    assert!(hits.iter().all(|h| h.headers["clipforge-delivery"] == id));
    assert!(hits
        .iter()
        .all(|h| h.headers["clipforge-event"] == "webhook.test"));

    // An event pending when the server is SIGKILLed is delivered after the
    // restart, exactly once with a 2xx.
    rx.status.store(500, Ordering::SeqCst);
    let seen = rx.hits().len();
    let (s, second) = app
        .post(&format!("/api/webhooks/{hook_id}/test"), &token, json!({}))
        .await;
    assert_eq!(s, 202, "{second}");
    let id2 = second["id"].as_str().unwrap().to_string();
    rx.wait_for("a failed attempt of the second event", |h| h.len() > seen)
        .await;
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &app.child.id().to_string()])
        .status();
    let _ = app.child.wait();
    rx.status.store(200, Ordering::SeqCst);
    let dir = std::mem::replace(&mut app.dir, tempfile::tempdir().unwrap());
    drop(app);
    let app = spawn_app_with(dir, &env);
    let hits = rx
        .wait_for("the second event delivered", |h| {
            h.iter()
                .any(|h| h.headers["clipforge-delivery"] == id2 && h.answered == 200)
        })
        .await;
    // Give a second delivery (there must be none) time to show.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let ok = rx
        .hits()
        .iter()
        .filter(|h| h.headers["clipforge-delivery"] == id2 && h.answered == 200)
        .count();
    assert_eq!(ok, 1, "{hits:?}");
    let log = deliveries(&app, &token, &hook_id).await;
    let second = log.iter().find(|d| d["id"] == id2.as_str()).unwrap();
    assert_eq!(second["status"], "delivered", "{log:?}");

    // Redeliver sends it again with the same id.
    let (s, again) = app
        .post(
            &format!("/api/webhooks/{hook_id}/deliveries/{id2}/redeliver"),
            &token,
            json!({}),
        )
        .await;
    assert_eq!(s, 202, "{again}");
    rx.wait_for("the redelivery", |h| {
        h.iter()
            .filter(|h| h.headers["clipforge-delivery"] == id2 && h.answered == 200)
            .count()
            == 2
    })
    .await;

    // Deleting the webhook takes its log; its id is then unknown.
    let (s, v) = app
        .call(
            reqwest::Method::DELETE,
            &format!("/api/webhooks/{hook_id}"),
            Some(&token),
            None,
        )
        .await;
    assert_eq!((s, &v["deleted"]), (200, &json!(true)), "{v}");
    let (s, v) = app
        .get(&format!("/api/webhooks/{hook_id}/deliveries"), &token)
        .await;
    assert_error(s, &v, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_targets_bad_input_and_keys_are_refused() {
    let app = spawn_app_with(tempfile::tempdir().unwrap(), &[]);
    let token = app.sign_up("careful@example.com").await;
    for url in [
        "http://127.0.0.1:9/hook",
        "http://localhost/hook",
        "http://[::1]/x",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/x",
    ] {
        let (s, v) = app
            .post(
                "/api/webhooks",
                &token,
                json!({"url": url, "events": ["project.completed"]}),
            )
            .await;
        assert_error(s, &v, 400);
        assert_eq!(v["error"], "private_target", "{url}: {v}");
    }
    for body in [
        json!({"url": "ftp://example.com/x", "events": ["project.completed"]}),
        json!({"url": "https://example.com/x", "events": ["project.exploded"]}),
        json!({"url": "https://example.com/x", "events": ["webhook.test"]}),
        json!({"url": "https://example.com/x", "events": []}),
        json!({"url": "https://example.com/x"}),
    ] {
        let (s, v) = app.post("/api/webhooks", &token, body.clone()).await;
        assert_error(s, &v, 400);
        let _ = body;
    }
    let (_, list) = app.get("/api/webhooks", &token).await;
    assert_eq!(
        list["webhooks"],
        json!([]),
        "nothing stored by refused requests"
    );
    // A key, whatever its scopes, cannot manage webhooks.
    let (s, key) = app
        .post(
            "/api/keys",
            &token,
            json!({"name": "all", "scopes": ["read", "write", "publish"]}),
        )
        .await;
    assert_eq!(s, 201, "{key}");
    let key = key["key"].as_str().unwrap();
    let (s, v) = app.get("/api/webhooks", key).await;
    assert_error(s, &v, 403);
    let (s, v) = app
        .post(
            "/api/webhooks",
            key,
            json!({"url": "https://example.com/x", "events": ["project.completed"]}),
        )
        .await;
    assert_error(s, &v, 403);
    // Without credentials: 401; another account's webhook: 404.
    let (s, v) = app
        .call(reqwest::Method::GET, "/api/webhooks", None, None)
        .await;
    assert_error(s, &v, 401);
    let (s, v) = app
        .post(
            "/api/webhooks/00000000-0000-4000-8000-000000000000/test",
            &token,
            json!({}),
        )
        .await;
    assert_error(s, &v, 404);
}
