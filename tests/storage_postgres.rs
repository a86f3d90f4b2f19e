//! The service with its records in PostgreSQL (`CLIPFORGE_STORAGE_KV=postgres`)
//! against a real server started for the test: what was written survives a
//! killed and restarted node, even on a fresh data directory.

mod common;

use clipforge_test_support::postgres;

use common::*;
use postgres::TestPostgres;
use serde_json::json;

fn start(pg: &TestPostgres, dir: tempfile::TempDir) -> App {
    spawn_app_with(
        dir,
        &[
            ("CLIPFORGE_STORAGE_KV", "postgres"),
            ("CLIPFORGE_STORAGE_POSTGRES_URL", &pg.url()),
        ],
    )
}

#[tokio::test]
async fn records_in_postgres_survive_a_restart() {
    let pg = TestPostgres::start();
    let app = start(&pg, tempfile::tempdir().unwrap());
    let token = app.sign_up("pg@example.com").await;
    let (s, created) = app
        .post(
            "/api/caption-templates",
            &token,
            json!({"name": "Durable", "fontSize": 64}),
        )
        .await;
    assert_eq!(s, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_string();
    let (s, made) = app
        .post(
            "/api/keys",
            &token,
            json!({"name": "ci", "scopes": ["read"]}),
        )
        .await;
    assert_eq!(s, 201, "{made}");
    let key = made["key"].as_str().unwrap().to_string();
    assert!(
        !app.dir.path().join("data").join("db").exists(),
        "no sled database is opened"
    );
    let rows: u64 = pg
        .psql("SELECT count(*) FROM clipforge_kv WHERE ns = 'clipforge'")
        .parse()
        .unwrap();
    assert!(rows > 0, "records are written to PostgreSQL");
    drop(app); // SIGKILL

    // Restarted on an empty data directory: everything comes from PostgreSQL.
    let app = start(&pg, tempfile::tempdir().unwrap());
    // The credential lookups of a request read PostgreSQL (no actor is
    // active yet): the session, and the API key with its last use noted.
    let (s, v) = app.get("/api/auth/get-session", &token).await;
    assert_eq!(s, 200, "the session is still valid: {v}");
    assert_eq!(v["user"]["email"], "pg@example.com");
    let (s, v) = app.get("/api/projects/no-such-project", &key).await;
    assert_error(s, &v, 404);
    let (s, v) = app.get("/api/keys", &token).await;
    assert_eq!(s, 200, "{v}");
    assert!(
        v["keys"][0]["lastUsedAt"].is_string(),
        "the key's use is noted: {v}"
    );
    let (s, v) = app.get("/api/caption-templates", &token).await;
    assert_eq!(s, 200, "{v}");
    let names: Vec<&str> = v["templates"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"Durable"), "{v}");
    let durable = v["templates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id.as_str())
        .expect("the same template id");
    assert_eq!(durable["fontSize"], 64.0);
    let (s, v) = app
        .call(
            reqwest::Method::POST,
            "/api/auth/sign-in/email",
            None,
            Some(json!({"email": "pg@example.com", "password": "correct horse"})),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    let (s, v) = app
        .call(
            reqwest::Method::POST,
            "/api/auth/sign-up/email",
            None,
            Some(json!({"email": "pg@example.com", "password": "another one", "name": "X"})),
        )
        .await;
    assert_error(s, &v, 409);

    // PostgreSQL down: the node says it is not ready instead of hanging.
    pg.stop();
    let (s, v) = app.call(reqwest::Method::GET, "/readyz", None, None).await;
    assert_error(s, &v, 503);
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("storage unavailable"),
        "{v}"
    );
}

#[test]
fn a_postgres_store_without_a_url_or_server_refuses_to_start() {
    let run = |env: &[(&str, &str)]| {
        let dir = tempfile::tempdir().unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_clipforge"))
            .args([
                "serve",
                "--port",
                "0",
                "--config",
                "/nonexistent/cluster.toml",
            ])
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .env("CLIPFORGE_NODE_HTTP_ADDR", "127.0.0.1:0")
            .env("CLIPFORGE_STORAGE_KV", "postgres")
            .envs(env.iter().copied())
            .output()
            .unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = run(&[]);
    assert!(err.contains("CLIPFORGE_STORAGE_POSTGRES_URL"), "{err}");
    let err = run(&[(
        "CLIPFORGE_STORAGE_POSTGRES_URL",
        "postgres://clipforge:hunter2@127.0.0.1:1/clipforge",
    )]);
    assert!(err.contains("PostgreSQL"), "{err}");
    assert!(!err.contains("hunter2"), "the password never prints: {err}");
}
