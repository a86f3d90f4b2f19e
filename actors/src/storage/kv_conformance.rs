//! [`kv_conformance`]: the behaviour every [`KvStore`] must show, run by
//! each backend's tests (`kv_tests.rs`, `kv_postgres_tests.rs`).

use super::kv::{KvOp, KvStore, StorageError};

/// The behaviour every [`KvStore`] must show; panics on the first deviation.
///
/// It uses the trees `conformance.a` and `conformance.b`, empties them
/// first and leaves them empty. Durability across a reopen depends on the
/// backend and is tested beside each one.
#[doc(hidden)]
pub fn kv_conformance(kv: &dyn KvStore) {
    const A: &str = "conformance.a";
    const B: &str = "conformance.b";
    fn clear(kv: &dyn KvStore, tree: &str) {
        for (key, _) in kv.scan_prefix(tree, b"").expect("scan for cleanup") {
            kv.delete(tree, &key).expect("delete for cleanup");
        }
        assert_eq!(kv.count_prefix(tree, b"").expect("count"), 0);
    }
    fn keys(entries: &[(Vec<u8>, Vec<u8>)]) -> Vec<&[u8]> {
        entries.iter().map(|(k, _)| k.as_slice()).collect()
    }
    clear(kv, A);
    clear(kv, B);

    // Missing keys.
    assert_eq!(kv.get(A, b"missing").expect("get missing"), None);
    kv.delete(A, b"missing")
        .expect("deleting a missing key is not an error");

    // Put, get, overwrite, delete.
    kv.put(A, b"k", b"v1").expect("put");
    assert_eq!(kv.get(A, b"k").expect("get"), Some(b"v1".to_vec()));
    assert_eq!(kv.get(B, b"k").expect("get other tree"), None);
    kv.put(A, b"k", b"value two").expect("overwrite");
    assert_eq!(kv.get(A, b"k").expect("get"), Some(b"value two".to_vec()));
    kv.delete(A, b"k").expect("delete");
    assert_eq!(kv.get(A, b"k").expect("get deleted"), None);

    // Prefix scans: ordered by bytes, isolated per tree and per prefix.
    for key in ["user/2", "order/1", "user/10", "userx", "user/1", "use"] {
        kv.put(A, key.as_bytes(), format!("a:{key}").as_bytes())
            .expect("put for scan");
    }
    kv.put(B, b"user/3", b"b:user/3").expect("put other tree");
    let users = kv.scan_prefix(A, b"user/").expect("scan");
    assert_eq!(
        keys(&users),
        [&b"user/1"[..], b"user/10", b"user/2"],
        "scan_prefix must return only the prefix, in byte order"
    );
    assert_eq!(users[0].1, b"a:user/1");
    assert_eq!(
        keys(&kv.scan_prefix(A, b"user").expect("scan")),
        [&b"user/1"[..], b"user/10", b"user/2", b"userx"]
    );
    assert_eq!(
        keys(&kv.scan_prefix(A, b"").expect("scan all")),
        [
            &b"order/1"[..],
            b"use",
            b"user/1",
            b"user/10",
            b"user/2",
            b"userx"
        ]
    );
    assert!(kv.scan_prefix(A, b"nothing").expect("scan").is_empty());
    assert_eq!(
        kv.scan_prefix(B, b"user/").expect("scan other tree"),
        [(b"user/3".to_vec(), b"b:user/3".to_vec())]
    );
    assert_eq!(kv.count_prefix(A, b"user/").expect("count"), 3);
    assert_eq!(
        kv.scan_prefix_page(A, b"user/", 1, 1).expect("page"),
        [(b"user/10".to_vec(), b"a:user/10".to_vec())]
    );
    assert!(kv
        .scan_prefix_page(A, b"user/", 3, 5)
        .expect("page")
        .is_empty());
    assert_eq!(kv.count_prefix(A, b"user").expect("count"), 4);
    assert_eq!(kv.count_prefix(A, b"").expect("count all"), 6);
    assert_eq!(kv.count_prefix(A, b"nothing").expect("count"), 0);
    assert_eq!(kv.count_prefix(B, b"").expect("count other tree"), 1);

    // Prefixes of 0xff bytes have no successor to bound a range with.
    for key in [&[0xff][..], &[0xff, 0x00], &[0xff, 0xff], &[0xfe, 0xff]] {
        kv.put(B, key, b"high").expect("put high key");
    }
    assert_eq!(
        keys(&kv.scan_prefix(B, &[0xff]).expect("scan high")),
        [&[0xff][..], &[0xff, 0x00], &[0xff, 0xff]]
    );
    assert_eq!(kv.count_prefix(B, &[0xff, 0xff]).expect("count high"), 1);

    // Atomic batch across two trees, applied in order.
    kv.apply(vec![
        KvOp::Put {
            tree: A.into(),
            key: b"batch/1".to_vec(),
            value: b"one".to_vec(),
        },
        KvOp::Put {
            tree: B.into(),
            key: b"batch/2".to_vec(),
            value: b"two".to_vec(),
        },
        KvOp::Delete {
            tree: A.into(),
            key: b"order/1".to_vec(),
        },
        KvOp::Put {
            tree: A.into(),
            key: b"batch/gone".to_vec(),
            value: b"short-lived".to_vec(),
        },
        KvOp::Delete {
            tree: A.into(),
            key: b"batch/gone".to_vec(),
        },
        KvOp::Delete {
            tree: B.into(),
            key: b"never-existed".to_vec(),
        },
    ])
    .expect("apply batch");
    assert_eq!(kv.get(A, b"batch/1").expect("get"), Some(b"one".to_vec()));
    assert_eq!(kv.get(B, b"batch/2").expect("get"), Some(b"two".to_vec()));
    assert_eq!(kv.get(A, b"order/1").expect("get"), None);
    assert_eq!(kv.get(A, b"batch/gone").expect("get"), None);
    assert_eq!(kv.get(B, b"batch/1").expect("get"), None);
    kv.apply(Vec::new()).expect("an empty batch is a no-op");

    // Large values.
    let large: Vec<u8> = (0..1024 * 1024u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    kv.put(A, b"large", &large).expect("put 1 MiB");
    assert!(kv.get(A, b"large").expect("get 1 MiB") == Some(large.clone()));
    let mut larger = large.clone();
    larger.extend_from_slice(b"tail");
    kv.apply(vec![KvOp::Put {
        tree: B.into(),
        key: b"large".to_vec(),
        value: larger.clone(),
    }])
    .expect("batch with 1 MiB");
    assert!(kv.get(B, b"large").expect("get 1 MiB") == Some(larger));

    // Empty key and empty value are ordinary entries.
    kv.put(A, b"", b"").expect("put empty key");
    assert_eq!(kv.get(A, b"").expect("get empty key"), Some(Vec::new()));
    kv.put(A, b"empty-value", b"").expect("put empty value");
    assert_eq!(kv.get(A, b"empty-value").expect("get"), Some(Vec::new()));
    let all = kv.scan_prefix(A, b"").expect("scan all");
    assert_eq!(all.first(), Some(&(Vec::new(), Vec::new())));
    kv.delete(A, b"").expect("delete empty key");
    assert_eq!(kv.get(A, b"").expect("get"), None);

    // Preconditions: a batch applies only when every expectation holds
    // (checked on the values before the batch), else it writes nothing.
    let put = |key: &[u8], value: &[u8]| KvOp::Put {
        tree: B.into(),
        key: key.to_vec(),
        value: value.to_vec(),
    };
    let expect = |key: &[u8], value: Option<&[u8]>| KvOp::Expect {
        tree: B.into(),
        key: key.to_vec(),
        value: value.map(<[u8]>::to_vec),
    };
    kv.apply(vec![put(b"version", b"2"), expect(b"version", None)])
        .expect("an absent key meets an expectation of absence");
    assert_eq!(kv.get(B, b"version").expect("get"), Some(b"2".to_vec()));
    for stale in [expect(b"version", None), expect(b"version", Some(b"1"))] {
        let err = kv
            .apply(vec![
                stale,
                put(b"version", b"3"),
                KvOp::Put {
                    tree: A.into(),
                    key: b"side".to_vec(),
                    value: b"effect".to_vec(),
                },
            ])
            .expect_err("a stale expectation refuses the batch");
        assert!(matches!(err, StorageError::Conflict(_)), "{err:?}");
        assert_eq!(kv.get(B, b"version").expect("get"), Some(b"2".to_vec()));
        assert_eq!(kv.get(A, b"side").expect("get"), None, "nothing written");
    }
    kv.apply(vec![
        expect(b"version", Some(b"2")),
        put(b"version", b"3"),
        expect(b"free", None),
        put(b"free", b"taken"),
    ])
    .expect("expectations that hold");
    assert_eq!(kv.get(B, b"version").expect("get"), Some(b"3".to_vec()));
    assert_eq!(kv.get(B, b"free").expect("get"), Some(b"taken".to_vec()));

    kv.flush().expect("flush");
    clear(kv, A);
    clear(kv, B);
}

/// The async side of a [`KvStore`] ([`KvStore::get_async`],
/// [`KvStore::scan_prefix_async`], [`KvStore::apply_async`]) must answer as
/// the blocking methods do; panics on the first deviation. It uses the tree
/// `conformance.async`, empties it first and leaves it empty.
#[doc(hidden)]
pub async fn kv_conformance_async(kv: &dyn KvStore) {
    const T: &str = "conformance.async";
    let put = |key: &[u8], value: &[u8]| KvOp::Put {
        tree: T.into(),
        key: key.to_vec(),
        value: value.to_vec(),
    };
    let clear = || {
        let keys = kv.scan_prefix(T, b"").expect("scan for cleanup");
        keys.into_iter()
            .map(|(key, _)| KvOp::Delete {
                tree: T.into(),
                key,
            })
            .collect::<Vec<_>>()
    };
    kv.apply_async(clear()).await.expect("clear");

    assert_eq!(kv.get_async(T, b"k").await.expect("get missing"), None);
    kv.apply_async(vec![put(b"k", b"v"), put(b"k/2", b"two"), put(b"j", b"")])
        .await
        .expect("apply");
    assert_eq!(
        kv.get_async(T, b"k").await.expect("get"),
        Some(b"v".to_vec())
    );
    assert_eq!(
        kv.get(T, b"k/2").expect("seen by the blocking side"),
        Some(b"two".to_vec())
    );
    kv.put(T, b"k/1", b"one").expect("put");
    assert_eq!(
        kv.scan_prefix_async(T, b"k").await.expect("scan"),
        kv.scan_prefix(T, b"k").expect("scan"),
    );
    assert_eq!(
        kv.scan_prefix_async(T, b"k/").await.expect("scan"),
        [
            (b"k/1".to_vec(), b"one".to_vec()),
            (b"k/2".to_vec(), b"two".to_vec())
        ]
    );
    assert_eq!(kv.count_prefix_async(T, b"k").await.expect("count"), 3);
    assert_eq!(
        kv.count_prefix_async(T, b"nothing").await.expect("count"),
        0
    );
    assert_eq!(
        kv.scan_prefix_page_async(T, b"k", 1, 1)
            .await
            .expect("page"),
        [(b"k/1".to_vec(), b"one".to_vec())]
    );
    assert!(kv
        .scan_prefix_page_async(T, b"k", 3, 2)
        .await
        .expect("page")
        .is_empty());
    assert!(kv
        .scan_prefix_page_async(T, b"k", 0, 0)
        .await
        .expect("page")
        .is_empty());
    kv.apply_async(Vec::new())
        .await
        .expect("an empty batch is a no-op");

    // A stale precondition refuses the whole batch.
    let err = kv
        .apply_async(vec![
            KvOp::Expect {
                tree: T.into(),
                key: b"k".to_vec(),
                value: Some(b"old".to_vec()),
            },
            put(b"k", b"new"),
            put(b"side", b"effect"),
        ])
        .await
        .expect_err("a stale expectation refuses the batch");
    assert!(matches!(err, StorageError::Conflict(_)), "{err:?}");
    assert_eq!(
        kv.get_async(T, b"k").await.expect("get"),
        Some(b"v".to_vec())
    );
    assert_eq!(kv.get_async(T, b"side").await.expect("get"), None);

    kv.apply_async(clear()).await.expect("clear");
    assert_eq!(kv.count_prefix(T, b"").expect("count"), 0);
}
