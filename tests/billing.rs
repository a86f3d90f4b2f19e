//! Black-box tests of billing: the real binary, configured to use a local
//! server that speaks Stripe's wire format (`tests/stripe/mod.rs`), through
//! the real `async-stripe` client.

#![recursion_limit = "256"]

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

mod common;
mod fake_stripe;
use fake_stripe::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_stripe_settings_billing_answers_503() {
    let app = spawn_app(None);
    let (token, _) = app.sign_up_with_id("ana@example.com").await;
    let (s, v) = app.checkout(&token, "pro", "monthly").await;
    assert_error(s, &v, 503, "billing_not_configured");
    let (s, v) = app
        .post("/api/stripe/customer-portal", &token, json!({}))
        .await;
    assert_error(s, &v, 503, "billing_not_configured");
    let (s, v) = app.get("/api/stripe/checkout/cs_test_1", &token).await;
    assert_error(s, &v, 503, "billing_not_configured");
    let payload = event("evt_1", "invoice.paid", json!({})).to_string();
    let (s, v) = app
        .webhook_raw(&payload, Some(signature(&payload, WEBHOOK_SECRET, now())))
        .await;
    assert_error(s, &v, 503, "billing_not_configured");
    // The rest of the service works.
    assert_eq!(app.credits(&token).await, ("free".into(), 60, 60));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkout_for_each_plan_and_frequency() {
    let (stripe, base) = start_stripe().await;
    let app = spawn_app(Some(&base));
    let (token, user_id) = app.sign_up_with_id("ana@example.com").await;

    for (plan, freq, price_id) in PRICES {
        let (s, v) = app.checkout(&token, plan, freq).await;
        assert_eq!(s, 200, "{plan} {freq}: {v}");
        let url = v["url"].as_str().unwrap();
        let session_id = url.rsplit('/').next().unwrap();
        assert_eq!(
            url,
            format!("https://checkout.stripe.com/c/pay/{session_id}")
        );
        let seen = stripe.seen("/v1/checkout/sessions");
        let form = &seen.last().unwrap().form;
        assert_eq!(seen.last().unwrap().method, "POST");
        assert_eq!(form["mode"], "subscription");
        assert_eq!(form["line_items[0][price]"], price_id);
        assert_eq!(form["line_items[0][quantity]"], "1");
        assert_eq!(form["client_reference_id"], user_id);
        assert_eq!(form["customer"], "cus_test_1", "one customer per account");
        assert_eq!(
            form["success_url"],
            format!("{SUCCESS_URL}?session_id={{CHECKOUT_SESSION_ID}}")
        );
        assert_eq!(form["cancel_url"], CANCEL_URL);
        assert_eq!(form["metadata[plan]"], plan);
        assert_eq!(form["metadata[frequency]"], freq);
        assert_eq!(form["subscription_data[metadata][user_id]"], user_id);
    }
    let customers = stripe.seen("/v1/customers");
    assert_eq!(customers.len(), 1, "the customer is created once");
    assert_eq!(customers[0].form["email"], "ana@example.com");
    assert_eq!(customers[0].form["metadata[user_id]"], user_id);

    for body in [
        json!({"plan": "enterprise", "frequency": "monthly"}),
        json!({"plan": "free", "frequency": "monthly"}),
        json!({"plan": "gold", "frequency": "yearly"}),
        json!({"plan": "pro", "frequency": "weekly"}),
        json!({"plan": "pro"}),
        json!({}),
    ] {
        let (s, v) = app.post("/api/stripe/checkout", &token, body.clone()).await;
        assert_eq!(s, 400, "{body}: {v}");
        assert!(v["error"].is_string() && v["message"].is_string(), "{v}");
    }
    let (s, _) = app
        .call(
            reqwest::Method::POST,
            "/api/stripe/checkout",
            None,
            Some(json!({"plan": "pro", "frequency": "monthly"})),
        )
        .await;
    assert_eq!(s, 401);
    assert_eq!(
        stripe.seen("/v1/checkout/sessions").len(),
        4,
        "bad input reaches no one"
    );

    // Never paid: no portal.
    let (s, v) = app
        .post("/api/stripe/customer-portal", &token, json!({}))
        .await;
    assert_error(s, &v, 409, "no_billing_account");
    assert_eq!(
        app.credits(&token).await,
        ("free".into(), 60, 60),
        "opening checkouts buys nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_return_path_activates_at_once_and_only_once() {
    let (stripe, base) = start_stripe().await;
    let app = spawn_app(Some(&base));
    let (token, _) = app.sign_up_with_id("ana@example.com").await;
    let (other, _) = app.sign_up_with_id("bob@example.com").await;
    let session = open_checkout(&app, &token, "creator", "monthly").await;

    let path = format!("/api/stripe/checkout/{session}");
    let (s, v) = app.get(&path, &token).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        (
            v["status"].clone(),
            v["paymentStatus"].clone(),
            v["activated"].clone(),
            v["plan"].clone()
        ),
        (json!("open"), json!("unpaid"), json!(false), json!("free"))
    );
    let (s, v) = app
        .post(
            "/api/credits/select-plan",
            &token,
            json!({"plan": "creator"}),
        )
        .await;
    assert_error(s, &v, 402, "checkout_required");

    let paid = stripe.pay(&session);
    let (s, v) = app.get(&path, &token).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        (v["activated"].clone(), v["plan"].clone()),
        (json!(true), json!("creator"))
    );
    assert_eq!(
        app.credits(&token).await,
        ("creator".into(), 360, 360),
        "300 + 60 bonus"
    );
    let before = app.snapshot(&token).await;
    let (s, v) = app.get(&path, &token).await;
    assert_eq!((s, v["activated"].clone()), (200, json!(true)));
    // The webhook for the same checkout comes later and changes nothing.
    let (s, v) = app
        .webhook(&event("evt_cs_1", "checkout.session.completed", paid))
        .await;
    assert_eq!((s, v["result"].clone()), (200, json!("unchanged")), "{v}");
    assert_eq!(app.snapshot(&token).await, before);

    let (s, v) = app.get(&path, &other).await;
    assert_error(s, &v, 404, "not_found");
    let (s, v) = app
        .get("/api/stripe/checkout/cs_test_missing", &token)
        .await;
    assert_error(s, &v, 404, "not_found");
    let (s, _) = app.get("/api/stripe/checkout/..%2Fcustomers", &token).await;
    assert_eq!(s, 404);

    // Paid now: the portal opens for the account's customer.
    let (s, v) = app
        .post("/api/stripe/customer-portal", &token, json!({}))
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        v["url"],
        "https://billing.stripe.com/p/session/test_YWNjdF8x"
    );
    let portal = stripe.seen("/v1/billing_portal/sessions");
    assert_eq!(
        portal[0].form["customer"],
        stripe.session(&session)["customer"]
    );
    assert_eq!(portal[0].form["return_url"], CANCEL_URL);
    let (s, v) = app
        .post("/api/stripe/customer-portal", &other, json!({}))
        .await;
    assert_error(s, &v, 409, "no_billing_account");

    // A second subscription is refused; plan changes go through the portal.
    let (s, v) = app.checkout(&token, "pro", "monthly").await;
    assert_error(s, &v, 409, "subscription_active");
    // Free ends the subscription at the end of its period (the plan stays
    // until then; tests/billing_cancel.rs follows it to the end).
    let (s, v) = app
        .post("/api/credits/select-plan", &token, json!({"plan": "free"}))
        .await;
    assert_eq!((s, v["plan"].clone()), (200, json!("creator")), "{v}");
    assert_eq!(v["changesAt"], "2100-01-01T00:00:00.000Z", "{v}");
    let (s, v) = app
        .post(
            "/api/credits/select-plan",
            &token,
            json!({"plan": "creator"}),
        )
        .await;
    assert_eq!(
        (s, v["plan"].clone()),
        (200, json!("creator")),
        "subscribed, so selectable"
    );
    let (s, v) = app
        .post("/api/credits/select-plan", &token, json!({"plan": "pro"}))
        .await;
    assert_error(s, &v, 402, "checkout_required");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_drive_the_subscription_once_each() {
    let (stripe, base) = start_stripe().await;
    let app = spawn_app(Some(&base));
    let Subscribed {
        token,
        paid,
        customer,
        subscription: sub,
        ..
    } = subscribe(&app, &stripe, "ana@example.com", "pro", "yearly").await;

    // checkout.session.completed: activation and bonus, without the return path.
    let completed = event("evt_1", "checkout.session.completed", paid);
    let (s, v) = app.webhook(&completed).await;
    assert_eq!((s, v["result"].clone()), (200, json!("changed")), "{v}");
    assert_eq!(app.credits(&token).await, ("pro".into(), 1200, 1200));
    let before = app.snapshot(&token).await;
    let (s, v) = app.webhook(&completed).await;
    assert_eq!((s, v["result"].clone()), (200, json!("duplicate")), "{v}");
    assert_eq!(
        app.snapshot(&token).await,
        before,
        "a replayed event changes nothing"
    );

    // customer.subscription.updated: a plan change made in the portal.
    let updated = event(
        "evt_2",
        "customer.subscription.updated",
        subscription(
            &sub,
            &customer,
            price("creator", "monthly"),
            "active",
            false,
        ),
    );
    let (s, v) = app.webhook(&updated).await;
    assert_eq!((s, v["result"].clone()), (200, json!("changed")), "{v}");
    assert_eq!(
        app.credits(&token).await,
        ("creator".into(), 360, 360),
        "creator + its bonus"
    );
    let before = app.snapshot(&token).await;
    let (_, v) = app.webhook(&updated).await;
    assert_eq!(v["result"], "duplicate");
    assert_eq!(app.snapshot(&token).await, before);

    // invoice.payment_failed: the user is told.
    let mut failed_invoice = invoice(&customer, &sub, now(), now() + 30 * 86400);
    failed_invoice["next_payment_attempt"] = json!(now() + 3 * 86400);
    let (s, v) = app
        .webhook(&event("evt_3", "invoice.payment_failed", failed_invoice))
        .await;
    assert_eq!((s, v["result"].clone()), (200, json!("changed")), "{v}");
    let (_, notes) = app.get("/api/notifications", &token).await;
    assert_eq!(
        notes["notifications"][0]["type"], "payment_failed",
        "{notes}"
    );
    assert_eq!(app.credits(&token).await, ("creator".into(), 360, 360));

    // invoice.paid for the period activation started: nothing to renew.
    let (_, v) = app
        .webhook(&event(
            "evt_4",
            "invoice.paid",
            invoice(&customer, &sub, now(), now() + 30 * 86400),
        ))
        .await;
    assert_eq!(v["result"], "unchanged", "{v}");
    assert_eq!(app.credits(&token).await, ("creator".into(), 360, 360));

    // invoice.paid for the next period: the cycle renews to the plan's
    // credits; the unused 360 do not roll over. (The server's clock cannot
    // be moved, so the next period is one that starts later.)
    let next = now() + 31 * 86400;
    let renewal = event(
        "evt_5",
        "invoice.paid",
        invoice(&customer, &sub, next, next + 30 * 86400),
    );
    let (_, v) = app.webhook(&renewal).await;
    assert_eq!(v["result"], "changed", "{v}");
    assert_eq!(app.credits(&token).await, ("creator".into(), 300, 300));
    let (_, ledger) = app.get("/api/credits/ledger", &token).await;
    assert_eq!(ledger["entries"][0]["type"], "renew", "{ledger}");
    let before = app.snapshot(&token).await;
    let (_, v) = app.webhook(&renewal).await;
    assert_eq!(v["result"], "duplicate");
    assert_eq!(app.snapshot(&token).await, before);

    // customer.subscription.deleted: back to free, and paid plans are closed.
    let deleted = event(
        "evt_6",
        "customer.subscription.deleted",
        subscription(
            &sub,
            &customer,
            price("creator", "monthly"),
            "canceled",
            false,
        ),
    );
    let (_, v) = app.webhook(&deleted).await;
    assert_eq!(v["result"], "changed", "{v}");
    assert_eq!(app.credits(&token).await.0, "free");
    let (s, v) = app
        .post(
            "/api/credits/select-plan",
            &token,
            json!({"plan": "creator"}),
        )
        .await;
    assert_error(s, &v, 402, "checkout_required");

    // Buying creator again: no second welcome bonus.
    let again = open_checkout(&app, &token, "creator", "monthly").await;
    let paid = stripe.pay(&again);
    let (_, v) = app
        .webhook(&event("evt_7", "checkout.session.completed", paid))
        .await;
    assert_eq!(v["result"], "changed", "{v}");
    let (plan, _, total) = app.credits(&token).await;
    assert_eq!(
        (plan.as_str(), total),
        ("creator", 300),
        "the bonus came once"
    );
    let (_, ledger) = app.get("/api/credits/ledger?limit=100", &token).await;
    let bonuses: Vec<_> = ledger["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "bonus")
        .map(|e| e["amount"].clone())
        .collect();
    assert_eq!(
        bonuses,
        [json!(60), json!(200)],
        "one per paid plan: {ledger}"
    );

    // Events about unknown customers or other types are acknowledged.
    let stranger = event(
        "evt_8",
        "customer.subscription.deleted",
        subscription(
            "sub_x",
            "cus_unknown",
            price("pro", "monthly"),
            "canceled",
            false,
        ),
    );
    let (s, v) = app.webhook(&stranger).await;
    assert_eq!((s, v["result"].clone()), (200, json!("ignored")), "{v}");
    let (s, v) = app
        .webhook(&event("evt_9", "charge.refunded", json!({"id": "ch_1"})))
        .await;
    assert_eq!((s, v["result"].clone()), (200, json!("ignored")), "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_signatures_are_refused_and_change_nothing() {
    let (stripe, base) = start_stripe().await;
    let app = spawn_app(Some(&base));
    let (token, _) = app.sign_up_with_id("ana@example.com").await;
    let session = open_checkout(&app, &token, "pro", "monthly").await;
    let paid = stripe.pay(&session);
    let payload = event("evt_sig", "checkout.session.completed", paid).to_string();
    let before = app.snapshot(&token).await;

    let t = now();
    let good = signature(&payload, WEBHOOK_SECRET, t);
    let tampered = payload.replace("\"paid\"", "\"unpaid\"");
    let cases: Vec<(&str, String, Option<String>)> = vec![
        ("missing", payload.clone(), None),
        ("empty", payload.clone(), Some(String::new())),
        ("garbage", payload.clone(), Some("nonsense".into())),
        (
            "wrong secret",
            payload.clone(),
            Some(signature(&payload, "whsec_wrong", t)),
        ),
        (
            "stale",
            payload.clone(),
            Some(signature(&payload, WEBHOOK_SECRET, t - 600)),
        ),
        (
            "future",
            payload.clone(),
            Some(signature(&payload, WEBHOOK_SECRET, t + 600)),
        ),
        ("tampered payload", tampered, Some(good.clone())),
        (
            "timestamp swapped",
            payload.clone(),
            Some(good.replacen(&format!("t={t}"), &format!("t={}", t - 1), 1)),
        ),
    ];
    for (name, body, sig) in cases {
        let (s, v) = app.webhook_raw(&body, sig).await;
        assert_error(s, &v, 400, "invalid_signature");
        assert!(
            v["message"].as_str().unwrap().contains("webhook"),
            "{name}: {v}"
        );
    }
    assert_eq!(app.snapshot(&token).await, before, "nothing changed");

    // Signed properly, the same event is applied: it was not remembered.
    let (s, v) = app.webhook_raw(&payload, Some(good)).await;
    assert_eq!((s, v["result"].clone()), (200, json!("changed")), "{v}");
    assert_eq!(app.credits(&token).await, ("pro".into(), 1200, 1200));
    // Signed, but not an event.
    let junk = "not json";
    let (s, v) = app
        .webhook_raw(junk, Some(signature(junk, WEBHOOK_SECRET, now())))
        .await;
    assert_error(s, &v, 400, "invalid_input");
}

/// A `secs`-long video with sound, as small as ffmpeg can make it.
fn long_quiet_video(dir: &Path, secs: u32) -> std::path::PathBuf {
    let out = dir.join("long.mp4");
    let status = Command::new("ffmpeg")
        .args(["-nostdin", "-y", "-v", "error", "-f", "lavfi", "-i"])
        .arg("color=c=black:s=16x16:r=1")
        .args(["-f", "lavfi", "-i", "anullsrc=r=8000:cl=mono", "-t"])
        .arg(secs.to_string())
        .args([
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-c:a",
            "aac",
            "-b:a",
            "8k",
            "-shortest",
        ])
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success());
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overdrawing_is_refused_and_operators_grant_enterprise() {
    let (_stripe, base) = start_stripe().await;
    let app = spawn_app(Some(&base));
    let (token, user_id) = app.sign_up_with_id("ana@example.com").await;
    let dir = tempfile::tempdir().unwrap();
    let video = long_quiet_video(dir.path(), 61 * 60 + 5);
    let bytes = std::fs::read(&video).unwrap();
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(bytes).file_name("long.mp4"),
    );
    let r = app
        .client
        .post(format!("{}/api/upload", app.base))
        .bearer_auth(&token)
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let up: Value = r.json().await.unwrap();

    let before = app.snapshot(&token).await;
    let (s, v) = app
        .post("/api/projects", &token, json!({"fileKey": up["fileKey"]}))
        .await;
    assert_error(s, &v, 402, "insufficient_credits");
    assert!(v["message"].as_str().unwrap().contains("62 needed"), "{v}");
    assert_eq!(app.snapshot(&token).await, before, "nothing reserved");
    let (_, credits) = app.get("/api/credits", &token).await;
    assert_eq!(
        (credits["credits"].clone(), credits["reserved"].clone()),
        (json!(60), json!(0))
    );
    let (_, projects) = app.get("/api/projects", &token).await;
    assert_eq!(projects["total"], 0);

    // Enterprise: only an operator grants it.
    let (s, v) = app
        .post(
            "/api/credits/select-plan",
            &token,
            json!({"plan": "enterprise"}),
        )
        .await;
    assert_error(s, &v, 402, "checkout_required");
    let plan_path = format!("/admin/accounts/{user_id}/plan");
    let (s, v) = app
        .post(&plan_path, &token, json!({"plan": "enterprise"}))
        .await;
    assert_error(s, &v, 401, "unauthorized");
    let (s, v) = app
        .post(&plan_path, "admin-secret", json!({"plan": "pro"}))
        .await;
    assert_error(s, &v, 400, "invalid_input");
    let (s, v) = app
        .post(
            "/admin/accounts/nobody/plan",
            "admin-secret",
            json!({"plan": "enterprise"}),
        )
        .await;
    assert_error(s, &v, 404, "not_found");
    let (s, v) = app
        .post(&plan_path, "admin-secret", json!({"plan": "enterprise"}))
        .await;
    assert_eq!((s, v["plan"].clone()), (200, json!("enterprise")), "{v}");
    let (_, credits) = app.get("/api/credits", &token).await;
    assert_eq!(
        (credits["plan"].clone(), credits["unlimited"].clone()),
        (json!("enterprise"), json!(true))
    );
    // Unlimited shows a number a contract-only client can print.
    assert_eq!(
        (credits["credits"].clone(), credits["totalCredits"].clone()),
        (json!(100_000), json!(100_000)),
        "{credits}"
    );
    let (s, _) = app
        .post("/api/credits/select-plan", &token, json!({"plan": "free"}))
        .await;
    assert_eq!(s, 200);
    let (s, v) = app
        .post(
            "/api/credits/select-plan",
            &token,
            json!({"plan": "enterprise"}),
        )
        .await;
    assert_eq!(
        (s, v["plan"].clone()),
        (200, json!("enterprise")),
        "granted, so selectable"
    );
    let (s, v) = app
        .post(&plan_path, "admin-secret", json!({"plan": "free"}))
        .await;
    assert_eq!((s, v["plan"].clone()), (200, json!("free")), "{v}");
    let (s, v) = app
        .post(
            "/api/credits/select-plan",
            &token,
            json!({"plan": "enterprise"}),
        )
        .await;
    assert_error(s, &v, 402, "checkout_required");
}
