//! Issue 15 item 4 through the API: a project's `removeFillers` (filler
//! words cut out of the clips, durations and transcripts following the cut)
//! and a caption template's `emphasizeKeywords` switch.

use serde_json::{json, Value};

mod common;
use common::*;

/// `M:SS` as seconds.
fn secs(display: &Value) -> u64 {
    let (m, s) = display.as_str().unwrap().split_once(':').unwrap();
    m.parse::<u64>().unwrap() * 60 + s.parse::<u64>().unwrap()
}

fn is_filler(word: &str) -> bool {
    clipforge_actors::projects::stages::fillers::is_filler_word(word)
}

#[tokio::test(flavor = "multi_thread")]
async fn remove_fillers_cuts_the_clip_and_its_transcript() {
    let app = spawn_app();
    let token = app.sign_up("fillers@example.com").await;
    let dir = tempfile::tempdir().unwrap();
    let video = speech_video_saying(
        dir.path(),
        "So, um, today we talk about the launch. Uh, the plan is simple. \
         We ship the product, um, on Monday morning. Uh, then we measure everything and we learn.",
        150,
    );
    let (s, up) = upload(&app, &token, &video, "talk.mp4").await;
    assert_eq!(s, 200, "{up}");
    let key = up["fileKey"].clone();

    let (s, v) = app
        .post(
            "/api/projects",
            &token,
            json!({"fileKey": key, "removeFillers": "yes"}),
        )
        .await;
    assert_error(s, &v, 400);

    let mut ids = Vec::new();
    for remove in [true, false] {
        let (s, created) = app
            .post(
                "/api/projects",
                &token,
                json!({"fileKey": key, "skipCuts": true, "removeFillers": remove}),
            )
            .await;
        assert_eq!(s, 201, "{created}");
        assert_eq!(created["project"]["removeFillers"], remove);
        ids.push(created["projectId"].as_str().unwrap().to_string());
    }
    // Omitted: off.
    let (s, plain) = app
        .post("/api/projects", &token, json!({"fileKey": key}))
        .await;
    assert_eq!(s, 201, "{plain}");
    assert_eq!(plain["project"]["removeFillers"], false);

    let mut clips = Vec::new();
    for id in &ids {
        follow_to_completion(&app, &token, id).await;
        let (s, v) = app.get(&format!("/api/projects/{id}"), &token).await;
        assert_eq!(s, 200, "{v}");
        clips.push(v["clips"][0].clone());
    }
    let (on, off) = (&clips[0], &clips[1]);
    eprintln!("with removal: {on}");
    let cuts = on["cuts"].as_array().unwrap();
    assert!(!cuts.is_empty(), "no filler was cut: {on}");
    let cut: f64 = cuts
        .iter()
        .map(|c| c["endSec"].as_f64().unwrap() - c["startSec"].as_f64().unwrap())
        .sum();
    assert!(off["cuts"].as_array().unwrap().is_empty(), "{off}");
    // Same source range, shorter clip.
    assert_eq!(on["startSec"], off["startSec"]);
    assert_eq!(on["endSec"], off["endSec"]);
    let range = on["endSec"].as_f64().unwrap() - on["startSec"].as_f64().unwrap();
    assert!(secs(&on["duration"]) as f64 <= (range - cut).ceil(), "{on}");
    for seg in on["transcripts"].as_array().unwrap() {
        for w in seg["text"].as_str().unwrap().split_whitespace() {
            assert!(!is_filler(w), "{seg} still says a filler");
        }
    }
    // The MP4 itself is shorter by about the cuts.
    let mut lengths = Vec::new();
    for clip in [on, off] {
        let bytes = reqwest::get(clip["url"].as_str().unwrap())
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        let path = dir
            .path()
            .join(format!("{}.mp4", clip["id"].as_str().unwrap()));
        std::fs::write(&path, &bytes).unwrap();
        lengths.push(clipforge_test_support::media_seconds(&path));
    }
    eprintln!("clip lengths {lengths:?}, cuts {cut:.3} s");
    assert!(
        ((lengths[1] - lengths[0]) - cut).abs() <= 0.3,
        "shorter by {:.3} s, cuts {cut:.3} s",
        lengths[1] - lengths[0]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn templates_switch_keyword_emphasis() {
    let app = spawn_app();
    let token = app.sign_up("emphasis@example.com").await;
    let (s, list) = app.get("/api/caption-templates", &token).await;
    assert_eq!(s, 200, "{list}");
    assert_eq!(list["templates"][0]["emphasizeKeywords"], true, "{list}");

    let (s, t) = app
        .post(
            "/api/caption-templates",
            &token,
            json!({"name": "Plain", "emphasizeKeywords": false}),
        )
        .await;
    assert_eq!(s, 201, "{t}");
    assert_eq!(t["emphasizeKeywords"], false, "{t}");
    let id = t["id"].as_str().unwrap().to_string();

    // Omitted on update: kept.
    let (s, t) = app
        .call(
            reqwest::Method::PUT,
            &format!("/api/caption-templates/{id}"),
            Some(&token),
            Some(json!({"fontSize": 60})),
        )
        .await;
    assert_eq!(s, 200, "{t}");
    assert_eq!(t["emphasizeKeywords"], false, "{t}");
    let (_, list) = app.get("/api/caption-templates", &token).await;
    let plain = list["templates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id.as_str())
        .unwrap()
        .clone();
    assert_eq!(plain["emphasizeKeywords"], false, "{plain}");

    // A project in that template renders without emphasis.
    let dir = tempfile::tempdir().unwrap();
    let video = speech_video(dir.path());
    let (s, up) = upload(&app, &token, &video, "talk.mp4").await;
    assert_eq!(s, 200, "{up}");
    let (s, created) = app
        .post(
            "/api/projects",
            &token,
            json!({"fileKey": up["fileKey"], "captionTemplate": "Plain"}),
        )
        .await;
    assert_eq!(s, 201, "{created}");
    let pid = created["projectId"].as_str().unwrap();
    let (_, v) = app.get(&format!("/api/projects/{pid}"), &token).await;
    assert_eq!(v["captionStyle"]["emphasizeKeywords"], false, "{v}");

    let (s, t) = app
        .call(
            reqwest::Method::PUT,
            &format!("/api/caption-templates/{id}"),
            Some(&token),
            Some(json!({"emphasizeKeywords": true})),
        )
        .await;
    assert_eq!(s, 200, "{t}");
    assert_eq!(t["emphasizeKeywords"], true, "{t}");
    let (s, v) = app
        .call(
            reqwest::Method::PUT,
            &format!("/api/caption-templates/{id}"),
            Some(&token),
            Some(json!({"emphasizeKeywords": "no"})),
        )
        .await;
    assert_error(s, &v, 400);
}
