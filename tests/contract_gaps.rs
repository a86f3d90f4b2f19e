//! Black-box tests of the contract gaps closed by issue 13 (item 6): the
//! storage quota given back when a project is deleted, stable media links
//! (upload source, thumbnail, clip files) that redirect to fresh signed
//! URLs, `captionTemplate` by a saved template's name, the free plan's
//! visible watermark, the source's language as a prior for detection,
//! and yt-dlp's own failures answered 502/503.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

mod common;
use common::*;

/// A client that does not follow redirects.
fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// GET `link` without following: (status, Location).
async fn redirect_of(link: &str) -> (u16, Option<String>) {
    let r = no_redirects().get(link).send().await.unwrap();
    let location = r
        .headers()
        .get("location")
        .map(|l| l.to_str().unwrap().to_string());
    (r.status().as_u16(), location)
}

/// Follows a stable link: it must answer 307 to a signed URL; returns the
/// file's content type and bytes.
async fn follow_link(app: &App, link: &str) -> (String, Vec<u8>) {
    assert!(link.starts_with(&format!("{}/media/", app.base)), "{link}");
    let (status, location) = redirect_of(link).await;
    assert_eq!(status, 307, "{link}");
    let location = location.expect("Location");
    assert!(location.contains("expires="), "{location}");
    let r = reqwest::get(&location).await.unwrap();
    assert_eq!(r.status().as_u16(), 200, "{location}");
    let ctype = r.headers()["content-type"].to_str().unwrap().to_string();
    (ctype, r.bytes().await.unwrap().to_vec())
}

async fn storage_used(app: &App, token: &str) -> u64 {
    let (s, v) = app.get("/api/credits", token).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["storageLimitBytes"], 5u64 << 30, "{v}");
    v["storageUsedBytes"].as_u64().unwrap()
}

fn files_under(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| {
                    if e.path().is_dir() {
                        files_under(&e.path())
                    } else {
                        1
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}

#[tokio::test]
async fn an_upload_project_links_its_media_and_gives_its_bytes_back_when_deleted() {
    let media = tempfile::tempdir().unwrap();
    let video = speech_video(media.path());
    let data = tempfile::tempdir().unwrap();
    let uploads = data.path().join("data/media/objects/uploads");
    let app = spawn_app_in(data);
    let token = app.sign_up("gaps@example.com").await;

    // A saved template, named by its name (any case); the free plan keeps
    // its watermark visible whatever the template says.
    let (s, tpl) = app
        .post(
            "/api/caption-templates",
            &token,
            json!({"name": "My Brand", "fontSize": 77, "animation": "karaoke",
                   "watermarkEnabled": false, "watermarkOpacity": 0.05, "watermarkSize": 2}),
        )
        .await;
    assert_eq!(s, 201, "{tpl}");
    assert_eq!(tpl["watermarkOpacity"], 0.05, "saved as given (in range)");

    assert_eq!(storage_used(&app, &token).await, 0);
    let (s, up) = upload(&app, &token, &video, "talk.mp4").await;
    assert_eq!(s, 200, "{up}");
    let size = std::fs::metadata(&video).unwrap().len();
    assert_eq!(storage_used(&app, &token).await, size, "counted on upload");
    let file_key = up["fileKey"].as_str().unwrap();

    let (s, created) = app
        .post(
            "/api/projects",
            &token,
            json!({"fileKey": file_key, "captionTemplate": "  my brand ", "skipCuts": true}),
        )
        .await;
    assert_eq!(s, 201, "{created}");
    let pid = created["projectId"].as_str().unwrap().to_string();
    let project = &created["project"];
    assert_eq!(project["captionTemplate"], "  my brand ");
    assert_eq!(project["language"], Value::Null, "an upload has none yet");
    let source = project["sourceUrl"].as_str().unwrap().to_string();
    let thumbnail = project["thumbnail"].as_str().unwrap().to_string();
    assert!(
        source.contains(&format!("/media/{file_key}?sig=")),
        "{source}"
    );
    let (ctype, bytes) = follow_link(&app, &source).await;
    assert_eq!(ctype, "video/mp4");
    assert_eq!(bytes.len() as u64, size, "the uploaded file itself");
    let (ctype, bytes) = follow_link(&app, &thumbnail).await;
    assert_eq!(ctype, "image/jpeg");
    assert_eq!(&bytes[..2], [0xFF, 0xD8], "a JPEG frame of the source");
    // A link whose signature was changed is refused.
    let forged = source.replace("?sig=", "?sig=00");
    let r = reqwest::get(&forged).await.unwrap();
    assert_eq!(r.status().as_u16(), 403);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"], "invalid_signature", "{body}");

    let (_, v) = app.get(&format!("/api/projects/{pid}"), &token).await;
    let style = &v["captionStyle"];
    assert_eq!(style["fontSize"], 77.0, "the saved template: {v}");
    assert_eq!(style["animation"], "karaoke", "{v}");
    assert_eq!(style["watermarkEnabled"], true, "forced on the free plan");
    assert_eq!(style["watermarkOpacity"], 0.5, "raised to the minimum");
    assert_eq!(style["watermarkSize"], 12.0, "raised to the minimum");

    follow_to_completion(&app, &token, &pid).await;
    let (_, v) = app.get(&format!("/api/projects/{pid}"), &token).await;
    assert_eq!(v["project"]["language"], "en", "detected: {v}");
    let clip = &v["clips"][0];
    for (field, ctype) in [
        ("url", "video/mp4"),
        ("thumbnail", "image/jpeg"),
        ("subtitleUrl", "application/x-subrip"),
        ("vttUrl", "text/vtt; charset=utf-8"),
    ] {
        let link = clip[field].as_str().unwrap();
        let (got, bytes) = follow_link(&app, link).await;
        assert_eq!((field, got.as_str()), (field, ctype));
        assert!(!bytes.is_empty(), "{field}");
    }
    // The listing holds the same stable links.
    let (_, list) = app.get("/api/projects", &token).await;
    assert_eq!(list["projects"][0]["sourceUrl"], source.as_str());
    assert_eq!(list["projects"][0]["thumbnail"], thumbnail.as_str());
    let clip_url = clip["url"].as_str().unwrap().to_string();

    assert!(files_under(&uploads) >= 2, "the upload and its frame");
    let (s, v) = app
        .call(
            reqwest::Method::DELETE,
            &format!("/api/projects/{pid}"),
            Some(&token),
            None,
        )
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(storage_used(&app, &token).await, 0, "given back on delete");
    assert_eq!(files_under(&uploads), 0, "the upload's objects are gone");
    for link in [&source, &thumbnail, &clip_url] {
        let r = reqwest::get(link.as_str()).await.unwrap();
        assert_eq!(r.status().as_u16(), 404, "{link}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"], "not_found", "{body}");
    }
    let (s, v) = app
        .post("/api/projects", &token, json!({"fileKey": file_key}))
        .await;
    assert_error(s, &v, 404);
}

/// `dir/talk.mpd`: DASH of a short English talk whose audio says it is in
/// `lang` (the manifest's `lang`), and `dir/talk.html` pointing at it.
fn dash_talk(dir: &Path, port: u16, lang: &str) {
    let mp4 = speech_video_saying(
        dir,
        "Good morning everyone. Today we talk about short videos and how to open them well.",
        150,
    );
    let ok = Command::new("ffmpeg")
        .args(["-nostdin", "-y", "-v", "error", "-i"])
        .arg(&mp4)
        .args(["-map", "0:v", "-map", "0:a", "-c", "copy"])
        .args(["-metadata:s:a:0", &format!("language={lang}"), "-f", "dash"])
        .arg(dir.join("talk.mpd"))
        .status()
        .unwrap();
    assert!(ok.success());
    video_page(dir, "talk.html", port, "talk.mpd", "Talk in German", 6);
}

/// The source's declared language is a prior, not an order: English
/// speech in a video that says it is German is transcribed as English. The
/// user's choice (`language` at creation) is used as given.
#[tokio::test]
async fn the_audio_overrules_the_source_language_and_the_user_overrules_both() {
    let site = tempfile::tempdir().unwrap();
    let port = serve_dir(site.path()).await;
    dash_talk(site.path(), port, "de");
    let app = spawn_app_with(
        tempfile::tempdir().unwrap(),
        &[("CLIPFORGE_SOURCES_EXTRA_HOSTS", "127.0.0.1")],
    );
    let token = app.sign_up("lang@example.com").await;
    let url = format!("http://127.0.0.1:{port}/talk.html");
    let (s, meta) = app.post("/api/meta", &token, json!({"url": url})).await;
    assert_eq!(s, 200, "{meta}");
    assert_eq!(meta["language"], "de");

    let (s, created) = app
        .post(
            "/api/projects",
            &token,
            json!({"sourceUrl": url, "skipCuts": true}),
        )
        .await;
    assert_eq!(s, 201, "{created}");
    assert_eq!(created["project"]["language"], "de", "declared: {created}");
    assert_eq!(created["project"]["languageProbability"], Value::Null);
    let detected = created["projectId"].as_str().unwrap().to_string();
    let (s, created) = app
        .post(
            "/api/projects",
            &token,
            json!({"sourceUrl": url, "skipCuts": true, "language": "de"}),
        )
        .await;
    assert_eq!(s, 201, "{created}");
    let chosen = created["projectId"].as_str().unwrap().to_string();
    // Not a Whisper language code: refused before anything is stored.
    let (s, v) = app
        .post(
            "/api/projects",
            &token,
            json!({"sourceUrl": url, "language": "english"}),
        )
        .await;
    assert_error(s, &v, 400);

    follow_to_completion(&app, &token, &detected).await;
    let (_, v) = app.get(&format!("/api/projects/{detected}"), &token).await;
    assert_eq!(v["project"]["language"], "en", "the speech is English: {v}");
    let p = v["project"]["languageProbability"].as_f64().unwrap();
    assert!(p > 0.5 && p <= 1.0, "{v}");
    follow_to_completion(&app, &token, &chosen).await;
    let (_, v) = app.get(&format!("/api/projects/{chosen}"), &token).await;
    assert_eq!(v["project"]["language"], "de", "transcribed as chosen: {v}");
    assert_eq!(v["project"]["languageProbability"], 1.0, "{v}");
}

/// A TCP server that accepts connections and never answers; returns its port.
async fn silent_server() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((conn, _)) = listener.accept().await {
            held.push(conn);
        }
    });
    port
}

#[tokio::test]
async fn yt_dlp_network_failures_and_timeouts_are_502_and_503() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let silent = silent_server().await;
    let app = spawn_app_with(
        tempfile::tempdir().unwrap(),
        &[
            ("CLIPFORGE_SOURCES_EXTRA_HOSTS", "127.0.0.1"),
            ("CLIPFORGE_SOURCES_META_TIMEOUT_SECS", "15"),
        ],
    );
    let token = app.sign_up("net@example.com").await;
    let unreachable = format!("http://127.0.0.1:{closed}/talk.html");
    let (s, v) = app
        .post("/api/meta", &token, json!({"url": unreachable}))
        .await;
    assert_error(s, &v, 502);
    assert_eq!(v["error"], "source_unreachable", "{v}");
    let (s, v) = app
        .post(
            "/api/meta",
            &token,
            json!({"url": format!("http://127.0.0.1:{silent}/talk.html")}),
        )
        .await;
    assert_error(s, &v, 503);
    assert_eq!(v["error"], "source_timeout", "{v}");

    // Project creation answers the same and keeps nothing.
    let (s, v) = app
        .post("/api/projects", &token, json!({"sourceUrl": unreachable}))
        .await;
    assert_error(s, &v, 502);
    let (_, list) = app.get("/api/projects", &token).await;
    assert_eq!(list["total"], 0, "{list}");
    let (_, credits) = app.get("/api/credits", &token).await;
    assert_eq!(credits["credits"], 60, "{credits}");
}

/// A server without any platform's OAuth client says so: no platform is
/// `available`, and connecting one answers 503 `provider_not_configured`
/// (the console then shows "not available" instead of a Connect button).
/// With the platforms configured, tests/schedule.rs sees all three.
#[tokio::test]
async fn integrations_list_the_platforms_this_server_can_connect() {
    let app = spawn_app();
    let token = app.sign_up("platforms@example.com").await;
    let (s, list) = app.get("/api/integrations", &token).await;
    assert_eq!(s, 200, "{list}");
    assert_eq!(list["available"], json!([]), "{list}");
    let (s, v) = app
        .post("/api/integrations/youtube/connect", &token, json!({}))
        .await;
    assert_eq!(
        (s, v["error"].as_str()),
        (503, Some("provider_not_configured")),
        "{v}"
    );
}
