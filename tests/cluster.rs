//! Cluster membership across real processes: `clipforge serve` nodes on
//! 127.0.0.1 joined by seeds, heartbeats, a wrong cookie, SIGSTOP/SIGCONT.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{spawn_app_with, App};
use serde_json::Value;

const ADMIN: &str = "admin-secret";
/// Generous: state changes are waited for, never timed.
const DEADLINE: Duration = Duration::from_secs(60);

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Node {
    app: App,
    addr: String,
}

fn node(name: &str, cookie: &str, seeds: &[&Node], media: &std::path::Path) -> Node {
    let addr = format!("127.0.0.1:{}", free_port());
    let seeds: Vec<&str> = seeds.iter().map(|n| n.addr.as_str()).collect();
    let seeds = seeds.join(",");
    let media = media.to_str().unwrap().to_string();
    let app = spawn_app_with(
        tempfile::tempdir().unwrap(),
        &[
            ("CLIPFORGE_NODE_NAME", name),
            ("CLIPFORGE_CLUSTER_LISTEN_ADDR", &addr),
            ("CLIPFORGE_CLUSTER_COOKIE", cookie),
            ("CLIPFORGE_CLUSTER_SEEDS", &seeds),
            ("CLIPFORGE_CLUSTER_HEARTBEAT_MS", "200"),
            ("CLIPFORGE_CLUSTER_HEARTBEAT_TIMEOUT_MS", "1500"),
            ("CLIPFORGE_CLUSTER_SHARED_LOCAL_STORAGE", "true"),
            ("CLIPFORGE_STORAGE_LOCAL_DIR", &media),
        ],
    );
    Node { app, addr }
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
    let media = tempfile::tempdir().unwrap();
    let a = node("node-a", "sesame", &[], media.path());
    let b = node("node-b", "sesame", &[&a], media.path());
    // c only knows b: it reaches a transitively.
    let c = node("node-c", "sesame", &[&b], media.path());

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
        assert_eq!(peer["roles"], serde_json::json!(["api", "data", "worker"]));
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
    let media = tempfile::tempdir().unwrap();
    let a = node("node-a", "sesame", &[], media.path());
    let intruder = node("node-x", "not-the-cookie", &[&a], media.path());
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

#[test]
fn a_cluster_node_with_private_local_storage_refuses_to_start() {
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
        .env("CLIPFORGE_CLUSTER_COOKIE", "sesame")
        .env("CLIPFORGE_CLUSTER_SEEDS", "127.0.0.1:9")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("storage.backend = \"s3\""), "{err}");
    assert!(err.contains("shared_local_storage"), "{err}");
}
