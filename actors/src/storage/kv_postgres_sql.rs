//! The SQL of [`super::PostgresStore`] and the statements that run it on
//! one pooled connection: prepared queries, single-row writes and the
//! transaction of a batch (with its advisory locks, preconditions and
//! fence check).

use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use super::pool::{describe, Conn, Failure};
use crate::storage::kv::KvOp;

/// The leases table (`kv_postgres_leases.rs`).
pub(super) const LEASES_SCHEMA: &str = "CREATE TABLE IF NOT EXISTS clipforge_leases (\
     ns text COLLATE \"C\" NOT NULL, \
     key text COLLATE \"C\" NOT NULL, \
     holder text NOT NULL, \
     token bigint NOT NULL, \
     expires_at timestamptz NOT NULL, \
     PRIMARY KEY (ns, key))";

/// The lease is still current: same holder and token, not expired.
pub(super) const LEASE_CHECK: &str = "SELECT token FROM clipforge_leases \
     WHERE ns = $1 AND key = $2 AND holder = $3 AND token = $4 \
     AND expires_at > clock_timestamp() FOR SHARE";

pub(super) const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS clipforge_kv (\
     ns text COLLATE \"C\" NOT NULL, \
     tree text COLLATE \"C\" NOT NULL, \
     key bytea NOT NULL, \
     value bytea NOT NULL, \
     PRIMARY KEY (ns, tree, key))";
/// Serialises concurrent schema creation (two nodes starting at once).
pub(super) const SCHEMA_LOCK: i64 = 0x636c_6970_6b76; // "clipkv"

pub(super) const GET: &str =
    "SELECT value FROM clipforge_kv WHERE ns = $1 AND tree = $2 AND key = $3";
pub(super) const PUT: &str =
    "INSERT INTO clipforge_kv (ns, tree, key, value) VALUES ($1, $2, $3, $4) \
     ON CONFLICT (ns, tree, key) DO UPDATE SET value = EXCLUDED.value";
pub(super) const DELETE: &str = "DELETE FROM clipforge_kv WHERE ns = $1 AND tree = $2 AND key = $3";
pub(super) const SCAN_FROM: &str = "SELECT key, value FROM clipforge_kv \
     WHERE ns = $1 AND tree = $2 AND key >= $3 ORDER BY key";
pub(super) const SCAN_RANGE: &str = "SELECT key, value FROM clipforge_kv \
     WHERE ns = $1 AND tree = $2 AND key >= $3 AND key < $4 ORDER BY key";
pub(super) const PAGE_FROM: &str = "SELECT key, value FROM clipforge_kv \
     WHERE ns = $1 AND tree = $2 AND key >= $3 ORDER BY key OFFSET $4 LIMIT $5";
pub(super) const PAGE_RANGE: &str = "SELECT key, value FROM clipforge_kv \
     WHERE ns = $1 AND tree = $2 AND key >= $3 AND key < $4 ORDER BY key OFFSET $5 LIMIT $6";
/// Takes the transaction's advisory locks in the order of the array.
pub(super) const LOCK: &str = "SELECT pg_advisory_xact_lock(k) FROM unnest($1::int8[]) AS k";
pub(super) const COUNT_FROM: &str =
    "SELECT count(*) FROM clipforge_kv WHERE ns = $1 AND tree = $2 AND key >= $3";
pub(super) const COUNT_RANGE: &str =
    "SELECT count(*) FROM clipforge_kv WHERE ns = $1 AND tree = $2 AND key >= $3 AND key < $4";

/// The smallest byte string greater than every key starting with `prefix`,
/// or `None` when there is none (empty, or only 0xff bytes).
pub(super) fn successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// Runs a prepared query.
pub(super) async fn fetch(
    conn: &mut Conn,
    sql: &'static str,
    params: &[&(dyn ToSql + Sync)],
) -> std::result::Result<Vec<Row>, Failure> {
    let stmt = conn.statement(sql).await?;
    conn.client
        .query(&stmt, params)
        .await
        .map_err(Failure::Query)
}

/// Column `i` of `row` as bytes.
pub(super) fn bytes(row: &Row, i: usize) -> std::result::Result<Vec<u8>, Failure> {
    row.try_get::<_, Vec<u8>>(i)
        .map_err(|e| Failure::Corrupt(describe(&e)))
}

/// Runs one statement that changes rows, in its own implicit transaction.
pub(super) async fn write_one(
    conn: &mut Conn,
    sql: &'static str,
    params: &[&(dyn ToSql + Sync)],
) -> std::result::Result<(), Failure> {
    let stmt = conn.statement(sql).await?;
    conn.client
        .execute(&stmt, params)
        .await
        .map(drop)
        .map_err(Failure::Query)
}

/// The advisory lock of one key: 64-bit FNV-1a of namespace, tree and key
/// (stable across builds and nodes; a collision only serialises more).
pub(super) fn lock_key(ns: &str, op: &KvOp) -> i64 {
    let (tree, key) = match op {
        KvOp::Put { tree, key, .. }
        | KvOp::Delete { tree, key }
        | KvOp::Expect { tree, key, .. } => (tree, key),
    };
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in [
        ns.as_bytes(),
        &[0u8][..],
        tree.as_bytes(),
        &[0u8][..],
        key.as_slice(),
    ] {
        for b in part {
            h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    h as i64
}

/// Writes `batch` in one transaction; with a `fence`, only while that lease
/// is still current (checked in the same transaction, see
/// `kv_postgres_leases.rs`).
pub(super) async fn apply_batch(
    conn: &mut Conn,
    ns: &str,
    batch: &[KvOp],
    fence: Option<&crate::storage::leases::Fence>,
) -> std::result::Result<(), Failure> {
    let put = conn.statement(PUT).await?;
    let get = conn.statement(GET).await?;
    let delete = conn.statement(DELETE).await?;
    let lock = conn.statement(LOCK).await?;
    let check = match fence {
        Some(_) => Some(conn.statement(LEASE_CHECK).await?),
        None => None,
    };
    let tx = conn.client.transaction().await.map_err(Failure::Query)?;
    if let (Some(f), Some(check)) = (fence, &check) {
        // FOR SHARE: a node taking the lease over waits for this commit.
        let held = tx
            .query(check, &[&ns, &f.key, &f.holder, &f.token])
            .await
            .map_err(Failure::Query)?;
        if held.is_empty() {
            return Err(Failure::Fenced {
                key: f.key.clone(),
                token: f.token,
            });
        }
    }
    let expects = batch.iter().any(|op| matches!(op, KvOp::Expect { .. }));
    if batch.len() > 1 || expects {
        // Batches touching the same keys in different orders would
        // deadlock on their row locks: take every key's advisory lock
        // first, in one global order.
        let mut keys: Vec<i64> = batch.iter().map(|op| lock_key(ns, op)).collect();
        keys.sort_unstable();
        keys.dedup();
        tx.execute(&lock, &[&keys]).await.map_err(Failure::Query)?;
    }
    if expects {
        for op in batch {
            if let KvOp::Expect { tree, key, value } = op {
                let rows = tx
                    .query(&get, &[&ns, tree, key])
                    .await
                    .map_err(Failure::Query)?;
                let found = rows.first().map(|row| bytes(row, 0)).transpose()?;
                if found.as_deref() != value.as_deref() {
                    let why = crate::storage::kv::unmet(tree, key, value.as_deref());
                    return Err(Failure::Conflict(why));
                }
            }
        }
    }
    for op in batch {
        match op {
            KvOp::Expect { .. } => {}
            KvOp::Put { tree, key, value } => {
                tx.execute(&put, &[&ns, tree, key, value])
                    .await
                    .map_err(Failure::Query)?;
            }
            KvOp::Delete { tree, key } => {
                tx.execute(&delete, &[&ns, tree, key])
                    .await
                    .map_err(Failure::Query)?;
            }
        }
    }
    tx.commit().await.map_err(Failure::Query)
}
