//! Tests of `kv_postgres` against a real PostgreSQL started for each test.

use super::*;
use crate::storage::kv_conformance::{kv_conformance, kv_conformance_async};

use clipforge_test_support::postgres::TestPostgres;

fn open(pg: &TestPostgres, namespace: &str) -> PostgresStore {
    PostgresStore::open(PostgresOptions::new(pg.url(), namespace)).expect("open the store")
}

#[test]
fn successor_bounds_prefix_ranges() {
    assert_eq!(successor(b""), None);
    assert_eq!(successor(b"user/"), Some(b"user0".to_vec()));
    assert_eq!(successor(&[0x61, 0xff]), Some(vec![0x62]));
    assert_eq!(successor(&[0xff, 0xff]), None);
}

#[test]
fn postgres_store_conforms_and_namespaces_are_separate() {
    let pg = TestPostgres::start();
    let kv = open(&pg, "node-a");
    kv_conformance(&kv);
    // Another namespace's records in the same trees are neither seen nor
    // touched by the suite (it empties its trees first and last).
    let other = open(&pg, "node-b");
    other.put("conformance.a", b"user/9", b"b's").expect("put");
    kv_conformance(&kv);
    assert_eq!(kv.get("conformance.a", b"user/9").expect("get"), None);
    assert_eq!(
        other.get("conformance.a", b"user/9").expect("get"),
        Some(b"b's".to_vec())
    );
    assert_eq!(
        pg.psql("SELECT count(*) FROM clipforge_kv WHERE ns = 'node-b'"),
        "1"
    );
}

#[test]
fn writes_survive_a_reopen_and_a_server_crash() {
    let mut pg = TestPostgres::start();
    {
        let kv = open(&pg, "n");
        kv.put("t", b"a", b"1").expect("put");
        kv.put("t", b"gone", b"x").expect("put");
        kv.delete("t", b"gone").expect("delete");
        kv.apply(vec![
            KvOp::Put {
                tree: "u".into(),
                key: b"b".to_vec(),
                value: vec![7; 100_000],
            },
            KvOp::Put {
                tree: "t".into(),
                key: b"c".to_vec(),
                value: b"3".to_vec(),
            },
        ])
        .expect("apply");
    }
    // `-m immediate`: no shutdown checkpoint, recovery from the WAL.
    pg.stop();
    pg.restart();
    let kv = open(&pg, "n");
    assert_eq!(kv.get("t", b"a").expect("get"), Some(b"1".to_vec()));
    assert_eq!(kv.get("t", b"gone").expect("get"), None);
    assert_eq!(kv.get("t", b"c").expect("get"), Some(b"3".to_vec()));
    assert_eq!(kv.get("u", b"b").expect("get"), Some(vec![7; 100_000]));
}

#[test]
fn an_unreachable_server_is_an_error_and_the_pool_reconnects() {
    let mut pg = TestPostgres::start();
    let kv = open(&pg, "n");
    kv.put("t", b"k", b"v").expect("put");
    pg.stop();
    let err = kv.get("t", b"k").expect_err("the server is down");
    assert!(
        matches!(err, StorageError::Backend(ref m) if m.contains("PostgreSQL") && m.contains("\"k\"")),
        "{err}"
    );
    pg.restart();
    assert_eq!(
        kv.get("t", b"k").expect("get after restart"),
        Some(b"v".to_vec())
    );

    let bad = PostgresStore::open(PostgresOptions::new(
        "postgres://postgres@127.0.0.1:1/x",
        "n",
    ))
    .expect_err("nothing listens on port 1");
    assert!(
        matches!(bad, StorageError::Backend(ref m) if m.contains("connecting")),
        "{bad}"
    );
    let bad = PostgresStore::open(PostgresOptions::new("postgres://[broken", "n"))
        .expect_err("not a URL");
    assert!(matches!(bad, StorageError::Config(_)), "{bad}");
}

/// Called inline on async worker threads (as the session lookup is) and
/// dropped inside a runtime: neither may panic.
#[test]
fn usable_inline_in_async_code_of_either_runtime_flavour() {
    let pg = TestPostgres::start();
    let url = pg.url();
    let current = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    current.block_on(async {
        let kv = PostgresStore::open(PostgresOptions::new(url.clone(), "inline")).unwrap();
        kv.put("t", b"k", b"v").unwrap();
        assert_eq!(kv.get("t", b"k").unwrap(), Some(b"v".to_vec()));
        drop(kv);
    });
    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    multi.block_on(async {
        let kv = std::sync::Arc::new(
            PostgresStore::open(PostgresOptions::new(url.clone(), "inline")).unwrap(),
        );
        let k2 = kv.clone();
        tokio::spawn(async move { k2.get("t", b"k").unwrap() })
            .await
            .map(|v| assert_eq!(v, Some(b"v".to_vec())))
            .unwrap();
        let k3 = kv.clone();
        tokio::task::spawn_blocking(move || k3.count_prefix("t", b"").unwrap())
            .await
            .map(|n| assert_eq!(n, 1))
            .unwrap();
        tokio::task::block_in_place(|| kv.delete("t", b"k").unwrap());
        drop(kv);
    });
}

/// The async side awaits the server on the caller's task. On a
/// current-thread runtime, a batch that waits for an advisory lock held by
/// another task of the same thread commits once that task lets go, and the
/// thread answers a read meanwhile; a call that blocked would hold the only
/// thread until the store's time limit. The connections opened by the
/// async calls stay in the pool after their runtime is gone.
#[test]
fn async_calls_wait_for_the_server_without_holding_the_thread() {
    let pg = TestPostgres::start();
    let mut options = PostgresOptions::new(pg.url(), "async");
    options.op_timeout = Duration::from_secs(10);
    let kv = PostgresStore::open(options).expect("open the store");
    let put = |key: &[u8]| KvOp::Put {
        tree: "t".into(),
        key: key.to_vec(),
        value: b"v".to_vec(),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        kv_conformance_async(&kv).await;
        let (client, connection) = tokio_postgres::connect(&pg.url(), tokio_postgres::NoTls)
            .await
            .expect("connect");
        tokio::spawn(connection);
        let batch = vec![put(b"a"), put(b"b")];
        let lock = sql::lock_key("async", &batch[0]);
        client
            .execute("SELECT pg_advisory_lock($1)", &[&lock])
            .await
            .expect("lock");
        let apply = async {
            kv.apply_async(batch)
                .await
                .expect("applied once the lock is free");
            std::time::Instant::now()
        };
        let holder = async {
            // Until the batch waits for the lock.
            loop {
                let waiting: i64 = client
                    .query_one(
                        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
                        &[],
                    )
                    .await
                    .expect("pg_locks")
                    .get(0);
                if waiting == 1 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert_eq!(kv.get_async("t", b"a").await.expect("read meanwhile"), None);
            client
                .execute("SELECT pg_advisory_unlock($1)", &[&lock])
                .await
                .expect("unlock");
            std::time::Instant::now()
        };
        let (applied, released) = tokio::join!(apply, holder);
        assert!(
            applied >= released,
            "the batch committed before the lock was free"
        );
    });
    drop(runtime);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        pg.psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'clipforge'"),
        "2",
        "both pooled connections outlive the runtime that used them"
    );
    assert_eq!(kv.get("t", b"b").expect("get"), Some(b"v".to_vec()));

    // A caller that stops waiting for a batch: nothing of it is written,
    // and the store goes on answering.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(&pg.url(), tokio_postgres::NoTls)
            .await
            .expect("connect");
        tokio::spawn(connection);
        let batch = vec![put(b"c"), put(b"d")];
        let lock = sql::lock_key("async", &batch[0]);
        client
            .execute("SELECT pg_advisory_lock($1)", &[&lock])
            .await
            .expect("lock");
        let stopped = tokio::time::timeout(Duration::from_millis(300), kv.apply_async(batch)).await;
        assert!(stopped.is_err(), "the batch waits for the lock");
        client
            .execute("SELECT pg_advisory_unlock($1)", &[&lock])
            .await
            .expect("unlock");
        // Queued behind the batch's session, which has the lock first:
        // this returns once that session's transaction has ended.
        for sql in [
            "SELECT pg_advisory_lock($1)",
            "SELECT pg_advisory_unlock($1)",
        ] {
            client.execute(sql, &[&lock]).await.expect("lock again");
        }
        assert_eq!(kv.get_async("t", b"c").await.expect("get"), None);
        assert_eq!(kv.get_async("t", b"d").await.expect("get"), None);
        kv.apply_async(vec![put(b"e")]).await.expect("apply");
        assert_eq!(
            kv.get_async("t", b"e").await.expect("get"),
            Some(b"v".to_vec())
        );
    });
}

/// Batches over the same keys in opposite orders from several threads
/// (PostgreSQL detects the deadlocks; the batch is re-run), while a reader
/// checks that every scan sees whole batches only.
#[test]
fn concurrent_batches_are_atomic() {
    let pg = TestPostgres::start();
    let kv = std::sync::Arc::new(open(&pg, "race"));
    const KEYS: u8 = 12;
    let batch = |writer: u8, reverse: bool| -> Vec<KvOp> {
        let mut keys: Vec<u8> = (0..KEYS).collect();
        if reverse {
            keys.reverse();
        }
        keys.into_iter()
            .map(|k| KvOp::Put {
                tree: if k % 2 == 0 { "even" } else { "odd" }.into(),
                key: vec![k],
                value: vec![writer],
            })
            .collect()
    };
    kv.apply(batch(0, false)).expect("first batch");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (kv, stop) = (kv.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut scans = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let rows = kv.scan_prefix("even", b"").expect("scan");
                assert_eq!(rows.len(), usize::from(KEYS / 2));
                let first = &rows[0].1;
                assert!(
                    rows.iter().all(|(_, v)| v == first),
                    "a torn batch: {rows:?}"
                );
                scans += 1;
            }
            scans
        })
    };
    let writers: Vec<_> = (1..=4u8)
        .map(|w| {
            let kv = kv.clone();
            std::thread::spawn(move || {
                for round in 0..15 {
                    kv.apply(batch(w, (w + round) % 2 == 0))
                        .expect("a batch succeeds, re-run after a deadlock");
                }
            })
        })
        .collect();
    for w in writers {
        w.join().expect("writer");
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(reader.join().expect("reader") > 0);
    let even = kv.scan_prefix("even", b"").expect("scan");
    let odd = kv.scan_prefix("odd", b"").expect("scan");
    let last = &even[0].1;
    assert!(
        even.iter().chain(odd.iter()).all(|(_, v)| v == last),
        "the last batch wins whole: {even:?} {odd:?}"
    );
}
