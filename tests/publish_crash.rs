//! SIGKILL while a post is `publishing`, then restart: the post is
//! reconciled with the platform and published exactly once.

mod publishing;
use publishing::Posting;

use std::time::{Duration, Instant};

use publishing::platforms::Platforms;
use publishing::{at, spawn_app_in, template, App};
use serde_json::json;

/// Schedules a post, waits until the platform has done `route`'s effect
/// (the answer is held back), SIGKILLs the server, restarts it and checks
/// the outcome.
async fn crash_during(provider: &str, route: &str, published_before_kill: bool) {
    let p = Platforms::start();
    let app: App = spawn_app_in(template().copy(), p.env());
    let t = &template().token;
    app.connect(t, provider, &p).await;
    p.hold(route, Duration::from_secs(600));
    let clip = &template().clips[0].0;
    let (s, v) = app
        .post(
            &format!("/api/clips/{clip}/schedule"),
            t,
            json!({"provider": provider, "title": "Crash test", "scheduledAt": at(1)}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let id = v["id"].as_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(120);
    let reached = || {
        if published_before_kill {
            !p.published(provider).is_empty()
        } else {
            p.hits(route) > 0
        }
    };
    while !reached() {
        assert!(Instant::now() < deadline, "{route} never reached");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (_, v) = app.get(&format!("/api/clips/scheduled/{id}"), t).await;
    assert_eq!(v["status"], "publishing", "{v}");
    p.lock().holds_clear();
    let app = app.crash_and_restart();
    let v = app
        .wait_post(t, &id, |v| {
            v["status"] == "published" || v["status"] == "failed"
        })
        .await;
    assert_eq!(v["status"], "published", "{v}");
    let published = p.published(provider);
    assert_eq!(published.len(), 1, "published exactly once: {published:?}");
    if provider == "instagram" {
        // A container reconciled as PUBLISHED does not name its media id:
        // the post keeps the container id.
        assert!(v["platformPostId"].is_string(), "{v}");
    } else {
        assert_eq!(v["platformPostId"], published[0].2.as_str());
    }
    let (_, n) = app.get("/api/notifications", t).await;
    let count = n["notifications"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["type"] == "post_published")
        .count();
    assert_eq!(count, 1, "{n}");
}

#[tokio::test]
async fn youtube_killed_after_the_upload_completed() {
    crash_during("youtube", "published", true).await;
}

#[tokio::test]
async fn youtube_killed_before_the_session_uri_was_saved() {
    crash_during("youtube", "yt_init", false).await;
}

#[tokio::test]
async fn tiktok_killed_after_the_last_chunk() {
    crash_during("tiktok", "published", true).await;
}

#[tokio::test]
async fn instagram_killed_during_media_publish() {
    crash_during("instagram", "published", true).await;
}
