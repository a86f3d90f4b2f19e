//! Projects across a cluster of real processes on 127.0.0.1 with moto S3:
//! node A (api, data) owns the account and its projects, the stages run on
//! worker nodes; a worker killed mid-stage has its stage re-run elsewhere,
//! and a worker that joins later receives work.

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

const ADMIN: &str = "admin-secret";
const DEADLINE: Duration = Duration::from_secs(300);

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

fn node(name: &str, roles: &str, seeds: &[&Node], s3: &str) -> Node {
    node_at(
        name,
        roles,
        seeds,
        s3,
        format!("127.0.0.1:{}", free_port()),
        tempfile::tempdir().unwrap(),
    )
}

/// A node on a given cluster address and data directory (for restarts).
fn node_at(
    name: &str,
    roles: &str,
    seeds: &[&Node],
    s3: &str,
    addr: String,
    dir: tempfile::TempDir,
) -> Node {
    let seeds: Vec<&str> = seeds.iter().map(|n| n.addr.as_str()).collect();
    let seeds = seeds.join(",");
    let app = spawn_app_with(
        dir,
        &[
            ("CLIPFORGE_NODE_NAME", name),
            ("CLIPFORGE_CLUSTER_LISTEN_ADDR", &addr),
            (
                "CLIPFORGE_CLUSTER_COOKIE",
                "test-cluster-cookie-0123456789abcdef",
            ),
            ("CLIPFORGE_CLUSTER_SEEDS", &seeds),
            ("CLIPFORGE_CLUSTER_ROLES", roles),
            ("CLIPFORGE_CLUSTER_HEARTBEAT_MS", "200"),
            ("CLIPFORGE_CLUSTER_HEARTBEAT_TIMEOUT_MS", "1500"),
            ("CLIPFORGE_PIPELINE_WORKERS", "1"),
            ("CLIPFORGE_PIPELINE_THREADS", "1"),
            ("CLIPFORGE_STORAGE_BACKEND", "s3"),
            ("CLIPFORGE_STORAGE_S3_BUCKET", "clipforge-cluster"),
            ("CLIPFORGE_STORAGE_S3_ENDPOINT", s3),
            ("CLIPFORGE_STORAGE_S3_ACCESS_KEY_ID", "test"),
            ("CLIPFORGE_STORAGE_S3_SECRET_ACCESS_KEY", "test"),
        ],
    );
    Node { app, addr }
}

async fn view(n: &Node) -> Value {
    let (s, v) = n.app.get("/admin/cluster", ADMIN).await;
    assert_eq!(s, 200, "{v}");
    v
}

fn peer<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    v["nodes"].as_array()?.iter().find(|x| x["name"] == name)
}

async fn wait_up(n: &Node, peers: &[&str]) {
    let start = Instant::now();
    loop {
        let v = view(n).await;
        if peers
            .iter()
            .all(|p| peer(&v, p).is_some_and(|x| x["state"] == "up"))
        {
            return;
        }
        assert!(start.elapsed() < DEADLINE, "peers {peers:?} not up: {v}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Stages this node's worker has run, from its `/metrics`.
async fn stages_run(n: &Node) -> u64 {
    let text = n
        .app
        .client
        .get(format!("{}/metrics", n.app.base))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .filter(|l| l.starts_with("clipforge_stage_duration_seconds_count"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

async fn create(a: &Node, token: &str, key: &str, title: &str) -> String {
    let (s, created) = a
        .app
        .post(
            "/api/projects",
            token,
            json!({"fileKey": key, "title": title, "clipDurationPreset": "15-30"}),
        )
        .await;
    assert_eq!(s, 201, "{created}");
    created["projectId"].as_str().unwrap().to_string()
}

async fn completes(n: &Node, token: &str, pid: &str) {
    let events = follow_sse(&n.app, token, pid).await;
    assert_eq!(
        events.last().map(|e| e.0.as_str()),
        Some("completed"),
        "{events:?}"
    );
    let (_, v) = n.app.get(&format!("/api/projects/{pid}"), token).await;
    let clips = v["clips"].as_array().unwrap();
    assert!(!clips.is_empty(), "{v}");
    let url = clips[0]["url"].as_str().unwrap();
    let bytes = n
        .app
        .client
        .get(url)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert!(bytes.windows(4).take(64).any(|w| w == b"ftyp"), "an MP4");
}

#[tokio::test]
async fn stages_run_on_workers_survive_a_killed_worker_and_reach_a_new_one() {
    let moto = start_moto().await;
    let a = node("node-a", "api,data", &[], &moto.1);
    let b = node("node-b", "api,worker", &[&a], &moto.1);
    let c = node("node-c", "api,worker", &[&a], &moto.1);
    wait_up(&a, &["node-b", "node-c"]).await;

    let token = a.app.sign_up("ops@example.com").await;
    let dir = tempfile::tempdir().unwrap();
    let video = speech_video(dir.path());
    let (s, up) = upload(&a.app, &token, &video, "talk.mp4").await;
    assert_eq!(s, 200, "{up}");
    let key = up["fileKey"].as_str().unwrap().to_string();

    // 1. Every stage runs on a worker, spread over both; A runs none.
    let pid = create(&a, &token, &key, "first").await;
    completes(&a, &token, &pid).await;
    let (sb, sc) = (stages_run(&b).await, stages_run(&c).await);
    assert_eq!(sb + sc, 4, "four stages on the workers (b {sb}, c {sc})");
    assert!(sb > 0 && sc > 0, "both workers got work (b {sb}, c {sc})");
    assert_eq!(stages_run(&a).await, 0, "the data node ran no stage");

    // 2. Kill the worker running a stage: the stage re-runs on the other.
    let pid = create(&a, &token, &key, "second").await;
    let start = Instant::now();
    let mut seen = Vec::new();
    let victim = loop {
        let v = view(&a).await;
        let busy = ["node-b", "node-c"]
            .into_iter()
            .find(|n| peer(&v, n).is_some_and(|x| x["load"]["stages"].as_u64() > Some(0)));
        let (_, p) = a.app.get(&format!("/api/projects/{pid}"), &token).await;
        let state = p["project"]["state"].as_str().unwrap_or("").to_string();
        seen.push(format!(
            "{state} b={} c={}",
            peer(&v, "node-b").unwrap()["load"],
            peer(&v, "node-c").unwrap()["load"]
        ));
        if let Some(n) = busy {
            if state == "transcribing" || state == "captioning" {
                break n;
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(40),
            "no busy worker seen: {seen:#?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let (dead, alive) = if victim == "node-b" { (b, c) } else { (c, b) };
    let before = stages_run(&alive).await;
    drop(dead); // SIGKILL
    completes(&a, &token, &pid).await;
    assert!(
        stages_run(&alive).await > before,
        "the surviving worker took over"
    );

    // 3. A worker that joins now receives work with no restart elsewhere.
    let d = node("node-d", "api,worker", &[&a], &moto.1);
    wait_up(&a, &["node-d"]).await;
    let pid = create(&a, &token, &key, "third").await;
    completes(&a, &token, &pid).await;
    assert!(stages_run(&d).await > 0, "the new worker ran stages");
    let (_, credits) = a.app.get("/api/credits", &token).await;
    assert_eq!(credits["credits"], 57, "three projects, one credit each");
}

#[tokio::test]
async fn any_node_serves_any_account_and_streams_events_of_another_nodes_project() {
    let moto = start_moto().await;
    let a = node("node-a", "api,data", &[], &moto.1);
    let e = node("node-e", "api,data", &[&a], &moto.1);
    let c = node("node-c", "api,worker", &[&a], &moto.1);
    wait_up(&a, &["node-e", "node-c"]).await;
    wait_up(&c, &["node-a", "node-e"]).await;
    wait_up(&e, &["node-a", "node-c"]).await;

    // Two accounts signed up through the worker node land on data nodes;
    // their sessions work through every node.
    let mut owners = Vec::new();
    for email in [
        "route-1@example.com",
        "route-2@example.com",
        "route-3@example.com",
    ] {
        let token = c.app.sign_up(email).await;
        for n in [&a, &e, &c] {
            let r = n
                .app
                .client
                .get(format!("{}/api/auth/get-session", n.app.base))
                .bearer_auth(&token)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status().as_u16(), 200);
            let v: Value = r.json().await.unwrap();
            assert_eq!(v["user"]["email"], email, "{v}");
        }
        // Signing in again through any node reaches the same account.
        let (s, v) = e
            .app
            .call(
                reqwest::Method::POST,
                "/api/auth/sign-in/email",
                None,
                Some(json!({"email": email, "password": "correct horse"})),
            )
            .await;
        assert_eq!(s, 200, "{v}");
        let r = c
            .app
            .client
            .get(format!("{}/api/credits", c.app.base))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        owners.push(
            r.headers()["x-clipforge-node"]
                .to_str()
                .unwrap()
                .to_string(),
        );
        owners.dedup();
    }
    assert!(
        owners.iter().all(|o| o == "node-a" || o == "node-e"),
        "{owners:?}"
    );

    // A project created through one node, followed through another.
    let token = c.app.sign_up("stream@example.com").await;
    let dir = tempfile::tempdir().unwrap();
    let video = speech_video(dir.path());
    let (s, up) = upload(&e.app, &token, &video, "talk.mp4").await;
    assert_eq!(s, 200, "{up}");
    let pid = create(&a, &token, up["fileKey"].as_str().unwrap(), "routed").await;
    let events = follow_sse(&c.app, &token, &pid).await;
    assert_eq!(
        events.last().map(|e| e.0.as_str()),
        Some("completed"),
        "{events:?}"
    );
    assert!(events.windows(2).all(|w| w[0].1 < w[1].1), "ids increase");
    let (_, credits) = e.app.get("/api/credits", &token).await;
    assert_eq!(credits["credits"], 59);

    // The admin view spans the nodes.
    let (s, v) = c.app.get("/admin/actors", ADMIN).await;
    assert_eq!(s, 200, "{v}");
    let names: Vec<&str> = v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n["node"].as_str())
        .collect();
    assert_eq!(names.len(), 3, "{v}");
    for n in ["node-a", "node-e", "node-c"] {
        assert!(names.contains(&n), "{v}");
    }
    let (s, v) = c.app.get("/admin/actors?node=node-e", ADMIN).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["node"], "node-e");
    let (s, _) = c.app.get("/admin/actors?node=node-e", "wrong").await;
    assert_eq!(s, 401);
}

#[tokio::test]
async fn a_restarted_data_node_resumes_its_projects() {
    let moto = start_moto().await;
    let mut a = node("node-a", "api,data", &[], &moto.1);
    let b = node("node-b", "api,worker", &[&a], &moto.1);
    wait_up(&a, &["node-b"]).await;
    let token = b.app.sign_up("restart@example.com").await;
    let dir = tempfile::tempdir().unwrap();
    let video = speech_video(dir.path());
    let (s, up) = upload(&b.app, &token, &video, "talk.mp4").await;
    assert_eq!(s, 200, "{up}");
    let pid = create(&b, &token, up["fileKey"].as_str().unwrap(), "resumed").await;
    // Kill the data node once a stage after download has started.
    let start = Instant::now();
    loop {
        let (_, p) = a.app.get(&format!("/api/projects/{pid}"), &token).await;
        let state = p["project"]["state"].as_str().unwrap_or("").to_string();
        if ["transcribing", "cutting", "captioning"].contains(&state.as_str()) {
            break;
        }
        assert!(state != "completed", "too late: {p}");
        assert!(start.elapsed() < DEADLINE, "{p}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let data = std::mem::replace(&mut a.app._dir, tempfile::tempdir().unwrap());
    let addr = a.addr.clone();
    drop(a); // SIGKILL
             // Meanwhile the account is unavailable, not lost or moved.
    let start = Instant::now();
    loop {
        let (s, v) = b.app.get("/api/credits", &token).await;
        if s == 503 {
            assert_eq!(v["error"], "node_unavailable", "{v}");
            break;
        }
        assert!(start.elapsed() < DEADLINE, "{s} {v}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let a = node_at("node-a", "api,data", &[&b], &moto.1, addr, data);
    wait_up(&a, &["node-b"]).await;
    wait_up(&b, &["node-a"]).await;
    // Followed through the worker node, routed to the restarted owner.
    let events = follow_sse(&b.app, &token, &pid).await;
    assert_eq!(
        events.last().map(|e| e.0.as_str()),
        Some("completed"),
        "{events:?}"
    );
    let (_, credits) = b.app.get("/api/credits", &token).await;
    assert_eq!(credits["credits"], 59, "charged once: {credits}");
}
