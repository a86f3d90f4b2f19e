//! Leases against a real PostgreSQL: racing holders, a lease that expired
//! while its holder was paused taken over with a larger token, and the
//! stale holder's writes refused.

use std::sync::Arc;
use std::time::Duration;

use super::super::{PostgresOptions, PostgresStore};
use crate::storage::error::StorageError;
use crate::storage::kv::{KvOp, KvStore};
use crate::storage::leases::Leases;

use clipforge_test_support::postgres::TestPostgres;

const TTL: Duration = Duration::from_secs(60);

fn open(pg: &TestPostgres) -> PostgresStore {
    PostgresStore::open(PostgresOptions::new(pg.url(), "shared")).expect("open the store")
}

fn put(key: &str, value: &str) -> Vec<KvOp> {
    vec![KvOp::Put {
        tree: "projects".into(),
        key: key.as_bytes().to_vec(),
        value: value.as_bytes().to_vec(),
    }]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_holders_racing_for_a_lease_exactly_one_gets_it() {
    let pg = TestPostgres::start();
    // Two nodes, each with its own store (connections), eight tries each.
    let stores = [Arc::new(open(&pg)), Arc::new(open(&pg))];
    for round in 0..5 {
        let key = format!("project:race-{round}");
        let barrier = Arc::new(tokio::sync::Barrier::new(16));
        let mut racing = tokio::task::JoinSet::new();
        for i in 0..16 {
            let (store, barrier, key) = (stores[i % 2].clone(), barrier.clone(), key.clone());
            racing.spawn(async move {
                barrier.wait().await;
                store
                    .acquire(&key, &format!("node-{i}"), TTL)
                    .await
                    .expect("acquire")
            });
        }
        let won: Vec<_> = racing.join_all().await.into_iter().flatten().collect();
        assert_eq!(won.len(), 1, "round {round}: {won:?}");
        assert_eq!(won[0].token, 1, "the first acquisition");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expired_lease_is_taken_over_with_a_larger_token_and_the_stale_holder_cannot_write() {
    let pg = TestPostgres::start();
    let (a, b) = (open(&pg), open(&pg));
    let key = "project:p1";
    let fa = a.acquire(key, "node-a", TTL).await.unwrap().expect("free");
    assert_eq!(
        b.acquire(key, "node-b", TTL).await.unwrap(),
        None,
        "held by a"
    );
    a.apply_fenced(&fa, put("p1", "a: stage 1")).await.unwrap();
    assert!(a.renew(&fa, TTL).await.unwrap());

    // a is paused past its expiry (the server's clock decides).
    pg.psql("UPDATE clipforge_leases SET expires_at = clock_timestamp() - interval '1 second'");
    let fb = b
        .acquire(key, "node-b", TTL)
        .await
        .unwrap()
        .expect("expired: free");
    assert!(fb.token > fa.token, "{fb:?} after {fa:?}");

    // a wakes up: it can neither renew nor write, and writes nothing.
    assert!(!a.renew(&fa, TTL).await.unwrap());
    let err = a
        .apply_fenced(&fa, put("p1", "a: stale"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, StorageError::Fenced { ref key, token } if key == "project:p1" && token == fa.token),
        "{err}"
    );
    assert_eq!(
        b.get_async("projects", b"p1").await.unwrap(),
        Some(b"a: stage 1".to_vec())
    );
    b.apply_fenced(&fb, put("p1", "b: stage 2")).await.unwrap();
    assert_eq!(
        a.get_async("projects", b"p1").await.unwrap(),
        Some(b"b: stage 2".to_vec())
    );
    // a's release of a lease it lost changes nothing.
    a.release(&fa).await.unwrap();
    b.apply_fenced(&fb, put("p1", "b: stage 3")).await.unwrap();
    assert_eq!(
        a.get_async("projects", b"p1").await.unwrap(),
        Some(b"b: stage 3".to_vec())
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_released_lease_is_free_at_once_and_every_acquisition_fences_the_previous_one() {
    let pg = TestPostgres::start();
    let (a, b) = (open(&pg), open(&pg));
    let key = "post:q";
    let first = a.acquire(key, "node-a", TTL).await.unwrap().unwrap();
    // The same holder again (a restarted node): a new token, the old one
    // is fenced off.
    let second = a.acquire(key, "node-a", TTL).await.unwrap().unwrap();
    assert_eq!(second.token, first.token + 1);
    assert!(matches!(
        a.apply_fenced(&first, put("q", "old")).await,
        Err(StorageError::Fenced { .. })
    ));
    a.release(&second).await.unwrap();
    let third = b
        .acquire(key, "node-b", TTL)
        .await
        .unwrap()
        .expect("released: free");
    assert_eq!(third.token, second.token + 1);
    assert!(matches!(
        a.apply_fenced(&second, put("q", "released")).await,
        Err(StorageError::Fenced { .. })
    ));
    assert_eq!(
        b.get_async("projects", b"q").await.unwrap(),
        None,
        "nothing fenced was written"
    );
}
