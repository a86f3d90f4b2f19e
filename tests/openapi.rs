//! The OpenAPI document: the committed file is the one the server serves,
//! every operation is typed (ids, tags, schemas for every status, the
//! shared error body), its links point at real operations and parameters,
//! and a 405 names the allowed methods.

use std::collections::HashSet;

use serde_json::Value;

mod common;
use common::{assert_error, spawn_app};

const COMMITTED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/openapi/openapi.json");

async fn served(app: &common::App) -> String {
    let resp = app
        .client
        .get(format!("{}/api/openapi.json", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    resp.text().await.unwrap()
}

#[tokio::test]
async fn the_committed_document_is_the_served_one() {
    let app = spawn_app();
    let served = served(&app).await;
    let committed = std::fs::read_to_string(COMMITTED).unwrap();
    assert!(
        served == committed,
        "openapi/openapi.json is not what the server serves: run \
         `clipforge openapi openapi/openapi.json` and commit it"
    );
}

fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
    let mut ops = Vec::new();
    for (path, methods) in doc["paths"].as_object().unwrap() {
        for (method, op) in methods.as_object().unwrap() {
            ops.push((method.to_uppercase(), path.clone(), op));
        }
    }
    ops
}

/// Follows a `$ref` to a component schema.
fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(r) => {
            let name = r.rsplit('/').next().unwrap();
            &doc["components"]["schemas"][name]
        }
        None => schema,
    }
}

#[tokio::test]
async fn every_operation_is_typed() {
    let app = spawn_app();
    let doc: Value = serde_json::from_str(&served(&app).await).unwrap();
    let schemes = doc["components"]["securitySchemes"].as_object().unwrap();
    assert_eq!(schemes["BearerAuth"]["scheme"], "bearer");
    assert_eq!(schemes["CookieAuth"]["in"], "cookie");
    assert_eq!(schemes["CookieAuth"]["name"], "clipforge.session_token");

    let ops = operations(&doc);
    assert!(ops.len() >= 40, "{} operations", ops.len());
    let mut ids = HashSet::new();
    let public: HashSet<&str> = [
        "signUpEmail",
        "signInEmail",
        "stripeWebhook",
        "integrationCallback",
        "listPlans",
    ]
    .into();
    for (method, path, op) in &ops {
        let what = format!("{method} {path}");
        let id = op["operationId"]
            .as_str()
            .unwrap_or_else(|| panic!("{what}: no operationId"));
        assert!(ids.insert(id.to_string()), "{what}: operationId {id} twice");
        assert!(
            op["tags"].as_array().is_some_and(|t| !t.is_empty()),
            "{what}: no tag"
        );
        assert_eq!(
            op.get("security").is_none(),
            public.contains(id),
            "{what}: security"
        );
        let responses = op["responses"].as_object().unwrap();
        assert!(
            responses.contains_key("400") && responses.contains_key("500"),
            "{what}"
        );
        if !public.contains(id) {
            assert!(responses.contains_key("401"), "{what}: no 401");
        }
        for (status, r) in responses {
            let content = r["content"]
                .as_object()
                .unwrap_or_else(|| panic!("{what} {status}: no content"));
            let (ctype, media) = content.iter().next().unwrap();
            let schema = resolve(&doc, &media["schema"]);
            if status.starts_with('2') {
                if ctype.starts_with("application/json") {
                    assert_eq!(schema["type"], "object", "{what} {status}: {schema}");
                    assert!(
                        schema["properties"]
                            .as_object()
                            .is_some_and(|p| !p.is_empty()),
                        "{what} {status}: an untyped object"
                    );
                } else if ctype == "application/octet-stream" {
                    // A download (the editor export): bytes, named by its
                    // Content-Disposition.
                    assert_eq!(schema["format"], "binary", "{what} {status}: {schema}");
                } else {
                    assert_eq!(ctype, "text/event-stream", "{what} {status}");
                }
            } else {
                assert_eq!(
                    media["schema"]["$ref"], "#/components/schemas/ErrorBody",
                    "{what} {status}: not the shared error body"
                );
            }
        }
        if let Some(body) = op.get("requestBody") {
            for (ctype, media) in body["content"].as_object().unwrap() {
                let schema = resolve(&doc, &media["schema"]);
                if ctype.starts_with("application/json") {
                    assert!(
                        schema["properties"]
                            .as_object()
                            .is_some_and(|p| !p.is_empty()),
                        "{what}: an untyped request body"
                    );
                }
            }
        }
    }

    // Formats and enums where the contract names them.
    let schemas = &doc["components"]["schemas"];
    let user = &schemas["UserView"]["properties"];
    assert_eq!(user["email"]["format"], "email");
    assert_eq!(user["id"]["format"], "uuid");
    assert_eq!(user["createdAt"]["format"], "date-time");
    assert_eq!(user["image"]["nullable"], true);
    assert_eq!(user["image"]["format"], "uri");
    for name in [
        "Plan",
        "Frequency",
        "Provider",
        "ClipDurationPreset",
        "Animation",
        "WatermarkPosition",
        "ProjectState",
        "PostStatus",
        "NotificationType",
    ] {
        assert!(
            schemas[name]["enum"]
                .as_array()
                .is_some_and(|e| e.len() > 1),
            "{name} is not an enum"
        );
    }
    assert_eq!(schemas["SignUp"]["properties"]["password"]["minLength"], 8);

    // Every link names an operation and parameters it has.
    let by_id: std::collections::HashMap<&str, &Value> = ops
        .iter()
        .map(|(_, _, op)| (op["operationId"].as_str().unwrap(), *op))
        .collect();
    let mut links = 0;
    for (_, _, op) in &ops {
        for r in op["responses"].as_object().unwrap().values() {
            for (name, link) in r["links"].as_object().into_iter().flatten() {
                links += 1;
                let target = by_id
                    .get(link["operationId"].as_str().unwrap())
                    .unwrap_or_else(|| panic!("link {name}: no such operation"));
                let params: HashSet<&str> = target["parameters"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|p| p["name"].as_str().unwrap())
                    .collect();
                for p in link["parameters"].as_object().unwrap().keys() {
                    assert!(params.contains(p.as_str()), "link {name}: no parameter {p}");
                }
            }
        }
    }
    assert!(links >= 10, "{links} links");
}

#[tokio::test]
async fn method_not_allowed_names_the_allowed_methods() {
    let app = spawn_app();
    let token = app.sign_up("al@example.com").await;
    for (method, path, allow) in [
        (reqwest::Method::PUT, "/api/projects", "GET, POST, HEAD"),
        (
            reqwest::Method::PATCH,
            "/api/projects/some-id",
            "DELETE, GET, HEAD",
        ),
        (reqwest::Method::GET, "/api/auth/sign-out", "POST"),
    ] {
        let resp = app
            .client
            .request(method.clone(), format!("{}{path}", app.base))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        let header = resp
            .headers()
            .get("allow")
            .map(|h| h.to_str().unwrap().to_string());
        let body: Value = resp.json().await.unwrap();
        assert_error(status, &body, 405);
        assert_eq!(header.as_deref(), Some(allow), "{method} {path}");
    }
}

#[tokio::test]
async fn a_broken_constraint_is_a_400_that_names_the_field() {
    let app = spawn_app();
    for (body, field) in [
        (
            serde_json::json!({"email": "a@example.com", "password": "short", "name": "A"}),
            "password",
        ),
        (
            serde_json::json!({"email": "a@example.com", "password": "long enough", "name": "   "}),
            "name",
        ),
    ] {
        let (s, v) = app
            .call(
                reqwest::Method::POST,
                "/api/auth/sign-up/email",
                None,
                Some(body),
            )
            .await;
        assert_error(s, &v, 400);
        assert!(
            v["message"].as_str().unwrap().contains(field),
            "{field}: {v}"
        );
    }
}
