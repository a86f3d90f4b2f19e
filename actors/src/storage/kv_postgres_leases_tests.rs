//! Leases against a real PostgreSQL: racing holders, a lease that expired
//! while its holder was paused taken over with a larger token, and the
//! stale holder's writes refused.

use std::sync::{Arc, Barrier};
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

#[test]
fn of_holders_racing_for_a_lease_exactly_one_gets_it() {
    let pg = TestPostgres::start();
    // Two nodes, each with its own store (connections), eight tries each.
    let stores = [Arc::new(open(&pg)), Arc::new(open(&pg))];
    for round in 0..5 {
        let key = format!("project:race-{round}");
        let barrier = Arc::new(Barrier::new(16));
        let handles: Vec<_> = (0..16)
            .map(|i| {
                let (store, barrier, key) = (stores[i % 2].clone(), barrier.clone(), key.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    store
                        .acquire(&key, &format!("node-{i}"), TTL)
                        .expect("acquire")
                })
            })
            .collect();
        let won: Vec<_> = handles
            .into_iter()
            .filter_map(|h| h.join().unwrap())
            .collect();
        assert_eq!(won.len(), 1, "round {round}: {won:?}");
        assert_eq!(won[0].token, 1, "the first acquisition");
    }
}

#[test]
fn an_expired_lease_is_taken_over_with_a_larger_token_and_the_stale_holder_cannot_write() {
    let pg = TestPostgres::start();
    let (a, b) = (open(&pg), open(&pg));
    let key = "project:p1";
    let fa = a.acquire(key, "node-a", TTL).unwrap().expect("free");
    assert_eq!(b.acquire(key, "node-b", TTL).unwrap(), None, "held by a");
    a.apply_fenced(&fa, put("p1", "a: stage 1")).unwrap();
    assert!(a.renew(&fa, TTL).unwrap());

    // a is paused past its expiry (the server's clock decides).
    pg.psql("UPDATE clipforge_leases SET expires_at = clock_timestamp() - interval '1 second'");
    let fb = b
        .acquire(key, "node-b", TTL)
        .unwrap()
        .expect("expired: free");
    assert!(fb.token > fa.token, "{fb:?} after {fa:?}");

    // a wakes up: it can neither renew nor write, and writes nothing.
    assert!(!a.renew(&fa, TTL).unwrap());
    let err = a.apply_fenced(&fa, put("p1", "a: stale")).unwrap_err();
    assert!(
        matches!(err, StorageError::Fenced { ref key, token } if key == "project:p1" && token == fa.token),
        "{err}"
    );
    assert_eq!(
        b.get("projects", b"p1").unwrap(),
        Some(b"a: stage 1".to_vec())
    );
    b.apply_fenced(&fb, put("p1", "b: stage 2")).unwrap();
    assert_eq!(
        a.get("projects", b"p1").unwrap(),
        Some(b"b: stage 2".to_vec())
    );
    // a's release of a lease it lost changes nothing.
    a.release(&fa).unwrap();
    b.apply_fenced(&fb, put("p1", "b: stage 3")).unwrap();
}

#[test]
fn a_released_lease_is_free_at_once_and_every_acquisition_fences_the_previous_one() {
    let pg = TestPostgres::start();
    let (a, b) = (open(&pg), open(&pg));
    let key = "post:q";
    let first = a.acquire(key, "node-a", TTL).unwrap().unwrap();
    // The same holder again (a restarted node): a new token, the old one
    // is fenced off.
    let second = a.acquire(key, "node-a", TTL).unwrap().unwrap();
    assert_eq!(second.token, first.token + 1);
    assert!(matches!(
        a.apply_fenced(&first, put("q", "old")),
        Err(StorageError::Fenced { .. })
    ));
    a.release(&second).unwrap();
    let third = b
        .acquire(key, "node-b", TTL)
        .unwrap()
        .expect("released: free");
    assert_eq!(third.token, second.token + 1);
    assert!(matches!(
        a.apply_fenced(&second, put("q", "released")),
        Err(StorageError::Fenced { .. })
    ));
    assert_eq!(
        b.get("projects", b"q").unwrap(),
        None,
        "nothing fenced was written"
    );
}
