//! The billing tests' side: the server under test configured for the local
//! Stripe, and webhook events signed as Stripe signs them.

use hmac::{Hmac, KeyInit, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

use super::*;
use crate::common::{spawn_app_with, App};

/// Starts the server; with `stripe`, billing is configured to use it.
pub fn spawn_app(stripe: Option<&str>) -> App {
    let env = stripe
        .map(|base| app_env(base, SUCCESS_URL, CANCEL_URL))
        .unwrap_or_default();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    spawn_app_with(tempfile::tempdir().unwrap(), &env)
}

/// What the billing tests do with a server.
#[allow(async_fn_in_trait)]
pub trait BillingCalls {
    async fn sign_up_with_id(&self, email: &str) -> (String, String);
    async fn webhook_raw(&self, payload: &str, signature: Option<String>) -> (u16, Value);
    async fn webhook(&self, event: &Value) -> (u16, Value);
    async fn credits(&self, token: &str) -> (String, u64, u64);
    async fn snapshot(&self, token: &str) -> Value;
    async fn checkout(&self, token: &str, plan: &str, frequency: &str) -> (u16, Value);
}

impl BillingCalls for App {
    async fn sign_up_with_id(&self, email: &str) -> (String, String) {
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
    async fn webhook_raw(&self, payload: &str, signature: Option<String>) -> (u16, Value) {
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
    async fn webhook(&self, event: &Value) -> (u16, Value) {
        let payload = event.to_string();
        let sig = signature(&payload, WEBHOOK_SECRET, now());
        self.webhook_raw(&payload, Some(sig)).await
    }
    /// (plan, credits, totalCredits).
    async fn credits(&self, token: &str) -> (String, u64, u64) {
        let (s, v) = self.get("/api/credits", token).await;
        assert_eq!(s, 200, "{v}");
        (
            v["plan"].as_str().unwrap().to_string(),
            v["credits"].as_u64().unwrap(),
            v["totalCredits"].as_u64().unwrap(),
        )
    }
    /// Everything a change could touch: balance, ledger and notifications.
    async fn snapshot(&self, token: &str) -> Value {
        let (_, credits) = self.get("/api/credits", token).await;
        let (_, ledger) = self.get("/api/credits/ledger?limit=100", token).await;
        let (_, notes) = self.get("/api/notifications", token).await;
        json!({"credits": credits, "ledger": ledger, "notifications": notes})
    }
    async fn checkout(&self, token: &str, plan: &str, frequency: &str) -> (u16, Value) {
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
