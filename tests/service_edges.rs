//! Black-box tests of the service's edges: upload limits and quota, avatars,
//! URL sources through yt-dlp (pointed at a local HTTP server), a project
//! that fails, readiness, the admin view of one actor, and the S3 backend
//! end to end (moto_server).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

mod common;
use common::*;

const MIB: u64 = 1024 * 1024;

/// An incompressible video (noise) of about `secs` × 1 MB, with audio.
fn noise_video(dir: &Path, secs: u32) -> PathBuf {
    let out = dir.join(format!("noise-{secs}.mp4"));
    let ok = Command::new("ffmpeg")
        .args(["-nostdin", "-y", "-v", "error", "-f", "lavfi", "-i"])
        .arg("nullsrc=s=320x240:r=25,geq=random(1)*255:128:128")
        .args(["-f", "lavfi", "-i", "sine=f=300", "-t", &secs.to_string()])
        .args(["-c:v", "libx264", "-preset", "ultrafast", "-qp", "0"])
        .args(["-pix_fmt", "yuv420p", "-c:a", "aac"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(ok.success());
    out
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(files_under(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[tokio::test]
async fn uploads_over_the_plan_limit_or_quota_are_refused_and_leave_nothing() {
    let media = tempfile::tempdir().unwrap();
    let video = noise_video(media.path(), 3);
    let size = std::fs::metadata(&video).unwrap().len();
    assert!(size > 2 * MIB, "the noise video is big enough: {size}");
    // The file fits the upload limit and the quota once, not twice.
    let limit_mb = (size * 12 / 10).div_ceil(MIB);
    let quota_mb = (size * 15 / 10).div_ceil(MIB);
    assert!(2 * size > quota_mb * MIB);
    let data = tempfile::tempdir().unwrap();
    let root = data.path().join("data");
    let app = spawn_app_with(
        data,
        &[
            ("CLIPFORGE_PLANS_FREE_UPLOAD_MAX_MB", &limit_mb.to_string()),
            ("CLIPFORGE_PLANS_FREE_STORAGE_MB", &quota_mb.to_string()),
        ],
    );
    let token = app.sign_up("ivy@example.com").await;

    // Over the plan's upload limit: refused from its declared size.
    let big = vec![7u8; (limit_mb * MIB + MIB) as usize];
    let (s, v) = send_file(
        &app,
        reqwest::Method::POST,
        "/api/upload",
        &token,
        "big.mp4",
        big,
    )
    .await;
    assert_error(s, &v, 413);
    assert!(
        v["message"].as_str().unwrap().contains("upload limit"),
        "{v}"
    );

    // Not a video at all; an image renamed .mp4.
    let (s, v) = send_file(
        &app,
        reqwest::Method::POST,
        "/api/upload",
        &token,
        "a.mp4",
        b"hello".repeat(1000),
    )
    .await;
    assert_error(s, &v, 415);
    let png = dir_png(media.path(), 64, 64);
    let (s, v) = send_file(
        &app,
        reqwest::Method::POST,
        "/api/upload",
        &token,
        "b.mp4",
        std::fs::read(png).unwrap(),
    )
    .await;
    assert_error(s, &v, 415);

    // The first real video fits; the second would overflow the quota.
    let (s, first) = upload(&app, &token, &video, "noise.mp4").await;
    assert_eq!(s, 200, "{first}");
    let (s, v) = upload(&app, &token, &video, "noise.mp4").await;
    assert_error(s, &v, 413);
    assert!(v["message"].as_str().unwrap().contains("quota"), "{v}");

    // Only the accepted upload is stored, with its frame; no temp file is left.
    let mut stored = files_under(&root.join("media").join("objects").join("uploads"));
    stored.sort();
    assert_eq!(stored.len(), 2, "{stored:?}");
    assert!(stored[0].to_string_lossy().ends_with("/noise.mp4"));
    assert!(stored[1].to_string_lossy().ends_with("/noise.mp4.jpg"));
    let mut temps = files_under(&root.join("tmp"));
    temps.extend(files_under(&root.join("media").join("staging")));
    assert!(temps.is_empty(), "temp files left: {temps:?}");
}

/// A `w`×`h` PNG test picture made by ffmpeg.
fn dir_png(dir: &Path, w: u32, h: u32) -> PathBuf {
    let out = dir.join(format!("pic-{w}x{h}.png"));
    let ok = Command::new("ffmpeg")
        .args(["-nostdin", "-y", "-v", "error", "-f", "lavfi", "-i"])
        .arg(format!("testsrc2=s={w}x{h}"))
        .args(["-frames:v", "1"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(ok.success());
    out
}

/// Width and height from a PNG's IHDR chunk.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let be = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().unwrap());
    (be(16), be(20))
}

#[tokio::test]
async fn avatars_are_decoded_resized_replaced_and_removed() {
    let app = spawn_app();
    let token = app.sign_up("jon@example.com").await;
    let media = tempfile::tempdir().unwrap();
    let pic = std::fs::read(dir_png(media.path(), 1024, 768)).unwrap();

    let (s, v) = send_file(
        &app,
        reqwest::Method::PUT,
        "/api/auth/avatar",
        &token,
        "me.png",
        pic.clone(),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    let url = v["avatarUrl"].as_str().unwrap().to_string();
    let bytes = app
        .client
        .get(&url)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(png_size(&bytes), (512, 512));
    let (_, session) = app.get("/api/auth/get-session", &token).await;
    assert!(
        session["user"]["image"]
            .as_str()
            .is_some_and(|i| !i.is_empty()),
        "{session}"
    );

    // Not an image; too big.
    let (s, v) = send_file(
        &app,
        reqwest::Method::PUT,
        "/api/auth/avatar",
        &token,
        "me.png",
        b"GIF? no".repeat(50),
    )
    .await;
    assert_error(s, &v, 415);
    let (s, v) = send_file(
        &app,
        reqwest::Method::PUT,
        "/api/auth/avatar",
        &token,
        "me.png",
        vec![0u8; 6 * MIB as usize],
    )
    .await;
    assert_error(s, &v, 413);

    // Replacing removes the old file; deleting removes the current one.
    let (s, v) = send_file(
        &app,
        reqwest::Method::PUT,
        "/api/auth/avatar",
        &token,
        "me.png",
        pic,
    )
    .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        app.client.get(&url).send().await.unwrap().status().as_u16(),
        404
    );
    let url2 = v["avatarUrl"].as_str().unwrap().to_string();
    let r = app
        .client
        .delete(format!("{}/api/auth/avatar", app.base))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(
        app.client
            .get(&url2)
            .send()
            .await
            .unwrap()
            .status()
            .as_u16(),
        404
    );
    let (_, session) = app.get("/api/auth/get-session", &token).await;
    assert!(session["user"]["image"].is_null(), "{session}");
}

#[tokio::test]
async fn url_metadata_and_a_project_whose_download_fails() {
    let site = tempfile::tempdir().unwrap();
    let port = serve_dir(site.path()).await;
    let video = speech_video(site.path());
    std::fs::rename(&video, site.path().join("talk.mp4")).unwrap();
    video_page(
        site.path(),
        "talk.html",
        port,
        "talk.mp4",
        "Launch talk",
        25,
    );
    // A page whose "video" is not one: yt-dlp downloads it, the probe refuses it.
    std::fs::write(site.path().join("broken.mp4"), b"not a video ".repeat(5000)).unwrap();
    video_page(
        site.path(),
        "broken.html",
        port,
        "broken.mp4",
        "Broken talk",
        30,
    );
    let app = spawn_app_with(
        tempfile::tempdir().unwrap(),
        &[("CLIPFORGE_SOURCES_EXTRA_HOSTS", "127.0.0.1")],
    );
    let token = app.sign_up("kai@example.com").await;

    let (s, v) = app
        .post(
            "/api/meta",
            &token,
            json!({"url": format!("http://127.0.0.1:{port}/talk.html")}),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["title"], "Launch talk");
    assert_eq!(v["durationSec"], 25.0);
    assert_eq!(v["thumbnail"], format!("http://127.0.0.1:{port}/thumb.jpg"));

    let (s, v) = app
        .post(
            "/api/meta",
            &token,
            json!({"url": "https://example.com/watch?v=1"}),
        )
        .await;
    assert_error(s, &v, 400);
    assert_eq!(v["error"], "unsupported_platform");
    let (s, v) = app
        .post(
            "/api/meta",
            &token,
            json!({"url": format!("http://127.0.0.1:{port}/nothing.html")}),
        )
        .await;
    assert_error(s, &v, 400);
    assert!(
        v["message"].as_str().unwrap().contains("unavailable"),
        "{v}"
    );

    // The page and its file exist but the file is not a video: the project
    // fails, the reservation is released and the user is told.
    let (s, created) = app
        .post(
            "/api/projects",
            &token,
            json!({"sourceUrl": format!("http://127.0.0.1:{port}/broken.html")}),
        )
        .await;
    assert_eq!(s, 201, "{created}");
    assert_eq!(created["project"]["title"], "Broken talk");
    let pid = created["projectId"].as_str().unwrap().to_string();
    let events = follow_sse(&app, &token, &pid).await;
    let last = events.last().expect("events");
    assert_eq!(last.0, "failed", "{events:?}");
    assert!(
        last.2["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{last:?}"
    );
    let (_, v) = app.get(&format!("/api/projects/{pid}"), &token).await;
    assert_eq!(v["project"]["status"], "Falhou");
    assert_eq!(v["project"]["state"], "failed");
    let (_, credits) = app.get("/api/credits", &token).await;
    assert_eq!(credits["credits"], 60, "reservation released: {credits}");
    let (_, n) = app.get("/api/notifications", &token).await;
    let first = &n["notifications"][0];
    assert_eq!(first["type"], "project_failed", "{n}");
    assert!(
        first["message"].as_str().unwrap().contains("Broken talk"),
        "{n}"
    );
}

#[tokio::test]
async fn readiness_and_the_admin_view_of_one_actor() {
    let app = spawn_app();
    let r = app
        .client
        .get(format!("{}/readyz", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let token = app.sign_up("lea@example.com").await;
    let (_, session) = app.get("/api/auth/get-session", &token).await;
    let uid = session["user"]["id"].as_str().unwrap().to_string();
    // Touch the account so its actor is live (notifications go through it).
    let (s, _) = app.get("/api/notifications", &token).await;
    assert_eq!(s, 200);

    let (s, v) = app.get("/admin/actors", "admin-secret").await;
    assert_eq!(s, 200, "{v}");
    let me = v["actors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == uid.as_str())
        .cloned()
        .expect("the user's actor is listed");
    assert_eq!(me["kind"], "user");
    assert!(me["mailbox"].is_u64() && me["uptimeSecs"].is_f64(), "{me}");
    let (s, one) = app
        .get(&format!("/admin/actors/user:{uid}"), "admin-secret")
        .await;
    assert_eq!(s, 200, "{one}");
    assert_eq!(one["id"], uid.as_str());
    let (s, v) = app.get("/admin/actors/user:nobody", "admin-secret").await;
    assert_error(s, &v, 404);
    let (s, v) = app.get(&format!("/admin/actors/user:{uid}"), &token).await;
    assert_error(s, &v, 401);

    // Without its speech model the node is alive but not ready.
    let app = spawn_app_with(
        tempfile::tempdir().unwrap(),
        &[("CLIPFORGE_PIPELINE_MODEL_DIR", "/nonexistent/model")],
    );
    let r = app
        .client
        .get(format!("{}/healthz", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let r = app
        .client
        .get(format!("{}/readyz", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 503);
    let v: Value = r.json().await.unwrap();
    assert!(v["message"].as_str().unwrap().contains("model"), "{v}");
}

#[tokio::test]
async fn a_url_project_on_the_s3_backend_serves_presigned_media() {
    let moto = start_moto().await;
    let site = tempfile::tempdir().unwrap();
    let port = serve_dir(site.path()).await;
    let video = speech_video(site.path());
    std::fs::rename(&video, site.path().join("talk.mp4")).unwrap();
    video_page(site.path(), "talk.html", port, "talk.mp4", "S3 talk", 25);
    let data = tempfile::tempdir().unwrap();
    let local_media = data.path().join("data").join("media");
    let app = spawn_app_with(
        data,
        &[
            ("CLIPFORGE_SOURCES_EXTRA_HOSTS", "127.0.0.1"),
            ("CLIPFORGE_STORAGE_BACKEND", "s3"),
            ("CLIPFORGE_STORAGE_S3_BUCKET", "clipforge-e2e"),
            ("CLIPFORGE_STORAGE_S3_ENDPOINT", &moto.1),
            ("CLIPFORGE_STORAGE_S3_ACCESS_KEY_ID", "test"),
            ("CLIPFORGE_STORAGE_S3_SECRET_ACCESS_KEY", "test"),
        ],
    );
    let token = app.sign_up("max@example.com").await;
    let (s, created) = app
        .post(
            "/api/projects",
            &token,
            json!({"sourceUrl": format!("http://127.0.0.1:{port}/talk.html"), "skipCuts": true}),
        )
        .await;
    assert_eq!(s, 201, "{created}");
    let pid = created["projectId"].as_str().unwrap().to_string();
    follow_to_completion(&app, &token, &pid).await;
    let (_, v) = app.get(&format!("/api/projects/{pid}"), &token).await;
    let clips = v["clips"].as_array().unwrap();
    assert_eq!(clips.len(), 1, "{v}");
    // A stable link that redirects to a fresh presigned S3 URL.
    let link = clips[0]["url"].as_str().unwrap();
    assert!(link.starts_with(&format!("{}/media/", app.base)), "{link}");
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = no_redirects.get(link).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 307);
    let url = r.headers()["location"].to_str().unwrap().to_string();
    assert!(
        url.starts_with(&moto.1) && url.contains("X-Amz-Signature="),
        "a presigned S3 URL: {url}"
    );
    let bytes = app
        .client
        .get(&url)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert!(bytes.windows(4).take(64).any(|w| w == b"ftyp"), "an MP4");
    assert!(
        files_under(&local_media).is_empty(),
        "nothing is kept on local disk with S3"
    );
}
