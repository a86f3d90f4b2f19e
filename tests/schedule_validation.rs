//! Every validation error of scheduling, bulk scheduling, PATCH and DELETE:
//! the status, the uniform body and the field named in the message.

mod publishing;
use publishing::Posting;

use publishing::platforms::Platforms;
use publishing::{assert_error, at, spawn_app_in, template, App};
use serde_json::{json, Value};

fn app_with(p: &Platforms) -> App {
    spawn_app_in(template().copy(), p.env())
}

fn clip() -> String {
    template().clips[0].0.clone()
}

#[tokio::test]
async fn every_validation_error() {
    let p = Platforms::start();
    let app = app_with(&p);
    let t = &template().token;
    app.connect(t, "youtube", &p).await;
    let path = format!("/api/clips/{}/schedule", clip());
    let cases = [
        (
            json!({"title": "x", "scheduledAt": at(60)}),
            400,
            "provider",
        ),
        (
            json!({"provider": "myspace", "title": "x", "scheduledAt": at(60)}),
            400,
            "provider",
        ),
        (
            json!({"provider": "youtube", "scheduledAt": at(60)}),
            400,
            "title",
        ),
        (
            json!({"provider": "youtube", "title": "  ", "scheduledAt": at(60)}),
            400,
            "title",
        ),
        (
            json!({"provider": "youtube", "title": "y".repeat(101), "scheduledAt": at(60)}),
            400,
            "title",
        ),
        (
            json!({"provider": "youtube", "title": "x"}),
            400,
            "scheduledAt",
        ),
        (
            json!({"provider": "youtube", "title": "x", "scheduledAt": "next tuesday"}),
            400,
            "scheduledAt",
        ),
        (
            json!({"provider": "youtube", "title": "x", "scheduledAt": "2030-01-01T10:00:00+02:00"}),
            400,
            "scheduledAt",
        ),
        (
            json!({"provider": "youtube", "title": "x", "scheduledAt": at(-3600)}),
            400,
            "scheduledAt",
        ),
        (
            json!({"provider": "youtube", "title": "x", "scheduledAt": at(400 * 86_400)}),
            400,
            "scheduledAt",
        ),
        (
            json!({"provider": "instagram", "title": "x", "scheduledAt": at(60)}),
            403,
            "integration_required",
        ),
    ];
    for (body, status, field) in cases {
        let (s, v) = app.post(&path, t, body.clone()).await;
        assert_error(s, &v, status);
        assert!(
            v["message"].as_str().unwrap().starts_with(field) || v["error"] == field,
            "{body} → {v}"
        );
    }
    // Unknown clip and another user's clip: 404.
    let (s, v) = app
        .post(
            "/api/clips/nope/schedule",
            t,
            json!({"provider": "youtube", "title": "x", "scheduledAt": at(60)}),
        )
        .await;
    assert_error(s, &v, 404);
    let other = app.sign_up("eve@example.com").await;
    let (s, v) = app
        .post(
            &path,
            &other,
            json!({"provider": "youtube", "title": "x", "scheduledAt": at(60)}),
        )
        .await;
    assert_error(s, &v, 404);

    let bulk = format!("/api/projects/{}/bulk-schedule", template().project_id);
    let ok = json!({"scheduledAt": at(3600), "intervalHours": 2, "providers": ["youtube"]});
    let with = |k: &str, v: Value| {
        let mut b = ok.clone();
        if v.is_null() {
            b.as_object_mut().unwrap().remove(k);
        } else {
            b[k] = v;
        }
        b
    };
    let cases = [
        (with("scheduledAt", Value::Null), 400, "scheduledAt"),
        (
            with("scheduledAt", json!("2020-01-01T00:00:00Z")),
            400,
            "scheduledAt",
        ),
        (with("intervalHours", Value::Null), 400, "intervalHours"),
        (with("intervalHours", json!(-1)), 400, "intervalHours"),
        (with("intervalHours", json!(100_000)), 400, "intervalHours"),
        (with("providers", json!([])), 400, "providers"),
        (with("providers", Value::Null), 400, "providers"),
        (
            with("providers", json!(["youtube", "vine"])),
            400,
            "providers",
        ),
        (with("caption", json!("c".repeat(101))), 400, "caption"),
        (
            with("providers", json!(["youtube", "tiktok"])),
            403,
            "integration_required",
        ),
    ];
    for (body, status, field) in cases {
        let (s, v) = app.post(&bulk, t, body.clone()).await;
        assert_error(s, &v, status);
        assert!(
            v["message"].as_str().unwrap().starts_with(field) || v["error"] == field,
            "{body} → {v}"
        );
    }
    let (s, v) = app
        .post(&bulk, t, with("intervalHours", json!("two")))
        .await;
    assert_error(s, &v, 400);
    assert!(
        v["message"].as_str().unwrap().starts_with("intervalHours"),
        "{v}"
    );
    let (s, v) = app
        .post(&bulk, t, with("providers", json!("youtube")))
        .await;
    assert_error(s, &v, 400);
    assert!(
        v["message"].as_str().unwrap().starts_with("providers"),
        "{v}"
    );
    let (s, v) = app.post(&bulk, &other, ok.clone()).await;
    assert_error(s, &v, 404);
    let (s, v) = app
        .post("/api/projects/nope/bulk-schedule", t, ok.clone())
        .await;
    assert_error(s, &v, 404);
    // Nothing was created by any refused request.
    let (_, list) = app.get("/api/clips/scheduled", t).await;
    assert_eq!(list["total"], 0, "{list}");

    // PATCH / DELETE: validation, ownership, only while pending.
    let (s, post) = app
        .post(
            &path,
            t,
            json!({"provider": "youtube", "title": "Later", "scheduledAt": at(3600)}),
        )
        .await;
    assert_eq!(s, 201, "{post}");
    let id = post["id"].as_str().unwrap();
    let (s, v) = app
        .patch(
            &format!("/api/clips/scheduled/{id}"),
            t,
            json!({"scheduledAt": "soon"}),
        )
        .await;
    assert_error(s, &v, 400);
    let (s, v) = app
        .patch(&format!("/api/clips/scheduled/{id}"), t, json!({}))
        .await;
    assert_error(s, &v, 400);
    let (s, v) = app
        .patch(
            &format!("/api/clips/scheduled/{id}"),
            &other,
            json!({"title": "mine"}),
        )
        .await;
    assert_error(s, &v, 404);
    let (s, v) = app
        .delete(&format!("/api/clips/scheduled/{id}"), &other)
        .await;
    assert_error(s, &v, 404);
    let (s, v) = app
        .patch(
            &format!("/api/clips/scheduled/{id}"),
            t,
            json!({"title": "Now", "scheduledAt": at(0)}),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["title"], "Now");
    app.wait_post(t, id, |v| v["status"] == "published").await;
    let (s, v) = app
        .patch(
            &format!("/api/clips/scheduled/{id}"),
            t,
            json!({"title": "too late"}),
        )
        .await;
    assert_error(s, &v, 409);
    assert_eq!(v["error"], "not_pending");
    let (s, v) = app.delete(&format!("/api/clips/scheduled/{id}"), t).await;
    assert_error(s, &v, 409);
    let (s, v) = app.delete("/api/clips/scheduled/unknown", t).await;
    assert_error(s, &v, 404);
}
