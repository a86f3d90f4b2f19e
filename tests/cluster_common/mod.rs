//! The cluster set-up the cluster tests share: `clipforge serve` nodes as
//! real processes on 127.0.0.1, joined by seeds with the shared cookie,
//! their records in a real PostgreSQL started by the test and their media
//! in moto S3; a node can be SIGKILLed and restarted on the same cluster
//! address and data directory. A test module declares `mod common;` and
//! `use clipforge_test_support::postgres;` before `mod cluster_common;`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{spawn_app_with, App};
use crate::postgres::TestPostgres;

pub const ADMIN: &str = "admin-secret";
/// The shared cluster secret (at least 32 characters).
pub const COOKIE: &str = "test-cluster-cookie-0123456789abcdef";
/// Every node of a cluster signs media links and seals tokens alike.
pub const MEDIA_SECRET: &str = "test-media-secret-0123456789abcdef0123";
pub const TOKEN_KEY: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
/// Generous: state changes are waited for, never timed.
pub const DEADLINE: Duration = Duration::from_secs(300);

pub use clipforge_test_support::free_port;

/// What every node of one test's cluster shares: its records in `pg`, the
/// cookie, the secrets, fast heartbeats, one project and one stage at a
/// time. Media storage comes on top: [`shared_env`] or [`shared_env_local`].
pub fn cluster_env(pg: &TestPostgres) -> Vec<(String, String)> {
    [
        ("CLIPFORGE_STORAGE_KV", "postgres".to_string()),
        ("CLIPFORGE_STORAGE_POSTGRES_URL", pg.url()),
        ("CLIPFORGE_AUTH_MEDIA_SECRET", MEDIA_SECRET.into()),
        ("CLIPFORGE_PUBLISH_TOKEN_KEY", TOKEN_KEY.into()),
        ("CLIPFORGE_CLUSTER_COOKIE", COOKIE.into()),
        ("CLIPFORGE_CLUSTER_HEARTBEAT_MS", "200".into()),
        ("CLIPFORGE_CLUSTER_HEARTBEAT_TIMEOUT_MS", "1500".into()),
        ("CLIPFORGE_CLUSTER_LEASE_MS", "4000".into()),
        ("CLIPFORGE_CLUSTER_TLS", "false".into()),
        ("CLIPFORGE_PIPELINE_WORKERS", "1".into()),
        ("CLIPFORGE_PIPELINE_THREADS", "1".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// [`cluster_env`] with the media in the bucket `clipforge-cluster` of
/// the S3 at `s3`.
pub fn shared_env(pg: &TestPostgres, s3: &str) -> Vec<(String, String)> {
    let mut env = cluster_env(pg);
    env.extend(
        [
            ("CLIPFORGE_STORAGE_BACKEND", "s3"),
            ("CLIPFORGE_STORAGE_S3_BUCKET", "clipforge-cluster"),
            ("CLIPFORGE_STORAGE_S3_ENDPOINT", s3),
            ("CLIPFORGE_STORAGE_S3_ACCESS_KEY_ID", "test"),
            ("CLIPFORGE_STORAGE_S3_SECRET_ACCESS_KEY", "test"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    env
}

/// [`cluster_env`] with the media in the local folder `dir`, declared
/// shared by every node.
pub fn shared_env_local(pg: &TestPostgres, dir: &str) -> Vec<(String, String)> {
    let mut env = cluster_env(pg);
    env.extend(
        [
            ("CLIPFORGE_CLUSTER_SHARED_LOCAL_STORAGE", "true"),
            ("CLIPFORGE_STORAGE_LOCAL_DIR", dir),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    env
}

/// One node: its process, cluster address and what it was started with.
pub struct Node {
    pub app: App,
    pub addr: String,
    pub name: String,
    seeds: String,
    env: Vec<(String, String)>,
}

impl Node {
    /// Starts node `name` (all roles unless `env` says otherwise) with
    /// `seeds`, on a fresh cluster address and data directory.
    pub fn start(name: &str, seeds: &[&Node], env: &[(String, String)]) -> Node {
        let seeds: Vec<&str> = seeds.iter().map(|n| n.addr.as_str()).collect();
        Self::spawn(
            name,
            format!("127.0.0.1:{}", free_port()),
            seeds.join(","),
            env.to_vec(),
            tempfile::tempdir().unwrap(),
        )
    }

    fn spawn(
        name: &str,
        addr: String,
        seeds: String,
        env: Vec<(String, String)>,
        dir: tempfile::TempDir,
    ) -> Node {
        let mut all: Vec<(&str, &str)> =
            env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        all.extend([
            ("CLIPFORGE_NODE_NAME", name),
            ("CLIPFORGE_CLUSTER_LISTEN_ADDR", addr.as_str()),
            ("CLIPFORGE_CLUSTER_SEEDS", seeds.as_str()),
        ]);
        let app = spawn_app_with(dir, &all);
        Node {
            app,
            addr,
            name: name.to_string(),
            seeds,
            env,
        }
    }

    /// SIGKILLs the process (no hand-off, no goodbye) and waits for it.
    pub fn kill(&mut self) {
        let _ = self.app.child.kill();
        let _ = self.app.child.wait();
    }

    /// Starts the node again on its cluster address and data directory
    /// (after [`Node::kill`]).
    pub fn restart(mut self) -> Node {
        self.kill();
        let dir = std::mem::replace(&mut self.app.dir, tempfile::tempdir().unwrap());
        let (name, addr, seeds, env) = (
            self.name.clone(),
            self.addr.clone(),
            self.seeds.clone(),
            std::mem::take(&mut self.env),
        );
        drop(self);
        Self::spawn(&name, addr, seeds, env, dir)
    }

    /// `GET /api/credits` through this node with `token`: status, body,
    /// and the node that served it when it was forwarded.
    pub async fn credits(&self, token: &str) -> (u16, Value, Option<String>) {
        let r = self
            .app
            .client
            .get(format!("{}/api/credits", self.app.base))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let served_by = r
            .headers()
            .get("x-clipforge-node")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        (status, r.json().await.unwrap_or(Value::Null), served_by)
    }

    pub async fn view(&self) -> Value {
        let (s, v) = self.app.get("/admin/cluster", ADMIN).await;
        assert_eq!(s, 200, "{v}");
        v
    }

    /// Waits until this node sees every one of `peers` up.
    pub async fn wait_up(&self, peers: &[&str]) {
        let start = Instant::now();
        loop {
            let v = self.view().await;
            let up = |p: &&str| {
                v["nodes"]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|x| x["name"] == *p && x["state"] == "up"))
            };
            if peers.iter().all(up) {
                return;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "{peers:?} not up at {}: {v}",
                self.name
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// `dir/big.mp4`: the speech video with a noisy picture at 8 Mbit/s, so
/// the file is over 16 MiB (the cluster frame limit) while the pipeline
/// still finds speech in it.
pub fn big_speech_video(dir: &Path) -> PathBuf {
    let talk = crate::common::speech_video(dir);
    let big = dir.join("big.mp4");
    let ok = Command::new("ffmpeg")
        .args(["-nostdin", "-y", "-v", "error", "-i"])
        .arg(&talk)
        .args([
            "-vf",
            "noise=alls=40:allf=t",
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-b:v",
            "8M",
            "-minrate",
            "8M",
            "-maxrate",
            "8M",
            "-bufsize",
            "2M",
            "-pix_fmt",
            "yuv420p",
            "-c:a",
            "copy",
        ])
        .arg(&big)
        .status()
        .unwrap();
    assert!(ok.success());
    let size = std::fs::metadata(&big).unwrap().len();
    assert!(size > 16 * 1024 * 1024, "{size} bytes");
    big
}
