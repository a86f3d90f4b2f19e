//! The project fields `layout` and `aspectRatio` (issue 15 items 2–3):
//! refused with the uniform error body when unknown, returned by GET
//! project, and the clips rendered at the aspect ratio's size with their
//! layout named in the clip object.

use std::process::Command;

use serde_json::{json, Value};

mod common;
use common::*;

/// Width and height of the first video stream of a file.
fn video_size(path: &std::path::Path) -> (u64, u64) {
    let out = Command::new("ffprobe")
        .args(["-v", "error", "-select_streams", "v:0", "-show_entries"])
        .args(["stream=width,height", "-of", "json"])
        .arg(path)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = &v["streams"][0];
    (s["width"].as_u64().unwrap(), s["height"].as_u64().unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn projects_take_a_layout_and_an_aspect_ratio() {
    let app = spawn_app();
    let token = app.sign_up("layouts@example.com").await;
    let dir = tempfile::tempdir().unwrap();
    let video = speech_video(dir.path());
    let (s, up) = upload(&app, &token, &video, "talk.mp4").await;
    assert_eq!(s, 200, "{up}");
    let key = up["fileKey"].clone();

    for (field, value) in [
        ("aspectRatio", "3:2"),
        ("layout", "pip"),
        ("aspectRatio", ""),
    ] {
        let (s, v) = app
            .post(
                "/api/projects",
                &token,
                json!({"fileKey": key, field: value}),
            )
            .await;
        assert_error(s, &v, 400);
        assert_eq!(v["error"], "invalid_field", "{v}");
        assert!(v["message"].as_str().unwrap().starts_with(field), "{v}");
    }

    let (s, created) = app
        .post(
            "/api/projects",
            &token,
            json!({"fileKey": key, "skipCuts": true, "layout": "split", "aspectRatio": "1:1"}),
        )
        .await;
    assert_eq!(s, 201, "{created}");
    assert_eq!(created["project"]["layout"], "split");
    assert_eq!(created["project"]["aspectRatio"], "1:1");
    let pid = created["projectId"].as_str().unwrap().to_string();
    follow_to_completion(&app, &token, &pid).await;

    let (s, v) = app.get(&format!("/api/projects/{pid}"), &token).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["project"]["layout"], "split", "{v}");
    assert_eq!(v["project"]["aspectRatio"], "1:1", "{v}");
    let clips = v["clips"].as_array().unwrap();
    assert!(!clips.is_empty(), "{v}");
    for clip in clips {
        assert_eq!(clip["layout"], "split", "{clip}");
        assert_eq!(clip["quality"], "1080p", "{clip}");
        let bytes = reqwest::get(clip["url"].as_str().unwrap())
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        let file = dir.path().join("clip.mp4");
        std::fs::write(&file, &bytes).unwrap();
        assert_eq!(video_size(&file), (1080, 1080), "{clip}");
    }

    // Defaults: auto and 9:16; a clip's own layout is never auto.
    let (s, created) = app
        .post(
            "/api/projects",
            &token,
            json!({"fileKey": key, "skipCuts": true}),
        )
        .await;
    assert_eq!(s, 201, "{created}");
    assert_eq!(created["project"]["layout"], "auto");
    assert_eq!(created["project"]["aspectRatio"], "9:16");
    let pid = created["projectId"].as_str().unwrap().to_string();
    follow_to_completion(&app, &token, &pid).await;
    let (_, v) = app.get(&format!("/api/projects/{pid}"), &token).await;
    let clip = &v["clips"][0];
    // The test picture has no face and is 16:9: fit.
    assert_eq!(clip["layout"], "fit", "{v}");
}
