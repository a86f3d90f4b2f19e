//! The real server as the black-box tests use it: `clipforge serve` on
//! port 0 with its own data directory, called over HTTP, killed (SIGKILL)
//! and started again on the same data, stopped when dropped; and the
//! speech video most of them upload.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

/// A running `clipforge serve`.
pub struct App {
    pub child: Child,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// Holds `data/` (kept across restarts).
    pub dir: tempfile::TempDir,
    pub client: reqwest::Client,
    bin: PathBuf,
    env: Vec<(String, String)>,
}

impl Drop for App {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl App {
    /// Starts `bin serve` (the binary under test: the caller's
    /// `env!("CARGO_BIN_EXE_clipforge")`) on `dir/data`, with no config
    /// file, the fastest x264 preset, two threads and the extra variables
    /// `env`; returns once it prints the port it listens on.
    pub fn start(bin: impl AsRef<Path>, dir: tempfile::TempDir, env: Vec<(String, String)>) -> App {
        let bin = bin.as_ref().to_path_buf();
        let mut child = Command::new(&bin)
            .args([
                "serve",
                "--port",
                "0",
                "--config",
                "/nonexistent/cluster.toml",
                "--data-dir",
            ])
            .arg(dir.path().join("data"))
            .env("CLIPFORGE_NODE_HTTP_ADDR", "127.0.0.1:0")
            .env("CLIPFORGE_PIPELINE_X264_PRESET", "ultrafast")
            .env("CLIPFORGE_PIPELINE_THREADS", "2")
            .env("RUST_LOG", "warn")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start clipforge serve");
        let stdout = child.stdout.take().expect("piped");
        let mut lines = BufReader::new(stdout).lines();
        let port = loop {
            let line = lines.next().expect("server output").expect("utf-8");
            if let Some(p) = line.strip_prefix("clipforge listening on port ") {
                break p.trim().parse::<u16>().expect("a port");
            }
        };
        std::thread::spawn(move || for _ in lines {});
        App {
            child,
            base: format!("http://127.0.0.1:{port}"),
            dir,
            client: reqwest::Client::new(),
            bin,
            env,
        }
    }

    /// SIGKILLs the server and starts it again on the same data.
    pub fn crash_and_restart(mut self) -> App {
        self.kill();
        let dir = std::mem::replace(&mut self.dir, tempfile::tempdir().expect("tempdir"));
        let (bin, env) = (self.bin.clone(), std::mem::take(&mut self.env));
        drop(self);
        App::start(bin, dir, env)
    }

    /// SIGKILLs the server (no shutdown of any kind).
    pub fn kill(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }

    /// The file kept next to the object behind a stable media link
    /// (`<key>.<suffix>`) in the node's local object storage.
    pub fn stored_beside(&self, url: &str, suffix: &str) -> PathBuf {
        let key = url
            .split("/media/")
            .nth(1)
            .and_then(|k| k.split('?').next())
            .unwrap_or_else(|| panic!("not a media link: {url}"));
        self.dir
            .path()
            .join("data/media/objects")
            .join(format!("{key}.{suffix}"))
    }

    /// The body behind a link (a stable media link, say); asserts 200.
    pub async fn fetch(&self, url: &str) -> Vec<u8> {
        let r = self
            .client
            .get(url)
            .send()
            .await
            .expect("the server answers");
        assert_eq!(r.status().as_u16(), 200, "{url}");
        r.bytes().await.expect("a body").to_vec()
    }

    /// The text behind a link.
    pub async fn fetch_text(&self, url: &str) -> String {
        String::from_utf8(self.fetch(url).await).expect("UTF-8 text")
    }

    /// Seconds of the media file behind a link (fetched, then `ffprobe`).
    pub async fn video_seconds(&self, url: &str) -> f64 {
        let body = self.fetch(url).await;
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("media");
        std::fs::write(&path, body).expect("written");
        crate::media_seconds(&path)
    }

    /// `method path` with an optional bearer token and JSON body: the
    /// status and the body (JSON, else the text as a JSON string).
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self.client.request(method, format!("{}{path}", self.base));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("the server answers");
        let status = resp.status().as_u16();
        let text = resp.text().await.expect("a body");
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    pub async fn get(&self, path: &str, token: &str) -> (u16, Value) {
        self.call(reqwest::Method::GET, path, Some(token), None)
            .await
    }

    pub async fn post(&self, path: &str, token: &str, body: Value) -> (u16, Value) {
        self.call(reqwest::Method::POST, path, Some(token), Some(body))
            .await
    }

    pub async fn patch(&self, path: &str, token: &str, body: Value) -> (u16, Value) {
        self.call(reqwest::Method::PATCH, path, Some(token), Some(body))
            .await
    }

    pub async fn delete(&self, path: &str, token: &str) -> (u16, Value) {
        self.call(reqwest::Method::DELETE, path, Some(token), None)
            .await
    }

    /// Signs `email` up (password "correct horse", name Ana); its token.
    pub async fn sign_up(&self, email: &str) -> String {
        let (s, v) = self
            .call(
                reqwest::Method::POST,
                "/api/auth/sign-up/email",
                None,
                Some(json!({"email": email, "password": "correct horse", "name": "Ana"})),
            )
            .await;
        assert_eq!(s, 200, "{v}");
        v["token"].as_str().expect("a token").to_string()
    }
}

/// `status` is `expected` and `body` the uniform error body.
pub fn assert_error(status: u16, body: &Value, expected: u16) {
    assert_eq!(status, expected, "{body}");
    assert!(
        body["error"].is_string() && body["message"].is_string(),
        "not the uniform error body: {body}"
    );
}

/// `dir/talk.mp4`: a test picture with espeak-ng saying `text` at `wpm`.
pub fn speech_video_saying(dir: &Path, text: &str, wpm: u32) -> PathBuf {
    let wav = dir.join("talk.wav");
    assert!(Command::new("espeak-ng")
        .args(["-v", "en-us", "-s", &wpm.to_string(), "-w"])
        .arg(&wav)
        .arg(text)
        .status()
        .expect("espeak-ng")
        .success());
    let mp4 = dir.join("talk.mp4");
    assert!(Command::new("ffmpeg")
        .args([
            "-nostdin",
            "-y",
            "-v",
            "error",
            "-f",
            "lavfi",
            "-i",
            "testsrc2=s=640x360:r=25",
            "-i",
        ])
        .arg(&wav)
        .args([
            "-shortest",
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-pix_fmt",
            "yuv420p",
            "-c:a",
            "aac",
        ])
        .arg(&mp4)
        .status()
        .expect("ffmpeg")
        .success());
    mp4
}
