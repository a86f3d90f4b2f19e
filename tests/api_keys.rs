//! API keys (issue 31) against the real server: created with a session
//! (bearer or cookie), shown once, used as a bearer within their scopes,
//! limited per key, revoked at once; a key can never manage the account.

mod common;

use common::{assert_error, spawn_app_with};
use reqwest::Method;
use serde_json::{json, Value};

async fn create_key(app: &common::App, token: &str, name: &str, scopes: &[&str]) -> Value {
    let (s, v) = app
        .post("/api/keys", token, json!({"name": name, "scopes": scopes}))
        .await;
    assert_eq!(s, 201, "{v}");
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_act_within_their_scopes_until_revoked() {
    let app = spawn_app_with(tempfile::tempdir().unwrap(), &[]);
    let session = app.sign_up("integrator@example.com").await;

    let reader = create_key(&app, &session, "dashboard", &["read"]).await;
    let key = reader["key"].as_str().unwrap().to_string();
    assert!(key.starts_with("cf_") && key.starts_with(reader["prefix"].as_str().unwrap()));
    assert_eq!(reader["scopes"], json!(["read"]));
    assert_eq!(reader["lastUsedAt"], Value::Null);

    // Reads work with the key, as the account.
    let (s, v) = app.get("/api/credits", &key).await;
    assert_eq!(s, 200, "{v}");
    let (s, v) = app.get("/api/projects", &key).await;
    assert_eq!(s, 200, "{v}");
    // A change needs `write`; the answer names the scope.
    let (s, v) = app
        .post("/api/caption-templates", &key, json!({"name": "Bold"}))
        .await;
    assert_error(s, &v, 403);
    assert_eq!(v["error"], "insufficient_scope");
    assert!(v["message"].as_str().unwrap().contains("\"write\""), "{v}");
    let (s, v) = app
        .post(
            "/api/clips/00000000-0000-4000-8000-000000000000/schedule",
            &key,
            json!({}),
        )
        .await;
    assert_error(s, &v, 403);
    assert!(
        v["message"].as_str().unwrap().contains("\"publish\""),
        "{v}"
    );
    // The account, billing and keys need a session, whatever the scopes.
    let all = create_key(&app, &session, "everything", &["read", "write", "publish"]).await;
    let all_key = all["key"].as_str().unwrap().to_string();
    for (method, path, body) in [
        (Method::GET, "/api/keys", None),
        (
            Method::POST,
            "/api/keys",
            Some(json!({"name": "x", "scopes": ["read"]})),
        ),
        (Method::GET, "/api/auth/get-session", None),
        (Method::POST, "/api/auth/sign-out", None),
        (
            Method::POST,
            "/api/credits/select-plan",
            Some(json!({"plan": "free"})),
        ),
    ] {
        let (s, v) = app.call(method.clone(), path, Some(&all_key), body).await;
        assert_error(s, &v, 403);
        assert_eq!(v["error"], "insufficient_scope", "{method} {path}: {v}");
    }
    // A key with `write` may change things.
    let (s, v) = app
        .post("/api/caption-templates", &all_key, json!({"name": "Bold"}))
        .await;
    assert_eq!(s, 201, "{v}");

    // The listing never shows a key, and shows when each was last used.
    let (s, v) = app.get("/api/keys", &session).await;
    assert_eq!(s, 200, "{v}");
    let listed = v["keys"].as_array().unwrap();
    assert_eq!(listed.len(), 2);
    assert!(
        !v.to_string().contains(&key[3..]),
        "a secret in the listing: {v}"
    );
    assert_eq!(listed[0]["id"], reader["id"]);
    assert!(listed[0]["lastUsedAt"].is_string(), "{v}");
    assert!(listed[0].get("key").is_none());

    // Revoked: refused at once with the uniform 401.
    let path = format!("/api/keys/{}", reader["id"].as_str().unwrap());
    let (s, v) = app.call(Method::DELETE, &path, Some(&session), None).await;
    assert_eq!((s, v["revoked"].clone()), (200, json!(true)), "{v}");
    let (s, v) = app.get("/api/credits", &key).await;
    assert_error(s, &v, 401);
    let (s, v) = app.call(Method::DELETE, &path, Some(&session), None).await;
    assert_error(s, &v, 404);
    // A made-up key with a real account id is refused too.
    let account = key.rsplit_once('_').unwrap().1;
    let forged = format!("cf_{}_{account}", "A".repeat(43));
    let (s, v) = app.get("/api/credits", &forged).await;
    assert_error(s, &v, 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_key_requests_are_refused_and_keep_nothing() {
    let app = spawn_app_with(tempfile::tempdir().unwrap(), &[]);
    let session = app.sign_up("careful@example.com").await;
    for body in [
        json!({"name": "", "scopes": ["read"]}),
        json!({"name": "x", "scopes": []}),
        json!({"name": "x", "scopes": ["admin"]}),
        json!({"name": "x"}),
        json!({"name": "x".repeat(101), "scopes": ["read"]}),
    ] {
        let (s, v) = app.post("/api/keys", &session, body.clone()).await;
        assert_error(s, &v, 400);
        let _ = body;
    }
    let (s, v) = app.get("/api/keys", &session).await;
    assert_eq!(
        (s, v["keys"].as_array().map(Vec::len)),
        (200, Some(0)),
        "{v}"
    );
    // Without a session nothing is created.
    let (s, v) = app
        .call(
            Method::POST,
            "/api/keys",
            None,
            Some(json!({"name": "x", "scopes": ["read"]})),
        )
        .await;
    assert_error(s, &v, 401);
    // Another account's key cannot be revoked (not found).
    let other = app.sign_up("other@example.com").await;
    let theirs = create_key(&app, &other, "theirs", &["read"]).await;
    let path = format!("/api/keys/{}", theirs["id"].as_str().unwrap());
    let (s, v) = app.call(Method::DELETE, &path, Some(&session), None).await;
    assert_error(s, &v, 404);
    let (s, _) = app
        .get("/api/credits", theirs["key"].as_str().unwrap())
        .await;
    assert_eq!(s, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_has_its_own_rate_and_the_console_cookie_manages_keys() {
    let app = spawn_app_with(
        tempfile::tempdir().unwrap(),
        &[("CLIPFORGE_LIMITS_API_KEY_PER_MINUTE", "3")],
    );
    let session = app.sign_up("busy@example.com").await;
    // The console's way: the session cookie (same-origin), no bearer.
    let r = app
        .client
        .post(format!("{}/api/keys", app.base))
        .header("cookie", format!("clipforge.session_token={session}"))
        .header("origin", &app.base)
        .json(&json!({"name": "from the console", "scopes": ["read"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let made: Value = r.json().await.unwrap();
    let key = made["key"].as_str().unwrap().to_string();
    let second = create_key(&app, &session, "second", &["read"]).await;

    for _ in 0..3 {
        let (s, v) = app.get("/api/credits", &key).await;
        assert_eq!(s, 200, "{v}");
    }
    let r = app
        .client
        .get(format!("{}/api/credits", app.base))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 429);
    let wait: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"], "rate_limited", "{v}");
    // The limit is the key's: another key and the session go on.
    let (s, _) = app
        .get("/api/credits", second["key"].as_str().unwrap())
        .await;
    assert_eq!(s, 200);
    let (s, _) = app.get("/api/credits", &session).await;
    assert_eq!(s, 200);
}
