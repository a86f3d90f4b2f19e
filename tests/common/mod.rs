//! Shared helpers of the black-box tests: start the real binary on port 0
//! with its own data directory, call it, upload, follow SSE, make media.
#![allow(dead_code)]

pub mod receiver;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

#[allow(unused_imports)]
pub use clipforge_test_support::server::{assert_error, speech_video_saying, App};

pub fn spawn_app() -> App {
    spawn_app_in(tempfile::tempdir().unwrap())
}

/// Starts the server on the data directory inside `dir` (kept across restarts).
pub fn spawn_app_in(dir: tempfile::TempDir) -> App {
    spawn_app_with(dir, &[])
}

/// Starts the server on `dir` with the admin token `admin-secret` and
/// extra `CLIPFORGE_*` variables.
pub fn spawn_app_with(dir: tempfile::TempDir, env: &[(&str, &str)]) -> App {
    let env = [("CLIPFORGE_AUTH_ADMIN_TOKEN", "admin-secret")]
        .iter()
        .chain(env)
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    App::start(env!("CARGO_BIN_EXE_clipforge"), dir, env)
}

/// Serves `dir` on a free 127.0.0.1 port until the test ends; returns the port.
pub async fn serve_dir(dir: &Path) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let acceptor = poem::listener::TcpAcceptor::from_tokio(listener).unwrap();
    let files = poem::endpoint::StaticFilesEndpoint::new(dir.to_path_buf());
    tokio::spawn(poem::Server::new_with_acceptor(acceptor).run(files));
    port
}

/// A page that yt-dlp's generic extractor reads through its JSON-LD
/// VideoObject (title, duration, thumbnail, content URL).
pub fn video_page(dir: &Path, page: &str, port: u16, video: &str, title: &str, secs: u32) {
    let html = format!(
        r#"<html><head><title>{title}</title>
<script type="application/ld+json">{{"@context":"https://schema.org","@type":"VideoObject","name":"{title}","description":"A talk","thumbnailUrl":"http://127.0.0.1:{port}/thumb.jpg","uploadDate":"2024-01-01","duration":"PT{secs}S","contentUrl":"http://127.0.0.1:{port}/{video}"}}</script>
</head><body><p>{title}</p></body></html>"#
    );
    std::fs::write(dir.join(page), html).unwrap();
}

pub fn speech_video(dir: &Path) -> PathBuf {
    let text = "Have you ever wondered why some videos go viral? The secret is simple. People decide in the first \
                three seconds whether they will keep watching. So your opening must promise something valuable. \
                Here is the biggest mistake I see every day. Creators start with a long introduction. Nobody cares \
                about your name before they care about your idea. Open with a question instead!";
    speech_video_saying(dir, text, 150)
}

pub async fn upload(app: &App, token: &str, path: &Path, name: &str) -> (u16, Value) {
    let bytes = std::fs::read(path).unwrap();
    send_file(
        app,
        reqwest::Method::POST,
        "/api/upload",
        token,
        name,
        bytes,
    )
    .await
}

/// Sends `bytes` as the multipart field `file` named `name`.
pub async fn send_file(
    app: &App,
    method: reqwest::Method,
    path: &str,
    token: &str,
    name: &str,
    bytes: Vec<u8>,
) -> (u16, Value) {
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(bytes).file_name(name.to_string()),
    );
    let r = app
        .client
        .request(method, format!("{}{path}", app.base))
        .bearer_auth(token)
        .multipart(form)
        .send()
        .await
        .unwrap();
    let s = r.status().as_u16();
    (s, r.json().await.unwrap_or(Value::Null))
}

/// Reads SSE events until a terminal one; returns (event, id, data) triples.
pub async fn follow_sse(app: &App, token: &str, project: &str) -> Vec<(String, u64, Value)> {
    follow_sse_request(
        app.client
            .get(format!("{}/api/projects/{project}/status", app.base))
            .bearer_auth(token),
    )
    .await
}

/// [`follow_sse`], asserting that the project completed.
pub async fn follow_to_completion(
    app: &App,
    token: &str,
    project: &str,
) -> Vec<(String, u64, Value)> {
    let events = follow_sse(app, token, project).await;
    assert_eq!(
        events.last().map(|e| e.0.as_str()),
        Some("completed"),
        "{events:?}"
    );
    events
}

/// [`follow_sse`] for a request built by the caller (other credentials).
pub async fn follow_sse_request(req: reqwest::RequestBuilder) -> Vec<(String, u64, Value)> {
    let mut resp = req.send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let mut buf = String::new();
    let mut events = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(600);
    while Instant::now() < deadline {
        let Some(chunk) = tokio::time::timeout(Duration::from_secs(120), resp.chunk())
            .await
            .expect("events keep coming")
            .unwrap()
        else {
            break;
        };
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            let (mut ev, mut id, mut data) = (String::new(), 0u64, String::new());
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event:") {
                    ev = v.trim().to_string();
                } else if let Some(v) = line.strip_prefix("id:") {
                    id = v.trim().parse().unwrap_or(0);
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.trim());
                }
            }
            if !ev.is_empty() {
                events.push((ev, id, serde_json::from_str(&data).unwrap_or(Value::Null)));
            }
        }
    }
    events
}

/// A running `moto_server`, killed when dropped.
pub struct Moto(pub std::process::Child, pub String);

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub async fn start_moto() -> Moto {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("moto_server")
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("moto_server is installed by `make setup-test`");
    let endpoint = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(60);
    while reqwest::get(&endpoint).await.is_err() {
        assert!(Instant::now() < deadline, "moto_server did not start");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Moto(child, endpoint)
}
