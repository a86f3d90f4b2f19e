//! Editing a clip (issue 29, first part): its title, on a finished project,
//! seen by the project, its export and new posts; bad input changes
//! nothing; another user's clip is not found.

mod publishing;

use publishing::{assert_error, spawn_app_in, template};
use serde_json::{json, Value};

#[tokio::test]
async fn a_clip_is_retitled_and_bad_edits_change_nothing() {
    let app = spawn_app_in(template().copy(), Vec::new());
    let t = &template().token;
    let project = &template().project_id;
    let clip = &template().clips[0].0;
    let path = format!("/api/projects/{project}/clips/{clip}");
    let title_of = |v: &Value| {
        v["clips"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == json!(clip))
            .map(|c| c["title"].clone())
            .unwrap()
    };
    let (_, before) = app.get(&format!("/api/projects/{project}"), t).await;
    let old = title_of(&before);

    let (s, v) = app
        .patch(&path, t, json!({"title": "  Why the last word matters  "}))
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["title"], "Why the last word matters");
    assert_eq!(v["id"], json!(clip));
    let (_, after) = app.get(&format!("/api/projects/{project}"), t).await;
    assert_eq!(title_of(&after), "Why the last word matters");
    // The other fields are as they were.
    let clip_of = |v: &Value| {
        let mut c = v["clips"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == json!(clip))
            .unwrap()
            .clone();
        c["title"] = Value::Null;
        c
    };
    assert_eq!(clip_of(&before), clip_of(&after));
    // The editor export names the clip by its new title.
    let r = app
        .client
        .get(format!(
            "{}/api/projects/{project}/export?format=otio",
            app.base
        ))
        .bearer_auth(t)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let otio = r.text().await.unwrap();
    assert!(otio.contains("Why the last word matters"), "{otio}");

    // Refused, and nothing changes: empty, too long, two lines, fields the
    // editor does not have yet, no body field at all.
    for body in [
        json!({"title": "   "}),
        json!({"title": "x".repeat(101)}),
        json!({"title": "two\nlines"}),
        json!({"title": "ok", "startSec": 3.0}),
        json!({"words": [{"index": 0, "text": "hi"}]}),
        json!({}),
    ] {
        let (s, v) = app.patch(&path, t, body.clone()).await;
        assert_error(s, &v, 400);
    }
    let (_, same) = app.get(&format!("/api/projects/{project}"), t).await;
    assert_eq!(title_of(&same), "Why the last word matters");
    assert_ne!(old, title_of(&same));

    // Unknown clip, unknown project, another user's clip: 404.
    let other_clip = format!("/api/projects/{project}/clips/00000000-0000-4000-8000-000000000000");
    let (s, v) = app.patch(&other_clip, t, json!({"title": "x"})).await;
    assert_error(s, &v, 404);
    let other = app.sign_up("someone.else@example.com").await;
    let (s, v) = app.patch(&path, &other, json!({"title": "Mine now"})).await;
    assert_error(s, &v, 404);
    let (_, same) = app.get(&format!("/api/projects/{project}"), t).await;
    assert_eq!(title_of(&same), "Why the last word matters");
}

#[tokio::test]
async fn a_project_still_processing_has_no_clip_to_edit_yet() {
    let app = spawn_app_in(template().copy(), Vec::new());
    let t = &template().token;
    let media = tempfile::tempdir().unwrap();
    let video = publishing::speech_video(media.path());
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(std::fs::read(&video).unwrap()).file_name("talk.mp4"),
    );
    let r = app
        .client
        .post(format!("{}/api/upload", app.base))
        .bearer_auth(t)
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let up: Value = r.json().await.unwrap();
    let (s, created) = app
        .post(
            "/api/projects",
            t,
            json!({"fileKey": up["fileKey"], "title": "Still going", "clipDurationPreset": "15-30"}),
        )
        .await;
    assert_eq!(s, 201, "{created}");
    let pid = created["projectId"].as_str().unwrap();
    // Transcription alone takes seconds: the project is still running.
    let (s, v) = app
        .patch(
            &format!("/api/projects/{pid}/clips/00000000-0000-4000-8000-000000000000"),
            t,
            json!({"title": "Too early"}),
        )
        .await;
    let (_, now) = app.get(&format!("/api/projects/{pid}"), t).await;
    assert_ne!(
        now["project"]["state"], "completed",
        "finished too fast to test: {now}"
    );
    assert_error(s, &v, 409);
    assert_eq!(v["error"], "project_processing", "{v}");
    let (s, v) = app
        .post(&format!("/api/projects/{pid}/cancel"), t, json!({}))
        .await;
    assert_eq!(s, 200, "{v}");
}
