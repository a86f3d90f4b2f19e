//! A failed post is not a dead end (issue 30, console item 5): given a new
//! time it is tried again from the start, or it is deleted; a post that is
//! publishing or published stays as it is.

mod publishing;
use publishing::Posting;

use publishing::platforms::{Fault, Platforms};
use publishing::{assert_error, at, spawn_app_in, template};
use serde_json::json;

#[tokio::test]
async fn a_failed_post_is_tried_again_or_deleted() {
    let p = Platforms::start();
    let app = spawn_app_in(template().copy(), p.env());
    let t = &template().token;
    app.connect(t, "youtube", &p).await;
    let clip = &template().clips[0].0;
    let schedule = |title: &'static str| {
        let app = &app;
        async move {
            let (s, v) = app
                .post(
                    &format!("/api/clips/{clip}/schedule"),
                    t,
                    json!({"provider": "youtube", "title": title, "scheduledAt": at(0)}),
                )
                .await;
            assert_eq!(s, 201, "{v}");
            v["id"].as_str().unwrap().to_string()
        }
    };

    // The platform refuses for good: failed with its reason.
    p.fault("yt_init", Fault::Status(403, None));
    let id = schedule("Second chance").await;
    let failed = app.wait_post(t, &id, |v| v["status"] == "failed").await;
    assert!(
        failed["error"].as_str().unwrap().contains("403"),
        "{failed}"
    );
    let path = format!("/api/clips/scheduled/{id}");

    // A new title alone does not bring it back: it needs a time.
    let (s, v) = app.patch(&path, t, json!({"title": "Only a title"})).await;
    assert_error(s, &v, 409);
    assert_eq!(v["error"], "not_pending");
    assert!(
        v["message"].as_str().unwrap().contains("scheduledAt"),
        "{v}"
    );

    // Given a time it is pending again, its failure cleared, and published.
    let (s, v) = app
        .patch(
            &path,
            t,
            json!({"scheduledAt": at(1), "title": "Second chance, again"}),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        (&v["status"], &v["error"], &v["attempts"]),
        (&json!("pending"), &json!(null), &json!(0)),
        "{v}"
    );
    let done = app
        .wait_post(t, &id, |v| {
            v["status"] == "published" || v["status"] == "failed"
        })
        .await;
    assert_eq!(done["status"], "published", "{done}");
    let published = p.published("youtube");
    assert_eq!(published.len(), 1, "{published:?}");
    assert_eq!(published[0].1, "Second chance, again");
    // Published: neither changed nor deleted.
    let (s, v) = app.patch(&path, t, json!({"scheduledAt": at(60)})).await;
    assert_error(s, &v, 409);
    let (s, v) = app.delete(&path, t).await;
    assert_error(s, &v, 409);

    // Another failure is deleted; then it is gone.
    p.fault("yt_init", Fault::Status(403, None));
    let other = schedule("Let it go").await;
    app.wait_post(t, &other, |v| v["status"] == "failed").await;
    let other_path = format!("/api/clips/scheduled/{other}");
    let (s, v) = app.delete(&other_path, t).await;
    assert_eq!((s, &v["deleted"]), (200, &json!(true)), "{v}");
    let (s, v) = app.get(&other_path, t).await;
    assert_error(s, &v, 404);

    // Tried again only while the account is connected.
    p.fault("yt_init", Fault::Status(403, None));
    let third = schedule("No account").await;
    app.wait_post(t, &third, |v| v["status"] == "failed").await;
    let (s, v) = app.delete("/api/integrations/youtube", t).await;
    assert_eq!(s, 200, "{v}");
    let third_path = format!("/api/clips/scheduled/{third}");
    let (s, v) = app
        .patch(&third_path, t, json!({"scheduledAt": at(1)}))
        .await;
    assert_error(s, &v, 403);
    assert_eq!(v["error"], "integration_required");
    let (_, v) = app.get(&third_path, t).await;
    assert_eq!(v["status"], "failed", "unchanged: {v}");
    assert_eq!(p.published("youtube").len(), 1);
}
