//! Tests of `objects`.

use super::*;
use percent_encoding::percent_decode_str;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

const SECRET: &[u8] = b"test secret";

/// A minimal `/media/` endpoint as the HTTP layer implements it: decode
/// the key, verify the signature, send the file.
async fn serve_media(listener: TcpListener, store: Arc<LocalStore>) {
    while let Ok((socket, _peer)) = listener.accept().await {
        tokio::spawn(answer(socket, Arc::clone(&store)));
    }
}

async fn answer(socket: TcpStream, store: Arc<LocalStore>) {
    let mut socket = BufReader::new(socket);
    let mut request_line = String::new();
    if socket.read_line(&mut request_line).await.is_err() {
        return;
    }
    loop {
        let mut header = String::new();
        match socket.read_line(&mut header).await {
            Ok(0) | Err(_) => return,
            Ok(_) if header == "\r\n" => break,
            Ok(_) => {}
        }
    }
    let target = request_line.split(' ').nth(1).unwrap_or_default();
    let authorized = target.strip_prefix("/media/").and_then(|rest| {
        let (path, query) = rest.split_once('?')?;
        let key = percent_decode_str(path).decode_utf8().ok()?.into_owned();
        let mut expires = None;
        let mut sig = None;
        for pair in query.split('&') {
            match pair.split_once('=')? {
                ("expires", value) => expires = value.parse::<u64>().ok(),
                ("sig", value) => sig = Some(value),
                _ => {}
            }
        }
        store
            .verify(&key, expires?, sig?, now_unix())
            .then(|| store.path_of(&key).ok())
            .flatten()
    });
    let socket = socket.get_mut();
    let file = match authorized {
        Some(path) => tokio::fs::read(path).await.ok(),
        None => None,
    };
    let response = match file {
        Some(body) => {
            let mut response = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )
            .into_bytes();
            response.extend_from_slice(&body);
            response
        }
        None => {
            b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec()
        }
    };
    let _client_gone = socket.write_all(&response).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_store_conforms() {
    let dir = tempfile::tempdir().expect("tempdir");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}/", listener.local_addr().expect("address"));
    let store = Arc::new(LocalStore::new(dir.path(), base, SECRET).expect("open"));
    let server = tokio::spawn(serve_media(listener, Arc::clone(&store)));
    object_store_conformance(store.as_ref()).await;
    server.abort();

    let staging: Vec<_> = fs::read_dir(dir.path().join("staging"))
        .expect("staging dir")
        .collect();
    assert!(staging.is_empty(), "staging files left behind: {staging:?}");
    let objects: Vec<_> = fs::read_dir(dir.path().join("objects"))
        .expect("objects dir")
        .collect();
    assert!(
        objects.is_empty(),
        "empty directories left behind: {objects:?}"
    );
}

fn query_param<'a>(url: &'a str, name: &str) -> &'a str {
    let (_, query) = url.split_once('?').expect("URL has a query");
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
        .expect("query parameter present")
}

#[tokio::test]
async fn local_urls_are_signed_and_expire() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = LocalStore::new(dir.path(), "https://clips.example.com/", SECRET).expect("open");
    let key = "projects/p1/clip 1.mp4";
    let url = store
        .url(key, Duration::from_secs(3600))
        .await
        .expect("url");
    assert!(
        url.starts_with("https://clips.example.com/media/projects/p1/clip%201.mp4?expires="),
        "{url}"
    );
    let expires: u64 = query_param(&url, "expires").parse().expect("expires");
    let sig = query_param(&url, "sig");
    let now = now_unix();
    assert!(expires >= now + 3590 && expires <= now + 3610, "{expires}");

    assert!(store.verify(key, expires, sig, now));
    assert!(
        store.verify(key, expires, sig, expires),
        "valid up to its expiry"
    );
    assert!(!store.verify(key, expires, sig, expires + 1), "expired");
    assert!(!store.verify(key, expires + 1, sig, now), "tampered expiry");
    assert!(
        !store.verify("projects/p1/clip 2.mp4", expires, sig, now),
        "other key"
    );
    let mut tampered = sig.to_string();
    let last = if tampered.ends_with('0') { "1" } else { "0" };
    tampered.replace_range(tampered.len() - 1.., last);
    assert!(
        !store.verify(key, expires, &tampered, now),
        "tampered signature"
    );
    assert!(!store.verify(key, expires, "not hex", now));
    assert!(!store.verify(key, expires, "", now));
    let other =
        LocalStore::new(dir.path(), "https://clips.example.com", b"other".to_vec()).expect("open");
    assert!(!other.verify(key, expires, sig, now), "other secret");
}

#[test]
fn path_of_stays_inside_the_root() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = LocalStore::new(dir.path(), "http://localhost", SECRET).expect("open");
    assert_eq!(
        store.path_of("a/b.mp4").expect("valid key"),
        dir.path().join("objects/a/b.mp4")
    );
    for bad in ["../etc/passwd", "a/../../b", "/etc/passwd", "a\\..\\b", ""] {
        assert!(
            matches!(store.path_of(bad), Err(StorageError::InvalidKey { .. })),
            "{bad:?}"
        );
    }
}

#[test]
fn local_store_rejects_an_empty_secret() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert!(matches!(
        LocalStore::new(dir.path(), "http://localhost", Vec::new()),
        Err(StorageError::Config(_))
    ));
}

#[test]
fn prefixes_allow_partial_last_segments() {
    for ok in ["", "a", "a/", "a/b", "a/..x", "a/.", "a/.."] {
        assert!(validate_prefix(ok).is_ok(), "{ok:?}");
    }
    for bad in ["/", "../", "a/../b", "a//b", "./x", "a\\", "a\n"] {
        assert!(validate_prefix(bad).is_err(), "{bad:?}");
    }
    assert!(validate_key(&"k".repeat(MAX_KEY_LEN)).is_ok());
    assert!(validate_key(&"k".repeat(MAX_KEY_LEN + 1)).is_err());
}
