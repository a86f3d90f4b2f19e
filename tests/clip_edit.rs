//! Editing a clip (issue 29): its title, on a finished project, seen by
//! the project, its export and new posts; bad input changes nothing;
//! another user's clip is not found. Rendering edits: `clip_render.rs`.

mod publishing;

use publishing::{assert_error, clip_in, settled, spawn_app_in, template};
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

    // Refused, and nothing changes: empty, too long, two lines, a field
    // the editor does not have (a span's `y`), no field at all, a word
    // the clip does not have, a range too short for the preset or outside
    // the source, an unknown layout or template.
    for body in [
        json!({"title": "   "}),
        json!({"title": "x".repeat(101)}),
        json!({"title": "two\nlines"}),
        json!({"reframe": [{"fromSec": 0, "toSec": 1, "x": 10, "y": 4}]}),
        json!({}),
        json!({"words": [{"index": 100000, "text": "hi"}]}),
        json!({"words": [{"index": 0, "text": "two\nlines"}]}),
        json!({"startSec": 1.0, "endSec": 2.0}),
        json!({"startSec": 0.0, "endSec": 5000.0}),
        json!({"layout": "pip"}),
        json!({"captionTemplate": "no-such-template"}),
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

#[tokio::test]
async fn an_edit_renders_a_new_version_and_an_old_one_comes_back() {
    let app = spawn_app_in(template().copy(), Vec::new());
    let t = &template().token;
    let project = &template().project_id;
    let clip = &template().clips[0].0;
    let path = format!("/api/projects/{project}/clips/{clip}");
    let (_, p) = app.get(&format!("/api/projects/{project}"), t).await;
    let source_secs = p["project"]["durationSec"].as_f64().unwrap();
    let before = clip_in(&p, clip);
    assert_eq!(
        (before["version"].clone(), before["status"].clone()),
        (json!(1), json!("ready"))
    );
    let (start, end) = (
        before["startSec"].as_f64().unwrap(),
        before["endSec"].as_f64().unwrap(),
    );

    // The words the editor shows, with their times on the clip.
    let (s, w) = app.get(&format!("{path}/words"), t).await;
    assert_eq!(s, 200, "{w}");
    let words = w["words"].as_array().unwrap();
    assert!(words.len() > 3, "{w}");
    assert_eq!(words[2]["index"], 2);
    assert!(words[2]["startSec"].as_f64().unwrap() >= 0.0);

    // A longer range (past the original pick) and a fixed word.
    let new_start = (start - 2.0).max(0.0);
    let new_end = (end + 2.0).min(source_secs);
    assert!(new_end - new_start > end - start + 0.5, "no room to extend");
    let (s, v) = app
        .patch(
            &path,
            t,
            json!({
                "startSec": new_start,
                "endSec": new_end,
                "words": [{"index": 2, "text": "Wordfix"}],
                "title": "The whole thought"
            }),
        )
        .await;
    assert_eq!(s, 202, "{v}");
    assert_eq!(
        (v["status"].clone(), v["version"].clone()),
        (json!("rendering"), json!(2))
    );
    // Until it is done the clip plays version 1.
    assert_eq!(v["url"], before["url"]);
    // One render at a time per clip.
    let (s, busy) = app.patch(&path, t, json!({"layout": "fit"})).await;
    assert_error(s, &busy, 409);
    assert_eq!(busy["error"], "clip_rendering", "{busy}");

    // The status stream reports the render, then the clip, then ends on
    // `completed` again.
    let r = app
        .client
        .get(format!("{}/api/projects/{project}/status", app.base))
        .bearer_auth(t)
        .send()
        .await
        .unwrap();
    let stream = r.text().await.unwrap();
    let rendered = stream.find(r#""state":"rendered""#).expect(&stream);
    let clip_event = stream.rfind("event: clip").expect(&stream);
    let last = stream.rfind("event: completed").expect(&stream);
    assert!(rendered < clip_event && clip_event < last, "{stream}");
    assert!(stream.contains("event: render"), "{stream}");

    let after = settled(&app, t, project, clip).await;
    assert_eq!(after["status"], "ready", "{after}");
    assert_eq!(after["version"], 2);
    assert_eq!(after["title"], "The whole thought");
    assert_eq!(after["renderError"], Value::Null);
    assert_ne!(after["url"], before["url"]);
    // The range snapped to whole words, within a word of what was asked.
    let (s2, e2) = (
        after["startSec"].as_f64().unwrap(),
        after["endSec"].as_f64().unwrap(),
    );
    assert!(s2 <= new_start + 1e-6 && s2 > new_start - 1.5, "{after}");
    assert!(e2 >= new_end - 1e-6 - 0.05 && e2 < new_end + 1.5, "{after}");
    let secs = app.video_seconds(after["url"].as_str().unwrap()).await;
    assert!((secs - (e2 - s2)).abs() < 0.3, "{secs} s for {s2}–{e2}");
    // The fixed word is in the subtitles and the transcript.
    let srt = app.fetch_text(after["subtitleUrl"].as_str().unwrap()).await;
    assert!(srt.contains("Wordfix"), "{srt}");
    let vtt = app.fetch_text(after["vttUrl"].as_str().unwrap()).await;
    assert!(vtt.contains("Wordfix"), "{vtt}");
    // …and in the captions burned in: the version's ASS file, kept next
    // to its video in the node's local object storage.
    let ass_file = app.stored_beside(after["url"].as_str().unwrap(), "captions.ass");
    let ass = std::fs::read_to_string(&ass_file)
        .unwrap_or_else(|e| panic!("{}: {e}", ass_file.display()));
    assert!(
        ass.contains("[Events]") && ass.to_lowercase().contains("wordfix"),
        "{ass}"
    );
    let (_, w2) = app.get(&format!("{path}/words"), t).await;
    assert!(
        w2["words"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["text"] == "Wordfix"),
        "{w2}"
    );
    // A notification says so (its webhook event `clip.rendered` is written
    // with it).
    let (_, n) = app.get("/api/notifications", t).await;
    assert!(
        n.to_string().contains("clip_rendered") && n.to_string().contains("The whole thought"),
        "{n}"
    );
    // The export uses the current version.
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
    assert!(r.text().await.unwrap().contains("The whole thought"));

    // Another layout: version 3, drawn whole.
    let (s, v) = app.patch(&path, t, json!({"layout": "fit"})).await;
    assert_eq!(s, 202, "{v}");
    let third = settled(&app, t, project, clip).await;
    assert_eq!(
        (third["version"].clone(), third["layout"].clone()),
        (json!(3), json!("fit"))
    );

    // The versions, and version 1 back as version 4 (its files, no render).
    let (s, vs) = app.get(&format!("{path}/versions"), t).await;
    assert_eq!(s, 200, "{vs}");
    let list = vs["versions"].as_array().unwrap();
    assert_eq!(list.len(), 3, "{vs}");
    assert_eq!(list[0]["version"], 1);
    assert_eq!(list[2]["current"], true);
    let (s, restored) = app
        .post(&format!("{path}/versions/1/restore"), t, json!({}))
        .await;
    assert_eq!(s, 200, "{restored}");
    assert_eq!(restored["version"], 4);
    assert_eq!(restored["url"], before["url"]);
    assert_eq!(restored["startSec"], before["startSec"]);
    let (s, v) = app
        .post(&format!("{path}/versions/9/restore"), t, json!({}))
        .await;
    assert_error(s, &v, 404);
    let (_, vs) = app.get(&format!("{path}/versions"), t).await;
    assert_eq!(vs["versions"].as_array().unwrap().len(), 4, "{vs}");
    // Version 2's files are still there.
    let r = app
        .client
        .get(vs["versions"][1]["url"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
}

#[tokio::test]
async fn clips_are_added_and_renders_beyond_the_account_limit_wait() {
    let app = spawn_app_in(
        template().copy(),
        vec![("CLIPFORGE_PIPELINE_RENDERS_PER_ACCOUNT".into(), "1".into())],
    );
    let t = &template().token;
    let project = &template().project_id;
    let clip = &template().clips[0].0;
    let (_, p) = app.get(&format!("/api/projects/{project}"), t).await;
    let count = p["project"]["clips"].as_u64().unwrap();
    let first = clip_in(&p, clip);
    let (start, end) = (
        first["startSec"].as_f64().unwrap(),
        first["endSec"].as_f64().unwrap(),
    );
    let (s, v) = app
        .patch(
            &format!("/api/projects/{project}/clips/{clip}"),
            t,
            json!({"aspectRatio": "1:1"}),
        )
        .await;
    assert_eq!(s, 202, "{v}");
    // The account's one render slot is taken: 429 with Retry-After.
    let pick = json!({"startSec": start + 1.0, "endSec": (start + 12.0).min(end)});
    let r = app
        .client
        .post(format!("{}/api/projects/{project}/clips", app.base))
        .bearer_auth(t)
        .json(&pick)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 429);
    let wait: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(wait > 0);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"], "too_many_renders", "{body}");
    let square = settled(&app, t, project, clip).await;
    assert_eq!(square["status"], "ready", "{square}");
    let secs = app.video_seconds(square["url"].as_str().unwrap()).await;
    assert!(secs > 1.0);

    // Its turn now: a clip the user picks, scored and titled.
    let (s, added) = app
        .post(&format!("/api/projects/{project}/clips"), t, pick.clone())
        .await;
    assert_eq!(s, 202, "{added}");
    assert_eq!(
        (added["status"].clone(), added["version"].clone()),
        (json!("rendering"), json!(1))
    );
    assert!(!added["title"].as_str().unwrap().is_empty(), "{added}");
    let id = added["id"].as_str().unwrap();
    let (_, p) = app.get(&format!("/api/projects/{project}"), t).await;
    assert_eq!(p["project"]["clips"].as_u64().unwrap(), count + 1);
    let ready = settled(&app, t, project, id).await;
    assert_eq!(ready["status"], "ready", "{ready}");
    let secs = app.video_seconds(ready["url"].as_str().unwrap()).await;
    let want = ready["endSec"].as_f64().unwrap() - ready["startSec"].as_f64().unwrap();
    assert!((secs - want).abs() < 0.3, "{secs} s for {want} s");
    let srt = app.fetch_text(ready["subtitleUrl"].as_str().unwrap()).await;
    assert!(srt.contains("-->"), "{srt}");

    // More clips: none overlapping the ones there are by more than 30 %,
    // or a 409 saying nothing is left.
    let (s, more) = app
        .post(
            &format!("/api/projects/{project}/more-clips"),
            t,
            json!({"count": 2}),
        )
        .await;
    let (_, p) = app.get(&format!("/api/projects/{project}"), t).await;
    match s {
        202 => {
            for c in more["clips"].as_array().unwrap() {
                let (a, b) = (
                    c["startSec"].as_f64().unwrap(),
                    c["endSec"].as_f64().unwrap(),
                );
                for other in p["clips"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|o| o["id"] != c["id"])
                {
                    let (x, y) = (
                        other["startSec"].as_f64().unwrap(),
                        other["endSec"].as_f64().unwrap(),
                    );
                    let common = (b.min(y) - a.max(x)).max(0.0);
                    assert!(
                        common <= 0.3 * (b - a).min(y - x) + 1e-6,
                        "{c} overlaps {other}"
                    );
                }
            }
        }
        _ => {
            assert_error(s, &more, 409);
            assert_eq!(more["error"], "no_more_clips", "{more}");
        }
    }
    for body in [
        json!({"count": 0}),
        json!({"count": 6}),
        json!({"count": 1, "x": 1}),
    ] {
        let (s, v) = app
            .post(&format!("/api/projects/{project}/more-clips"), t, body)
            .await;
        assert_error(s, &v, 400);
    }
}

/// The render batch's actor panics outside the render (between renders):
/// the `projects` branch sees the failure, does not restart the one-shot
/// actor, records the render it left as failed, and `/admin/actors` counts
/// the failure; the next edit renders.
#[tokio::test]
async fn a_render_actor_that_fails_is_seen_by_its_supervisor() {
    let app = spawn_app_in(
        template().copy(),
        vec![
            ("CLIPFORGE_FAULTS".into(), "render-batch-panic:once".into()),
            ("CLIPFORGE_AUTH_ADMIN_TOKEN".into(), "admin-secret".into()),
        ],
    );
    let t = &template().token;
    let project = &template().project_id;
    let clip = &template().clips[0].0;
    let path = format!("/api/projects/{project}/clips/{clip}");
    let (s, v) = app.patch(&path, t, json!({"layout": "fit"})).await;
    assert_eq!(s, 202, "{v}");
    let failed = settled(&app, t, project, clip).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    let why = failed["renderError"].as_str().unwrap_or_default();
    assert!(why.contains("stopped unexpectedly"), "{failed}");
    assert_eq!(failed["version"], json!(1), "{failed}");
    let (s, v) = app.get("/admin/actors", "admin-secret").await;
    assert_eq!(s, 200, "{v}");
    let projects = v["actors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "supervisor:projects")
        .cloned()
        .unwrap_or_default();
    assert_eq!(projects["childFailures"], json!(1), "{v}");
    let (s, v) = app.patch(&path, t, json!({"layout": "fit"})).await;
    assert_eq!(s, 202, "{v}");
    let ok = settled(&app, t, project, clip).await;
    assert_eq!(
        (ok["status"].clone(), ok["version"].clone()),
        (json!("ready"), json!(2))
    );
}

#[tokio::test]
async fn a_failed_or_interrupted_render_leaves_the_previous_version() {
    // A render that panics: the clip keeps version 1 and says why.
    let app = spawn_app_in(
        template().copy(),
        vec![("CLIPFORGE_FAULTS".into(), "render-panic:once".into())],
    );
    let t = &template().token;
    let project = &template().project_id;
    let clip = &template().clips[0].0;
    let path = format!("/api/projects/{project}/clips/{clip}");
    let (_, p) = app.get(&format!("/api/projects/{project}"), t).await;
    let before = clip_in(&p, clip);
    let (s, v) = app.patch(&path, t, json!({"layout": "fit"})).await;
    assert_eq!(s, 202, "{v}");
    let failed = settled(&app, t, project, clip).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert!(
        failed["renderError"]
            .as_str()
            .unwrap()
            .contains("unexpectedly"),
        "{failed}"
    );
    assert_eq!(
        (failed["version"].clone(), failed["url"].clone()),
        (json!(1), before["url"].clone())
    );
    let r = app
        .client
        .get(failed["url"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    // The next edit renders (the fault fired once).
    let (s, v) = app.patch(&path, t, json!({"layout": "fit"})).await;
    assert_eq!(s, 202, "{v}");
    let ok = settled(&app, t, project, clip).await;
    assert_eq!(
        (ok["status"].clone(), ok["version"].clone()),
        (json!("ready"), json!(2))
    );
    drop(app);

    // A server killed in the middle of a render: after the restart the
    // clip plays version 1 and says the render was interrupted.
    let app = spawn_app_in(
        template().copy(),
        vec![("CLIPFORGE_FAULTS".into(), "render-stall:always".into())],
    );
    let (s, v) = app.patch(&path, t, json!({"layout": "fit"})).await;
    assert_eq!(s, 202, "{v}");
    let work = app.dir.path().join("data/work");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !std::fs::read_dir(&work)
        .map(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("edit-"))
        })
        .unwrap_or(false)
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the render never started"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let app = app.crash_and_restart();
    let (_, p) = app.get(&format!("/api/projects/{project}"), t).await;
    let c = clip_in(&p, clip);
    assert_eq!(c["status"], "failed", "{c}");
    assert!(
        c["renderError"].as_str().unwrap().contains("restarted"),
        "{c}"
    );
    // (The restarted server has another port: compare the media path.)
    let path_of = |v: &Value| {
        v["url"]
            .as_str()
            .unwrap()
            .split("/media/")
            .nth(1)
            .unwrap()
            .to_string()
    };
    assert_eq!(
        (c["version"].clone(), path_of(&c)),
        (json!(1), path_of(&before))
    );
    let r = app
        .client
        .get(c["url"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    // Its work folder is gone.
    let left: Vec<_> = std::fs::read_dir(app.dir.path().join("data/work"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        !left
            .iter()
            .any(|n| n.to_string_lossy().starts_with("edit-")),
        "{left:?}"
    );
}
