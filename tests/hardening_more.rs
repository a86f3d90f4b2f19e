//! Black-box tests of the hardening of issue 30 (items 2-7): connection
//! time limits and the global bound, sign-in throttling by network and
//! account, the origin check of cookie-authenticated writes, the OAuth
//! state kept for its own session, stored-text rules and the scheduling
//! horizon.

mod common;
mod publishing;
use publishing::Posting;

use std::time::{Duration, Instant};

use common::{assert_error, spawn_app_with, App};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn app(env: &[(&str, &str)]) -> App {
    spawn_app_with(tempfile::tempdir().unwrap(), env)
}

fn addr(app: &App) -> String {
    app.base.trim_start_matches("http://").to_string()
}

async fn healthz(app: &App) -> u16 {
    reqwest::Client::new()
        .get(format!("{}/healthz", app.base))
        .send()
        .await
        .map(|r| r.status().as_u16())
        .unwrap_or(0)
}

/// Sends a header block one byte a second, never finishing it; returns
/// how long after the start the server closed the connection.
async fn slowloris(addr: String) -> Duration {
    let start = Instant::now();
    let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let (mut rd, mut wr) = s.split();
    let drip = async {
        let _ = wr.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n").await;
        loop {
            if wr.write_all(b"x").await.is_err() {
                std::future::pending::<()>().await;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    };
    let closed = async {
        let mut buf = [0u8; 1024];
        loop {
            match rd.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    };
    tokio::select! {
        _ = drip => unreachable!(),
        _ = closed => {}
    }
    start.elapsed()
}

#[tokio::test]
async fn slow_headers_are_cut_off_and_a_normal_client_is_served() {
    let app = app(&[]);
    let slow: Vec<_> = (0..20)
        .map(|_| {
            tokio::spawn(tokio::time::timeout(
                Duration::from_secs(60),
                slowloris(addr(&app)),
            ))
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(2)).await;
    // The same address, a normal request, while they drip.
    assert_eq!(healthz(&app).await, 200);
    for s in slow {
        let took = s.await.unwrap().expect("the slow connection was closed");
        assert!(took < Duration::from_secs(15), "closed after {took:?}");
    }
    assert_eq!(healthz(&app).await, 200);
}

#[tokio::test]
async fn idle_kept_alive_connections_close_and_the_total_is_bounded() {
    let app = app(&[
        ("CLIPFORGE_LIMITS_IDLE_TIMEOUT_SECS", "2"),
        ("CLIPFORGE_LIMITS_MAX_CONNECTIONS", "3"),
    ]);
    // One request, then silence: closed after the idle timeout.
    let mut s = tokio::net::TcpStream::connect(addr(&app)).await.unwrap();
    s.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), s.read_to_end(&mut buf)).await;
    assert!(read.is_ok(), "the idle connection stayed open");
    assert!(String::from_utf8_lossy(&buf).starts_with("HTTP/1.1 200"));
    // Three open connections fill the server; a fourth is refused at once.
    let mut open = Vec::new();
    for _ in 0..3 {
        open.push(tokio::net::TcpStream::connect(addr(&app)).await.unwrap());
    }
    let mut fourth = tokio::net::TcpStream::connect(addr(&app)).await.unwrap();
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), fourth.read_to_end(&mut buf))
        .await
        .expect("refused at once")
        .unwrap();
    let text = String::from_utf8_lossy(&buf);
    assert!(text.starts_with("HTTP/1.1 503"), "{text}");
    assert!(text.contains("too_many_connections"), "{text}");
    drop(open);
    let deadline = Instant::now() + Duration::from_secs(30);
    while healthz(&app).await != 200 {
        assert!(Instant::now() < deadline, "never served again");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn sign_in(app: &App, email: &str, password: &str, xff: &str) -> (u16, Option<u64>, Value) {
    let r = app
        .client
        .post(format!("{}/api/auth/sign-in/email", app.base))
        .header("x-forwarded-for", xff)
        .json(&json!({"email": email, "password": password}))
        .send()
        .await
        .unwrap();
    let s = r.status().as_u16();
    let retry = r
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok()?.parse().ok());
    (s, retry, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn ipv4_mapped_and_ipv6_neighbours_count_as_one_address() {
    let app = app(&[
        ("CLIPFORGE_SECURITY_TRUSTED_PROXIES", "127.0.0.1"),
        ("CLIPFORGE_LIMITS_SIGN_IN_FAILURES_PER_IP", "5"),
        ("CLIPFORGE_LIMITS_SIGN_IN_PER_IP", "1000"),
    ]);
    app.sign_up("ana@example.com").await;
    for _ in 0..5 {
        let (s, _, v) = sign_in(&app, "ana@example.com", "wrong", "203.0.113.7").await;
        assert_eq!(s, 401, "{v}");
    }
    let (s, retry, v) = sign_in(
        &app,
        "ana@example.com",
        "correct horse",
        "::ffff:203.0.113.7",
    )
    .await;
    assert_error(s, &v, 429);
    assert!(retry.unwrap() >= 1);
    // Many addresses of one IPv6 /64 are one address.
    for i in 1..=5 {
        let (s, _, v) = sign_in(
            &app,
            &format!("u{i}@example.com"),
            "x",
            &format!("2001:db8:1:2::{i:x}"),
        )
        .await;
        assert_eq!(s, 401, "{v}");
    }
    let (s, _, v) = sign_in(&app, "u9@example.com", "x", "2001:db8:1:2:ffff::9").await;
    assert_error(s, &v, 429);
    // The next /64 is another address.
    let (s, _, v) = sign_in(&app, "u9@example.com", "x", "2001:db8:1:3::1").await;
    assert_eq!(s, 401, "{v}");
}

#[tokio::test]
async fn failures_across_addresses_slow_an_account_but_not_its_owner() {
    let app = app(&[
        ("CLIPFORGE_SECURITY_TRUSTED_PROXIES", "127.0.0.1"),
        ("CLIPFORGE_LIMITS_SIGN_IN_FAILURES_PER_ACCOUNT", "3"),
    ]);
    app.sign_up("ana@example.com").await;
    // The owner signs in from home once.
    let (s, _, v) = sign_in(&app, "ana@example.com", "correct horse", "198.51.100.1").await;
    assert_eq!(s, 200, "{v}");
    // Guesses from many addresses use up the account's budget.
    for i in 1..=3 {
        let (s, _, v) = sign_in(&app, "ana@example.com", "wrong", &format!("203.0.113.{i}")).await;
        assert_eq!(s, 401, "{v}");
    }
    // The next guess, from yet another address, must wait (not forever).
    let (s, retry, v) = sign_in(&app, "ana@example.com", "wrong", "203.0.113.50").await;
    assert_error(s, &v, 429);
    let retry = retry.expect("Retry-After");
    assert!((1..=30).contains(&retry), "{retry}");
    // The owner at home is not slowed down; another account is not either.
    let (s, _, v) = sign_in(&app, "ana@example.com", "correct horse", "198.51.100.1").await;
    assert_eq!(s, 200, "{v}");
    let (s, _, v) = sign_in(&app, "bob@example.com", "wrong", "203.0.113.51").await;
    assert_eq!(s, 401, "{v}");
}

fn with_cookie(
    app: &App,
    method: reqwest::Method,
    path: &str,
    token: &str,
) -> reqwest::RequestBuilder {
    app.client
        .request(method, format!("{}{path}", app.base))
        .header(
            "cookie",
            format!("theme=dark; clipforge.session_token={token}"),
        )
}

async fn status(r: reqwest::RequestBuilder) -> (u16, Value) {
    let r = r.send().await.unwrap();
    let s = r.status().as_u16();
    (s, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn cookie_writes_from_other_sites_are_refused() {
    let friend = "https://app.example.test";
    let app = app(&[("CLIPFORGE_SECURITY_CORS_ORIGINS", friend)]);
    let token = app.sign_up("ana@example.com").await;
    let tpl = |n: &str| json!({"name": n});
    let post = |origin: Option<&str>, n: &str| {
        let r = with_cookie(
            &app,
            reqwest::Method::POST,
            "/api/caption-templates",
            &token,
        )
        .json(&tpl(n));
        match origin {
            Some(o) => r.header("origin", o),
            None => r,
        }
    };
    let (s, v) = status(post(Some("https://evil.example"), "evil")).await;
    assert_error(s, &v, 403);
    assert_eq!(v["error"], "cross_site_request");
    let (s, v) = status(post(Some("null"), "sandboxed")).await;
    assert_error(s, &v, 403);
    let (s, v) = status(post(None, "x").header("sec-fetch-site", "cross-site")).await;
    assert_error(s, &v, 403);
    // The site itself, an allowed origin, and a client that is no browser.
    let (s, v) = status(post(Some(&app.base), "own")).await;
    assert_eq!(s, 201, "{v}");
    let (s, v) = status(post(Some(friend), "friend")).await;
    assert_eq!(s, 201, "{v}");
    let (s, v) = status(post(None, "curl").header("sec-fetch-site", "same-origin")).await;
    assert_eq!(s, 201, "{v}");
    let (s, v) = status(post(None, "curl2")).await;
    assert_eq!(s, 201, "{v}");
    // Multipart, read-all and sign-out too; reads are not affected.
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(vec![0u8; 64]).file_name("a.png"),
    );
    let r = with_cookie(&app, reqwest::Method::PUT, "/api/auth/avatar", &token)
        .header("origin", "https://evil.example")
        .multipart(form);
    let (s, v) = status(r).await;
    assert_error(s, &v, 403);
    for path in ["/api/notifications/read", "/api/auth/sign-out"] {
        let r = with_cookie(&app, reqwest::Method::POST, path, &token)
            .header("origin", "https://evil.example");
        let (s, v) = status(r).await;
        assert_error(s, &v, 403);
    }
    let r = with_cookie(&app, reqwest::Method::GET, "/api/caption-templates", &token)
        .header("origin", "https://evil.example");
    assert_eq!(status(r).await.0, 200);
    // A bearer request is not a browser's ambient credential.
    let r = app
        .client
        .post(format!("{}/api/caption-templates", app.base))
        .bearer_auth(&token)
        .header("origin", "https://evil.example")
        .json(&tpl("bearer"));
    let (s, v) = status(r).await;
    assert_eq!(s, 201, "{v}");
}

#[tokio::test]
async fn oauth_state_shown_by_another_session_stays_for_its_owner() {
    let p = publishing::platforms::Platforms::start();
    let app = publishing::spawn_app_in(tempfile::tempdir().unwrap(), p.env());
    let owner = app.sign_up("owner@example.com").await;
    let other = app.sign_up("mallory@example.com").await;
    let (s, c) = app
        .post("/api/integrations/tiktok/connect", &owner, json!({}))
        .await;
    assert_eq!(s, 200, "{c}");
    let cb = format!(
        "/api/integrations/tiktok/callback?code=good-code&state={}",
        c["state"].as_str().unwrap()
    );
    // Someone else holding the state, signed in or not: refused, and the
    // state is still there.
    for token in [Some(other.as_str()), None] {
        let (s, v) = app.call(reqwest::Method::GET, &cb, token, None).await;
        publishing::assert_error(s, &v, 403);
        assert_eq!(v["error"], "oauth_session_mismatch");
    }
    // The owner finishes the flow, once.
    let (s, v) = app
        .call(reqwest::Method::GET, &cb, Some(&owner), None)
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["status"], "connected");
    let (s, v) = app
        .call(reqwest::Method::GET, &cb, Some(&owner), None)
        .await;
    publishing::assert_error(s, &v, 400);
}

#[tokio::test]
async fn stored_text_refuses_nul_and_bidi_and_thumbnails_are_web_links() {
    let app = app(&[]);
    let token = app.sign_up("ana@example.com").await;
    let project = |extra: Value| {
        let mut body = json!({"fileKey": "uploads/none/talk.mp4"});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    let long = format!("https://example.com/{}", "a".repeat(50_000));
    for (extra, field) in [
        (json!({"thumbnail": "javascript:alert(1)"}), "thumbnail"),
        (json!({"thumbnail": long}), "thumbnail"),
        (json!({"thumbnail": "ftp://example.com/a.jpg"}), "thumbnail"),
        (json!({"title": "nul\u{0}"}), "title"),
        (json!({"title": "evil\u{202E}gpj.exe"}), "title"),
        (json!({"prompt": "x\u{2066}y"}), "prompt"),
    ] {
        let (s, v) = app
            .post("/api/projects", &token, project(extra.clone()))
            .await;
        assert_error(s, &v, 400);
        assert!(
            v["message"].as_str().unwrap().contains(field),
            "{extra} {v}"
        );
    }
    // Well-formed: past validation, to the (missing) upload.
    let ok =
        json!({"thumbnail": "https://example.com/a.jpg", "title": "Olá — ok", "prompt": "a\nb"});
    let (s, v) = app.post("/api/projects", &token, project(ok)).await;
    assert_error(s, &v, 404);

    let (s, v) = app
        .call(
            reqwest::Method::PUT,
            "/api/auth/profile",
            Some(&token),
            Some(json!({"name": "Ana\u{202E}"})),
        )
        .await;
    assert_error(s, &v, 400);
    let (s, v) = app
        .post(
            "/api/caption-templates",
            &token,
            json!({"name": "t\u{2069}"}),
        )
        .await;
    assert_error(s, &v, 400);
    let (s, v) = app
        .post(
            "/api/caption-templates",
            &token,
            json!({"name": "t", "description": "a\u{0}"}),
        )
        .await;
    assert_error(s, &v, 400);
    let (s, v) = app
        .post(
            "/api/caption-templates",
            &token,
            json!({"name": "t", "description": "two\nlines"}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let (s, v) = app
        .call(
            reqwest::Method::POST,
            "/api/auth/sign-up/email",
            None,
            Some(json!({"email": "b@example.com", "password": "correct horse", "name": "\u{202D}Bob"})),
        )
        .await;
    assert_error(s, &v, 400);
}

#[tokio::test]
async fn scheduling_is_within_the_next_365_days_and_titles_are_clean() {
    use publishing::{at, template};
    let p = publishing::platforms::Platforms::start();
    let app = publishing::spawn_app_in(template().copy(), p.env());
    let t = &template().token;
    app.connect(t, "youtube", &p).await;
    let path = format!("/api/clips/{}/schedule", template().clips[0].0);
    let day = 86_400;
    for (body, field) in [
        (
            json!({"provider": "youtube", "title": "x", "scheduledAt": at(366 * day)}),
            "scheduledAt",
        ),
        (
            json!({"provider": "youtube", "title": "x", "scheduledAt": at(365 * day + 3600)}),
            "scheduledAt",
        ),
        (
            json!({"provider": "youtube", "title": "a\u{202E}b", "scheduledAt": at(day)}),
            "title",
        ),
    ] {
        let (s, v) = app.post(&path, t, body).await;
        publishing::assert_error(s, &v, 400);
        assert!(v["message"].as_str().unwrap().contains(field), "{v}");
    }
    let (s, v) = app
        .post(
            &path,
            t,
            json!({"provider": "youtube", "title": "x", "scheduledAt": at(364 * day)}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    // A bulk schedule whose last post would fall past the horizon.
    let bulk = format!("/api/projects/{}/bulk-schedule", template().project_id);
    let (s, v) = app
        .post(
            &bulk,
            t,
            json!({"scheduledAt": at(364 * day), "intervalHours": 2160, "providers": ["youtube"]}),
        )
        .await;
    if template().clips.len() > 1 {
        publishing::assert_error(s, &v, 400);
        assert!(v["message"].as_str().unwrap().contains("365"), "{v}");
    }
}

#[tokio::test]
async fn deep_avatars_are_refused_before_decoding_and_uploads_are_rate_limited() {
    let app = app(&[]);
    let token = app.sign_up("pic@example.com").await;
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("deep.png");
    let ok = std::process::Command::new("ffmpeg")
        .args(["-nostdin", "-y", "-v", "error", "-f", "lavfi", "-i"])
        .arg("color=c=black:s=4096x4096")
        .args(["-frames:v", "1", "-pix_fmt", "rgba64be"])
        .arg(&png)
        .status()
        .unwrap()
        .success();
    assert!(ok, "ffmpeg made the picture");
    let deep = std::fs::read(&png).unwrap();
    let put = |bytes: Vec<u8>| {
        common::send_file(
            &app,
            reqwest::Method::PUT,
            "/api/auth/avatar",
            &token,
            "a.png",
            bytes,
        )
    };
    let (s, v) = put(deep).await;
    assert!((400..500).contains(&s), "{s} {v}");
    assert!(v["message"].as_str().unwrap().contains("8 bits"), "{v}");
    // An ordinary picture is accepted; past the account's rate, 429.
    let small = dir.path().join("small.png");
    assert!(std::process::Command::new("ffmpeg")
        .args([
            "-nostdin",
            "-y",
            "-v",
            "error",
            "-f",
            "lavfi",
            "-i",
            "color=c=red:s=64x64"
        ])
        .args(["-frames:v", "1"])
        .arg(&small)
        .status()
        .unwrap()
        .success());
    let small = std::fs::read(&small).unwrap();
    let mut statuses = Vec::new();
    for _ in 0..6 {
        statuses.push(put(small.clone()).await.0);
    }
    assert_eq!(&statuses[..4], &[200; 4], "{statuses:?}");
    assert_eq!(statuses[5], 429, "{statuses:?}");
}
