//! Cluster membership across real processes: `clipforge serve` nodes on
//! 127.0.0.1 joined by seeds, sharing their records in a real PostgreSQL
//! started for the test; heartbeats, a wrong cookie, SIGSTOP/SIGCONT.

mod common;

use clipforge_test_support::postgres;

mod cluster_common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cluster_common::{
    free_port, shared_env_local, Node, ADMIN, COOKIE, DEADLINE, MEDIA_SECRET, TOKEN_KEY,
};
use postgres::TestPostgres;
use serde_json::Value;

/// The shared settings and media folder, with `extra` on top (a later
/// setting wins).
fn env_with(
    pg: &TestPostgres,
    media: &std::path::Path,
    extra: &[(&str, &str)],
) -> Vec<(String, String)> {
    let mut env = shared_env_local(pg, media.to_str().unwrap());
    env.retain(|(k, _)| !extra.iter().any(|(e, _)| e == k));
    env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    env
}

fn node(
    pg: &TestPostgres,
    name: &str,
    cookie: &str,
    seeds: &[&Node],
    media: &std::path::Path,
) -> Node {
    let env = env_with(pg, media, &[("CLIPFORGE_CLUSTER_COOKIE", cookie)]);
    Node::start(name, seeds, &env)
}

async fn view(n: &Node) -> Value {
    let (s, v) = n.app.get("/admin/cluster", ADMIN).await;
    assert_eq!(s, 200, "{v}");
    v
}

/// The state of `peer` in `n`'s view ("up", "down"), if listed.
fn state_of(v: &Value, peer: &str) -> Option<String> {
    v["nodes"]
        .as_array()?
        .iter()
        .find(|x| x["name"] == peer)
        .and_then(|x| x["state"].as_str().map(str::to_string))
}

/// Waits until `ok` holds for `n`'s view; panics with the last view at the deadline.
async fn wait_view(n: &Node, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let v = view(n).await;
        if ok(&v) {
            return v;
        }
        assert!(start.elapsed() < DEADLINE, "{what}: last view {v}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn signal(n: &Node, sig: i32) {
    // SAFETY: plain kill(2) on our own child's pid.
    let rc = unsafe { libc::kill(n.app.child.id() as i32, sig) };
    assert_eq!(rc, 0);
}

#[tokio::test]
async fn three_nodes_join_and_a_stopped_node_goes_down_and_comes_back() {
    let pg = TestPostgres::start();
    let media = tempfile::tempdir().unwrap();
    let a = node(&pg, "node-a", COOKIE, &[], media.path());
    let b = node(&pg, "node-b", COOKIE, &[&a], media.path());
    // c only knows b: it reaches a transitively.
    let c = node(&pg, "node-c", COOKIE, &[&b], media.path());

    let (s, _) = a
        .app
        .call(reqwest::Method::GET, "/admin/cluster", None, None)
        .await;
    assert_eq!(s, 401, "admin token required");

    for (n, peers) in [
        (&a, ["node-b", "node-c"]),
        (&b, ["node-a", "node-c"]),
        (&c, ["node-a", "node-b"]),
    ] {
        let v = wait_view(n, "all peers up", |v| {
            peers
                .iter()
                .all(|p| state_of(v, p).as_deref() == Some("up"))
        })
        .await;
        assert_eq!(v["enabled"], true);
        assert_eq!(v["nodes"][0]["self"], true);
        assert_eq!(v["nodes"].as_array().unwrap().len(), 3, "{v}");
        let peer = v["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == peers[0])
            .unwrap();
        assert_eq!(
            peer["roles"],
            serde_json::json!(["api", "worker", "scheduler"])
        );
        assert_eq!(peer["load"]["slots"], 1);
        assert!(peer["lastHeartbeatMs"].is_u64());
    }

    signal(&c, libc::SIGSTOP);
    for n in [&a, &b] {
        wait_view(n, "stopped node marked down", |v| {
            state_of(v, "node-c").as_deref() == Some("down")
        })
        .await;
    }
    let v = view(&a).await;
    assert_eq!(
        state_of(&v, "node-b").as_deref(),
        Some("up"),
        "others stay up: {v}"
    );

    signal(&c, libc::SIGCONT);
    for n in [&a, &b] {
        wait_view(n, "resumed node up again", |v| {
            state_of(v, "node-c").as_deref() == Some("up")
        })
        .await;
    }
}

#[tokio::test]
async fn a_wrong_cookie_is_refused() {
    let pg = TestPostgres::start();
    let media = tempfile::tempdir().unwrap();
    let a = node(&pg, "node-a", COOKIE, &[], media.path());
    let intruder = node(
        &pg,
        "node-x",
        "another-cluster-cookie-also-32-characters",
        &[&a],
        media.path(),
    );
    let vx = wait_view(&intruder, "refusal counted", |v| {
        v["refusedConnections"].as_u64() > Some(0)
    })
    .await;
    let va = wait_view(&a, "refusal counted", |v| {
        v["refusedConnections"].as_u64() > Some(0)
    })
    .await;
    assert_eq!(vx["nodes"].as_array().unwrap().len(), 1, "{vx}");
    assert_eq!(va["nodes"].as_array().unwrap().len(), 1, "{va}");
    assert_eq!(state_of(&va, "node-x"), None);
}

/// Starts a node that must refuse to start; returns its stderr.
fn refused_start(cookie: &str, extra: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_clipforge"))
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
        .env(
            "CLIPFORGE_CLUSTER_LISTEN_ADDR",
            format!("127.0.0.1:{}", free_port()),
        )
        .env("CLIPFORGE_CLUSTER_COOKIE", cookie)
        .env("CLIPFORGE_CLUSTER_SEEDS", "127.0.0.1:9")
        .envs(extra.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(!out.status.success());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// What a clustered node needs besides its cookie and storage (no server
/// is reached: the checks refuse the start before).
const STARTABLE: [(&str, &str); 5] = [
    ("CLIPFORGE_CLUSTER_TLS", "false"),
    ("CLIPFORGE_STORAGE_KV", "postgres"),
    (
        "CLIPFORGE_STORAGE_POSTGRES_URL",
        "postgres://nobody@127.0.0.1:9/none",
    ),
    ("CLIPFORGE_AUTH_MEDIA_SECRET", MEDIA_SECRET),
    ("CLIPFORGE_PUBLISH_TOKEN_KEY", TOKEN_KEY),
];

#[test]
fn a_short_cluster_cookie_is_refused_at_start() {
    let mut shared = STARTABLE.to_vec();
    shared.extend([
        ("CLIPFORGE_CLUSTER_SHARED_LOCAL_STORAGE", "true"),
        ("CLIPFORGE_STORAGE_LOCAL_DIR", "/tmp"),
    ]);
    let err = refused_start("change-me-cookie", &shared);
    assert!(err.contains("cluster.cookie"), "{err}");
    assert!(
        err.contains("16 characters") && err.contains("at least 32"),
        "{err}"
    );
    assert!(
        !err.contains("change-me-cookie"),
        "the cookie never prints: {err}"
    );
}

#[test]
fn a_cluster_node_with_private_local_storage_refuses_to_start() {
    let err = refused_start(COOKIE, &STARTABLE);
    assert!(err.contains("storage.backend = \"s3\""), "{err}");
    assert!(err.contains("shared_local_storage"), "{err}");
}

#[test]
fn a_cluster_on_sled_or_with_the_data_role_or_without_shared_secrets_refuses_to_start() {
    let mut sled = STARTABLE.to_vec();
    sled.retain(|(k, _)| !k.starts_with("CLIPFORGE_STORAGE_"));
    sled.push(("CLIPFORGE_STORAGE_BACKEND", "s3"));
    let err = refused_start(COOKIE, &sled);
    assert!(err.contains("storage.kv = \"postgres\""), "{err}");

    let mut data = STARTABLE.to_vec();
    data.extend([
        ("CLIPFORGE_STORAGE_BACKEND", "s3"),
        ("CLIPFORGE_CLUSTER_ROLES", "api,data"),
    ]);
    let err = refused_start(COOKIE, &data);
    assert!(err.contains("\"data\" role is gone"), "{err}");

    let mut private = STARTABLE.to_vec();
    private.retain(|(k, _)| *k != "CLIPFORGE_PUBLISH_TOKEN_KEY");
    private.push(("CLIPFORGE_STORAGE_BACKEND", "s3"));
    let err = refused_start(COOKIE, &private);
    assert!(err.contains("publish.token_key"), "{err}");
}

/// A CA and one certificate for 127.0.0.1 signed by it, made with
/// `clipforge cluster init-certs`.
fn tls_files(dir: &std::path::Path, tag: &str) -> (String, String, String) {
    let dir = dir.join(tag);
    let out = Command::new(env!("CARGO_BIN_EXE_clipforge"))
        .args(["cluster", "init-certs"])
        .arg(&dir)
        .arg("node=127.0.0.1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = |f: &str| dir.join(f).to_str().unwrap().to_string();
    (p("node.pem"), p("node.key"), p("ca.pem"))
}

fn tls_node(
    pg: &TestPostgres,
    name: &str,
    seeds: &[&Node],
    media: &std::path::Path,
    tls: &(String, String, String),
) -> Node {
    let env = env_with(
        pg,
        media,
        &[
            ("CLIPFORGE_CLUSTER_TLS", "true"),
            ("CLIPFORGE_CLUSTER_TLS_CERT", &tls.0),
            ("CLIPFORGE_CLUSTER_TLS_KEY", &tls.1),
            ("CLIPFORGE_CLUSTER_TLS_CA", &tls.2),
        ],
    );
    Node::start(name, seeds, &env)
}

#[tokio::test]
async fn nodes_join_over_mutual_tls_and_a_foreign_certificate_is_refused() {
    let pg = TestPostgres::start();
    let media = tempfile::tempdir().unwrap();
    let certs = tempfile::tempdir().unwrap();
    let ours = tls_files(certs.path(), "ours");
    let theirs = tls_files(certs.path(), "theirs");
    let a = tls_node(&pg, "node-a", &[], media.path(), &ours);
    let b = tls_node(&pg, "node-b", &[&a], media.path(), &ours);
    // c only knows b: with TLS the membership dials the peers it hears of.
    let c = tls_node(&pg, "node-c", &[&b], media.path(), &ours);
    for (n, peers) in [
        (&a, ["node-b", "node-c"]),
        (&b, ["node-a", "node-c"]),
        (&c, ["node-a", "node-b"]),
    ] {
        wait_view(n, "all peers up over TLS", |v| {
            peers
                .iter()
                .all(|p| state_of(v, p).as_deref() == Some("up"))
        })
        .await;
    }
    // Same cookie, certificate from another CA: never admitted.
    let x = tls_node(&pg, "node-x", &[&a], media.path(), &theirs);
    // The handshake fails before any session exists; give x several seed
    // redials (every 5 heartbeats) to be sure it stays out.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let vx = view(&x).await;
    assert_eq!(vx["nodes"].as_array().unwrap().len(), 1, "{vx}");
    assert_eq!(state_of(&view(&a).await, "node-x"), None);
}

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

/// A request carrying only the session cookie (no `Authorization`), as a
/// browser sends it.
fn with_cookie(
    n: &Node,
    method: reqwest::Method,
    path: &str,
    cookie: &str,
) -> reqwest::RequestBuilder {
    n.app
        .client
        .request(method, format!("{}{path}", n.app.base))
        .header("cookie", format!("theme=dark; {cookie}"))
}

#[tokio::test]
async fn cookie_only_requests_work_through_the_owner_and_another_node() {
    let pg = TestPostgres::start();
    let media = tempfile::tempdir().unwrap();
    let a = node(&pg, "node-a", COOKIE, &[], media.path());
    let b = node(&pg, "node-b", COOKIE, &[&a], media.path());
    for (n, peer) in [(&a, "node-b"), (&b, "node-a")] {
        wait_view(n, "peer up", |v| state_of(v, peer).as_deref() == Some("up")).await;
    }
    a.app.sign_up("browser@example.com").await;
    // Signed in through b: the cookie is all the browser sends from now on.
    let r = b
        .app
        .client
        .post(format!("{}/api/auth/sign-in/email", b.app.base))
        .json(&serde_json::json!({"email": "browser@example.com", "password": "correct horse"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let cookie = session_cookie_of(&r);

    // Both nodes answer; exactly one of them forwarded to the owner.
    let mut forwarded = Vec::new();
    for n in [&a, &b] {
        let r = with_cookie(n, reqwest::Method::GET, "/api/auth/get-session", &cookie)
            .send()
            .await
            .expect("a cookie-only request gets an answer");
        assert_eq!(r.status().as_u16(), 200);
        forwarded.push(r.headers().get("x-clipforge-node").is_some());
        // A JSON answer comes whole, forwarded or not: with its length,
        // not chunked.
        let length = r.headers().get("content-length").cloned();
        assert_eq!(r.headers().get("transfer-encoding"), None);
        let bytes = r.bytes().await.unwrap();
        assert_eq!(length, Some(bytes.len().to_string().parse().unwrap()));
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["user"]["email"], "browser@example.com", "{v}");
        let r = with_cookie(n, reqwest::Method::GET, "/api/credits", &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
    }
    assert_eq!(forwarded.iter().filter(|f| **f).count(), 1, "{forwarded:?}");
    let (owner, other) = if forwarded[0] { (&b, &a) } else { (&a, &b) };
    // A wrong cookie is refused with the uniform body on both.
    for n in [owner, other] {
        let r = with_cookie(
            n,
            reqwest::Method::GET,
            "/api/credits",
            "clipforge.session_token=x.y",
        )
        .send()
        .await
        .unwrap();
        assert_eq!(r.status().as_u16(), 401);
    }

    // An API key made through the non-owner works on both nodes within its
    // scopes (the key names its account, so the request is routed), and
    // its revocation holds on both at once.
    let r = with_cookie(other, reqwest::Method::POST, "/api/keys", &cookie)
        .json(&serde_json::json!({"name": "cluster", "scopes": ["read"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let made: Value = r.json().await.unwrap();
    let key = made["key"].as_str().unwrap().to_string();
    for n in [owner, other] {
        let (s, v, _) = n.credits(&key).await;
        assert_eq!(s, 200, "{v}");
        let r = n
            .app
            .client
            .post(format!("{}/api/caption-templates", n.app.base))
            .bearer_auth(&key)
            .json(&serde_json::json!({"name": "x"}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 403);
    }
    let revoke = format!("/api/keys/{}", made["id"].as_str().unwrap());
    let r = with_cookie(other, reqwest::Method::DELETE, &revoke, &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    for n in [owner, other] {
        let (s, v, _) = n.credits(&key).await;
        assert_eq!(s, 401, "{v}");
    }

    // Upload (its size check reads the session too) and create a project
    // through the non-owner, then follow its events with the cookie there.
    let dir = tempfile::tempdir().unwrap();
    let video = common::speech_video(dir.path());
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(std::fs::read(&video).unwrap()).file_name("talk.mp4"),
    );
    let r = with_cookie(other, reqwest::Method::POST, "/api/upload", &cookie)
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let up: Value = r.json().await.unwrap();
    let r = with_cookie(other, reqwest::Method::POST, "/api/projects", &cookie)
        .json(&serde_json::json!({"fileKey": up["fileKey"], "title": "cookie", "clipDurationPreset": "15-30"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let created: Value = r.json().await.unwrap();
    let pid = created["projectId"].as_str().unwrap().to_string();
    let status = format!("/api/projects/{pid}/status");
    // The owner streams the same events to a cookie-only follower.
    let mut at_owner = with_cookie(owner, reqwest::Method::GET, &status, &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(at_owner.status().as_u16(), 200);
    let first = tokio::time::timeout(DEADLINE, at_owner.chunk())
        .await
        .expect("an event from the owner")
        .unwrap()
        .unwrap_or_default();
    assert!(
        String::from_utf8_lossy(&first).contains("event:"),
        "{first:?}"
    );
    drop(at_owner);
    let events =
        common::follow_sse_request(with_cookie(other, reqwest::Method::GET, &status, &cookie))
            .await;
    assert_eq!(
        events.last().map(|e| e.0.as_str()),
        Some("completed"),
        "{events:?}"
    );
}

#[tokio::test]
async fn a_failed_relay_dialer_or_node_server_is_restarted_by_the_cluster_supervisor() {
    let pg = TestPostgres::start();
    let media = tempfile::tempdir().unwrap();
    let a = node(&pg, "node-a", COOKIE, &[], media.path());
    // node-b's relay panics on the first forwarded request, then its run;
    // its seed dialer on its first dial (node-a is then joined by the next);
    // its node server as the first session authenticates (a new one
    // listens on the same port and the nodes connect again).
    let faults = "relay-panic:once,forwarded-panic:once,dial-panic:once,node-server-panic:once";
    let env = env_with(&pg, media.path(), &[("CLIPFORGE_FAULTS", faults)]);
    let b = Node::start("node-b", &[&a], &env);
    for (n, peer) in [(&a, "node-b"), (&b, "node-a")] {
        wait_view(n, "peer up", |v| state_of(v, peer).as_deref() == Some("up")).await;
    }
    // An account owned by node-b, signed up there (never forwarded to it).
    let mut token = None;
    for i in 0..40 {
        let t = b.app.sign_up(&format!("relay{i}@example.com")).await;
        let (s, v, served_by) = b.credits(&t).await;
        assert_eq!(s, 200, "{v}");
        if served_by.is_none() {
            token = Some(t);
            break;
        }
    }
    let token = token.expect("one of 40 accounts is owned by node-b");

    // Forwarded from node-a: node-b's relay fails; the request is answered
    // 503 once node-a sees the relay gone, not left waiting.
    let (s, v, _) = tokio::time::timeout(Duration::from_secs(60), a.credits(&token))
        .await
        .expect("the request with the failed relay is answered");
    common::assert_error(s, &v, 503);
    assert_eq!(v["error"], "node_unavailable", "{v}");

    // The relay was restarted; the first request it runs panics and is
    // answered 500 at once (not after a 10-minute wait); the next is served.
    let start = Instant::now();
    let mut failed = None;
    loop {
        let answer = tokio::time::timeout(Duration::from_secs(60), a.credits(&token));
        let (s, v, by) = answer.await.expect("a forwarded request is answered");
        assert!(start.elapsed() < DEADLINE, "{s} {v}");
        match s {
            500 => failed = Some(v),
            200 => {
                assert_eq!(by.as_deref(), Some("node-b"));
                break;
            }
            _ => {}
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let failed = failed.expect("the panicking request was answered 500")["error"].clone();
    assert_eq!(failed, "internal_error");
    let (s, v) = b.app.get("/admin/actors?node=node-b", ADMIN).await;
    assert_eq!(s, 200, "{v}");
    let actors = v["actors"].as_array().expect("node-b's actors");
    let relay = actors
        .iter()
        .find(|x| x["name"] == "cluster.http_relay")
        .unwrap_or_else(|| panic!("no relay in {v}"));
    assert_eq!(relay["supervisor"], "supervisor:cluster", "{relay}");
    assert_eq!(relay["restarts"], 1, "{relay}");
    let dialer = actors.iter().find(|x| x["name"] == "cluster.dialer");
    let dialer = dialer.unwrap_or_else(|| panic!("no dialer in {v}"));
    assert_eq!(dialer["supervisor"], "supervisor:cluster", "{dialer}");
    assert_eq!(dialer["restarts"], 1, "{dialer}");
    let server = actors.iter().find(|x| x["name"] == "cluster.node_server");
    let server = server.unwrap_or_else(|| panic!("no node server in {v}"));
    assert_eq!(server["supervisor"], "supervisor:cluster", "{server}");
    assert_eq!(server["restarts"], 1, "{server}");
    // Its children: the TCP listener and a session per peer.
    let children = server["children"].as_array().map_or(0, Vec::len);
    assert!(children >= 2, "the new node server has a session: {server}");
    for name in [
        "cluster.membership",
        "cluster.http_replies",
        "cluster.stage_worker",
    ] {
        assert!(
            actors
                .iter()
                .any(|x| x["name"] == name && x["supervisor"] == "supervisor:cluster"),
            "{name} not under the cluster supervisor: {v}"
        );
    }
    assert!(
        actors.iter().any(|x| x["name"] == "supervisor:cluster"),
        "{v}"
    );
}
