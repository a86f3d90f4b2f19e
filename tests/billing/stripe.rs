//! A local server that speaks Stripe's wire format — form-encoded requests,
//! Stripe-shaped JSON objects and error bodies — for the real `async-stripe`
//! client in the binary (tests/billing.rs, tests/console.rs). It also plays
//! Stripe's hosted pages for a browser: `GET /c/pay/:id` (checkout, with a
//! Pay button that completes the session and returns to its `success_url`)
//! and `GET /p/session/:id` (the customer portal, with a link back to its
//! `return_url`); a test maps `checkout.stripe.com` / `billing.stripe.com`
//! onto them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use poem::listener::{Acceptor, Listener, TcpListener};
use poem::web::{Data, Form, Path as PPath};
use poem::{get, handler, post, EndpointExt, Request, Response, Route, Server};
use serde_json::{json, Value};

pub const SECRET_KEY: &str = "sk_test_clipforge";
pub const WEBHOOK_SECRET: &str = "whsec_test_clipforge";
pub const PRICES: [(&str, &str, &str); 4] = [
    ("creator", "monthly", "price_creator_m"),
    ("creator", "yearly", "price_creator_y"),
    ("pro", "monthly", "price_pro_m"),
    ("pro", "yearly", "price_pro_y"),
];

pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

pub fn price(plan: &str, frequency: &str) -> &'static str {
    PRICES
        .iter()
        .find(|(p, f, _)| *p == plan && *f == frequency)
        .unwrap()
        .2
}

/// One request the fake received: method, path and the decoded form fields.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub form: HashMap<String, String>,
}

#[derive(Default)]
pub struct StripeState {
    pub seen: Vec<Seen>,
    pub sessions: HashMap<String, Value>,
    pub next: u32,
    /// The `return_url` of the last portal session.
    pub portal_return: String,
}

#[derive(Clone, Default)]
pub struct FakeStripe(Arc<Mutex<StripeState>>);

impl FakeStripe {
    pub fn state(&self) -> std::sync::MutexGuard<'_, StripeState> {
        self.0.lock().unwrap()
    }

    pub fn seen(&self, path: &str) -> Vec<Seen> {
        let state = self.state();
        state
            .seen
            .iter()
            .filter(|s| s.path == path)
            .cloned()
            .collect()
    }

    pub fn session(&self, id: &str) -> Value {
        self.state().sessions[id].clone()
    }

    /// The customer pays: the session completes with a new subscription.
    pub fn pay(&self, id: &str) -> Value {
        let mut state = self.state();
        state.next += 1;
        let sub = format!("sub_test_{}", state.next);
        let session = state.sessions.get_mut(id).unwrap();
        session["status"] = json!("complete");
        session["payment_status"] = json!("paid");
        session["subscription"] = json!(sub);
        session["amount_total"] = json!(1900);
        session.clone()
    }
}

fn stripe_error(status: u16, kind: &str, code: &str, message: &str, param: &str) -> Response {
    Response::builder()
        .status(poem::http::StatusCode::from_u16(status).unwrap())
        .content_type("application/json")
        .body(
            json!({"error": {
                "type": kind, "code": code, "message": message, "param": param,
                "doc_url": format!("https://stripe.com/docs/error-codes/{code}"),
                "request_log_url": "https://dashboard.stripe.com/test/logs/req_test"
            }})
            .to_string(),
        )
}

fn stripe_json(v: &Value) -> Response {
    Response::builder()
        .content_type("application/json")
        .header("request-id", "req_test")
        .body(v.to_string())
}

/// Records the request; `Err` with Stripe's 401 when the key is wrong.
fn record(
    fake: &FakeStripe,
    req: &Request,
    form: Vec<(String, String)>,
) -> Result<HashMap<String, String>, Response> {
    let auth = req.header("authorization").unwrap_or("");
    if auth != format!("Bearer {SECRET_KEY}") {
        return Err(stripe_error(
            401,
            "invalid_request_error",
            "api_key_invalid",
            "Invalid API Key provided",
            "",
        ));
    }
    let form: HashMap<String, String> = form.into_iter().collect();
    fake.state().seen.push(Seen {
        method: req.method().to_string(),
        path: req.uri().path().to_string(),
        form: form.clone(),
    });
    Ok(form)
}

/// The metadata fields of a form (`metadata[key]=value`).
fn metadata(form: &HashMap<String, String>, prefix: &str) -> Value {
    let mut map = serde_json::Map::new();
    for (k, v) in form {
        if let Some(key) = k
            .strip_prefix(prefix)
            .and_then(|r| r.strip_prefix('['))
            .and_then(|r| r.strip_suffix(']'))
        {
            map.insert(key.to_string(), json!(v));
        }
    }
    Value::Object(map)
}

#[handler]
fn create_customer(
    fake: Data<&FakeStripe>,
    req: &Request,
    form: Form<Vec<(String, String)>>,
) -> Response {
    let form = match record(&fake, req, form.0) {
        Ok(f) => f,
        Err(r) => return r,
    };
    let n = {
        let mut s = fake.state();
        s.next += 1;
        s.next
    };
    stripe_json(&json!({
        "id": format!("cus_test_{n}"), "object": "customer", "address": null, "balance": 0,
        "created": now(), "currency": null, "default_source": null, "delinquent": false,
        "description": null, "discount": null, "email": form.get("email"),
        "invoice_prefix": "ABC123", "invoice_settings": {"custom_fields": null,
        "default_payment_method": null, "footer": null, "rendering_options": null},
        "livemode": false, "metadata": metadata(&form, "metadata"), "name": form.get("name"),
        "next_invoice_sequence": 1, "phone": null, "preferred_locales": [], "shipping": null,
        "tax_exempt": "none", "test_clock": null
    }))
}

#[handler]
fn create_session(
    fake: Data<&FakeStripe>,
    req: &Request,
    form: Form<Vec<(String, String)>>,
) -> Response {
    let form = match record(&fake, req, form.0) {
        Ok(f) => f,
        Err(r) => return r,
    };
    if form.get("line_items[0][price]").is_none() {
        return stripe_error(
            400,
            "invalid_request_error",
            "parameter_missing",
            "Missing required param: line_items.",
            "line_items",
        );
    }
    let mut state = fake.state();
    state.next += 1;
    let id = format!("cs_test_a1B2c3{}", state.next);
    let session = json!({
        "id": id, "object": "checkout.session", "adaptive_pricing": null,
        "after_expiration": null, "allow_promotion_codes": null, "amount_subtotal": 1900,
        "amount_total": 1900,
        "automatic_tax": {"enabled": false, "liability": null, "provider": null, "status": null},
        "billing_address_collection": null, "cancel_url": form.get("cancel_url"),
        "client_reference_id": form.get("client_reference_id"), "client_secret": null,
        "consent": null, "consent_collection": null, "created": now(), "currency": "usd",
        "custom_fields": [],
        "custom_text": {"after_submit": null, "shipping_address": null, "submit": null,
                        "terms_of_service_acceptance": null},
        "customer": form.get("customer"), "customer_creation": null, "customer_details": null,
        "customer_email": null, "expires_at": now() + 86400, "invoice": null,
        "invoice_creation": null, "livemode": false, "locale": null,
        "metadata": metadata(&form, "metadata"), "mode": form.get("mode"),
        "payment_intent": null, "payment_link": null, "payment_method_collection": "always",
        "payment_method_types": ["card"], "payment_status": "unpaid",
        "phone_number_collection": {"enabled": false}, "recovered_from": null,
        "setup_intent": null, "shipping_address_collection": null, "shipping_cost": null,
        "shipping_options": [], "status": "open", "submit_type": null, "subscription": null,
        "success_url": form.get("success_url"), "total_details": {"amount_discount": 0,
        "amount_shipping": 0, "amount_tax": 0}, "ui_mode": "hosted_page",
        "url": format!("https://checkout.stripe.com/c/pay/{id}")
    });
    state.sessions.insert(id, session.clone());
    stripe_json(&session)
}

#[handler]
fn retrieve_session(fake: Data<&FakeStripe>, req: &Request, id: PPath<String>) -> Response {
    if let Err(r) = record(&fake, req, Vec::new()) {
        return r;
    }
    let session = fake.state().sessions.get(&id.0).cloned();
    match session {
        Some(s) => stripe_json(&s),
        None => stripe_error(
            404,
            "invalid_request_error",
            "resource_missing",
            &format!("No such checkout.session: '{}'", id.0),
            "session",
        ),
    }
}

#[handler]
fn create_portal(
    fake: Data<&FakeStripe>,
    req: &Request,
    form: Form<Vec<(String, String)>>,
) -> Response {
    let form = match record(&fake, req, form.0) {
        Ok(f) => f,
        Err(r) => return r,
    };
    fake.state().portal_return = form.get("return_url").cloned().unwrap_or_default();
    stripe_json(&json!({
        "id": "bps_test_1", "object": "billing_portal.session", "configuration": "bpc_test_1",
        "created": now(), "customer": form.get("customer"), "flow": null, "livemode": false,
        "locale": null, "on_behalf_of": null, "return_url": form.get("return_url"),
        "url": "https://billing.stripe.com/p/session/test_YWNjdF8x"
    }))
}

/// Starts the local Stripe; returns it and its base URL.
pub async fn start_stripe() -> (FakeStripe, String) {
    let fake = FakeStripe::default();
    let app = Route::new()
        .at("/v1/customers", post(create_customer))
        .at("/v1/checkout/sessions", post(create_session))
        .at("/v1/checkout/sessions/:id", get(retrieve_session))
        .at("/v1/billing_portal/sessions", post(create_portal))
        .at("/c/pay/:id", get(checkout_page).post(checkout_pay))
        .at("/p/session/:id", get(portal_page))
        .data(fake.clone());
    let acceptor = TcpListener::bind("127.0.0.1:0")
        .into_acceptor()
        .await
        .unwrap();
    let port = acceptor.local_addr()[0].as_socket_addr().unwrap().port();
    tokio::spawn(Server::new_with_acceptor(acceptor).run(app));
    (fake, format!("http://127.0.0.1:{port}"))
}

/// Environment for the binary to use the fake at `base` (prices of
/// [`PRICES`], both secrets) and send users back to the given URLs.
pub fn app_env(base: &str, success_url: &str, cancel_url: &str) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = [
        ("CLIPFORGE_BILLING_STRIPE_SECRET_KEY", SECRET_KEY),
        ("CLIPFORGE_BILLING_WEBHOOK_SECRET", WEBHOOK_SECRET),
        ("CLIPFORGE_BILLING_SUCCESS_URL", success_url),
        ("CLIPFORGE_BILLING_CANCEL_URL", cancel_url),
        ("CLIPFORGE_BILLING_STRIPE_API_BASE", base),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    for (plan, freq, id) in PRICES {
        let var = format!(
            "CLIPFORGE_BILLING_PRICE_{}_{}",
            plan.to_uppercase(),
            freq.to_uppercase()
        );
        env.push((var, id.to_string()));
    }
    env
}

// Stripe's hosted pages, as a browser sees them.

fn html(body: String) -> Response {
    Response::builder()
        .content_type("text/html; charset=utf-8")
        .body(format!(
            "<!doctype html><html lang=\"en\"><head><title>Stripe (test)</title></head><body><main>{body}</main></body></html>"
        ))
}

/// The hosted checkout: what is bought, and a Pay button.
#[handler]
fn checkout_page(fake: Data<&FakeStripe>, id: PPath<String>) -> Response {
    let Some(session) = fake.state().sessions.get(&id.0).cloned() else {
        return Response::builder()
            .status(poem::http::StatusCode::NOT_FOUND)
            .finish();
    };
    let plan = session["metadata"]["plan"].as_str().unwrap_or("?");
    let frequency = session["metadata"]["frequency"].as_str().unwrap_or("?");
    html(format!(
        "<h1>Subscribe to Clipforge {plan} ({frequency})</h1><p>Test mode: no card is charged.</p>\
         <form method=\"post\"><button type=\"submit\">Pay</button></form>\
         <a href=\"{}\">Back</a>",
        session["cancel_url"].as_str().unwrap_or("/")
    ))
}

/// Pay: the session completes (as [`FakeStripe::pay`]) and Stripe sends the
/// browser to the session's `success_url` with its id filled in.
#[handler]
fn checkout_pay(fake: Data<&FakeStripe>, id: PPath<String>) -> Response {
    if !fake.state().sessions.contains_key(&id.0) {
        return Response::builder()
            .status(poem::http::StatusCode::NOT_FOUND)
            .finish();
    }
    let session = fake.pay(&id.0);
    let to = session["success_url"]
        .as_str()
        .unwrap_or("/")
        .replace("{CHECKOUT_SESSION_ID}", &id.0);
    Response::builder()
        .status(poem::http::StatusCode::SEE_OTHER)
        .header("location", to)
        .finish()
}

/// The customer portal: a link back to the application.
#[handler]
fn portal_page(fake: Data<&FakeStripe>) -> Response {
    let back = fake.state().portal_return.clone();
    html(format!(
        "<h1>Clipforge billing</h1><p>Your subscription is active.</p><a href=\"{back}\">Return to Clipforge</a>"
    ))
}
