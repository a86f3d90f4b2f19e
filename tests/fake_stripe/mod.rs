//! A local server that speaks Stripe's wire format — form-encoded
//! requests, Stripe-shaped JSON objects and error bodies — for the billing
//! tests, which drive the real binary (and through it the real
//! `async-stripe` client) against it; and the helpers those tests share.
//! Webhooks are signed with Stripe's scheme, computed here independently of
//! the server's code.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use hmac::{Hmac, KeyInit, Mac};
use poem::listener::{Acceptor, Listener, TcpListener};
use poem::web::{Data, Form, Path as PPath};
use poem::{get, handler, post, EndpointExt, Request, Response, Route, Server};
use serde_json::{json, Value};
use sha2::Sha256;

use super::common::{spawn_app_with, App};

pub const SECRET_KEY: &str = "sk_test_clipforge";
pub const WEBHOOK_SECRET: &str = "whsec_test_clipforge";
pub const PRICES: [(&str, &str, &str); 4] = [
    ("creator", "monthly", "price_creator_m"),
    ("creator", "yearly", "price_creator_y"),
    ("pro", "monthly", "price_pro_m"),
    ("pro", "yearly", "price_pro_y"),
];
pub const SUCCESS_URL: &str = "https://app.example/billing/success";
pub const CANCEL_URL: &str = "https://app.example/billing";

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

// ---------------------------------------------------------------------------
// The local Stripe.

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
    /// Subscriptions created by paid sessions, as Stripe returns them.
    pub subscriptions: HashMap<String, Value>,
    /// The price of each session's line item.
    pub prices: HashMap<String, String>,
    pub next: u32,
}

#[derive(Clone, Default)]
pub struct FakeStripe(pub Arc<Mutex<StripeState>>);

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
        let price = state.prices.get(id).cloned().unwrap_or_default();
        let session = state.sessions.get_mut(id).unwrap();
        session["status"] = json!("complete");
        session["payment_status"] = json!("paid");
        session["subscription"] = json!(sub);
        session["amount_total"] = json!(1900);
        let session = session.clone();
        let customer = session["customer"].as_str().unwrap_or("").to_string();
        let object = stripe_subscription(&sub, &customer, &price);
        state.subscriptions.insert(sub, object);
        session
    }
}

pub fn stripe_error(status: u16, kind: &str, code: &str, message: &str, param: &str) -> Response {
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

pub fn stripe_json(v: &Value) -> Response {
    Response::builder()
        .content_type("application/json")
        .header("request-id", "req_test")
        .body(v.to_string())
}

/// Records the request; `Err` with Stripe's 401 when the key is wrong.
pub fn record(
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
pub fn metadata(form: &HashMap<String, String>, prefix: &str) -> Value {
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
pub fn create_customer(
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
pub fn create_session(
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
    state.prices.insert(
        id.clone(),
        form.get("line_items[0][price]")
            .cloned()
            .unwrap_or_default(),
    );
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
pub fn retrieve_session(fake: Data<&FakeStripe>, req: &Request, id: PPath<String>) -> Response {
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
pub fn create_portal(
    fake: Data<&FakeStripe>,
    req: &Request,
    form: Form<Vec<(String, String)>>,
) -> Response {
    let form = match record(&fake, req, form.0) {
        Ok(f) => f,
        Err(r) => return r,
    };
    stripe_json(&json!({
        "id": "bps_test_1", "object": "billing_portal.session", "configuration": "bpc_test_1",
        "created": now(), "customer": form.get("customer"), "flow": null, "livemode": false,
        "locale": null, "on_behalf_of": null, "return_url": form.get("return_url"),
        "url": "https://billing.stripe.com/p/session/test_YWNjdF8x"
    }))
}

/// The end of every subscription period the fake creates:
/// 2100-01-01T00:00:00Z.
pub const PERIOD_END: i64 = 4_102_444_800;

/// An active subscription to one unit of `price`, as Stripe's API returns
/// it (every field the client requires), its period from now to
/// [`PERIOD_END`].
pub fn stripe_subscription(id: &str, customer: &str, price: &str) -> Value {
    let (start, end) = (now(), PERIOD_END);
    let interval = if price.ends_with("_y") {
        "year"
    } else {
        "month"
    };
    json!({
        "id": id, "object": "subscription", "application": null,
        "automatic_tax": {"enabled": false, "liability": null, "disabled_reason": null},
        "billing_cycle_anchor": start, "billing_mode": {"type": "classic"},
        "billing_schedules": [], "cancel_at": null, "cancel_at_period_end": false,
        "canceled_at": null, "cancellation_details": null,
        "collection_method": "charge_automatically", "created": start, "currency": "usd",
        "customer": customer, "days_until_due": null, "default_payment_method": null,
        "description": null, "discounts": [], "ended_at": null,
        "invoice_settings": {"account_tax_ids": null, "issuer": {"type": "self"}},
        "items": {"object": "list", "has_more": false,
                  "url": format!("/v1/subscription_items?subscription={id}"),
                  "data": [{
            "id": "si_test_1", "object": "subscription_item", "created": start,
            "current_period_start": start, "current_period_end": end, "discounts": [],
            "metadata": {}, "quantity": 1, "subscription": id, "tax_rates": [],
            "plan": {"id": price, "object": "plan", "active": true, "amount": 1900,
                     "billing_scheme": "per_unit", "created": start, "currency": "usd",
                     "interval": interval, "interval_count": 1, "livemode": false,
                     "metadata": {}, "product": "prod_test_1", "usage_type": "licensed"},
            "price": {"id": price, "object": "price", "active": true,
                      "billing_scheme": "per_unit", "created": start, "currency": "usd",
                      "livemode": false, "metadata": {}, "product": "prod_test_1",
                      "recurring": {"interval": interval, "interval_count": 1,
                                    "usage_type": "licensed", "meter": null},
                      "type": "recurring", "unit_amount": 1900}
        }]},
        "latest_invoice": null, "livemode": false, "metadata": {},
        "pending_setup_intent": null, "pending_update": null, "schedule": null,
        "start_date": start, "status": "active", "test_clock": null, "trial_end": null,
        "trial_start": null
    })
}

/// `POST /v1/subscriptions/:id`: `cancel_at_period_end` sets (or clears)
/// `cancel_at` to the end of the current period.
#[handler]
pub fn update_subscription(
    fake: Data<&FakeStripe>,
    req: &Request,
    id: PPath<String>,
    form: Form<Vec<(String, String)>>,
) -> Response {
    let form = match record(&fake, req, form.0) {
        Ok(f) => f,
        Err(r) => return r,
    };
    let mut state = fake.state();
    let Some(sub) = state.subscriptions.get_mut(&id.0) else {
        return stripe_error(
            404,
            "invalid_request_error",
            "resource_missing",
            &format!("No such subscription: '{}'", id.0),
            "id",
        );
    };
    if let Some(cancel) = form.get("cancel_at_period_end") {
        let cancel = cancel == "true";
        sub["cancel_at_period_end"] = json!(cancel);
        sub["cancel_at"] = if cancel {
            sub["items"]["data"][0]["current_period_end"].clone()
        } else {
            Value::Null
        };
    }
    stripe_json(sub)
}

/// Starts the local Stripe; returns it and its base URL.
pub async fn start_stripe() -> (FakeStripe, String) {
    let fake = FakeStripe::default();
    let app = Route::new()
        .at("/v1/customers", post(create_customer))
        .at("/v1/checkout/sessions", post(create_session))
        .at("/v1/checkout/sessions/:id", get(retrieve_session))
        .at("/v1/billing_portal/sessions", post(create_portal))
        .at("/v1/subscriptions/:id", post(update_subscription))
        .data(fake.clone());
    let acceptor = TcpListener::bind("127.0.0.1:0")
        .into_acceptor()
        .await
        .unwrap();
    let port = acceptor.local_addr()[0].as_socket_addr().unwrap().port();
    tokio::spawn(Server::new_with_acceptor(acceptor).run(app));
    (fake, format!("http://127.0.0.1:{port}"))
}

// ---------------------------------------------------------------------------
// The server under test.

/// Starts the server; with `stripe`, billing is configured to use it.
pub fn spawn_app(stripe: Option<&str>) -> App {
    let mut env: Vec<(String, String)> = Vec::new();
    if let Some(base) = stripe {
        for (k, v) in [
            ("CLIPFORGE_BILLING_STRIPE_SECRET_KEY", SECRET_KEY),
            ("CLIPFORGE_BILLING_WEBHOOK_SECRET", WEBHOOK_SECRET),
            ("CLIPFORGE_BILLING_SUCCESS_URL", SUCCESS_URL),
            ("CLIPFORGE_BILLING_CANCEL_URL", CANCEL_URL),
            ("CLIPFORGE_BILLING_STRIPE_API_BASE", base),
        ] {
            env.push((k.to_string(), v.to_string()));
        }
        for (plan, freq, id) in PRICES {
            let var = format!(
                "CLIPFORGE_BILLING_PRICE_{}_{}",
                plan.to_uppercase(),
                freq.to_uppercase()
            );
            env.push((var, id.to_string()));
        }
    }
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    spawn_app_with(tempfile::tempdir().unwrap(), &env)
}

impl App {
    pub async fn sign_up_with_id(&self, email: &str) -> (String, String) {
        let (s, v) = self
            .call(
                reqwest::Method::POST,
                "/api/auth/sign-up/email",
                None,
                Some(json!({"email": email, "password": "correct horse", "name": "Ana"})),
            )
            .await;
        assert_eq!(s, 200, "{v}");
        (
            v["token"].as_str().unwrap().to_string(),
            v["user"]["id"].as_str().unwrap().to_string(),
        )
    }
    /// Sends a webhook with the given `Stripe-Signature` header (if any).
    pub async fn webhook_raw(&self, payload: &str, signature: Option<String>) -> (u16, Value) {
        let mut req = self
            .client
            .post(format!("{}/api/stripe/webhook", self.base))
            .header("content-type", "application/json; charset=utf-8")
            .body(payload.to_string());
        if let Some(sig) = signature {
            req = req.header("stripe-signature", sig);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }
    /// Sends `event` signed now with the endpoint's secret.
    pub async fn webhook(&self, event: &Value) -> (u16, Value) {
        let payload = event.to_string();
        let sig = signature(&payload, WEBHOOK_SECRET, now());
        self.webhook_raw(&payload, Some(sig)).await
    }
    /// (plan, credits, totalCredits).
    pub async fn credits(&self, token: &str) -> (String, u64, u64) {
        let (s, v) = self.get("/api/credits", token).await;
        assert_eq!(s, 200, "{v}");
        (
            v["plan"].as_str().unwrap().to_string(),
            v["credits"].as_u64().unwrap(),
            v["totalCredits"].as_u64().unwrap(),
        )
    }
    /// Everything a change could touch: balance, ledger and notifications.
    pub async fn snapshot(&self, token: &str) -> Value {
        let (_, credits) = self.get("/api/credits", token).await;
        let (_, ledger) = self.get("/api/credits/ledger?limit=100", token).await;
        let (_, notes) = self.get("/api/notifications", token).await;
        json!({"credits": credits, "ledger": ledger, "notifications": notes})
    }
    pub async fn checkout(&self, token: &str, plan: &str, frequency: &str) -> (u16, Value) {
        self.post(
            "/api/stripe/checkout",
            token,
            json!({"plan": plan, "frequency": frequency}),
        )
        .await
    }
}

/// `t=…,v1=…`: HMAC-SHA256 of `"{t}.{payload}"` keyed with the secret.
pub fn signature(payload: &str, secret: &str, t: i64) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.{payload}").as_bytes());
    format!("t={t},v1={}", hex::encode(mac.finalize().into_bytes()))
}

pub fn assert_error(status: u16, body: &Value, expected: u16, code: &str) {
    assert_eq!(status, expected, "{body}");
    assert_eq!(body["error"], code, "{body}");
    assert!(body["message"].is_string(), "{body}");
}

pub fn event(id: &str, kind: &str, object: Value) -> Value {
    json!({
        "id": id, "object": "event", "api_version": "2026-09-30.endive", "created": now(),
        "data": {"object": object}, "livemode": false, "pending_webhooks": 1,
        "request": {"id": null, "idempotency_key": null}, "type": kind
    })
}

pub fn subscription(
    id: &str,
    customer: &str,
    price: &str,
    status: &str,
    cancel_at_end: bool,
) -> Value {
    json!({
        "id": id, "object": "subscription", "customer": customer, "status": status,
        "cancel_at_period_end": cancel_at_end, "created": now(), "livemode": false,
        "items": {"object": "list", "data": [{
            "id": "si_test_1", "object": "subscription_item",
            "price": {"id": price, "object": "price", "recurring": {"interval": "month"}},
            "current_period_start": now(), "current_period_end": now() + 30 * 86400
        }]},
        "metadata": {}
    })
}

pub fn invoice(customer: &str, sub: &str, period_start: i64, period_end: i64) -> Value {
    json!({
        "id": format!("in_test_{period_start}"), "object": "invoice", "customer": customer,
        "billing_reason": "subscription_cycle", "status": "paid", "amount_paid": 1900,
        "created": now(), "next_payment_attempt": null,
        "parent": {"type": "subscription_details",
                   "subscription_details": {"subscription": sub, "metadata": {}}},
        "lines": {"object": "list", "data": [{
            "id": "il_test_1", "object": "line_item",
            "period": {"start": period_start, "end": period_end}
        }]}
    })
}

/// An account that bought `plan` (paid at the fake, not yet activated).
pub struct Subscribed {
    pub token: String,
    pub session: String,
    /// The paid Checkout Session.
    pub paid: Value,
    pub customer: String,
    pub subscription: String,
}

/// Signs up `email`, opens a checkout for `plan` and pays it.
pub async fn subscribe(
    app: &App,
    stripe: &FakeStripe,
    email: &str,
    plan: &str,
    frequency: &str,
) -> Subscribed {
    let (token, _) = app.sign_up_with_id(email).await;
    let session = open_checkout(app, &token, plan, frequency).await;
    let paid = stripe.pay(&session);
    Subscribed {
        token,
        session,
        customer: paid["customer"].as_str().unwrap().to_string(),
        subscription: paid["subscription"].as_str().unwrap().to_string(),
        paid,
    }
}

/// Opens a checkout; returns the session id.
pub async fn open_checkout(app: &App, token: &str, plan: &str, frequency: &str) -> String {
    let (s, v) = app.checkout(token, plan, frequency).await;
    assert_eq!(s, 200, "{v}");
    let url = v["url"].as_str().unwrap();
    url.rsplit('/').next().unwrap().to_string()
}

// ---------------------------------------------------------------------------
