//! The conformance suite every object store backend must pass.

use super::*;

/// The behaviour every [`ObjectStore`] must show; panics on the first
/// deviation.
///
/// It works under the prefix `conformance/`, which it empties first and
/// leaves empty, and checks each [`url`](ObjectStore::url) with a plain HTTP
/// GET, so the URLs must be reachable from the test.
#[doc(hidden)]
pub async fn object_store_conformance(store: &dyn ObjectStore) {
    const ROOT: &str = "conformance/";
    store.delete_prefix(ROOT).await.expect("initial cleanup");
    let scratch = tempfile::tempdir().expect("scratch directory");

    // Bytes: put, get, size, overwrite, empty.
    let small = "conformance/a/one.txt";
    store
        .put_bytes(small, b"hello".to_vec(), "text/plain")
        .await
        .expect("put_bytes");
    assert_eq!(store.get_bytes(small).await.expect("get_bytes"), b"hello");
    assert_eq!(store.size(small).await.expect("size"), Some(5));
    store
        .put_bytes(small, b"hello again".to_vec(), "text/plain")
        .await
        .expect("overwrite");
    assert_eq!(
        store.get_bytes(small).await.expect("get_bytes"),
        b"hello again"
    );
    assert_eq!(store.size(small).await.expect("size"), Some(11));
    let empty = "conformance/empty";
    store
        .put_bytes(empty, Vec::new(), "application/octet-stream")
        .await
        .expect("put empty");
    assert_eq!(store.get_bytes(empty).await.expect("get empty"), b"");
    assert_eq!(store.size(empty).await.expect("size"), Some(0));

    // Missing objects.
    let missing = "conformance/missing.bin";
    assert!(matches!(
        store.get_bytes(missing).await,
        Err(StorageError::NotFound(_))
    ));
    assert_eq!(store.size(missing).await.expect("size of missing"), None);
    let not_written = scratch.path().join("not-written.bin");
    assert!(matches!(
        store.get_to_file(missing, &not_written).await,
        Err(StorageError::NotFound(_))
    ));
    assert!(!not_written.exists(), "a failed download left a file");
    store
        .delete(missing)
        .await
        .expect("deleting a missing object is not an error");

    // Files: a 20 MiB object streamed up and down.
    let big = "conformance/media/source.mp4";
    let content = pattern(20 * 1024 * 1024, 42);
    let upload = scratch.path().join("upload.mp4");
    std::fs::write(&upload, &content).expect("write upload file");
    assert_eq!(
        store
            .put_file(big, &upload, "video/mp4")
            .await
            .expect("put_file"),
        content.len() as u64
    );
    assert_eq!(
        store.size(big).await.expect("size"),
        Some(content.len() as u64)
    );
    let download = scratch.path().join("nested/dir/download.mp4");
    assert_eq!(
        store
            .get_to_file(big, &download)
            .await
            .expect("get_to_file"),
        content.len() as u64
    );
    let downloaded = std::fs::read(&download).expect("read download");
    assert!(downloaded == content, "downloaded file differs from upload");
    drop(downloaded);
    let small_file = scratch.path().join("small.txt");
    store
        .get_to_file(small, &small_file)
        .await
        .expect("get_to_file over nothing");
    store
        .put_bytes(small, b"replaced".to_vec(), "text/plain")
        .await
        .expect("overwrite");
    store
        .get_to_file(small, &small_file)
        .await
        .expect("get_to_file over an existing file");
    assert_eq!(std::fs::read(&small_file).expect("read"), b"replaced");

    // Keys that need escaping in URLs.
    let odd = "conformance/a b/ü+%&?#=.txt";
    store
        .put_bytes(odd, b"odd".to_vec(), "text/plain")
        .await
        .expect("put odd key");
    assert_eq!(store.get_bytes(odd).await.expect("get odd key"), b"odd");
    let sibling = "conformance/ab.txt";
    store
        .put_bytes(sibling, b"ab".to_vec(), "text/plain")
        .await
        .expect("put");

    // Listing: sorted, with sizes, by plain string prefix.
    let everything = vec![
        (odd.to_string(), 3),
        (small.to_string(), 8),
        (sibling.to_string(), 2),
        (empty.to_string(), 0),
        (big.to_string(), content.len() as u64),
    ];
    let mut sorted = everything.clone();
    sorted.sort();
    assert_eq!(store.list_prefix(ROOT).await.expect("list"), sorted);
    assert_eq!(
        store.list_prefix("conformance/a").await.expect("list"),
        [
            (odd.to_string(), 3),
            (small.to_string(), 8),
            (sibling.to_string(), 2)
        ]
    );
    assert_eq!(
        store.list_prefix("conformance/a/").await.expect("list"),
        [(small.to_string(), 8)]
    );
    assert_eq!(
        store
            .list_prefix("conformance/media/source.mp4")
            .await
            .expect("list"),
        [(big.to_string(), content.len() as u64)]
    );
    assert!(store
        .list_prefix("conformance/nothing/")
        .await
        .expect("list")
        .is_empty());

    // URLs download the object with a plain GET.
    let http = reqwest::Client::new();
    for (key, expected) in [
        (small, &b"replaced"[..]),
        (odd, &b"odd"[..]),
        (big, content.as_slice()),
    ] {
        let url = store.url(key, Duration::from_secs(600)).await.expect("url");
        let response = http.get(&url).send().await.expect("GET the object URL");
        assert!(
            response.status().is_success(),
            "GET {url}: {}",
            response.status()
        );
        let body = response.bytes().await.expect("read the object URL body");
        assert!(
            body.as_ref() == expected,
            "GET {url} returned different content"
        );
    }

    // Invalid keys are rejected before anything happens.
    for bad in [
        "", "/abs", "a/../b", "..", "./a", "a//b", "a/", "a\\b", "a\nb", "a\0b",
    ] {
        let invalid = |r: Result<()>| matches!(r, Err(StorageError::InvalidKey { .. }));
        assert!(
            invalid(store.put_bytes(bad, b"x".to_vec(), "text/plain").await),
            "put_bytes accepted {bad:?}"
        );
        assert!(
            invalid(store.put_file(bad, &upload, "video/mp4").await.map(drop)),
            "put_file accepted {bad:?}"
        );
        assert!(
            invalid(store.get_bytes(bad).await.map(drop)),
            "get_bytes accepted {bad:?}"
        );
        assert!(
            invalid(store.get_to_file(bad, &not_written).await.map(drop)),
            "get_to_file accepted {bad:?}"
        );
        assert!(
            invalid(store.size(bad).await.map(drop)),
            "size accepted {bad:?}"
        );
        assert!(invalid(store.delete(bad).await), "delete accepted {bad:?}");
        assert!(
            invalid(store.url(bad, Duration::from_secs(60)).await.map(drop)),
            "url accepted {bad:?}"
        );
    }
    for bad in ["/", "../", "a/../", "a//", "a\\"] {
        assert!(
            matches!(
                store.list_prefix(bad).await,
                Err(StorageError::InvalidKey { .. })
            ),
            "list_prefix accepted {bad:?}"
        );
        assert!(
            matches!(
                store.delete_prefix(bad).await,
                Err(StorageError::InvalidKey { .. })
            ),
            "delete_prefix accepted {bad:?}"
        );
    }

    // Deleting.
    store.delete(small).await.expect("delete");
    assert_eq!(store.size(small).await.expect("size"), None);
    assert!(matches!(
        store.get_bytes(small).await,
        Err(StorageError::NotFound(_))
    ));
    assert_eq!(
        store
            .delete_prefix("conformance/a")
            .await
            .expect("delete_prefix"),
        2
    );
    assert_eq!(
        store.list_prefix(ROOT).await.expect("list"),
        [
            (empty.to_string(), 0),
            (big.to_string(), content.len() as u64)
        ]
    );
    assert_eq!(store.delete_prefix(ROOT).await.expect("delete_prefix"), 2);
    assert!(store.list_prefix(ROOT).await.expect("list").is_empty());
    assert_eq!(store.delete_prefix(ROOT).await.expect("delete_prefix"), 0);
}
