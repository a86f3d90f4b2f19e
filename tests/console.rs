//! The web console in a real browser: the real binary with its embedded
//! console, the platform emulator, and tests/console/test_console.py
//! (Playwright driving Debian's chromium) on the main path at desktop and
//! phone width, with axe-core on every page. Screenshots go to
//! `<target>/console-screenshots`. Needs chromium, Python's playwright and
//! web/node_modules (axe-core): `make test` installs them.

#[allow(dead_code)]
mod common;
#[allow(dead_code)]
#[path = "publishing/platforms.rs"]
mod platforms;

use std::path::{Path, PathBuf};
use std::process::Command;

fn target_dir() -> PathBuf {
    // .../target/release/clipforge → .../target
    Path::new(env!("CARGO_BIN_EXE_clipforge"))
        .ancestors()
        .nth(2)
        .expect("target dir")
        .to_path_buf()
}

/// `/` and client-side routes answer the console's page, assets their MIME
/// type, while `/api` keeps its JSON errors.
#[tokio::test]
async fn console_is_served_at_root() {
    let app = common::spawn_app();
    let get = |path: &str| {
        app.client
            .get(format!("{}{path}", app.base))
            .header("accept", "text/html")
            .send()
    };
    let root = get("/").await.unwrap();
    assert_eq!(root.status().as_u16(), 200);
    assert!(root.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    let page = root.text().await.unwrap();
    assert!(
        page.contains("<div id=\"app\">"),
        "not the console's index.html: {page}"
    );
    // A client-side route gets the same page.
    let deep = get("/projects/123/anything").await.unwrap();
    assert_eq!(deep.status().as_u16(), 200);
    assert_eq!(deep.text().await.unwrap(), page);
    // Every asset index.html names is served with its type.
    let assets: Vec<&str> = page
        .split('"')
        .filter(|s| s.starts_with("/assets/"))
        .collect();
    assert!(!assets.is_empty(), "{page}");
    for a in assets {
        let r = get(a).await.unwrap();
        assert_eq!(r.status().as_u16(), 200, "{a}");
        let ctype = r.headers()["content-type"].to_str().unwrap().to_string();
        let want: &[&str] = if a.ends_with(".js") {
            &["text/javascript", "application/javascript"]
        } else {
            &["text/css"]
        };
        assert!(want.iter().any(|w| ctype.starts_with(w)), "{a}: {ctype}");
        assert!(r.headers()["cache-control"]
            .to_str()
            .unwrap()
            .contains("immutable"));
        let etag = r.headers()["etag"].to_str().unwrap().to_string();
        let plain = r.bytes().await.unwrap().len();
        let again = app
            .client
            .get(format!("{}{a}", app.base))
            .header("if-none-match", &etag)
            .send()
            .await
            .unwrap();
        assert_eq!(again.status().as_u16(), 304, "{a}");
        let gz = app
            .client
            .get(format!("{}{a}", app.base))
            .header("accept-encoding", "gzip")
            .send()
            .await
            .unwrap();
        assert_eq!(gz.headers()["content-encoding"], "gzip", "{a}");
        let packed = gz.bytes().await.unwrap().len();
        assert!(packed < plain, "{a}: gzip {packed} B, plain {plain} B");
    }
    assert_eq!(
        get("/assets/missing-1234.js")
            .await
            .unwrap()
            .status()
            .as_u16(),
        404
    );
    // The API keeps its uniform JSON errors.
    let api = get("/api/nope").await.unwrap();
    assert_eq!(api.status().as_u16(), 404);
    let body: serde_json::Value = api.json().await.unwrap();
    assert_eq!(body["error"], "not_found", "{body}");
    assert_eq!(get("/docs").await.unwrap().status().as_u16(), 200);
    assert_eq!(get("/healthz").await.unwrap().text().await.unwrap(), "ok");
}

#[test]
fn console_main_path_in_chromium() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let axe = root.join("web/node_modules/axe-core/axe.min.js");
    assert!(
        axe.is_file(),
        "{} is missing: run `make console` (npm ci in web/)",
        axe.display()
    );
    assert!(
        Path::new("/usr/bin/chromium").is_file(),
        "chromium is missing: run `make setup-test`"
    );
    let probe = Command::new("python3")
        .args(["-c", "import playwright"])
        .status();
    assert!(
        probe.is_ok_and(|s| s.success()),
        "python's playwright is missing: run `make setup-test`"
    );

    let p = platforms::Platforms::start();
    let env = p.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let app = common::spawn_app_with(tempfile::tempdir().unwrap(), &env);
    let media = tempfile::tempdir().unwrap();
    let video = common::speech_video(media.path());
    let shots = target_dir().join("console-screenshots");
    let _ = std::fs::remove_dir_all(&shots);

    let status = Command::new("python3")
        .arg(root.join("tests/console/test_console.py"))
        .env("CLIPFORGE_URL", &app.base)
        .env("CONSOLE_VIDEO", &video)
        .env("CONSOLE_SCREENSHOTS", &shots)
        .env("AXE_JS", &axe)
        .status()
        .expect("run python3");
    assert!(
        status.success(),
        "the browser test failed (see its output above)"
    );
    // What the browser scheduled really reached the platform, once per run.
    let published = p.published("tiktok");
    assert_eq!(published.len(), 2, "{published:?}");
    assert!(published
        .iter()
        .all(|(_, title, _)| title == "First post from the console"));
}
