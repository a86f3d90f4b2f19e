//! Projects across a cluster of real processes on 127.0.0.1 with moto S3
//! and the records in a real PostgreSQL: node A (api) owns the account and
//! its projects, the stages run on worker nodes; a worker killed mid-stage
//! has its stage re-run elsewhere, a worker that joins later receives work,
//! and projects hand off when api nodes join or die.

mod cluster_common;
mod common;

use clipforge_test_support::postgres;

use std::time::{Duration, Instant};

use clipforge_actors::accounts::account_id_for_email;
use clipforge_actors::cluster::placement;
use cluster_common::{shared_env, Node, ADMIN, DEADLINE};
use common::*;
use postgres::TestPostgres;
use serde_json::{json, Value};

/// A node with `roles` in the test's cluster (records in `pg`, media in
/// the S3 at `s3`).
fn node(pg: &TestPostgres, name: &str, roles: &str, seeds: &[&Node], s3: &str) -> Node {
    let mut env = shared_env(pg, s3);
    env.push(("CLIPFORGE_CLUSTER_ROLES".into(), roles.into()));
    Node::start(name, seeds, &env)
}

async fn view(n: &Node) -> Value {
    n.view().await
}

async fn wait_up(n: &Node, peers: &[&str]) {
    n.wait_up(peers).await
}

fn peer<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    v["nodes"].as_array()?.iter().find(|x| x["name"] == name)
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
    let pg = TestPostgres::start();
    let moto = start_moto().await;
    let a = node(&pg, "node-a", "api,scheduler", &[], &moto.1);
    let b = node(&pg, "node-b", "worker", &[&a], &moto.1);
    let c = node(&pg, "node-c", "worker", &[&a], &moto.1);
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
    assert_eq!(stages_run(&a).await, 0, "the api node ran no stage");

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
    let d = node(&pg, "node-d", "worker", &[&a], &moto.1);
    wait_up(&a, &["node-d"]).await;
    let pid = create(&a, &token, &key, "third").await;
    completes(&a, &token, &pid).await;
    assert!(stages_run(&d).await > 0, "the new worker ran stages");

    // 4. A job that panics on the only worker: the worker reports the
    // crash (from its own task set) and the stage is retried there.
    drop((alive, d));
    let mut env = shared_env(&pg, &moto.1);
    env.push(("CLIPFORGE_CLUSTER_ROLES".into(), "worker".into()));
    env.push((
        "CLIPFORGE_FAULTS".into(),
        "stage-panic:transcribe:once".into(),
    ));
    let f = Node::start("node-f", &[&a], &env);
    wait_up(&a, &["node-f"]).await;
    let pid = create(&a, &token, &key, "fourth").await;
    completes(&a, &token, &pid).await;
    assert!(stages_run(&f).await >= 4, "the worker ran every stage");
    let (_, credits) = a.app.get("/api/credits", &token).await;
    assert_eq!(credits["credits"], 56, "four projects, one credit each");
}

#[tokio::test]
async fn any_node_serves_any_account_and_streams_events_of_another_nodes_project() {
    let pg = TestPostgres::start();
    let moto = start_moto().await;
    let a = node(&pg, "node-a", "api", &[], &moto.1);
    let e = node(&pg, "node-e", "api,scheduler", &[&a], &moto.1);
    let c = node(&pg, "node-c", "worker", &[&a], &moto.1);
    wait_up(&a, &["node-e", "node-c"]).await;
    wait_up(&c, &["node-a", "node-e"]).await;
    wait_up(&e, &["node-a", "node-c"]).await;

    // Accounts signed up through the worker node land on api nodes;
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

/// The node (of `nodes`) that owns `email`'s account.
fn owner_of(email: &str, nodes: &[&str]) -> String {
    let id = account_id_for_email(email);
    placement::owner(&id, nodes.iter().copied())
        .unwrap()
        .to_string()
}

/// The node that served `path` for `token` through `n` (`x-clipforge-node`
/// when forwarded, else `n`'s name).
async fn served_by(n: &Node, name: &str, path: &str, token: &str) -> (u16, String) {
    let r = n
        .app
        .client
        .get(format!("{}{path}", n.app.base))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let by = r
        .headers()
        .get("x-clipforge-node")
        .and_then(|v| v.to_str().ok())
        .unwrap_or(name)
        .to_string();
    (r.status().as_u16(), by)
}

async fn wait_served_by(n: &Node, name: &str, token: &str, want: &str) {
    let start = Instant::now();
    loop {
        let (s, by) = served_by(n, name, "/api/credits", token).await;
        if s == 200 && by == want {
            return;
        }
        assert!(start.elapsed() < DEADLINE, "still served by {by} ({s})");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until the project runs a stage after download.
async fn wait_mid_stage(n: &Node, token: &str, pid: &str) {
    let start = Instant::now();
    loop {
        let (_, p) = n.app.get(&format!("/api/projects/{pid}"), token).await;
        let state = p["project"]["state"].as_str().unwrap_or("").to_string();
        if ["transcribing", "cutting", "captioning"].contains(&state.as_str()) {
            return;
        }
        assert!(state != "completed", "too late: {p}");
        assert!(start.elapsed() < DEADLINE, "{p}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn projects_hand_off_to_a_joining_node_and_back_when_it_dies() {
    let pg = TestPostgres::start();
    let moto = start_moto().await;
    let b = node(&pg, "node-b", "api,worker,scheduler", &[], &moto.1);
    // An account that node-a will own once it is up (b owns it until then).
    let email = (0..)
        .map(|i| format!("handoff-{i}@example.com"))
        .find(|e| owner_of(e, &["node-a", "node-b"]) == "node-a")
        .unwrap();
    let token = b.app.sign_up(&email).await;
    let dir = tempfile::tempdir().unwrap();
    // About 45 s of speech at 120 words a minute: the project is still
    // running when the ownership moves.
    let text = "Here is the biggest mistake I see every day. Creators start with a long \
                introduction. Nobody cares about your name before they care about your idea. "
        .repeat(3);
    let video = speech_video_saying(dir.path(), &text, 120);
    let (s, up) = upload(&b.app, &token, &video, "talk.mp4").await;
    assert_eq!(s, 200, "{up}");
    let pid = create(&b, &token, up["fileKey"].as_str().unwrap(), "moving").await;
    wait_mid_stage(&b, &token, &pid).await;

    // A node joins while the project runs: the account and its project
    // move to it (b stops its actor, a resumes from the store). Its first
    // hand-off panics: the housekeeping branch starts it again, and the
    // next one takes the project.
    let mut env = shared_env(&pg, &moto.1);
    env.push(("CLIPFORGE_CLUSTER_ROLES".into(), "api,scheduler".into()));
    env.push((
        "CLIPFORGE_FAULTS".into(),
        "housekeeping-panic:hand-off:once".into(),
    ));
    let a = Node::start("node-a", &[&b], &env);
    wait_up(&a, &["node-b"]).await;
    wait_up(&b, &["node-a"]).await;
    wait_served_by(&b, "node-b", &token, "node-a").await;
    let start = Instant::now();
    loop {
        let (s, v) = a.app.get("/admin/actors?node=node-a", ADMIN).await;
        assert_eq!(s, 200, "{v}");
        if v.to_string().contains(&format!("project:{pid}")) {
            break;
        }
        let (_, p) = b.app.get(&format!("/api/projects/{pid}"), &token).await;
        assert!(
            p["project"]["state"] != "completed",
            "finished before the hand-off: {p}"
        );
        assert!(
            start.elapsed() < DEADLINE,
            "node-a never took the project: {v}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, v) = a.app.get("/admin/actors?node=node-a", ADMIN).await;
    let hand_off = v["actors"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["name"] == "hand-off"))
        .unwrap_or_else(|| panic!("no hand-off actor: {v}"));
    assert_eq!(
        hand_off["supervisor"], "supervisor:housekeeping",
        "{hand_off}"
    );
    assert_eq!(hand_off["restarts"], 1, "{hand_off}");

    // The new owner dies: b takes the account and the project back.
    drop(a); // SIGKILL
    wait_served_by(&b, "node-b", &token, "node-b").await;
    completes(&b, &token, &pid).await;
    let (_, credits) = b.app.get("/api/credits", &token).await;
    assert_eq!(credits["credits"], 59, "charged once: {credits}");
}

#[tokio::test]
async fn a_node_stopped_gracefully_hands_its_projects_off() {
    let pg = TestPostgres::start();
    let moto = start_moto().await;
    let a = node(&pg, "node-a", "api,worker,scheduler", &[], &moto.1);
    let b = node(&pg, "node-b", "api,worker,scheduler", &[&a], &moto.1);
    wait_up(&a, &["node-b"]).await;
    wait_up(&b, &["node-a"]).await;
    // An account node-a hosts, used through node-b.
    let email = (0..)
        .map(|i| format!("leaving-{i}@example.com"))
        .find(|e| owner_of(e, &["node-a", "node-b"]) == "node-a")
        .unwrap();
    let token = b.app.sign_up(&email).await;
    let dir = tempfile::tempdir().unwrap();
    let text = "Here is the biggest mistake I see every day. Creators start with a long \
                introduction. Nobody cares about your name before they care about your idea. "
        .repeat(3);
    let video = speech_video_saying(dir.path(), &text, 120);
    let (s, up) = upload(&b.app, &token, &video, "talk.mp4").await;
    assert_eq!(s, 200, "{up}");
    let pid = create(&b, &token, up["fileKey"].as_str().unwrap(), "leaving").await;
    wait_mid_stage(&b, &token, &pid).await;
    let (s, v) = b.app.get("/admin/actors?node=node-a", ADMIN).await;
    assert_eq!(s, 200, "{v}");
    assert!(
        v.to_string().contains(&format!("project:{pid}")),
        "node-a runs the project: {v}"
    );

    // SIGTERM: node-a hands everything off and leaves; it exits cleanly.
    let mut a = a;
    // SAFETY: plain kill(2) on our own child's pid.
    assert_eq!(
        unsafe { libc::kill(a.app.child.id() as i32, libc::SIGTERM) },
        0
    );
    let status = a.app.child.wait().unwrap();
    assert!(status.success(), "node-a exited with {status}");
    wait_served_by(&b, "node-b", &token, "node-b").await;
    let v = view(&b).await;
    assert_eq!(peer(&v, "node-a").unwrap()["state"], "down", "{v}");
    completes(&b, &token, &pid).await;
    let (_, credits) = b.app.get("/api/credits", &token).await;
    assert_eq!(credits["credits"], 59, "charged once: {credits}");
}
