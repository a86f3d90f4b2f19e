//! Reframing a clip by hand and the editor's timeline (issue 29): the
//! waveform around a clip, its faces and shots, `reframe` spans checked
//! (bad ones change nothing), drawn where they say (frames compared with
//! the source's strips) and dropped by a layout without a crop.

mod publishing;

use publishing::{assert_error, clip_in, settled, spawn_app_in, template};
use serde_json::json;

/// A frame of `video` at `at` s, `crop` (w, h, x) of it when given, as
/// 54x96 grey pixels.
fn grey_frame(video: &std::path::Path, at: f64, crop: Option<(u32, u32, u32)>) -> Vec<u8> {
    let filter = match crop {
        Some((w, h, x)) => format!("crop={w}:{h}:{x}:0,scale=54:96"),
        None => "scale=54:96".into(),
    };
    let out = std::process::Command::new("ffmpeg")
        .args(["-nostdin", "-v", "error", "-ss", &format!("{at:.3}"), "-i"])
        .arg(video)
        .args([
            "-frames:v",
            "1",
            "-vf",
            &filter,
            "-pix_fmt",
            "gray",
            "-f",
            "rawvideo",
            "-",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.stdout.len(),
        54 * 96,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Mean absolute difference of the top 60 % of two frames (the captions
/// sit lower).
fn top_diff(a: &[u8], b: &[u8]) -> f64 {
    let n = 54 * 96 * 6 / 10;
    a[..n]
        .iter()
        .zip(&b[..n])
        .map(|(x, y)| (*x as f64 - *y as f64).abs())
        .sum::<f64>()
        / n as f64
}

#[tokio::test]
async fn a_clip_is_reframed_by_hand() {
    let app = spawn_app_in(template().copy(), Vec::new());
    let t = &template().token;
    let project = &template().project_id;
    let clip = &template().clips[0].0;
    let path = format!("/api/projects/{project}/clips/{clip}");
    let (_, p) = app.get(&format!("/api/projects/{project}"), t).await;
    let before = clip_in(&p, clip);
    let length = before["endSec"].as_f64().unwrap() - before["startSec"].as_f64().unwrap();

    // The timeline's waveform: ten values a second from before the clip
    // to past it (as far as an edit can reach), speech louder than the
    // quietest moments.
    let (s, w) = app.get(&format!("{path}/waveform"), t).await;
    assert_eq!(s, 200, "{w}");
    assert_eq!(w["stepSec"], 0.1);
    let from = w["fromSec"].as_f64().unwrap();
    let db: Vec<f64> = w["db"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    let start = before["startSec"].as_f64().unwrap();
    assert!(
        from <= start && from + db.len() as f64 * 0.1 >= start + length - 0.1,
        "{w}"
    );
    assert!(db.iter().all(|v| (-120.0..=0.5).contains(v)), "{w}");
    let loudest = db.iter().cloned().fold(f64::MIN, f64::max);
    let quietest = db.iter().cloned().fold(f64::MAX, f64::min);
    assert!(loudest - quietest > 10.0, "{loudest} / {quietest}");

    // The faces its framing saw: the test picture has none, but its frame
    // and shots are listed.
    let (s, f) = app.get(&format!("{path}/faces"), t).await;
    assert_eq!(s, 200, "{f}");
    assert_eq!(
        (f["width"].clone(), f["height"].clone()),
        (json!(640), json!(360))
    );
    assert_eq!(f["faces"], json!([]), "{f}");
    assert_eq!(f["reframe"], json!([]), "{f}");
    assert!(!f["shots"].as_array().unwrap().is_empty(), "{f}");

    // Refused, nothing rendered: a face it does not have, both or neither
    // target, overlapping spans, a span past the clip, x outside the frame,
    // a whole-frame layout with crops.
    for body in [
        json!({"reframe": [{"fromSec": 0, "toSec": 1, "faceId": 0}]}),
        json!({"reframe": [{"fromSec": 0, "toSec": 1, "x": 10, "faceId": 0}]}),
        json!({"reframe": [{"fromSec": 0, "toSec": 1}]}),
        json!({"reframe": [{"fromSec": 0, "toSec": 2, "x": 10}, {"fromSec": 1, "toSec": 3, "x": 10}]}),
        json!({"reframe": [{"fromSec": 0, "toSec": length + 5.0, "x": 10}]}),
        json!({"reframe": [{"fromSec": 0, "toSec": 1, "x": 641}]}),
        json!({"reframe": [{"fromSec": 0, "toSec": 1, "x": 10}], "layout": "split"}),
    ] {
        let (s, v) = app.patch(&path, t, body.clone()).await;
        assert_error(s, &v, 400);
        assert!(
            v["message"].as_str().unwrap().contains("reframe"),
            "{body}: {v}"
        );
    }
    let (_, p) = app.get(&format!("{path}/versions"), t).await;
    assert_eq!(p["versions"].as_array().unwrap().len(), 1, "{p}");

    // The left edge for the first two seconds, the right edge after.
    let (s, v) = app
        .patch(
            &path,
            t,
            json!({"reframe": [
                {"fromSec": 0, "toSec": 2, "x": 0},
                {"fromSec": 2, "toSec": length, "x": 640}
            ]}),
        )
        .await;
    assert_eq!(s, 202, "{v}");
    let after = settled(&app, t, project, clip).await;
    assert_eq!(
        (
            after["status"].clone(),
            after["version"].clone(),
            after["layout"].clone()
        ),
        (json!("ready"), json!(2), json!("single")),
        "{after}"
    );
    let (_, f) = app.get(&format!("{path}/faces"), t).await;
    let spans = f["reframe"].as_array().unwrap();
    assert_eq!(spans.len(), 2, "{f}");
    assert_eq!(
        (spans[0]["x"].clone(), spans[1]["x"].clone()),
        (json!(0.0), json!(640.0))
    );
    assert!(
        (spans[1]["fromSec"].as_f64().unwrap() - 2.0).abs() < 1e-6,
        "{f}"
    );

    // What is drawn: at 1 s the source's left 9:16 strip, at 4 s its right
    // one (the same source rebuilt: the test picture and espeak are
    // deterministic).
    let dir = tempfile::tempdir().unwrap();
    let source = publishing::speech_video(dir.path());
    let r = app
        .client
        .get(after["url"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    let clip_file = dir.path().join("clip.mp4");
    std::fs::write(&clip_file, r.bytes().await.unwrap()).unwrap();
    assert_eq!(after["startSec"].as_f64().unwrap(), start);
    // 360 px tall source: a 9:16 crop is 202 px wide.
    for (at, want, other) in [(1.0, 0, 438), (4.0, 438, 0)] {
        let drawn = grey_frame(&clip_file, at, None);
        let near = top_diff(
            &drawn,
            &grey_frame(&source, start + at, Some((202, 360, want))),
        );
        let far = top_diff(
            &drawn,
            &grey_frame(&source, start + at, Some((202, 360, other))),
        );
        assert!(
            near * 2.0 < far,
            "at {at} s: {near:.1} to the strip asked for, {far:.1} to the other"
        );
    }

    // Another layout alone drops the spans; `[]` would too.
    let (s, v) = app.patch(&path, t, json!({"layout": "fit"})).await;
    assert_eq!(s, 202, "{v}");
    let third = settled(&app, t, project, clip).await;
    assert_eq!(third["layout"], "fit", "{third}");
    // Same range: drawn from the faces the last framing kept, none
    // analysed (the version's framing, next to its video, took 0 s).
    let file = app.stored_beside(third["url"].as_str().unwrap(), "framing.json");
    let framing: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(framing["seconds"], 0.0, "{framing}");
    assert_eq!(framing["framing"]["layout"], "fit", "{framing}");
    assert!(framing["framing"]["seen"]["faces"].is_array(), "{framing}");
    let (_, f) = app.get(&format!("{path}/faces"), t).await;
    assert_eq!(f["reframe"], json!([]), "{f}");
}
