//! Request bodies across a cluster (real processes, records in a real
//! PostgreSQL, media in moto S3): an upload larger than a cluster frame
//! (16 MiB) through a node that does not host the account is streamed to
//! object storage by that node and completes its project, with the bearer
//! header and with the session cookie alone, its stage jobs and results
//! carried through object storage (`cluster.max_inline_bytes = 0`); a
//! body of several cluster chunks (a ~3 MiB avatar) reaches the owner
//! whole; a JSON body too large to forward is refused with 413 and the
//! link between the nodes keeps working.

mod cluster_common;
mod common;
use clipforge_test_support::postgres;

use clipforge_actors::accounts::account_id_for_email;
use clipforge_actors::cluster::placement;
use cluster_common::*;
use common::{follow_sse_request, start_moto};
use postgres::TestPostgres;
use serde_json::{json, Value};

/// `name=value` of the session cookie a sign-in set.
fn session_cookie_of(resp: &reqwest::Response) -> String {
    resp.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|v| {
            let pair = v.split(';').next()?.trim();
            pair.starts_with("clipforge.session_token=")
                .then(|| pair.to_string())
        })
        .expect("sign-in sets the session cookie")
}

/// How a request proves its session: the bearer header or the cookie alone.
#[derive(Clone, Copy, Debug)]
enum Cred<'a> {
    Bearer(&'a str),
    Cookie(&'a str),
}

fn request(n: &Node, method: reqwest::Method, path: &str, cred: Cred) -> reqwest::RequestBuilder {
    let r = n
        .app
        .client
        .request(method, format!("{}{path}", n.app.base));
    match cred {
        Cred::Bearer(t) => r.bearer_auth(t),
        Cred::Cookie(c) => r.header("cookie", format!("theme=dark; {c}")),
    }
}

/// Uploads `video` through `n`, creates a project from it there and
/// follows it there to completion.
async fn upload_and_complete(n: &Node, owner: &Node, cred: Cred<'_>, video: &[u8]) {
    let used_before = storage_used(owner, cred).await;
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(video.to_vec()).file_name("big.mp4"),
    );
    let r = request(n, reqwest::Method::POST, "/api/upload", cred)
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200, "{cred:?}");
    assert!(
        r.headers().get("x-clipforge-node").is_none(),
        "the upload is served by the node that received it"
    );
    let up: Value = r.json().await.unwrap();
    // Counted once against the quota, by the owner.
    assert_eq!(
        storage_used(owner, cred).await,
        used_before + video.len() as u64
    );
    let key = up["fileKey"].as_str().unwrap().to_string();
    assert!(up["durationSec"].as_f64().unwrap() > 20.0, "{up}");
    let r = request(n, reqwest::Method::POST, "/api/projects", cred)
        .json(&json!({"fileKey": key, "title": "big", "clipDurationPreset": "15-30"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201, "{cred:?}");
    let created: Value = r.json().await.unwrap();
    let pid = created["projectId"].as_str().unwrap();
    let events = follow_sse_request(request(
        n,
        reqwest::Method::GET,
        &format!("/api/projects/{pid}/status"),
        cred,
    ))
    .await;
    assert_eq!(
        events.last().map(|e| e.0.as_str()),
        Some("completed"),
        "{events:?}"
    );
}

/// The account's stored bytes, as its owner counts them.
async fn storage_used(owner: &Node, cred: Cred<'_>) -> u64 {
    let r = request(owner, reqwest::Method::GET, "/api/credits", cred)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let v: Value = r.json().await.unwrap();
    v["storageUsedBytes"].as_u64().unwrap()
}

/// A request through `n` for an account `owner` hosts answers 200, served
/// by `owner`.
async fn forwarded_ok(n: &Node, owner: &str, token: &str) {
    let r = request(n, reqwest::Method::GET, "/api/credits", Cred::Bearer(token))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(
        r.headers()
            .get("x-clipforge-node")
            .and_then(|v| v.to_str().ok()),
        Some(owner)
    );
}

/// POSTs `body` with `Transfer-Encoding: chunked` (no declared length) on
/// a raw connection; the status and the JSON body of the answer.
async fn chunked_post(n: &Node, path: &str, token: &str, body: &[u8]) -> (u16, Value) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = n.app.base.trim_start_matches("http://").to_string();
    let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\
         Connection: close\r\n\r\n"
    );
    let mut sent = s.write_all(head.as_bytes()).await;
    for c in body.chunks(256 * 1024) {
        if sent.is_err() {
            break;
        }
        sent = s.write_all(format!("{:x}\r\n", c.len()).as_bytes()).await;
        let _ = s.write_all(c).await;
        let _ = s.write_all(b"\r\n").await;
    }
    let _ = s.write_all(b"0\r\n\r\n").await;
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer).await;
    let text = String::from_utf8_lossy(&answer);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let json = match (text.find('{'), text.rfind('}')) {
        (Some(a), Some(b)) if a < b => serde_json::from_str(&text[a..=b]).unwrap_or(Value::Null),
        _ => Value::Null,
    };
    (status, json)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_uploads_and_bodies_through_a_node_not_hosting_the_account() {
    let pg = TestPostgres::start();
    let moto = start_moto().await;
    let mut env = shared_env(&pg, &moto.1);
    // JSON bodies up to 40 MiB pass the route's limit, so the forwarding
    // bound is what refuses them.
    env.push(("CLIPFORGE_LIMITS_JSON_BODY_KB".into(), "40960".into()));
    // Every stage job and result travels through object storage here (the
    // other cluster tests send them inside the messages).
    env.push(("CLIPFORGE_CLUSTER_MAX_INLINE_BYTES".into(), "0".into()));
    let a = Node::start("node-a", &[], &env);
    let b = Node::start("node-b", &[&a], &env);
    a.wait_up(&["node-b"]).await;
    b.wait_up(&["node-a"]).await;
    // An account node-a hosts, used through node-b.
    let email = (0..)
        .map(|i| format!("big-{i}@example.com"))
        .find(|e| {
            placement::owner(&account_id_for_email(e), ["node-a", "node-b"]) == Some("node-a")
        })
        .unwrap();
    let token = b.app.sign_up(&email).await;
    let r = b
        .app
        .client
        .post(format!("{}/api/auth/sign-in/email", b.app.base))
        .json(&json!({"email": email, "password": "correct horse"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let cookie = session_cookie_of(&r);
    forwarded_ok(&b, "node-a", &token).await;

    let dir = tempfile::tempdir().unwrap();
    let video = std::fs::read(big_speech_video(dir.path())).unwrap();
    assert!(video.len() > 16 * 1024 * 1024);
    upload_and_complete(&b, &a, Cred::Bearer(&token), &video).await;
    upload_and_complete(&b, &a, Cred::Cookie(&cookie), &video).await;
    // The stored jobs and results were read and removed.
    let listing = reqwest::get(format!(
        "{}/clipforge-cluster?list-type=2&prefix=work/",
        moto.1
    ))
    .await
    .unwrap()
    .text()
    .await
    .unwrap();
    assert!(listing.contains("ListBucketResult"), "{listing}");
    assert!(!listing.contains("/wire/"), "{listing}");
    // A body of several cluster chunks (an avatar of ~3 MiB) reaches the
    // owner whole.
    let png = dir.path().join("noise.png");
    let ok = std::process::Command::new("ffmpeg")
        .args(["-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i"])
        .arg("nullsrc=s=1100x1000,geq=random(1)*255:random(2)*255:random(3)*255")
        .args(["-frames:v", "1"])
        .arg(&png)
        .status()
        .unwrap();
    assert!(ok.success());
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.len() > 2 * 1024 * 1024, "{} bytes", bytes.len());
    for cred in [Cred::Bearer(&token), Cred::Cookie(&cookie)] {
        let form = reqwest::multipart::Form::new().part(
            "file",
            reqwest::multipart::Part::bytes(bytes.clone())
                .file_name("noise.png")
                .mime_str("image/png")
                .unwrap(),
        );
        let r = request(&b, reqwest::Method::PUT, "/api/auth/avatar", cred)
            .multipart(form)
            .send()
            .await
            .unwrap();
        assert_eq!(
            r.headers()
                .get("x-clipforge-node")
                .and_then(|v| v.to_str().ok()),
            Some("node-a"),
            "{cred:?}"
        );
        let status = r.status().as_u16();
        let v: Value = r.json().await.unwrap();
        assert_eq!(status, 200, "{cred:?}: {v}");
        assert!(v["avatarUrl"].as_str().is_some(), "{v}");
    }
    // A JSON body too large to travel between nodes: 413 with the uniform
    // body, declared (Content-Length) or streamed (chunked), and the link
    // keeps working.
    let huge = format!(
        r#"{{"title": "{}", "clipDurationPreset": "15-30"}}"#,
        "x".repeat(20 * 1024 * 1024)
    );
    for chunked in [false, true] {
        let (status, v) = if chunked {
            chunked_post(&b, "/api/projects", &token, huge.as_bytes()).await
        } else {
            let r = request(
                &b,
                reqwest::Method::POST,
                "/api/projects",
                Cred::Bearer(&token),
            )
            .header("content-type", "application/json")
            .body(huge.clone())
            .send()
            .await
            .unwrap();
            (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
        };
        assert_eq!(status, 413, "chunked {chunked}: {v}");
        assert_eq!(v["error"], "payload_too_large", "{v}");
        assert!(v["message"].as_str().unwrap().contains("8 MB"), "{v}");
        // The next requests through node-b still reach node-a.
        for _ in 0..3 {
            forwarded_ok(&b, "node-a", &token).await;
        }
        let r = request(
            &b,
            reqwest::Method::GET,
            "/api/auth/get-session",
            Cred::Cookie(&cookie),
        )
        .send()
        .await
        .unwrap();
        assert_eq!(r.status().as_u16(), 200);
    }
    b.wait_up(&["node-a"]).await;
    a.wait_up(&["node-b"]).await;

    // The commit route is the relay's only: a client gets 404.
    let r = b
        .app
        .client
        .post(format!("{}/internal/uploads/commit", b.app.base))
        .header("x-clipforge-forwarded", "node-a")
        .json(&json!({"userId": "x", "key": "uploads/x/y.mp4", "size": 1, "durationSec": 1.0}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
}
