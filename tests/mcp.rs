//! The MCP server (issue 31) with the official Python client (PyPI `mcp`):
//! over `/mcp` (streamable HTTP) and `clipforge mcp` (stdio) it lists the
//! tools and creates a project from an upload, which the REST API then
//! shows; a read-only key cannot create; `/mcp` refuses anything but a key.

mod common;

use std::process::Command;

use common::{assert_error, spawn_app_with};
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_creates_projects_over_http_and_stdio() {
    let app = spawn_app_with(tempfile::tempdir().unwrap(), &[]);
    let session = app.sign_up("agent@example.com").await;
    let key = |scopes: Value| {
        let (app, session) = (&app, session.clone());
        async move {
            let (s, v) = app
                .post(
                    "/api/keys",
                    &session,
                    json!({"name": "agent", "scopes": scopes}),
                )
                .await;
            assert_eq!(s, 201, "{v}");
            v["key"].as_str().unwrap().to_string()
        }
    };
    let write_key = key(json!(["read", "write"])).await;
    let read_key = key(json!(["read"])).await;
    let media = tempfile::tempdir().unwrap();
    let video = common::speech_video(media.path());
    let (s, up) = common::upload(&app, &session, &video, "talk.mp4").await;
    assert_eq!(s, 200, "{up}");

    // Without a key, with a session or a bad key: 401, nothing runs.
    for token in [None, Some(session.as_str()), Some("cf_nope_nobody")] {
        let r = app
            .client
            .post(format!("{}/mcp", app.base))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        let r = match token {
            Some(t) => r.bearer_auth(t),
            None => r,
        };
        let r = r
            .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let v: Value = r.json().await.unwrap_or(Value::Null);
        assert_error(status, &v, 401);
    }

    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/check_mcp.py");
    let out = Command::new("python3")
        .arg(script)
        .env("CLIPFORGE_URL", &app.base)
        .env("MCP_KEY", &write_key)
        .env("MCP_READ_KEY", &read_key)
        .env("MCP_FILE_KEY", up["fileKey"].as_str().unwrap())
        .env("CLIPFORGE_BIN", env!("CARGO_BIN_EXE_clipforge"))
        .output()
        .expect("python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the MCP client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let made: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let transports: Vec<&str> = made
        .iter()
        .filter_map(|m| m["transport"].as_str())
        .collect();
    assert_eq!(transports, ["http", "stdio"], "{stdout}");
    // The projects are real: the REST API shows them; stop their work.
    for m in &made {
        let id = m["project"].as_str().unwrap();
        let (s, v) = app.get(&format!("/api/projects/{id}"), &session).await;
        assert_eq!(s, 200, "{v}");
        let title = v["project"]["title"].as_str().unwrap();
        assert_eq!(
            title,
            format!("Made over {}", m["transport"].as_str().unwrap())
        );
        let (s, v) = app
            .call(
                reqwest::Method::DELETE,
                &format!("/api/projects/{id}"),
                Some(&session),
                None,
            )
            .await;
        assert_eq!(s, 200, "{v}");
    }
}
