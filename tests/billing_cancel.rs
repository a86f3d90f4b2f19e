//! Selecting the free plan with a paid subscription: the subscription is
//! cancelled at the end of its paid period through the real Stripe client
//! (against the local Stripe of `tests/fake_stripe`), and the plan changes
//! when Stripe's webhook says the subscription ended.

#![recursion_limit = "256"]

use serde_json::{json, Value};

mod common;
mod fake_stripe;
use fake_stripe::*;

async fn select_free(app: &common::App, token: &str) -> (u16, Value) {
    app.post("/api/credits/select-plan", token, json!({"plan": "free"}))
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selecting_free_cancels_the_subscription_at_period_end() {
    let (stripe, base) = start_stripe().await;
    let app = spawn_app(Some(&base));
    let Subscribed {
        token,
        session,
        customer,
        subscription: sub,
        ..
    } = subscribe(&app, &stripe, "ana@example.com", "creator", "monthly").await;
    let (s, v) = app
        .get(&format!("/api/stripe/checkout/{session}"), &token)
        .await;
    assert_eq!((s, v["activated"].clone()), (200, json!(true)), "{v}");
    assert_eq!(app.credits(&token).await, ("creator".into(), 360, 360));
    let sub_path = format!("/v1/subscriptions/{sub}");

    // Stripe refusing the change: 503, nothing changes.
    let held = stripe.state().subscriptions.remove(&sub).unwrap();
    let (s, v) = select_free(&app, &token).await;
    assert_error(s, &v, 503, "payment_provider_error");
    assert_eq!(app.credits(&token).await.0, "creator");
    stripe.state().subscriptions.insert(sub.clone(), held);

    let (s, v) = select_free(&app, &token).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["plan"], "creator", "paid until the period ends: {v}");
    assert_eq!(v["changesAt"], "2100-01-01T00:00:00.000Z", "{v}");
    let calls = stripe.seen(&sub_path);
    assert_eq!(calls.len(), 2, "the refused call and this one");
    assert_eq!(calls[1].method, "POST");
    assert_eq!(calls[1].form["cancel_at_period_end"], "true");
    assert_eq!(
        stripe.state().subscriptions[&sub]["cancel_at_period_end"],
        true
    );
    assert_eq!(app.credits(&token).await, ("creator".into(), 360, 360));

    // The balance says when the plan becomes free.
    let (_, balance) = app.get("/api/credits", &token).await;
    assert_eq!(
        balance["planEndsAt"], "2100-01-01T00:00:00.000Z",
        "{balance}"
    );

    // Asking again changes nothing at Stripe.
    let (s, v) = select_free(&app, &token).await;
    assert_eq!((s, v["plan"].clone()), (200, json!("creator")), "{v}");
    assert_eq!(stripe.seen(&sub_path).len(), 2);

    // Choosing Creator again keeps it: the cancellation is withdrawn.
    let (s, v) = app
        .post(
            "/api/credits/select-plan",
            &token,
            json!({"plan": "creator"}),
        )
        .await;
    assert_eq!((s, v["plan"].clone()), (200, json!("creator")), "{v}");
    assert_eq!(v["changesAt"], Value::Null, "{v}");
    let calls = stripe.seen(&sub_path);
    assert_eq!(calls.len(), 3, "the withdrawal");
    assert_eq!(calls[2].form["cancel_at_period_end"], "false");
    assert_eq!(
        stripe.state().subscriptions[&sub]["cancel_at_period_end"],
        false
    );
    let (_, balance) = app.get("/api/credits", &token).await;
    assert_eq!(balance["planEndsAt"], Value::Null, "{balance}");
    assert_eq!(app.credits(&token).await, ("creator".into(), 360, 360));

    // And free again sets it to end again.
    let (s, v) = select_free(&app, &token).await;
    assert_eq!(v["changesAt"], "2100-01-01T00:00:00.000Z", "{s} {v}");
    assert_eq!(stripe.seen(&sub_path).len(), 4);

    // The period ends: Stripe deletes the subscription and says so.
    let ended = event(
        "evt_sub_ended",
        "customer.subscription.deleted",
        subscription(
            &sub,
            &customer,
            price("creator", "monthly"),
            "canceled",
            true,
        ),
    );
    let (s, v) = app.webhook(&ended).await;
    assert_eq!((s, v["result"].clone()), (200, json!("changed")), "{v}");
    assert_eq!(app.credits(&token).await, ("free".into(), 60, 60));

    // With no subscription left, free is immediate.
    let (s, v) = select_free(&app, &token).await;
    assert_eq!((s, v["plan"].clone()), (200, json!("free")), "{v}");
    assert_eq!(v["changesAt"], Value::Null);
    assert_eq!(stripe.seen(&sub_path).len(), 4);
    let (_, balance) = app.get("/api/credits", &token).await;
    assert_eq!(balance["planEndsAt"], Value::Null, "{balance}");
}

/// `GET /api/plans`, public: the plan table the server enforces and the
/// prices the local Stripe holds, read once and kept; without billing, the
/// same plans with no prices.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plans_list_limits_and_stripe_prices() {
    let (stripe, base) = start_stripe().await;
    let app = spawn_app(Some(&base));
    let client = reqwest::Client::new();
    let plans = |url: String| {
        let client = client.clone();
        async move {
            let r = client.get(url).send().await.unwrap();
            assert_eq!(r.status(), 200);
            r.json::<Value>().await.unwrap()
        }
    };
    let v = plans(format!("{}/api/plans", app.base)).await;
    assert_eq!(v["secondsPerCredit"], json!(60), "{v}");
    let ids: Vec<&str> = v["plans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["free", "creator", "pro", "enterprise"]);
    let plan = |id: &str| {
        v["plans"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["id"] == id)
            .unwrap()
            .clone()
    };
    // The plan table's own figures (what sign-up and select-plan grant).
    assert_eq!(plan("free")["monthlyCredits"], json!(60));
    assert_eq!(plan("free")["watermark"], json!(true));
    assert_eq!(plan("creator")["monthlyCredits"], json!(300));
    assert_eq!(plan("enterprise")["monthlyCredits"], Value::Null);
    assert_eq!(plan("enterprise")["selfService"], json!(false));
    assert!(plan("pro")["uploadMaxBytes"].as_u64() > plan("free")["uploadMaxBytes"].as_u64());
    assert_eq!(plan("free")["prices"], json!([]));
    assert_eq!(
        plan("creator")["prices"],
        json!([
            {"frequency": "monthly", "amount": 1900, "currency": "usd"},
            {"frequency": "yearly", "amount": 19000, "currency": "usd"}
        ])
    );
    assert_eq!(plan("pro")["prices"][1]["amount"], json!(49000));
    // Kept: a second list does not ask Stripe again.
    let asked = stripe.seen("/v1/prices/price_pro_y").len();
    assert_eq!(asked, 1);
    plans(format!("{}/api/plans", app.base)).await;
    assert_eq!(stripe.seen("/v1/prices/price_pro_y").len(), asked);

    // Without billing: every plan, no prices.
    let bare = common::spawn_app();
    let v = plans(format!("{}/api/plans", bare.base)).await;
    assert_eq!(v["plans"].as_array().unwrap().len(), 4);
    assert!(
        v["plans"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["prices"] == json!([])),
        "{v}"
    );
}
