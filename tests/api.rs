//! Black-box tests of the HTTP service: each test starts the real binary on
//! port 0 with its own data directory and talks to it over 127.0.0.1.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod common;
use common::*;
#[tokio::test]
async fn accounts_sessions_and_errors() {
    let app = spawn_app();
    let token = app.sign_up("ana@example.com").await;
    let (s, v) = app.get("/api/auth/get-session", &token).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["user"]["email"], "ana@example.com");

    // The cookie works too; nothing at all is 401 with the uniform body.
    let r = app
        .client
        .get(format!("{}/api/auth/get-session", app.base))
        .header("cookie", format!("clipforge.session_token={token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let (s, v) = app
        .call(reqwest::Method::GET, "/api/credits", None, None)
        .await;
    assert_error(s, &v, 401);
    let (s, v) = app.get("/api/credits", "not-a-token").await;
    assert_error(s, &v, 401);

    // Change password revokes the other sessions by default.
    let (s, second) = app
        .call(
            reqwest::Method::POST,
            "/api/auth/sign-in/email",
            None,
            Some(json!({"email": "ana@example.com", "password": "correct horse"})),
        )
        .await;
    assert_eq!(s, 200, "{second}");
    let second = second["token"].as_str().unwrap().to_string();
    let (s, v) = app
        .post(
            "/api/auth/change-password",
            &token,
            json!({"currentPassword": "correct horse", "newPassword": "battery staple"}),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    let (s, v) = app.get("/api/auth/get-session", &second).await;
    assert_error(s, &v, 401);
    let (s, _) = app.get("/api/auth/get-session", &token).await;
    assert_eq!(s, 200, "the current session stays");
    let (s, v) = app
        .post(
            "/api/auth/change-password",
            &token,
            json!({"currentPassword": "wrong", "newPassword": "whatever12"}),
        )
        .await;
    assert_error(s, &v, 401);

    // Duplicate email, wrong password, then the rate limit.
    let (s, v) = app
        .call(
            reqwest::Method::POST,
            "/api/auth/sign-up/email",
            None,
            Some(json!({"email": "ANA@example.com", "password": "another one", "name": "A"})),
        )
        .await;
    assert_error(s, &v, 409);
    let mut last = 0;
    for _ in 0..8 {
        let (s, v) = app
            .call(
                reqwest::Method::POST,
                "/api/auth/sign-in/email",
                None,
                Some(json!({"email": "ana@example.com", "password": "wrong password"})),
            )
            .await;
        assert!(s == 401 || s == 429, "{s} {v}");
        last = s;
    }
    assert_eq!(last, 429, "sign-in is rate limited");

    // Unknown route and malformed body keep the uniform error body.
    let (s, v) = app.get("/api/nope", &token).await;
    assert_error(s, &v, 404);
    let r = app
        .client
        .post(format!("{}/api/caption-templates", app.base))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    let s = r.status().as_u16();
    let v: Value = r.json().await.unwrap();
    assert_error(s, &v, 400);

    let (s, _) = app.post("/api/auth/sign-out", &token, json!({})).await;
    assert_eq!(s, 200);
    let (s, v) = app.get("/api/auth/get-session", &token).await;
    assert_error(s, &v, 401);
}

#[tokio::test]
async fn templates_credits_and_notifications() {
    let app = spawn_app();
    let token = app.sign_up("bo@example.com").await;
    let other = app.sign_up("cy@example.com").await;

    let (s, v) = app.get("/api/caption-templates", &token).await;
    assert_eq!(s, 200, "{v}");
    let templates = v["templates"].as_array().unwrap();
    assert_eq!(templates.len(), 1);
    let default = &templates[0];
    assert_eq!(default["isDefault"], true);

    let (s, created) = app
        .post(
            "/api/caption-templates",
            &token,
            json!({"name": "Loud", "fontSize": 999, "animation": "spin"}),
        )
        .await;
    assert_eq!(s, 201, "{created}");
    assert_eq!(created["fontSize"], 200.0, "clamped");
    assert_eq!(
        created["fontColor"], default["fontColor"],
        "inherited from the default"
    );
    assert!(created["id"].is_string() && created["createdAt"].is_string());

    let id = default["id"].as_str().unwrap();
    let r = app
        .client
        .delete(format!("{}/api/caption-templates/{id}", app.base))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    let s = r.status().as_u16();
    let v: Value = r.json().await.unwrap();
    assert_error(s, &v, 409);
    let cid = created["id"].as_str().unwrap();
    let r = app
        .client
        .put(format!("{}/api/caption-templates/{cid}", app.base))
        .bearer_auth(&other)
        .json(&json!({"name": "mine now"}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status().as_u16(),
        404,
        "another user's template is not found"
    );

    let (s, v) = app.get("/api/credits", &token).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["plan"], "free");
    assert_eq!(v["credits"], 60);
    assert_eq!(v["totalCredits"], 60);
    let (s, v) = app
        .post("/api/credits/select-plan", &token, json!({"plan": "pro"}))
        .await;
    assert_error(s, &v, 402);
    let (s, v) = app
        .post(
            "/api/credits/select-plan",
            &token,
            json!({"plan": "platinum"}),
        )
        .await;
    assert_error(s, &v, 400);
    let (s, v) = app
        .post("/api/credits/select-plan", &token, json!({"plan": "free"}))
        .await;
    assert_eq!((s, v["plan"].clone()), (200, json!("free")));

    let (s, v) = app.get("/api/notifications", &token).await;
    assert_eq!(s, 200);
    assert!(v["notifications"].is_array());
    let (s, v) = app
        .post(
            "/api/notifications/00000000-0000-0000-0000-000000000000/read",
            &token,
            json!({}),
        )
        .await;
    assert_error(s, &v, 404);
    let (s, _) = app.post("/api/notifications/read", &token, json!({})).await;
    assert_eq!(s, 200);

    let (s, v) = app.get("/api/projects?page=0&limit=1000", &token).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        (v["page"].clone(), v["limit"].clone(), v["total"].clone()),
        (json!(1), json!(100), json!(0))
    );
    let (s, v) = app.get("/api/projects?page=abc", &token).await;
    assert_error(s, &v, 400);

    // Project creation validation names the field and takes nothing.
    let (s, v) = app.post("/api/projects", &token, json!({})).await;
    assert_error(s, &v, 400);
    let (s, v) = app
        .post(
            "/api/projects",
            &token,
            json!({"sourceUrl": "https://example.com/v.mp4"}),
        )
        .await;
    assert_error(s, &v, 400);
    let (s, v) = app
        .post(
            "/api/projects",
            &token,
            json!({"fileKey": "uploads/nope/x.mp4"}),
        )
        .await;
    assert_error(s, &v, 404);
    let (_, v) = app.get("/api/credits", &token).await;
    assert_eq!(v["credits"], 60, "failed creations take no credits");
    let (s, v) = app
        .post(
            "/api/meta",
            &token,
            json!({"url": "https://example.com/watch"}),
        )
        .await;
    assert_error(s, &v, 400);
    assert!(v["message"]
        .as_str()
        .unwrap()
        .contains("supported platform"));

    let r = app
        .client
        .get(format!("{}/metrics", app.base))
        .send()
        .await
        .unwrap();
    assert!(r
        .text()
        .await
        .unwrap()
        .contains("clipforge_http_requests_total"));
    let r = app
        .client
        .get(format!("{}/admin/actors", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    let r = app
        .client
        .get(format!("{}/admin/actors", app.base))
        .bearer_auth("admin-secret")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let v: Value = r.json().await.unwrap();
    assert!(v["actors"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a["kind"] == "user"));
}

#[tokio::test]
async fn upload_process_follow_and_download() {
    let app = spawn_app();
    let token = app.sign_up("dee@example.com").await;
    let dir = tempfile::tempdir().unwrap();

    let text = dir.path().join("notes.mp4");
    std::fs::write(&text, "not a video at all\n".repeat(100)).unwrap();
    let (s, v) = upload(&app, &token, &text, "notes.mp4").await;
    assert_error(s, &v, 415);

    let video = speech_video(dir.path());
    let (s, up) = upload(&app, &token, &video, "My Talk.mp4").await;
    assert_eq!(s, 200, "{up}");
    let key = up["fileKey"].as_str().unwrap();
    assert!(
        key.starts_with("uploads/") && key.ends_with("/My_Talk.mp4"),
        "{key}"
    );
    let secs = up["durationSec"].as_f64().unwrap();
    assert!(secs > 20.0, "{secs}");

    let (s, created) = app
        .post("/api/projects", &token, json!({"fileKey": key, "title": "Viral talk", "clipDurationPreset": "15-30", "captionTemplate": "karaoke"}))
        .await;
    assert_eq!(s, 201, "{created}");
    let pid = created["projectId"].as_str().unwrap().to_string();
    assert_eq!(created["project"]["status"], "Na fila");
    let (_, credits) = app.get("/api/credits", &token).await;
    assert_eq!(credits["credits"], 59, "one minute reserved");

    let events = follow_sse(&app, &token, &pid).await;
    let last = events.last().expect("events");
    assert_eq!(last.0, "completed", "{events:?}");
    assert!(events.iter().any(|e| e.0 == "progress"));
    assert!(
        events.windows(2).all(|w| w[0].1 < w[1].1),
        "event ids increase"
    );
    // A reconnect with Last-Event-ID gets only what came after.
    let r = app
        .client
        .get(format!("{}/api/projects/{pid}/status", app.base))
        .bearer_auth(&token)
        .header("Last-Event-ID", (last.1 - 1).to_string())
        .send()
        .await
        .unwrap();
    let text = r.text().await.unwrap();
    assert!(
        text.contains("event: completed") && !text.contains("event: progress"),
        "{text}"
    );
    // The engine's events carry the state; the HTTP edge adds the contract's
    // localized status.
    assert!(
        text.contains(r#""state":"completed""#) && text.contains(r#""status":"Concluído""#),
        "{text}"
    );

    let (s, v) = app.get(&format!("/api/projects/{pid}"), &token).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["project"]["status"], "Concluído");
    assert_eq!(v["project"]["state"], "completed");
    let clips = v["clips"].as_array().unwrap();
    assert!(!clips.is_empty());
    for c in clips {
        for (field, magic) in [
            ("url", &b"ftyp"[..]),
            ("thumbnail", &[0xFF, 0xD8][..]),
            ("subtitleUrl", &b"1"[..]),
        ] {
            let url = c[field].as_str().unwrap();
            let bytes = app
                .client
                .get(url)
                .send()
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap();
            let found = bytes.windows(magic.len()).take(64).any(|w| w == magic);
            assert!(
                found,
                "{field} of clip {} does not download a valid file",
                c["id"]
            );
        }
        assert!(c["transcripts"].as_array().is_some_and(|t| !t.is_empty()));
        let d = c["endSec"].as_f64().unwrap() - c["startSec"].as_f64().unwrap();
        assert!((15.0..=30.0).contains(&d), "{d}");
    }
    let (_, credits) = app.get("/api/credits", &token).await;
    assert_eq!(credits["credits"], 59, "charged exactly the started minute");
    let (_, n) = app.get("/api/notifications", &token).await;
    let first = &n["notifications"][0];
    assert_eq!(first["type"], "project_completed");
    assert!(first["message"].as_str().unwrap().contains("Viral talk"));

    // Another user sees nothing.
    let other = app.sign_up("eve@example.com").await;
    let (s, v) = app.get(&format!("/api/projects/{pid}"), &other).await;
    assert_error(s, &v, 404);

    // Delete removes the project and its media.
    let url = clips[0]["url"].as_str().unwrap().to_string();
    let r = app
        .client
        .delete(format!("{}/api/projects/{pid}", app.base))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(
        app.client.get(&url).send().await.unwrap().status().as_u16(),
        404
    );
    let (s, _) = app.get(&format!("/api/projects/{pid}"), &token).await;
    assert_eq!(s, 404);
}

#[tokio::test]
async fn cancel_releases_credits_and_removes_the_project() {
    let app = spawn_app();
    let token = app.sign_up("fay@example.com").await;
    let dir = tempfile::tempdir().unwrap();
    let video = speech_video(dir.path());
    let (_, up) = upload(&app, &token, &video, "talk.mp4").await;
    let (s, created) = app
        .post(
            "/api/projects",
            &token,
            json!({"fileKey": up["fileKey"], "skipCuts": true}),
        )
        .await;
    assert_eq!(s, 201, "{created}");
    let pid = created["projectId"].as_str().unwrap();
    let (s, v) = app
        .post(&format!("/api/projects/{pid}/cancel"), &token, json!({}))
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["status"], "Cancelado");
    let (_, credits) = app.get("/api/credits", &token).await;
    assert_eq!(credits["credits"], 60);
    let (s, _) = app.get(&format!("/api/projects/{pid}"), &token).await;
    assert_eq!(s, 404);
}

#[tokio::test]
async fn a_server_killed_mid_transcription_resumes_and_charges_once() {
    killed_during("transcribing").await;
}

#[tokio::test]
async fn a_server_killed_mid_captioning_resumes_and_charges_once() {
    killed_during("captioning").await;
}

/// The ffmpeg processes `parent` started: pid and command line.
fn ffmpeg_children(parent: u32) -> Vec<(u32, Vec<u8>)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: comm may hold spaces, so after ')'.
        let Some((comm, rest)) = stat.split_once(" (").and_then(|(_, r)| r.rsplit_once(") "))
        else {
            continue;
        };
        let ppid = rest.split(' ').nth(1).and_then(|p| p.parse::<u32>().ok());
        if comm == "ffmpeg" && ppid == Some(parent) {
            // A zombie's command line is empty: it is gone already.
            match std::fs::read(entry.path().join("cmdline")) {
                Ok(cmdline) if !cmdline.is_empty() => found.push((pid, cmdline)),
                _ => {}
            }
        }
    }
    found
}

/// Creates a project, SIGKILLs the server once the project is in `state`,
/// restarts it on the same data and checks the project completes, charged once.
async fn killed_during(state: &str) {
    let app = spawn_app();
    let token = app.sign_up("gus@example.com").await;
    let dir = tempfile::tempdir().unwrap();
    let video = speech_video(dir.path());
    let (_, up) = upload(&app, &token, &video, "talk.mp4").await;
    let (s, created) = app
        .post(
            "/api/projects",
            &token,
            json!({"fileKey": up["fileKey"], "title": "Crash", "skipCuts": true}),
        )
        .await;
    assert_eq!(s, 201, "{created}");
    let pid = created["projectId"].as_str().unwrap().to_string();
    // Wait until the stage runs and has temporary files, then SIGKILL the
    // server.
    let scratch = app.dir.path().join("data/tmp");
    let names = || -> Vec<std::ffi::OsString> {
        std::fs::read_dir(&scratch)
            .map(|d| d.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default()
    };
    let server = app.child.id();
    let deadline = Instant::now() + Duration::from_secs(180);
    // What the server has at the moment it is killed: its temporary files
    // and the ffmpeg it runs.
    let (left, tools) = loop {
        let (_, v) = app.get(&format!("/api/projects/{pid}"), &token).await;
        let left = names();
        if v["project"]["state"] == state && !left.is_empty() {
            break (left, ffmpeg_children(server));
        }
        assert!(Instant::now() < deadline, "never reached {state}: {v}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mut app = app;
    let _ = Command::new("kill")
        .args(["-KILL", &server.to_string()])
        .status();
    let _ = app.child.wait();
    let data = std::mem::replace(&mut app.dir, tempfile::tempdir().unwrap());
    drop(app);

    let app = spawn_app_in(data);
    let after = names();
    for name in &left {
        assert!(
            !after.contains(name),
            "{name:?}, left by the killed server, was removed at the start"
        );
    }
    // The ffmpeg it had started (in their own process groups, so they
    // outlived it) were stopped before the new server listened.
    for (tool, cmdline) in &tools {
        let now = std::fs::read(format!("/proc/{tool}/cmdline")).unwrap_or_default();
        assert!(
            now != *cmdline,
            "ffmpeg {tool} of the killed server still runs: {}",
            String::from_utf8_lossy(cmdline).replace('\0', " ")
        );
    }
    let (s, v) = app.get(&format!("/api/projects/{pid}"), &token).await;
    assert_eq!(s, 200, "the project survived the crash: {v}");
    let events = follow_sse(&app, &token, &pid).await;
    assert_eq!(
        events.last().map(|e| e.0.as_str()),
        Some("completed"),
        "{events:?}"
    );
    let (_, v) = app.get(&format!("/api/projects/{pid}"), &token).await;
    assert_eq!(v["clips"].as_array().map(|c| c.len()), Some(1));
    let (_, credits) = app.get("/api/credits", &token).await;
    assert_eq!(credits["credits"], 59, "charged once: {credits}");
    let (_, ledger) = app.get("/api/credits/ledger", &token).await;
    let charges = ledger["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "charge")
        .count();
    assert_eq!(charges, 1, "{ledger}");
    // Each of the project's lines names it.
    let title = &v["project"]["title"];
    assert!(title.is_string(), "{v}");
    let lines: Vec<&Value> = ledger["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["projectId"] == pid.as_str())
        .collect();
    assert!(
        !lines.is_empty() && lines.iter().all(|e| &e["projectTitle"] == title),
        "{ledger}"
    );
}

#[test]
fn committed_openapi_document_is_current() {
    let out = tempfile::NamedTempFile::new().unwrap();
    let ok = Command::new(env!("CARGO_BIN_EXE_clipforge"))
        .arg("openapi")
        .arg(out.path())
        .status()
        .unwrap();
    assert!(ok.success());
    let fresh = std::fs::read_to_string(out.path()).unwrap();
    let committed =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("openapi/openapi.json"))
            .expect("openapi/openapi.json is committed");
    assert!(
        fresh == committed,
        "openapi/openapi.json is stale: run `clipforge openapi`"
    );
}
