//! Supervision of schedule actors, black-box: with `schedule-panic:once`
//! the first publication step panics; the restarted actor publishes the
//! post exactly once.

mod publishing;
use publishing::Posting;

use publishing::platforms::Platforms;
use publishing::{at, spawn_app_in, template};
use serde_json::json;

#[tokio::test]
async fn a_panicking_schedule_actor_is_restarted_and_publishes_once() {
    let p = Platforms::start();
    let mut env = p.env();
    env.push(("CLIPFORGE_FAULTS".into(), "schedule-panic:once".into()));
    let app = spawn_app_in(template().copy(), env);
    let t = &template().token;
    app.connect(t, "youtube", &p).await;
    let clip = &template().clips[0].0;
    let (s, v) = app
        .post(
            &format!("/api/clips/{clip}/schedule"),
            t,
            json!({"provider": "youtube", "title": "Survives a crash", "scheduledAt": at(1)}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let id = v["id"].as_str().unwrap().to_string();
    let done = app
        .wait_post(t, &id, |v| {
            v["status"] == "published" || v["status"] == "failed"
        })
        .await;
    assert_eq!(done["status"], "published", "{done}");
    let published = p.published("youtube");
    assert_eq!(published.len(), 1, "published exactly once: {published:?}");
    assert_eq!(published[0].1, "Survives a crash");
    let (_, notes) = app.get("/api/notifications", t).await;
    let count = notes["notifications"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["type"] == "post_published")
        .count();
    assert_eq!(count, 1, "{notes}");
}
