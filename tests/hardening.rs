//! Black-box tests of the hardening (issue 13, items 3-5): bounded bodies,
//! rate limits and lockout, client addresses, connection bounds, browser
//! headers, CORS and the OAuth callback's session binding.

mod common;
mod publishing;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{assert_error, send_file, spawn_app_with, App};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const MIB: usize = 1024 * 1024;

fn app(env: &[(&str, &str)]) -> App {
    spawn_app_with(tempfile::tempdir().unwrap(), env)
}

/// A raw HTTP/1.1 answer: status, headers (lower-case names), JSON body.
struct Raw {
    status: u16,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Raw {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

fn parse_response(buf: &[u8]) -> Option<Raw> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&buf[..end]).to_string();
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())?;
    let body = buf.get(end + 4..end + 4 + len)?;
    Some(Raw {
        status,
        headers,
        body: serde_json::from_slice(body).unwrap_or(Value::Null),
    })
}

/// POSTs a chunked body (no Content-Length): `prefix`, then filler bytes
/// up to `total`, stopping as soon as an answer arrives. Returns the answer
/// and how many body bytes had been sent when it came.
async fn chunked_post(
    app: &App,
    path: &str,
    headers: &[(&str, &str)],
    prefix: Vec<u8>,
    total: usize,
) -> (Raw, usize) {
    let addr = app.base.trim_start_matches("http://").to_string();
    let stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let (mut rd, mut wr) = stream.into_split();
    let mut head =
        format!("POST {path} HTTP/1.1\r\nhost: {addr}\r\ntransfer-encoding: chunked\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let answered = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicUsize::new(0));
    let (a, s) = (answered.clone(), sent.clone());
    let writer = tokio::spawn(async move {
        if wr.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        let filler = vec![b' '; 64 * 1024];
        let mut first = Some(prefix);
        while s.load(Ordering::Acquire) < total && !a.load(Ordering::Acquire) {
            let data = first.take().unwrap_or_else(|| filler.clone());
            let frame = [
                format!("{:x}\r\n", data.len()).into_bytes(),
                data,
                b"\r\n".to_vec(),
            ]
            .concat();
            if wr.write_all(&frame).await.is_err() {
                return;
            }
            s.fetch_add(frame.len(), Ordering::AcqRel);
        }
    });
    let mut buf = Vec::new();
    let raw = tokio::time::timeout(Duration::from_secs(120), async {
        loop {
            if let Some(r) = parse_response(&buf) {
                return r;
            }
            let n = rd.read_buf(&mut buf).await.expect("the answer is readable");
            assert!(
                n > 0,
                "closed without an answer: {}",
                String::from_utf8_lossy(&buf)
            );
        }
    })
    .await
    .expect("an answer came");
    answered.store(true, Ordering::Release);
    let at = sent.load(Ordering::Acquire);
    writer.abort();
    (raw, at)
}

async fn healthy(app: &App) {
    let r = app
        .client
        .get(format!("{}/healthz", app.base))
        .send()
        .await
        .expect("the server still answers");
    assert_eq!(r.status().as_u16(), 200);
}

fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
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
async fn endless_chunked_body_to_sign_in_is_refused_early() {
    let app = app(&[]);
    let total = 512 * MIB;
    let (r, sent) = chunked_post(
        &app,
        "/api/auth/sign-in/email",
        &[("content-type", "application/json")],
        br#"{"email": "a@example.com", "password": ""#.to_vec(),
        total,
    )
    .await;
    assert_eq!(r.status, 413, "{:?}", r.body);
    assert_eq!(r.body["error"], "payload_too_large", "{:?}", r.body);
    assert_eq!(r.header("connection"), Some("close"));
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    assert!(sent < total, "answered only after the whole body: {sent}");
    healthy(&app).await;
    app.sign_up("after@example.com").await;

    // A declared length over the limit is refused without reading it.
    let r = app
        .client
        .post(format!("{}/api/auth/sign-up/email", app.base))
        .header("content-type", "application/json")
        .body(vec![b' '; 200 * 1024])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 413);
}

#[tokio::test]
async fn chunked_upload_over_the_plan_limit_is_refused_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let spool = root.join("spool");
    std::fs::create_dir_all(&spool).unwrap();
    let app = spawn_app_with(
        dir,
        &[
            ("CLIPFORGE_PLANS_FREE_UPLOAD_MAX_MB", "1"),
            ("TMPDIR", spool.to_str().unwrap()),
        ],
    );
    let token = app.sign_up("ivy@example.com").await;
    let bearer = format!("Bearer {token}");
    let prefix = b"--XyZ\r\ncontent-disposition: form-data; name=\"file\"; filename=\"big.mp4\"\r\ncontent-type: video/mp4\r\n\r\n".to_vec();
    let total = 256 * MIB;
    let (r, sent) = chunked_post(
        &app,
        "/api/upload",
        &[
            ("content-type", "multipart/form-data; boundary=XyZ"),
            ("authorization", &bearer),
        ],
        prefix,
        total,
    )
    .await;
    assert_eq!(r.status, 413, "{:?}", r.body);
    assert!(
        r.body["message"].as_str().unwrap().contains("upload limit"),
        "{:?}",
        r.body
    );
    assert!(sent < total, "answered only after the whole body: {sent}");
    healthy(&app).await;
    let data = root.join("data");
    let left: Vec<_> = files_under(&data.join("tmp"))
        .into_iter()
        .chain(files_under(&spool))
        .chain(files_under(
            &data.join("media").join("objects").join("uploads"),
        ))
        .collect();
    assert!(left.is_empty(), "files left behind: {left:?}");
    let (s, v) = app.get("/api/credits", &token).await;
    assert_eq!(s, 200, "{v}");
    // Without a valid session an upload is 401, whatever its size.
    let (s, v) = send_file(
        &app,
        reqwest::Method::POST,
        "/api/upload",
        "not-a-session",
        "v.mp4",
        vec![0u8; 2 * MIB],
    )
    .await;
    assert_error(s, &v, 401);
}

#[tokio::test]
async fn huge_avatar_is_refused_before_decoding() {
    let app = app(&[]);
    let token = app.sign_up("pic@example.com").await;
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("big.png");
    let ok = std::process::Command::new("ffmpeg")
        .args(["-nostdin", "-y", "-v", "error", "-f", "lavfi", "-i"])
        .arg("color=c=black:s=5000x5000")
        .args(["-frames:v", "1", "-pix_fmt", "gray"])
        .arg(&png)
        .status()
        .unwrap()
        .success();
    assert!(ok, "ffmpeg made the picture");
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.len() < 5 * MIB, "small file, huge picture");
    let (s, v) = send_file(
        &app,
        reqwest::Method::PUT,
        "/api/auth/avatar",
        &token,
        "big.png",
        bytes,
    )
    .await;
    assert!((400..500).contains(&s), "{s} {v}");
    assert!(v["message"].as_str().unwrap().contains("4096"), "{v}");
}

async fn sign_in(app: &App, email: &str, password: &str, xff: &str) -> reqwest::Response {
    app.client
        .post(format!("{}/api/auth/sign-in/email", app.base))
        .header("x-forwarded-for", xff)
        .json(&json!({"email": email, "password": password}))
        .send()
        .await
        .unwrap()
}

async fn body(r: reqwest::Response) -> (u16, Option<String>, Value) {
    let s = r.status().as_u16();
    let retry = r
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    (s, retry, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn sign_in_flood_from_one_address_is_limited_and_others_go_on() {
    let app = app(&[
        ("CLIPFORGE_SECURITY_TRUSTED_PROXIES", "127.0.0.1"),
        ("CLIPFORGE_LIMITS_SIGN_IN_PER_IP", "5"),
    ]);
    app.sign_up("ana@example.com").await;
    let bob = app.sign_up("bob@example.com").await;
    let mut statuses = Vec::new();
    let mut limited = None;
    for i in 0..12 {
        // Different emails: the lockout per email is not what stops them.
        let email = format!("flood{i}@example.com");
        let (s, retry, v) = body(sign_in(&app, &email, "wrong", "203.0.113.7").await).await;
        statuses.push(s);
        if s == 429 {
            limited = Some((retry, v));
        }
    }
    assert_eq!(&statuses[..5], &[401; 5], "{statuses:?}");
    let (retry, v) = limited.expect("the flood is limited");
    assert_error(429, &v, 429);
    let secs: u64 = retry.expect("Retry-After").parse().unwrap();
    assert!(secs >= 1, "{secs}");
    // Another user, at another address, signs in; their reads go on.
    let (s, _, v) =
        body(sign_in(&app, "bob@example.com", "correct horse", "198.51.100.2").await).await;
    assert_eq!(s, 200, "{v}");
    let (s, v) = app.get("/api/projects", &bob).await;
    assert_eq!(s, 200, "{v}");
    // The flooding address stays limited.
    let (s, _, _) =
        body(sign_in(&app, "ana@example.com", "correct horse", "203.0.113.7").await).await;
    assert_eq!(s, 429);
    // Even while it keeps sending a body, the client reads the 429.
    let (r, _) = chunked_post(
        &app,
        "/api/auth/sign-in/email",
        &[
            ("content-type", "application/json"),
            ("x-forwarded-for", "203.0.113.7"),
        ],
        br#"{"email": "ana@example.com", "password": ""#.to_vec(),
        64 * MIB,
    )
    .await;
    assert_eq!(r.status, 429, "{:?}", r.body);
    assert!(r.header("retry-after").is_some());
}

#[tokio::test]
async fn forwarded_headers_from_untrusted_clients_are_ignored() {
    let app = app(&[("CLIPFORGE_LIMITS_SIGN_IN_PER_IP", "3")]);
    let mut statuses = Vec::new();
    for i in 0..4 {
        // A new X-Forwarded-For each time: not believed from an untrusted peer.
        let xff = format!("198.51.100.{i}");
        let (s, _, _) = body(sign_in(&app, "x@example.com", "wrong", &xff).await).await;
        statuses.push(s);
    }
    assert_eq!(statuses, [401, 401, 401, 429]);
    // Nor does the cluster's internal header get a client past the limit.
    let r = app
        .client
        .post(format!("{}/api/auth/sign-in/email", app.base))
        .header("x-clipforge-forwarded", "node-b")
        .header("x-clipforge-client-ip", "192.0.2.1")
        .json(&json!({"email": "x@example.com", "password": "wrong"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 429);
}

#[tokio::test]
async fn sign_in_lockout_is_per_email_and_address() {
    let app = app(&[("CLIPFORGE_SECURITY_TRUSTED_PROXIES", "127.0.0.1")]);
    app.sign_up("ana@example.com").await;
    for _ in 0..5 {
        let (s, _, _) = body(sign_in(&app, "ana@example.com", "wrong", "203.0.113.9").await).await;
        assert_eq!(s, 401);
    }
    let (s, retry, v) =
        body(sign_in(&app, "ana@example.com", "correct horse", "203.0.113.9").await).await;
    assert_error(s, &v, 429);
    assert!(retry.expect("Retry-After").parse::<u64>().unwrap() >= 1);
    // The owner elsewhere is not locked out by the attacker's failures.
    let (s, _, v) =
        body(sign_in(&app, "ana@example.com", "correct horse", "198.51.100.20").await).await;
    assert_eq!(s, 200, "{v}");
}

#[tokio::test]
async fn connections_per_address_are_bounded() {
    let app = app(&[("CLIPFORGE_LIMITS_CONNECTIONS_PER_IP", "2")]);
    let addr = app.base.trim_start_matches("http://").to_string();
    let first = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let _second = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let mut third = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), third.read_to_end(&mut buf))
        .await
        .expect("refused at once")
        .unwrap();
    let r = parse_response(&buf).expect("an HTTP answer");
    assert_eq!(r.status, 503);
    assert_eq!(r.body["error"], "too_many_connections");
    drop(first);
    // A slot is free again once a connection closes.
    let mut ok = false;
    for _ in 0..50 {
        let client = reqwest::Client::new();
        if let Ok(r) = client.get(format!("{}/healthz", app.base)).send().await {
            if r.status().as_u16() == 200 {
                ok = true;
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ok, "served again after a connection closed");
}

#[tokio::test]
async fn security_headers_and_secure_cookies_follow_the_public_url() {
    let plain = app(&[]);
    let r = plain
        .client
        .post(format!("{}/api/auth/sign-up/email", plain.base))
        .json(&json!({"email": "h@example.com", "password": "correct horse", "name": "H"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let h = r.headers();
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert_eq!(h["x-frame-options"], "DENY");
    assert!(
        h.get("strict-transport-security").is_none(),
        "no HSTS on http"
    );
    let cookie = h["set-cookie"].to_str().unwrap();
    assert!(
        cookie.contains("HttpOnly") && !cookie.contains("Secure"),
        "{cookie}"
    );

    let https = app(&[("CLIPFORGE_NODE_PUBLIC_URL", "https://clips.example.test")]);
    let r = https
        .client
        .post(format!("{}/api/auth/sign-up/email", https.base))
        .json(&json!({"email": "h@example.com", "password": "correct horse", "name": "H"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let h = r.headers();
    assert!(h["strict-transport-security"]
        .to_str()
        .unwrap()
        .starts_with("max-age="));
    assert!(h["set-cookie"].to_str().unwrap().ends_with("; Secure"));
    // Errors carry the headers too.
    let r = https
        .client
        .get(format!("{}/api/nope", https.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
    assert_eq!(r.headers()["x-content-type-options"], "nosniff");
}

#[tokio::test]
async fn cors_answers_only_the_allowlist() {
    let good = "https://app.example.test";
    let app = app(&[("CLIPFORGE_SECURITY_CORS_ORIGINS", good)]);
    let preflight = |origin: &'static str| {
        app.client
            .request(
                reqwest::Method::OPTIONS,
                format!("{}/api/projects", app.base),
            )
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header(
                "access-control-request-headers",
                "authorization, content-type",
            )
            .send()
    };
    let r = preflight(good).await.unwrap();
    assert_eq!(r.status().as_u16(), 204);
    assert_eq!(r.headers()["access-control-allow-origin"], good);
    assert_eq!(r.headers()["access-control-allow-credentials"], "true");
    let r = preflight("https://evil.example").await.unwrap();
    assert_eq!(r.status().as_u16(), 403);
    assert!(r.headers().get("access-control-allow-origin").is_none());

    let get = |origin: &'static str| {
        app.client
            .get(format!("{}/healthz", app.base))
            .header("origin", origin)
            .send()
    };
    let r = get(good).await.unwrap();
    assert_eq!(r.headers()["access-control-allow-origin"], good);
    let r = get("https://evil.example").await.unwrap();
    assert!(r.headers().get("access-control-allow-origin").is_none());
    assert!(r
        .headers()
        .get("access-control-allow-credentials")
        .is_none());
}

#[tokio::test]
async fn oauth_callback_needs_the_session_that_started_it() {
    let p = publishing::platforms::Platforms::start();
    let app = publishing::spawn_app_in(tempfile::tempdir().unwrap(), p.env());
    let attacker = app.sign_up("mallory@example.com").await;
    let victim = app.sign_up("victim@example.com").await;
    let (s, c) = app
        .post("/api/integrations/tiktok/connect", &attacker, json!({}))
        .await;
    assert_eq!(s, 200, "{c}");
    let cb = format!(
        "/api/integrations/tiktok/callback?code=good-code&state={}",
        c["state"].as_str().unwrap()
    );
    // The victim's browser finishing the attacker's flow: refused.
    let (s, v) = app
        .call(reqwest::Method::GET, &cb, Some(&victim), None)
        .await;
    publishing::assert_error(s, &v, 403);
    assert_eq!(v["error"], "oauth_session_mismatch");
    let (_, list) = app.get("/api/integrations", &attacker).await;
    assert_eq!(list["integrations"], json!([]), "nothing connected");

    // Without a session, or with another session of the same account: refused.
    let (_, c) = app
        .post("/api/integrations/tiktok/connect", &attacker, json!({}))
        .await;
    let cb = |c: &Value| {
        format!(
            "/api/integrations/tiktok/callback?code=good-code&state={}",
            c["state"].as_str().unwrap()
        )
    };
    let (s, v) = app.call(reqwest::Method::GET, &cb(&c), None, None).await;
    publishing::assert_error(s, &v, 403);
    let (_, c) = app
        .post("/api/integrations/tiktok/connect", &attacker, json!({}))
        .await;
    let (s, other) = app
        .call(
            reqwest::Method::POST,
            "/api/auth/sign-in/email",
            None,
            Some(json!({"email": "mallory@example.com", "password": "correct horse"})),
        )
        .await;
    assert_eq!(s, 200);
    let other = other["token"].as_str().unwrap();
    let (s, v) = app
        .call(reqwest::Method::GET, &cb(&c), Some(other), None)
        .await;
    publishing::assert_error(s, &v, 403);

    // The session that started it, as the cookie a browser sends: connected.
    let (_, c) = app
        .post("/api/integrations/tiktok/connect", &attacker, json!({}))
        .await;
    let r = app
        .client
        .get(format!("{}{}", app.base, cb(&c)))
        .header("cookie", format!("clipforge.session_token={attacker}"))
        .send()
        .await
        .unwrap();
    let s = r.status().as_u16();
    let v: Value = r.json().await.unwrap();
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["status"], "connected");
}
