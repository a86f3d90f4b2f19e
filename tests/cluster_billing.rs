//! Stripe webhooks and admin routes on any node of a cluster (real
//! processes on 127.0.0.1, records in a real PostgreSQL, fake Stripe): a
//! delivery reaching a node that does not host its account is sent to the
//! node that does, applied once, and seen through every node.

#![recursion_limit = "256"]

mod common;
mod fake_stripe;

#[path = "../actors/tests/common/postgres.rs"]
mod postgres;

mod cluster_common;

use clipforge_actors::accounts::account_id_for_email;
use clipforge_actors::cluster::placement;
use cluster_common::{shared_env_local, Node, ADMIN};
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
