use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use super::delivery::{self, Deliverer, DeliverySettings, Render, ViewError};
use super::*;
use crate::storage::kv::{encode, MemoryStore};

async fn hook(kv: &dyn KvStore, user: &str, events: &[EventType]) -> WebhookView {
    create(kv, user, "https://example.com/hook", events.to_vec(), 1_000)
        .await
        .expect("create")
}

fn queue_len(kv: &dyn KvStore) -> usize {
    kv.count_prefix(QUEUE, b"").expect("count")
}

#[test]
fn private_addresses_are_told_apart() {
    for private in [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "::1",
        "fe80::1",
        "fd00::1",
        "::ffff:127.0.0.1",
        "64:ff9b::a00:1",
    ] {
        let ip: IpAddr = private.parse().unwrap();
        assert!(!target::is_public(ip), "{private} taken for public");
    }
    for public in ["93.184.216.34", "8.8.8.8", "2606:4700::1111"] {
        let ip: IpAddr = public.parse().unwrap();
        assert!(target::is_public(ip), "{public} taken for private");
    }
}

#[test]
fn urls_are_checked() {
    assert!(target::check_url("https://hooks.example.com/x?y=1", false).is_ok());
    for bad in [
        "ftp://example.com/",
        "https://user:pw@example.com/",
        "not a url",
        "https://",
    ] {
        assert!(
            matches!(target::check_url(bad, false), Err(WebhookError::Invalid(_))),
            "{bad} accepted"
        );
    }
    for private in [
        "http://127.0.0.1:8080/h",
        "http://localhost/h",
        "http://[::1]/h",
        "http://169.254.169.254/latest/meta-data",
    ] {
        assert!(
            matches!(
                target::check_url(private, false),
                Err(WebhookError::PrivateTarget(_))
            ),
            "{private} accepted"
        );
        assert!(target::check_url(private, true).is_ok());
    }
    let long = format!("https://example.com/{}", "a".repeat(URL_MAX_CHARS));
    assert!(target::check_url(&long, false).is_err());
}

#[tokio::test]
async fn events_go_to_subscribed_enabled_webhooks_only() {
    let kv = MemoryStore::new();
    let completed = hook(&kv, "u1", &[EventType::ProjectCompleted]).await;
    let posts = hook(
        &kv,
        "u1",
        &[EventType::PostPublished, EventType::PostFailed],
    )
    .await;
    hook(&kv, "u2", &[EventType::ProjectCompleted]).await;
    let subject = Subject::Credits {
        remaining: 1,
        monthly: 60,
    };
    let ops = outbox::enqueue(&kv, "u1", EventType::ProjectCompleted, &subject, 2_000)
        .await
        .unwrap();
    kv.apply(ops).unwrap();
    let (one, total) = deliveries(&kv, "u1", &completed.id, 0, 10).await.unwrap();
    assert_eq!((one.len(), total), (1, 1));
    assert_eq!(one[0].status, DeliveryStatus::Pending);
    assert_eq!(deliveries(&kv, "u1", &posts.id, 0, 10).await.unwrap().1, 0);
    assert_eq!(queue_len(&kv), 1, "only u1's subscribed webhook");
    // Another account's webhook is not found under u1.
    assert!(matches!(
        deliveries(&kv, "u2", &completed.id, 0, 10).await,
        Err(WebhookError::NotFound(_))
    ));
    // Removing the webhook takes its deliveries and queue entries.
    remove(&kv, "u1", &completed.id).await.unwrap();
    assert_eq!(queue_len(&kv), 0);
    assert_eq!(list(&kv, "u1").await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_webhook_keeps_waiting_deliveries_and_its_newest_finished_ones() {
    let kv = MemoryStore::new();
    let h = hook(&kv, "u1", &[EventType::CreditsLow]).await;
    let subject = Subject::Credits {
        remaining: 1,
        monthly: 60,
    };
    let extra = 7;
    for i in 0..MAX_DELIVERIES as i64 + extra {
        let ops = outbox::enqueue(&kv, "u1", EventType::CreditsLow, &subject, 10_000 + i)
            .await
            .unwrap();
        kv.apply(ops).unwrap();
    }
    // None is dropped while it waits.
    let (_, total) = deliveries(&kv, "u1", &h.id, 0, 1).await.unwrap();
    assert_eq!(total, MAX_DELIVERIES + extra as usize);
    assert_eq!(queue_len(&kv), total);
    // Once delivered, the oldest go.
    for (k, v) in kv.scan_prefix(DELIVERIES, b"").unwrap() {
        let mut d: StoredDelivery = decode(&v).unwrap();
        kv.delete(QUEUE, d.queue_key.as_ref().unwrap()).unwrap();
        d.status = DeliveryStatus::Delivered;
        d.queue_key = None;
        kv.put(DELIVERIES, &k, &encode(&d).unwrap()).unwrap();
    }
    let ops = outbox::enqueue(&kv, "u1", EventType::CreditsLow, &subject, 20_000)
        .await
        .unwrap();
    kv.apply(ops).unwrap();
    let (page, total) = deliveries(&kv, "u1", &h.id, 0, 1).await.unwrap();
    assert_eq!(total, MAX_DELIVERIES);
    assert_eq!(page[0].created_at, 20_000, "newest first");
    assert_eq!(queue_len(&kv), 1);
}

#[tokio::test]
async fn a_full_backlog_refuses_more() {
    let kv = MemoryStore::new();
    let h = hook(&kv, "u1", &[EventType::CreditsLow]).await;
    let subject = Subject::Credits {
        remaining: 1,
        monthly: 60,
    };
    for i in 0..(MAX_DELIVERIES + MAX_PENDING) as i64 {
        kv.apply(
            outbox::enqueue(&kv, "u1", EventType::CreditsLow, &subject, i)
                .await
                .unwrap(),
        )
        .unwrap();
    }
    let ops = outbox::enqueue(&kv, "u1", EventType::CreditsLow, &subject, 5_000)
        .await
        .unwrap();
    assert!(ops.is_empty(), "not queued past the backlog");
    assert!(matches!(
        test(&kv, "u1", &h.id, 5_001).await,
        Err(WebhookError::Backlog)
    ));
}

#[tokio::test]
async fn at_most_ten_webhooks_and_known_events() {
    let kv = MemoryStore::new();
    for _ in 0..MAX_WEBHOOKS {
        hook(&kv, "u1", &[EventType::CreditsLow]).await;
    }
    assert!(matches!(
        create(&kv, "u1", "https://e.com/", vec![EventType::CreditsLow], 1).await,
        Err(WebhookError::TooMany)
    ));
    assert!(
        parse_events(&["project.completed", "project.completed"])
            .unwrap()
            .len()
            == 1
    );
    assert!(parse_events(&["webhook.test"]).is_err());
    assert!(parse_events::<&str>(&[]).is_err());
}

struct NoViews;
impl Render for NoViews {
    fn data(&self, _: &Subject) -> std::result::Result<serde_json::Value, ViewError> {
        Ok(serde_json::json!({}))
    }
}

/// A receiver that answers every request with `status`, counting them.
async fn receiver(status: u16) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let seen = Arc::new(AtomicUsize::new(0));
    let count = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let mut buf = vec![0u8; 65536];
            let _ = s.read(&mut buf).await;
            count.fetch_add(1, Ordering::SeqCst);
            let answer =
                format!("HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
            let _ = s.write_all(answer.as_bytes()).await;
        }
    });
    (url, seen)
}

fn settings() -> DeliverySettings {
    DeliverySettings {
        attempt_timeout: Duration::from_secs(5),
        retry_base: Duration::from_millis(1),
        retry_max: Duration::from_millis(1),
        retry_for: Duration::from_secs(3600),
        disable_after: Duration::ZERO,
        poll: Duration::from_millis(10),
        concurrency: 2,
        allow_private: true,
        proxy: None,
    }
}

#[tokio::test]
async fn failures_are_retried_and_disable_the_webhook() {
    let kv: Arc<dyn KvStore> = Arc::new(MemoryStore::new());
    let (url, seen) = receiver(500).await;
    let h = create(&*kv, "u1", &url, vec![EventType::CreditsLow], 1)
        .await
        .unwrap();
    let disabled = Arc::new(std::sync::Mutex::new(Vec::new()));
    let told = disabled.clone();
    let d = Arc::new(
        Deliverer::new(
            kv.clone(),
            settings(),
            Arc::new(NoViews),
            Arc::new(move |u: String, url: String| {
                told.lock().unwrap().push((u, url));
                Box::pin(async {})
            }),
        )
        .unwrap(),
    );
    let subject = Subject::Credits {
        remaining: 1,
        monthly: 60,
    };
    let now = delivery::now_ms();
    kv.apply(
        outbox::enqueue(&*kv, "u1", EventType::CreditsLow, &subject, now)
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(d.sweep().await.unwrap(), 1);
    let (page, _) = deliveries(&*kv, "u1", &h.id, 0, 1).await.unwrap();
    assert_eq!(page[0].attempts, 1);
    assert_eq!(page[0].status, DeliveryStatus::Pending, "retried later");
    assert_eq!(page[0].response_code, Some(500));
    assert!(page[0].next_attempt_at.is_some());
    // disable_after is zero: the first failure disabled the webhook.
    assert_eq!(disabled.lock().unwrap().len(), 1);
    assert!(!list(&*kv, "u1").await.unwrap()[0].enabled);
    // A disabled webhook's pending delivery fails without a request.
    tokio::time::sleep(Duration::from_millis(5)).await;
    d.sweep().await.unwrap();
    let (page, _) = deliveries(&*kv, "u1", &h.id, 0, 1).await.unwrap();
    assert_eq!(page[0].status, DeliveryStatus::Failed);
    assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(queue_len(&*kv), 0);
}

#[tokio::test]
async fn a_success_is_recorded_once() {
    let kv: Arc<dyn KvStore> = Arc::new(MemoryStore::new());
    let (url, seen) = receiver(204).await;
    let h = create(&*kv, "u1", &url, vec![EventType::CreditsLow], 1)
        .await
        .unwrap();
    let d = Arc::new(
        Deliverer::new(
            kv.clone(),
            settings(),
            Arc::new(NoViews),
            Arc::new(|_: String, _: String| Box::pin(async {})),
        )
        .unwrap(),
    );
    let delivery = test(&*kv, "u1", &h.id, delivery::now_ms()).await.unwrap();
    d.sweep().await.unwrap();
    d.sweep().await.unwrap();
    let (page, _) = deliveries(&*kv, "u1", &h.id, 0, 5).await.unwrap();
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].id, delivery.id);
    assert_eq!(page[0].status, DeliveryStatus::Delivered);
    assert_eq!(page[0].response_code, Some(204));
    assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 1);
    // Redelivery sends it again under the same id.
    redeliver(&*kv, "u1", &h.id, &delivery.id, delivery::now_ms())
        .await
        .unwrap();
    d.sweep().await.unwrap();
    assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 2);
    let (page, _) = deliveries(&*kv, "u1", &h.id, 0, 5).await.unwrap();
    assert_eq!((page.len(), page[0].attempts), (1, 2));
}
