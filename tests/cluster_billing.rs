//! Webhooks both ways on a cluster (real processes on 127.0.0.1, records
//! in a real PostgreSQL): a Stripe delivery reaching a node that does not
//! host its account is sent to the node that does, applied once, and seen
//! through every node (admin routes too); Clipforge's own webhook events,
//! swept by every node, are each delivered by one node exactly once.

#![recursion_limit = "256"]

mod common;
mod fake_stripe;

use clipforge_test_support::postgres;

mod cluster_common;

use clipforge_actors::accounts::account_id_for_email;
use clipforge_actors::cluster::placement;
use cluster_common::{shared_env_local, Node, ADMIN};
use common::receiver::receiver;
use fake_stripe::*;
use postgres::TestPostgres;
use serde_json::{json, Value};

/// A node with the shared records and media folder, billing through the
/// local Stripe at `stripe`.
fn node(pg: &TestPostgres, stripe: &str, name: &str, seeds: &[&Node], media: &str) -> Node {
    let mut env = shared_env_local(pg, media);
    env.extend(
        [
            ("CLIPFORGE_BILLING_STRIPE_SECRET_KEY", SECRET_KEY),
            ("CLIPFORGE_BILLING_WEBHOOK_SECRET", WEBHOOK_SECRET),
            ("CLIPFORGE_BILLING_SUCCESS_URL", SUCCESS_URL),
            ("CLIPFORGE_BILLING_CANCEL_URL", CANCEL_URL),
            ("CLIPFORGE_BILLING_STRIPE_API_BASE", stripe),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    for (plan, freq, id) in PRICES {
        env.push((
            format!(
                "CLIPFORGE_BILLING_PRICE_{}_{}",
                plan.to_uppercase(),
                freq.to_uppercase()
            ),
            id.to_string(),
        ));
    }
    Node::start(name, seeds, &env)
}

/// Sends a signed delivery to `n`; (status, body, node that applied it).
async fn deliver(n: &Node, name: &str, event: &Value) -> (u16, Value, String) {
    let payload = event.to_string();
    let r = n
        .app
        .client
        .post(format!("{}/api/stripe/webhook", n.app.base))
        .header("content-type", "application/json; charset=utf-8")
        .header(
            "stripe-signature",
            signature(&payload, WEBHOOK_SECRET, now()),
        )
        .body(payload)
        .send()
        .await
        .unwrap();
    let by = r
        .headers()
        .get("x-clipforge-node")
        .and_then(|v| v.to_str().ok())
        .unwrap_or(name)
        .to_string();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null), by)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stripe_delivery_to_a_node_not_hosting_the_account_is_applied_by_its_owner() {
    let pg = TestPostgres::start();
    let (stripe, base) = start_stripe().await;
    let media = tempfile::tempdir().unwrap();
    let media = media.path().to_str().unwrap().to_string();
    let a = node(&pg, &base, "node-a", &[], &media);
    let b = node(&pg, &base, "node-b", &[&a], &media);
    a.wait_up(&["node-b"]).await;
    b.wait_up(&["node-a"]).await;
    // An account node-a hosts; its deliveries are sent to node-b.
    let email = (0..)
        .map(|i| format!("payer-{i}@example.com"))
        .find(|e| {
            placement::owner(&account_id_for_email(e), ["node-a", "node-b"]) == Some("node-a")
        })
        .unwrap();
    let sub = subscribe(&b.app, &stripe, &email, "pro", "yearly").await;

    let completed = event(
        "evt_cluster_1",
        "checkout.session.completed",
        sub.paid.clone(),
    );
    let (s, v, by) = deliver(&b, "node-b", &completed).await;
    assert_eq!((s, v["result"].clone()), (200, json!("changed")), "{v}");
    assert_eq!(by, "node-a", "applied by the account's node");
    for n in [&a, &b] {
        assert_eq!(n.app.credits(&sub.token).await, ("pro".into(), 1200, 1200));
    }
    // Replayed through either node: applied once.
    for (n, name) in [(&a, "node-a"), (&b, "node-b")] {
        let (s, v, by) = deliver(n, name, &completed).await;
        assert_eq!((s, v["result"].clone()), (200, json!("duplicate")), "{v}");
        assert_eq!(by, "node-a");
    }
    // A forged delivery is refused by the owner with the uniform body.
    let payload = completed.to_string();
    let r = b
        .app
        .client
        .post(format!("{}/api/stripe/webhook", b.app.base))
        .header("content-type", "application/json")
        .header(
            "stripe-signature",
            signature(&payload, "whsec_wrong", now()),
        )
        .body(payload)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    let v: Value = r.json().await.unwrap();
    assert!(v["error"].is_string() && v["message"].is_string(), "{v}");
    // An event naming no account is answered where it arrives.
    let (s, v, by) = deliver(&b, "node-b", &event("evt_none", "invoice.paid", json!({}))).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(by, "node-b");

    // Admin routes answer on any node from the shared records.
    for n in [&a, &b] {
        let (s, v) = n.app.get("/admin/cluster", ADMIN).await;
        assert_eq!(s, 200, "{v}");
        assert_eq!(v["nodes"].as_array().unwrap().len(), 2, "{v}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_webhook_event_is_delivered_by_one_node_once() {
    use std::sync::atomic::Ordering;
    let pg = TestPostgres::start();
    let media = tempfile::tempdir().unwrap();
    let mut env = shared_env_local(&pg, media.path().to_str().unwrap());
    // Both nodes read the queue every 20 ms: they race for every event.
    env.extend(
        [
            ("CLIPFORGE_WEBHOOKS_ALLOW_PRIVATE_TARGETS", "true"),
            ("CLIPFORGE_WEBHOOKS_POLL_MS", "20"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    let a = Node::start("node-a", &[], &env);
    let b = Node::start("node-b", &[&a], &env);
    a.wait_up(&["node-b"]).await;
    b.wait_up(&["node-a"]).await;
    let (url, rx) = receiver().await;
    rx.delay_ms.store(150, Ordering::SeqCst);
    let token = a.app.sign_up("cluster-hooks@example.com").await;
    let (s, hook) = b
        .app
        .post(
            "/api/webhooks",
            &token,
            json!({"url": url, "events": ["project.completed"]}),
        )
        .await;
    assert_eq!(s, 201, "{hook}");
    let id = hook["id"].as_str().unwrap().to_string();
    let mut sent = Vec::new();
    for i in 0..12 {
        let n = if i % 2 == 0 { &a } else { &b };
        let (s, d) = n
            .app
            .post(&format!("/api/webhooks/{id}/test"), &token, json!({}))
            .await;
        assert_eq!(s, 202, "{d}");
        sent.push(d["id"].as_str().unwrap().to_string());
    }
    rx.wait_for("every event", |h| {
        sent.iter()
            .all(|id| h.iter().any(|h| h.headers["clipforge-delivery"] == *id))
    })
    .await;
    // Time for a second delivery of any of them to show (there must be none).
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let hits = rx.hits();
    for d in &sent {
        let n = hits
            .iter()
            .filter(|h| h.headers["clipforge-delivery"] == *d)
            .count();
        assert_eq!(n, 1, "event {d} delivered {n} times");
    }
    let (s, log) = a
        .app
        .get(&format!("/api/webhooks/{id}/deliveries?limit=50"), &token)
        .await;
    assert_eq!(s, 200, "{log}");
    let log = log["deliveries"].as_array().unwrap();
    assert_eq!(log.len(), 12);
    assert!(
        log.iter()
            .all(|d| d["status"] == "delivered" && d["attempts"] == 1),
        "{log:?}"
    );
}
