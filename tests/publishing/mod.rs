//! Shared by the scheduling tests: the real binary on port 0, a data
//! directory with one finished project (made once per test binary, then
//! copied), and the platform emulator.
#![allow(dead_code)]

pub mod platforms;

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

#[allow(unused_imports)]
pub use clipforge_test_support::server::{assert_error, speech_video_saying, App};

/// Starts the server on `dir/data` with extra environment variables.
pub fn spawn_app_in(dir: tempfile::TempDir, env: Vec<(String, String)>) -> App {
    App::start(env!("CARGO_BIN_EXE_clipforge"), dir, env)
}

/// What the scheduling tests do with a server.
#[allow(async_fn_in_trait)]
pub trait Posting {
    async fn connect(&self, token: &str, provider: &str, p: &platforms::Platforms) -> Value;
    async fn wait_post(&self, token: &str, id: &str, pred: impl Fn(&Value) -> bool) -> Value;
}

impl Posting for App {
    /// Runs the OAuth flow against the emulator; returns the connect answer.
    async fn connect(&self, token: &str, provider: &str, p: &platforms::Platforms) -> Value {
        let (s, c) = self
            .post(
                &format!("/api/integrations/{provider}/connect"),
                token,
                json!({}),
            )
            .await;
        assert_eq!(s, 200, "{c}");
        let state = c["state"].as_str().unwrap();
        let url = reqwest::Url::parse(c["authorizeUrl"].as_str().unwrap()).unwrap();
        if let Some((_, ch)) = url.query_pairs().find(|(k, _)| k == "code_challenge") {
            p.lock().challenge = Some(ch.into_owned());
        }
        let (s, v) = self
            .call(
                reqwest::Method::GET,
                &format!("/api/integrations/{provider}/callback?code=good-code&state={state}"),
                Some(token),
                None,
            )
            .await;
        assert_eq!(s, 200, "{v}");
        assert_eq!(v["status"], "connected");
        c
    }

    /// Polls a post until `pred` holds (deadline 120 s).
    async fn wait_post(&self, token: &str, id: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let (s, v) = self.get(&format!("/api/clips/scheduled/{id}"), token).await;
            if s == 200 && pred(&v) {
                return v;
            }
            assert!(
                Instant::now() < deadline,
                "post {id} never got there: {s} {v}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// ISO 8601 UTC `secs` from now.
pub fn at(secs: i64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    iso(now + secs * 1000)
}

pub fn iso(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rest = ms.rem_euclid(86_400_000);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let s = rest / 1000;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        s / 3600,
        s / 60 % 60,
        s % 60,
        rest % 1000
    )
}

/// A data directory holding one user with one finished project and its clips.
pub struct Template {
    dir: tempfile::TempDir,
    pub token: String,
    pub project_id: String,
    /// Clip ids with their scores.
    pub clips: Vec<(String, i64)>,
}

static TEMPLATE: OnceLock<Template> = OnceLock::new();

/// Built once per test binary (speech video → project → clips), then each
/// test gets a copy of its data directory. A static is never dropped, so
/// the directory is removed when the test binary exits.
pub fn template() -> &'static Template {
    TEMPLATE.get_or_init(|| {
        let template = std::thread::spawn(|| {
            tokio::runtime::Runtime::new()
                .unwrap()
                .block_on(build_template())
        })
        .join()
        .expect("template");
        // SAFETY: registers a plain `extern "C"` function with the C library.
        unsafe {
            libc::atexit(remove_template);
        }
        template
    })
}

extern "C" fn remove_template() {
    if let Some(t) = TEMPLATE.get() {
        let _ = std::fs::remove_dir_all(t.dir.path());
    }
}

async fn build_template() -> Template {
    let app = spawn_app_in(tempfile::tempdir().unwrap(), vec![]);
    let token = app.sign_up("ana@example.com").await;
    let media = tempfile::tempdir().unwrap();
    let video = speech_video(media.path());
    let bytes = std::fs::read(&video).unwrap();
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(bytes).file_name("talk.mp4"),
    );
    let r = app
        .client
        .post(format!("{}/api/upload", app.base))
        .bearer_auth(&token)
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let up: Value = r.json().await.unwrap();
    let (s, created) = app
        .post(
            "/api/projects",
            &token,
            json!({"fileKey": up["fileKey"], "title": "Talk", "clipDurationPreset": "15-30"}),
        )
        .await;
    assert_eq!(s, 201, "{created}");
    let pid = created["projectId"].as_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(900);
    let project = loop {
        let (_, v) = app.get(&format!("/api/projects/{pid}"), &token).await;
        match v["project"]["state"].as_str() {
            Some("completed") => break v,
            Some("failed") => panic!("template project failed: {v}"),
            _ => {}
        }
        assert!(Instant::now() < deadline, "template project never finished");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let clips: Vec<(String, i64)> = project["clips"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_string(),
                c["score"].as_i64().unwrap(),
            )
        })
        .collect();
    assert!(!clips.is_empty());
    let mut app = app;
    app.kill();
    let dir = std::mem::replace(&mut app.dir, tempfile::tempdir().unwrap());
    Template {
        dir,
        token,
        project_id: pid,
        clips,
    }
}

impl Template {
    /// A fresh copy of the template's data directory.
    pub fn copy(&self) -> tempfile::TempDir {
        let out = tempfile::tempdir().unwrap();
        let ok = Command::new("cp")
            .arg("-a")
            .arg(self.dir.path().join("data"))
            .arg(out.path())
            .status()
            .unwrap();
        assert!(ok.success());
        out
    }
}

/// The talk every template project is made from (about 25 s).
pub fn speech_video(dir: &Path) -> std::path::PathBuf {
    let text = "Have you ever wondered why some videos go viral? The secret is simple. People decide in the first \
                three seconds whether they will keep watching. So your opening must promise something valuable. \
                Here is the biggest mistake I see every day. Creators start with a long introduction. Nobody cares \
                about your name before they care about your idea. Open with a question instead! \
                Now let me tell you about the second rule. Keep every sentence short. Short sentences are easy to follow \
                on a small screen. Cut every word that does not earn its place. Your viewers will thank you for it.";
    speech_video_saying(dir, text, 165)
}

/// Every byte of every file under `dir`.
pub fn read_dir_bytes(dir: &std::path::Path) -> Vec<u8> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let path = e.path();
        if path.is_dir() {
            out.extend(read_dir_bytes(&path));
        } else {
            out.extend(std::fs::read(&path).unwrap_or_default());
        }
    }
    out
}

/// The clip `id` of a `GET /api/projects/{id}` answer.
pub fn clip_in(v: &Value, id: &str) -> Value {
    v["clips"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == json!(id))
        .cloned()
        .unwrap_or_else(|| panic!("clip {id} not in {v}"))
}

/// Waits until the clip is no longer `rendering`, and returns it.
pub async fn settled(app: &App, t: &str, project: &str, clip: &str) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(600);
    loop {
        let (_, v) = app.get(&format!("/api/projects/{project}"), t).await;
        let c = clip_in(&v, clip);
        if c["status"] != "rendering" {
            return c;
        }
        assert!(std::time::Instant::now() < deadline, "still rendering: {c}");
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
}
