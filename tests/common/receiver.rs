//! A local webhook receiver for the tests: records every request and
//! answers with the status it is told to, after an optional delay.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hmac::{Hmac, KeyInit, Mac};
use poem::web::Data;
use poem::{handler, EndpointExt, Request};
use sha2::Sha256;

/// One request the receiver got, with the status it answered.
#[derive(Clone, Debug)]
pub struct Hit {
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
    pub answered: u16,
}

#[derive(Default)]
pub struct Receiver {
    hits: Mutex<Vec<Hit>>,
    /// What to answer (200 unless set).
    pub status: AtomicU16,
    /// Milliseconds to wait before answering.
    pub delay_ms: AtomicU64,
}

impl Receiver {
    pub fn hits(&self) -> Vec<Hit> {
        self.hits.lock().unwrap().clone()
    }

    pub async fn wait_for(&self, what: &str, pred: impl Fn(&[Hit]) -> bool) -> Vec<Hit> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let hits = self.hits();
            if pred(&hits) {
                return hits;
            }
            assert!(Instant::now() < deadline, "never saw {what}: {hits:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

#[handler]
async fn receive(req: &Request, body: Vec<u8>, r: Data<&Arc<Receiver>>) -> poem::http::StatusCode {
    let delay = r.delay_ms.load(Ordering::SeqCst);
    if delay > 0 {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    let status = match r.status.load(Ordering::SeqCst) {
        0 => 200,
        s => s,
    };
    let headers = req
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    r.hits.lock().unwrap().push(Hit {
        headers,
        body,
        answered: status,
    });
    poem::http::StatusCode::from_u16(status).unwrap()
}

/// Starts a receiver on 127.0.0.1; returns its URL.
pub async fn receiver() -> (String, Arc<Receiver>) {
    let probe = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = probe.local_addr().unwrap().port();
    drop(probe);
    let r = Arc::new(Receiver::default());
    let app = poem::Route::new()
        .at("/hook", poem::post(receive))
        .data(r.clone());
    tokio::spawn(
        poem::Server::new(poem::listener::TcpListener::bind(format!(
            "127.0.0.1:{port}"
        )))
        .run(app),
    );
    let url = format!("http://127.0.0.1:{port}/hook");
    // Wait until it accepts connections.
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (url, r)
}

/// What a receiver does with `Clipforge-Signature` (as docs/guide.md shows).
pub fn verify(secret: &str, header: &str, body: &[u8]) -> bool {
    let mut t = None;
    let mut sigs = Vec::new();
    for part in header.split(',') {
        match part.split_once('=') {
            Some(("t", v)) => t = Some(v.to_string()),
            Some(("v1", v)) => sigs.push(v.to_string()),
            _ => {}
        }
    }
    let Some(t) = t else { return false };
    let age = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
        - t.parse::<i64>().unwrap();
    if age.abs() > 300 {
        return false;
    }
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.").as_bytes());
    mac.update(body);
    let expected = hex::encode(mac.finalize().into_bytes());
    sigs.contains(&expected)
}
