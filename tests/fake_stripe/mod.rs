//! A local server that speaks Stripe's wire format — form-encoded
//! requests, Stripe-shaped JSON objects and error bodies — for the tests
//! that drive the real binary (and through it the real `async-stripe`
//! client) against it: billing, billing_cancel and the console. It also
//! plays Stripe's hosted checkout and portal pages for a browser
//! ([`pages`]); [`app`] holds the billing tests' helpers (webhooks signed
//! with Stripe's scheme, computed here independently of the server's
//! code). One Stripe for every test, so its wire format is kept in one
//! place.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use poem::listener::{Acceptor, Listener, TcpListener};
use poem::web::{Data, Form, Path as PPath};
use poem::{get, handler, post, EndpointExt, Request, Response, Route, Server};
use serde_json::{json, Value};

pub mod app;
pub mod pages;

#[allow(unused_imports)]
pub use app::*;
pub use pages::app_env;

pub const SECRET_KEY: &str = "sk_test_clipforge";
pub const WEBHOOK_SECRET: &str = "whsec_test_clipforge";
pub const PRICES: [(&str, &str, &str); 4] = [
    ("creator", "monthly", "price_creator_m"),
    ("creator", "yearly", "price_creator_y"),
    ("pro", "monthly", "price_pro_m"),
    ("pro", "yearly", "price_pro_y"),
];
/// What each price costs at the local Stripe (cents of `usd`).
pub const AMOUNTS: [(&str, i64); 4] = [
    ("price_creator_m", 1900),
    ("price_creator_y", 19000),
    ("price_pro_m", 4900),
    ("price_pro_y", 49000),
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
    /// The `return_url` of the last portal session.
    pub portal_return: String,
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
#[expect(clippy::result_large_err, reason = "the error is the response to send")]
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
    if !form.contains_key("line_items[0][price]") {
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

/// `GET /v1/prices/:id`: Stripe's price object for the four prices.
#[handler]
pub fn retrieve_price(fake: Data<&FakeStripe>, req: &Request, id: PPath<String>) -> Response {
    if let Err(r) = record(&fake, req, Vec::new()) {
        return r;
    }
    let Some((_, amount)) = AMOUNTS.iter().find(|(p, _)| *p == id.0) else {
        return stripe_error(
            404,
            "invalid_request_error",
            "resource_missing",
            &format!("No such price: '{}'", id.0),
            "price",
        );
    };
    let interval = if id.0.ends_with("_y") {
        "year"
    } else {
        "month"
    };
    stripe_json(&serde_json::json!({
        "id": id.0,
        "object": "price",
        "active": true,
        "billing_scheme": "per_unit",
        "created": 1_700_000_000,
        "currency": "usd",
        "custom_unit_amount": null,
        "livemode": false,
        "lookup_key": null,
        "metadata": {},
        "nickname": null,
        "product": "prod_clipforge",
        "recurring": {
            "aggregate_usage": null,
            "interval": interval,
            "interval_count": 1,
            "meter": null,
            "trial_period_days": null,
            "usage_type": "licensed"
        },
        "tax_behavior": "unspecified",
        "tiers_mode": null,
        "transform_quantity": null,
        "type": "recurring",
        "unit_amount": amount,
        "unit_amount_decimal": amount.to_string()
    }))
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
    fake.state().portal_return = form.get("return_url").cloned().unwrap_or_default();
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
        .at("/v1/prices/:id", get(retrieve_price))
        .at(
            "/c/pay/:id",
            get(pages::checkout_page).post(pages::checkout_pay),
        )
        .at("/p/session/:id", get(pages::portal_page))
        .data(fake.clone());
    let acceptor = TcpListener::bind("127.0.0.1:0")
        .into_acceptor()
        .await
        .unwrap();
    let port = acceptor.local_addr()[0].as_socket_addr().unwrap().port();
    tokio::spawn(Server::new_with_acceptor(acceptor).run(app));
    (fake, format!("http://127.0.0.1:{port}"))
}
