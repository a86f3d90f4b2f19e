//! Editor export through the API (`GET /api/projects/:id/export`): each
//! timeline parsed by OpenTimelineIO puts every clip at its in/out in the
//! source, the ZIP holds the clips and their files, and the refusals use
//! the uniform error body. Bearer and cookie sessions both download.

mod common;

use std::io::Read;
use std::path::Path;
use std::process::Command;

use common::{assert_error, follow_sse, spawn_app, speech_video, upload};
use serde_json::{json, Value};

/// What OpenTimelineIO reads from the exports (tests/export/check_timelines.py);
/// EDLs are read at the test video's 25 fps (an EDL does not say its rate).
pub fn parse_timelines(paths: &[&Path]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/export/check_timelines.py");
    let out = Command::new("python3")
        .arg(script)
        .args(["--edl-rate", "25"])
        .args(paths)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "opentimelineio could not read the exports: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test]
async fn a_finished_project_exports_timelines_and_a_zip() {
    let app = spawn_app();
    let token = app.sign_up("editor@example.com").await;
    let dir = tempfile::tempdir().unwrap();
    let video = speech_video(dir.path());
    let (s, up) = upload(&app, &token, &video, "talk.mp4").await;
    assert_eq!(s, 200, "{up}");
    let (s, created) = app
        .post(
            "/api/projects",
            &token,
            json!({"fileKey": up["fileKey"], "title": "Editor's cut", "clipDurationPreset": "15-30"}),
        )
        .await;
    assert_eq!(s, 201, "{created}");
    let pid = created["projectId"].as_str().unwrap().to_string();
    let export = |format: &str| format!("/api/projects/{pid}/export?format={format}");

    // Not finished yet: 409, nothing to download.
    let (s, v) = app.get(&export("fcpxml"), &token).await;
    assert_error(s, &v, 409);
    assert_eq!(v["error"], "not_finished");

    let events = follow_sse(&app, &token, &pid).await;
    assert_eq!(events.last().unwrap().0, "completed", "{events:?}");
    let (_, project) = app.get(&format!("/api/projects/{pid}"), &token).await;
    let clips = project["clips"].as_array().unwrap().clone();
    assert!(!clips.is_empty());

    // Each timeline, downloaded and read by OpenTimelineIO.
    let mut paths = Vec::new();
    for (format, ctype) in [
        ("fcpxml", "application/xml"),
        ("edl", "text/plain"),
        ("otio", "application/json"),
    ] {
        let r = app
            .client
            .get(format!("{}{}", app.base, export(format)))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
        let h = r.headers().clone();
        assert!(
            h["content-type"].to_str().unwrap().starts_with(ctype),
            "{h:?}"
        );
        let disposition = h["content-disposition"].to_str().unwrap();
        assert!(
            disposition.starts_with("attachment")
                && disposition.contains(&format!("editor-s-cut.{format}")),
            "{disposition}"
        );
        let path = dir.path().join(format!("project.{format}"));
        std::fs::write(&path, r.bytes().await.unwrap()).unwrap();
        paths.push(path);
    }
    let refs: Vec<&Path> = paths.iter().map(|p| p.as_path()).collect();
    let parsed = parse_timelines(&refs);
    let captions: usize = clips
        .iter()
        .map(|c| c["transcripts"].as_array().unwrap().len())
        .sum();
    for format in ["fcpxml", "edl", "otio"] {
        let got = parsed[format]["clips"].as_array().unwrap();
        assert_eq!(got.len(), clips.len(), "{format}: {parsed}");
        for (c, g) in clips.iter().zip(got) {
            // In and out in the source, within one frame (25 fps).
            for (i, field) in [(0, "startSec"), (1, "endSec")] {
                let want = c[field].as_f64().unwrap();
                let have = g[i].as_f64().unwrap();
                assert!(
                    (want - have).abs() <= 0.04 + 1e-9,
                    "{format} clip {}: {field} {want} vs {have}",
                    c["title"]
                );
            }
        }
        assert_eq!(
            parsed[format]["captions"].as_u64().unwrap() as usize,
            captions,
            "{format}: one caption line per transcript segment"
        );
    }

    // The ZIP, with the session cookie a browser sends instead of a bearer.
    let r = app
        .client
        .get(format!("{}{}", app.base, export("zip")))
        .header("Cookie", format!("clipforge.session_token={token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.headers()["content-type"], "application/zip");
    let bytes = r.bytes().await.unwrap();
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes.to_vec())).unwrap();
    let mut names: Vec<String> = zip.file_names().map(String::from).collect();
    names.sort();
    for n in 1..=clips.len() {
        for ext in ["mp4", "jpg", "srt", "vtt"] {
            let name = format!("clips/clip-{n}.{ext}");
            assert!(names.contains(&name), "{name} missing from {names:?}");
        }
    }
    for name in [
        "clips.json",
        "project.fcpxml",
        "project.edl",
        "project.otio",
    ] {
        assert!(
            names.iter().any(|n| n == name),
            "{name} missing from {names:?}"
        );
    }
    let mut mp4 = Vec::new();
    zip.by_name("clips/clip-1.mp4")
        .unwrap()
        .read_to_end(&mut mp4)
        .unwrap();
    assert!(mp4.windows(4).take(64).any(|w| w == b"ftyp"), "not an MP4");
    let mut listed = String::new();
    zip.by_name("clips.json")
        .unwrap()
        .read_to_string(&mut listed)
        .unwrap();
    let listed: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), clips.len());
    // Nothing is left behind in the data folder's temp space.
    let tmp = app.dir.path().join("data/tmp");
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        left.iter()
            .all(|n| !n.to_string_lossy().starts_with("export-")),
        "{left:?}"
    );

    // Refusals: bad format, another user's project, no session.
    let (s, v) = app.get(&export("mov"), &token).await;
    assert_error(s, &v, 400);
    let other = app.sign_up("other@example.com").await;
    let (s, v) = app.get(&export("edl"), &other).await;
    assert_error(s, &v, 404);
    let (s, v) = app
        .call(reqwest::Method::GET, &export("edl"), None, None)
        .await;
    assert_error(s, &v, 401);
}
