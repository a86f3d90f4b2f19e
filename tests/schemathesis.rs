//! Schemathesis against the real server: every check, the stateful phase
//! following the document's links, signed in, with billing configured
//! against a local server that speaks Stripe's wire format. Exits 0 or the
//! test fails with schemathesis' report. The run's settings (statuses the
//! schema cannot promise, per operation) are in `tests/schemathesis.toml`.
//!
//! Needs the `schemathesis` CLI (`scripts/setup.sh --test` installs it).

use std::process::Command;
use std::sync::{Arc, Mutex};

use poem::listener::{Acceptor, Listener, TcpListener};
use poem::web::{Data, Form, Path as PPath};
use poem::{get, handler, post, EndpointExt, Response, Route, Server};
use serde_json::{json, Value};

mod common;
use common::spawn_app_with;

const SECRET_KEY: &str = "sk_test_schemathesis";
/// Examples per operation and phase: bounds the run to a few minutes.
const MAX_EXAMPLES: &str = "12";

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[derive(Clone, Default)]
struct Sessions(Arc<Mutex<Vec<String>>>);

fn stripe_json(v: Value) -> Response {
    Response::builder()
        .content_type("application/json")
        .body(v.to_string())
}

#[handler]
fn customer(form: Form<Vec<(String, String)>>) -> Response {
    let email = form
        .0
        .iter()
        .find(|(k, _)| k == "email")
        .map(|(_, v)| v.clone());
    stripe_json(json!({
        "id": format!("cus_{}", uuid::Uuid::new_v4().simple()), "object": "customer",
        "created": now(), "email": email, "livemode": false, "metadata": {},
        "invoice_settings": {"custom_fields": null, "default_payment_method": null,
                             "footer": null, "rendering_options": null},
        "preferred_locales": [], "balance": 0, "delinquent": false,
        "invoice_prefix": "SCH", "next_invoice_sequence": 1, "tax_exempt": "none"
    }))
}

fn session(id: &str) -> Value {
    json!({
        "id": id, "object": "checkout.session", "amount_subtotal": 1900, "amount_total": 1900,
        "automatic_tax": {"enabled": false, "liability": null, "provider": null, "status": null},
        "created": now(), "currency": "usd", "custom_fields": [],
        "custom_text": {"after_submit": null, "shipping_address": null, "submit": null,
                        "terms_of_service_acceptance": null},
        "expires_at": now() + 86400, "livemode": false, "metadata": {}, "mode": "subscription",
        "payment_method_collection": "always", "payment_method_types": ["card"],
        "payment_status": "unpaid", "phone_number_collection": {"enabled": false},
        "shipping_options": [], "status": "open", "subscription": null,
        "total_details": {"amount_discount": 0, "amount_shipping": 0, "amount_tax": 0},
        "ui_mode": "hosted_page", "url": format!("https://checkout.stripe.com/c/pay/{id}")
    })
}

#[handler]
fn create_session(sessions: Data<&Sessions>) -> Response {
    let id = format!("cs_test_{}", uuid::Uuid::new_v4().simple());
    sessions.0 .0.lock().unwrap().push(id.clone());
    stripe_json(session(&id))
}

#[handler]
fn retrieve_session(sessions: Data<&Sessions>, id: PPath<String>) -> Response {
    if sessions.0 .0.lock().unwrap().contains(&id.0) {
        return stripe_json(session(&id.0));
    }
    Response::builder()
        .status(poem::http::StatusCode::NOT_FOUND)
        .content_type("application/json")
        .body(
            json!({"error": {"type": "invalid_request_error", "code": "resource_missing",
                             "message": format!("No such checkout.session: '{}'", id.0),
                             "param": "session"}})
            .to_string(),
        )
}

#[handler]
fn portal() -> Response {
    stripe_json(json!({
        "id": "bps_test_1", "object": "billing_portal.session", "configuration": "bpc_test_1",
        "created": now(), "customer": "cus_x", "livemode": false,
        "return_url": "https://app.example/billing",
        "url": "https://billing.stripe.com/p/session/test_1"
    }))
}

async fn start_stripe() -> String {
    let app = Route::new()
        .at("/v1/customers", post(customer))
        .at("/v1/checkout/sessions", post(create_session))
        .at("/v1/checkout/sessions/:id", get(retrieve_session))
        .at("/v1/billing_portal/sessions", post(portal))
        .data(Sessions::default());
    let acceptor = TcpListener::bind("127.0.0.1:0")
        .into_acceptor()
        .await
        .unwrap();
    let port = acceptor.local_addr()[0].as_socket_addr().unwrap().port();
    tokio::spawn(Server::new_with_acceptor(acceptor).run(app));
    format!("http://127.0.0.1:{port}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_nothing() {
    let version = Command::new("schemathesis").arg("--version").output();
    let Ok(version) = version else {
        panic!("the schemathesis CLI is missing: run scripts/setup.sh --test");
    };
    eprintln!("{}", String::from_utf8_lossy(&version.stdout).trim());

    let stripe = start_stripe().await;
    let env = [
        ("CLIPFORGE_BILLING_STRIPE_SECRET_KEY", SECRET_KEY),
        ("CLIPFORGE_BILLING_WEBHOOK_SECRET", "whsec_schemathesis"),
        (
            "CLIPFORGE_BILLING_SUCCESS_URL",
            "https://app.example/billing/success",
        ),
        (
            "CLIPFORGE_BILLING_CANCEL_URL",
            "https://app.example/billing",
        ),
        ("CLIPFORGE_BILLING_STRIPE_API_BASE", &stripe),
        ("CLIPFORGE_BILLING_PRICE_CREATOR_MONTHLY", "price_creator_m"),
        ("CLIPFORGE_BILLING_PRICE_CREATOR_YEARLY", "price_creator_y"),
        ("CLIPFORGE_BILLING_PRICE_PRO_MONTHLY", "price_pro_m"),
        ("CLIPFORGE_BILLING_PRICE_PRO_YEARLY", "price_pro_y"),
    ];
    // Projects are created from an upload (below) and fail fast at
    // transcription without a model: the run exercises their routes
    // (get, status, cancel, delete, bulk-schedule) without the CPU cost.
    let no_model = tempfile::tempdir().unwrap();
    let no_model_dir = no_model.path().to_str().unwrap().to_string();
    let mut env = env.to_vec();
    env.push(("CLIPFORGE_PIPELINE_MODEL_DIR", &no_model_dir));
    env.push(("CLIPFORGE_PIPELINE_STAGE_RETRIES", "0"));
    // A contract run, not a flood test (tests/hardening.rs covers the
    // limits): thousands of generated requests from one address would
    // otherwise meet the per-address rate limits and sign-in lockout.
    for (name, value) in [
        ("CLIPFORGE_LIMITS_SIGN_UP_PER_IP", "100000"),
        ("CLIPFORGE_LIMITS_SIGN_IN_PER_IP", "100000"),
        ("CLIPFORGE_LIMITS_META_PER_IP", "100000"),
        ("CLIPFORGE_LIMITS_META_PER_ACCOUNT", "100000"),
        ("CLIPFORGE_LIMITS_CREATE_PROJECT_PER_IP", "100000"),
        ("CLIPFORGE_LIMITS_CREATE_PROJECT_PER_ACCOUNT", "100000"),
        ("CLIPFORGE_LIMITS_UPLOAD_PER_IP", "100000"),
        ("CLIPFORGE_LIMITS_UPLOAD_PER_ACCOUNT", "100000"),
        ("CLIPFORGE_LIMITS_SIGN_IN_FAILURES_PER_EMAIL", "100000"),
        ("CLIPFORGE_LIMITS_SIGN_IN_FAILURES_PER_IP", "100000"),
    ] {
        env.push((name, value));
    }
    let app = spawn_app_with(tempfile::tempdir().unwrap(), &env);
    let token = app.sign_up("schemathesis@example.com").await;
    // Sign-out and password changes end sessions: they get a session of
    // their own, so the rest of the run stays signed in.
    let (s, v) = app
        .call(
            reqwest::Method::POST,
            "/api/auth/sign-in/email",
            None,
            Some(json!({"email": "schemathesis@example.com", "password": "correct horse"})),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    let spare = v["token"].as_str().unwrap().to_string();

    // A real upload, offered as `fileKey` to project creation.
    let media = tempfile::tempdir().unwrap();
    let video = common::speech_video_saying(media.path(), "Open with a question instead.", 150);
    let (s, v) = common::upload(&app, &token, &video, "talk.mp4").await;
    assert_eq!(s, 200, "{v}");
    let file_key = v["fileKey"].as_str().unwrap().to_string();

    let reports = tempfile::tempdir().unwrap();
    let config = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/schemathesis.toml"
    ))
    .unwrap()
    .replace("MAIN_TOKEN", &token)
    .replace("SPARE_TOKEN", &spare)
    .replace("UPLOADED_FILE_KEY", &file_key);
    let config_path = reports.path().join("schemathesis.toml");
    std::fs::write(&config_path, config).unwrap();

    let out = tokio::task::spawn_blocking({
        let (base, dir) = (app.base.clone(), reports.path().to_owned());
        move || {
            Command::new("schemathesis")
                .arg("--config-file")
                .arg(&config_path)
                .arg("--no-color")
                .args(["run", &format!("{base}/api/openapi.json")])
                .args(["--checks", "all"])
                .args(["--phases", "examples,coverage,fuzzing,stateful"])
                .args(["--max-examples", MAX_EXAMPLES])
                .args(["--workers", "2"])
                .args(["--seed", "20261123"])
                .args(["--generation-database", "none"])
                .args(["--request-timeout", "30"])
                .arg("--report-dir")
                .arg(&dir)
                .current_dir(&dir)
                .output()
                .expect("run schemathesis")
        }
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}\n{stderr}");
    assert!(
        out.status.success(),
        "schemathesis found failures (exit {:?}); see the report above",
        out.status.code()
    );
}
