//! The web console in a real browser: the real binary with its embedded
//! console, the platform emulator, the local Stripe, a local site for yt-dlp,
//! and tests/console/test_console.py (Playwright driving Debian's chromium)
//! on the main path at desktop and phone width, with axe-core on every page.
//! Screenshots go to `<target>/console-screenshots`. Needs chromium,
//! Python's playwright and web/node_modules (axe-core): `make test` installs
//! them.
#![recursion_limit = "256"]

mod common;
mod fake_stripe;
mod publishing;
use fake_stripe as stripe;
use publishing::platforms;

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

/// Where the test's Stripe sends the browser back: the console's public
/// address, which the browser test maps onto the local server.
const CONSOLE_PUBLIC: &str = "https://console.example";
/// The free plan's upload limit here: above the speech video (about 6 MB).
const FREE_UPLOAD_MB: &str = "8";

/// A site for yt-dlp: `talk.html` (the speech video, 25 s) and `long.html`
/// (the same file, but two hours long by its metadata), with a thumbnail.
async fn video_site(dir: &Path) -> u16 {
    let port = common::serve_dir(dir).await;
    let video = common::speech_video(dir);
    let thumb = dir.join("thumb.jpg");
    let ok = Command::new("ffmpeg")
        .args(["-nostdin", "-y", "-v", "error", "-ss", "2", "-i"])
        .arg(&video)
        .args(["-frames:v", "1", "-s", "320x180"])
        .arg(&thumb)
        .status()
        .unwrap();
    assert!(ok.success());
    common::video_page(dir, "talk.html", port, "talk.mp4", "Launch talk", 25);
    common::video_page(dir, "long.html", port, "talk.mp4", "Keynote replay", 7200);
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_main_path_in_chromium() {
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
    let (stripe, stripe_base) = stripe::start_stripe().await;
    let site = tempfile::tempdir().unwrap();
    let site_port = video_site(site.path()).await;
    let mut env = p.env();
    env.extend(stripe::app_env(
        &stripe_base,
        &format!("{CONSOLE_PUBLIC}/credits"),
        &format!("{CONSOLE_PUBLIC}/credits"),
    ));
    env.push(("CLIPFORGE_SOURCES_EXTRA_HOSTS".into(), "127.0.0.1".into()));
    // The console's webhook step runs its receiver on 127.0.0.1.
    env.push((
        "CLIPFORGE_WEBHOOKS_ALLOW_PRIVATE_TARGETS".into(),
        "true".into(),
    ));
    env.push((
        "CLIPFORGE_PLANS_FREE_UPLOAD_MAX_MB".into(),
        FREE_UPLOAD_MB.into(),
    ));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let app = common::spawn_app_with(tempfile::tempdir().unwrap(), &env);
    let media = tempfile::tempdir().unwrap();
    let video = common::speech_video(media.path());
    let avatar = media.path().join("avatar.png");
    let ok = Command::new("ffmpeg")
        .args(["-nostdin", "-y", "-v", "error", "-f", "lavfi", "-i"])
        .arg("testsrc2=s=256x256")
        .args(["-frames:v", "1"])
        .arg(&avatar)
        .status()
        .unwrap();
    assert!(ok.success());
    let shots = target_dir().join("console-screenshots");
    let _ = std::fs::remove_dir_all(&shots);

    let mut python = Command::new("python3");
    python
        .arg(root.join("tests/console/test_console.py"))
        .env("CLIPFORGE_URL", &app.base)
        .env("CONSOLE_PUBLIC", CONSOLE_PUBLIC)
        .env("CONSOLE_VIDEO", &video)
        .env("CONSOLE_AVATAR", &avatar)
        .env("CONSOLE_SITE", format!("http://127.0.0.1:{site_port}"))
        .env("CONSOLE_UPLOAD_LIMIT_MB", FREE_UPLOAD_MB)
        .env("STRIPE_BASE", &stripe_base)
        .env("CONSOLE_SCREENSHOTS", &shots)
        .env("AXE_JS", &axe)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let status = tokio::task::spawn_blocking(move || python.status().expect("run python3"))
        .await
        .unwrap();
    assert!(
        status.success(),
        "the browser test failed (see its output above)"
    );
    // What the browser scheduled really reached the platform, once per run
    // (the refused post once, after its retry); the bulk-scheduled posts
    // are days away and stay pending.
    let mut titles: Vec<String> = p
        .published("tiktok")
        .into_iter()
        .map(|(_, t, _)| t)
        .collect();
    titles.sort();
    assert_eq!(
        titles,
        [
            "First post from the console",
            "First post from the console",
            "Refused once (desktop)",
            "Refused once (phone)"
        ]
    );
    // Each run paid one checkout at the local Stripe and opened the portal.
    let paid = stripe
        .state()
        .sessions
        .values()
        .filter(|s| s["payment_status"] == "paid")
        .count();
    assert_eq!(paid, 2, "paid checkouts");
    assert_eq!(stripe.seen("/v1/billing_portal/sessions").len(), 2);
    // Each run chose Free (the subscription set to end at its period's end)
    // and then kept Creator (withdrawn): both subscriptions renew.
    let state = stripe.state();
    let changes: Vec<&str> = state
        .seen
        .iter()
        .filter(|s| s.path.starts_with("/v1/subscriptions/"))
        .map(|s| s.form["cancel_at_period_end"].as_str())
        .collect();
    assert_eq!(changes, ["true", "false", "true", "false"]);
    assert!(state
        .subscriptions
        .values()
        .all(|s| s["cancel_at_period_end"] == false));
}
