//! [`PostgresStore`]: the [`KvStore`] in one PostgreSQL table.
//!
//! ```sql
//! clipforge_kv (ns text, tree text, key bytea, value bytea,
//!               primary key (ns, tree, key))
//! ```
//!
//! `ns` (the namespace) separates the records of stores that share a
//! database; a node opens its own. `bytea` compares byte by byte, so the
//! primary key index gives prefix scans in the trait's key order.
//!
//! The trait blocks and is called from every context: `spawn_blocking`,
//! `block_in_place`, and inline on async worker threads. So the store owns
//! a small private tokio runtime that runs `tokio-postgres` and a pool of
//! connections; a call spawns its work there and waits on a plain channel.
//! No runtime is entered or nested on the caller's thread, which would
//! panic inside another runtime.
//!
//! Each mutating call is one transaction, committed before it returns
//! (PostgreSQL's `synchronous_commit` makes a commit durable). A batch
//! first takes a transaction advisory lock per key in one global order, so
//! concurrent batches over the same keys queue instead of deadlocking on
//! their row locks; a deadlock or serialization failure would still re-run
//! the whole batch. Its preconditions ([`KvOp::Expect`]) are read after
//! those locks: a concurrent batch on the same key has then committed or
//! not started, so READ COMMITTED reads the value it must see (keys a
//! batch expects are written only by batches, never by a lone `put`).

use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use super::kv::{KvOp, KvStore, Result, StorageError};

#[path = "kv_postgres_leases.rs"]
mod leases;
#[path = "kv_postgres_pool.rs"]
mod pool;
use pool::{describe, Conn, Failure, Inner};

/// The leases table (`kv_postgres_leases.rs`).
const LEASES_SCHEMA: &str = "CREATE TABLE IF NOT EXISTS clipforge_leases (\
     ns text COLLATE \"C\" NOT NULL, \
     key text COLLATE \"C\" NOT NULL, \
     holder text NOT NULL, \
     token bigint NOT NULL, \
     expires_at timestamptz NOT NULL, \
     PRIMARY KEY (ns, key))";

/// The lease is still current: same holder and token, not expired.
const LEASE_CHECK: &str = "SELECT token FROM clipforge_leases \
     WHERE ns = $1 AND key = $2 AND holder = $3 AND token = $4 \
     AND expires_at > clock_timestamp() FOR SHARE";

/// The table every namespace shares.
pub const TABLE: &str = "clipforge_kv";

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS clipforge_kv (\
     ns text COLLATE \"C\" NOT NULL, \
     tree text COLLATE \"C\" NOT NULL, \
     key bytea NOT NULL, \
     value bytea NOT NULL, \
     PRIMARY KEY (ns, tree, key))";
/// Serialises concurrent schema creation (two nodes starting at once).
const SCHEMA_LOCK: i64 = 0x636c_6970_6b76; // "clipkv"

const GET: &str = "SELECT value FROM clipforge_kv WHERE ns = $1 AND tree = $2 AND key = $3";
const PUT: &str = "INSERT INTO clipforge_kv (ns, tree, key, value) VALUES ($1, $2, $3, $4) \
     ON CONFLICT (ns, tree, key) DO UPDATE SET value = EXCLUDED.value";
const DELETE: &str = "DELETE FROM clipforge_kv WHERE ns = $1 AND tree = $2 AND key = $3";
const SCAN_FROM: &str = "SELECT key, value FROM clipforge_kv \
     WHERE ns = $1 AND tree = $2 AND key >= $3 ORDER BY key";
const SCAN_RANGE: &str = "SELECT key, value FROM clipforge_kv \
     WHERE ns = $1 AND tree = $2 AND key >= $3 AND key < $4 ORDER BY key";
const PAGE_FROM: &str = "SELECT key, value FROM clipforge_kv \
     WHERE ns = $1 AND tree = $2 AND key >= $3 ORDER BY key OFFSET $4 LIMIT $5";
const PAGE_RANGE: &str = "SELECT key, value FROM clipforge_kv \
     WHERE ns = $1 AND tree = $2 AND key >= $3 AND key < $4 ORDER BY key OFFSET $5 LIMIT $6";
/// Takes the transaction's advisory locks in the order of the array.
const LOCK: &str = "SELECT pg_advisory_xact_lock(k) FROM unnest($1::int8[]) AS k";
const COUNT_FROM: &str =
    "SELECT count(*) FROM clipforge_kv WHERE ns = $1 AND tree = $2 AND key >= $3";
const COUNT_RANGE: &str =
    "SELECT count(*) FROM clipforge_kv WHERE ns = $1 AND tree = $2 AND key >= $3 AND key < $4";

/// How a [`PostgresStore`] connects.
#[derive(Clone)]
pub struct PostgresOptions {
    /// `postgres://user:password@host:port/database` or a key-value
    /// connection string (`host=… port=… user=… dbname=…`).
    pub url: String,
    /// The namespace (`ns` column) of this store's records.
    pub namespace: String,
    /// Connections kept open at most.
    pub pool_size: usize,
    /// Longest a call may take, waiting for a connection included.
    pub op_timeout: Duration,
}

impl fmt::Debug for PostgresOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The URL may hold a password.
        f.debug_struct("PostgresOptions")
            .field("namespace", &self.namespace)
            .field("pool_size", &self.pool_size)
            .field("op_timeout", &self.op_timeout)
            .finish_non_exhaustive()
    }
}

impl PostgresOptions {
    pub fn new(url: impl Into<String>, namespace: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            namespace: namespace.into(),
            pool_size: 8,
            op_timeout: Duration::from_secs(30),
        }
    }
}

/// A [`KvStore`] in PostgreSQL (see the module documentation).
pub struct PostgresStore {
    /// Taken on drop: shut down without blocking (a runtime dropped inside
    /// another runtime's task would panic).
    runtime: Option<tokio::runtime::Runtime>,
    inner: Arc<Inner>,
}

impl fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresStore")
            .field("namespace", &self.inner.namespace)
            .finish_non_exhaustive()
    }
}

/// The smallest byte string greater than every key starting with `prefix`,
/// or `None` when there is none (empty, or only 0xff bytes).
fn successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

type Rows = Vec<(Vec<u8>, Vec<u8>)>;

/// One row of a scan: its key and value.
fn entry(row: &Row) -> std::result::Result<(Vec<u8>, Vec<u8>), Failure> {
    Ok((bytes(row, 0)?, bytes(row, 1)?))
}

impl PostgresStore {
    /// Connects, creates the table when it is missing and keeps up to
    /// `pool_size` connections. Fails when the server cannot be reached.
    pub fn open(options: PostgresOptions) -> Result<Self> {
        let mut config: tokio_postgres::Config = options
            .url
            .parse()
            .map_err(|e| StorageError::Config(format!("the PostgreSQL URL does not parse: {e}")))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(5));
        }
        if config.get_application_name().is_none() {
            config.application_name("clipforge");
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("clipforge-postgres")
            .enable_all()
            .build()
            .map_err(|e| StorageError::io("starting the PostgreSQL client runtime", e))?;
        let store = PostgresStore {
            runtime: Some(runtime),
            inner: Arc::new(Inner {
                config,
                namespace: options.namespace,
                idle: Mutex::new(Vec::new()),
                slots: tokio::sync::Semaphore::new(options.pool_size.max(1)),
                op_timeout: options.op_timeout,
            }),
        };
        store.run(
            || format!("creating the table {TABLE}"),
            |conn| async move {
                let sql = format!(
                    "BEGIN; SELECT pg_advisory_xact_lock({SCHEMA_LOCK}); {SCHEMA}; {}; COMMIT",
                    LEASES_SCHEMA
                );
                let r = conn
                    .client
                    .batch_execute(&sql)
                    .await
                    .map_err(Failure::Query);
                (conn, r)
            },
        )?;
        Ok(store)
    }

    /// The namespace this store reads and writes.
    pub fn namespace(&self) -> &str {
        &self.inner.namespace
    }

    /// Spawns `op` on the private runtime and blocks this thread (whatever
    /// it is) until it is done.
    fn run<T, F, Fut>(&self, context: impl FnOnce() -> String, op: F) -> Result<T>
    where
        T: Send + 'static,
        F: Fn(Conn) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = (Conn, std::result::Result<T, Failure>)> + Send + 'static,
    {
        let runtime = self.runtime.as_ref().expect("present until dropped");
        let inner = self.inner.clone();
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        runtime.spawn(async move {
            let limit = inner.op_timeout;
            let result = tokio::time::timeout(limit, inner.attempt(&op))
                .await
                .unwrap_or(Err(Failure::Timeout(limit)));
            let _ = tx.send(result);
        });
        match rx.recv() {
            Ok(result) => result.map_err(|f| f.into_storage(context())),
            Err(_) => Err(StorageError::Backend(format!(
                "{}: the PostgreSQL client stopped",
                context()
            ))),
        }
    }

    fn rows(
        &self,
        context: impl FnOnce() -> String,
        tree: &str,
        prefix: &[u8],
        page: Option<(usize, usize)>,
    ) -> Result<Rows> {
        let ns = self.inner.namespace.clone();
        let tree = tree.to_string();
        let from = prefix.to_vec();
        let to = successor(prefix);
        let page = page.map(|(skip, take)| {
            (
                i64::try_from(skip).unwrap_or(i64::MAX),
                i64::try_from(take).unwrap_or(i64::MAX),
            )
        });
        self.run(context, move |mut conn| {
            let (ns, tree, from, to) = (ns.clone(), tree.clone(), from.clone(), to.clone());
            async move {
                let (offset, limit) = page.unwrap_or((0, 0));
                let mut params: Vec<&(dyn ToSql + Sync)> = Vec::with_capacity(6);
                params.push(&ns);
                params.push(&tree);
                params.push(&from);
                if let Some(to) = &to {
                    params.push(to);
                }
                if page.is_some() {
                    params.push(&offset);
                    params.push(&limit);
                }
                let sql = match (page.is_some(), to.is_some()) {
                    (false, false) => SCAN_FROM,
                    (false, true) => SCAN_RANGE,
                    (true, false) => PAGE_FROM,
                    (true, true) => PAGE_RANGE,
                };
                let r = fetch(&mut conn, sql, &params).await.and_then(|rows| {
                    rows.iter()
                        .map(entry)
                        .collect::<std::result::Result<Rows, Failure>>()
                });
                (conn, r)
            }
        })
    }
}

/// Runs a prepared query.
async fn fetch(
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
fn bytes(row: &Row, i: usize) -> std::result::Result<Vec<u8>, Failure> {
    row.try_get::<_, Vec<u8>>(i)
        .map_err(|e| Failure::Corrupt(describe(&e)))
}

impl Drop for PostgresStore {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Shows a binary key readably in error messages.
fn show(key: &[u8]) -> String {
    format!("\"{}\"", key.escape_ascii())
}

/// Runs one statement that changes rows, in its own implicit transaction.
async fn write_one(
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
fn lock_key(ns: &str, op: &KvOp) -> i64 {
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
async fn apply_batch(
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

impl KvStore for PostgresStore {
    fn get(&self, tree: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let (ns, t, k) = (self.inner.namespace.clone(), tree.to_string(), key.to_vec());
        self.run(
            || format!("reading {} in tree {tree:?}", show(key)),
            move |mut conn| {
                let (ns, t, k) = (ns.clone(), t.clone(), k.clone());
                async move {
                    let r = fetch(&mut conn, GET, &[&ns, &t, &k])
                        .await
                        .and_then(|rows| rows.first().map(|row| bytes(row, 0)).transpose());
                    (conn, r)
                }
            },
        )
    }

    fn put(&self, tree: &str, key: &[u8], value: &[u8]) -> Result<()> {
        let ns = self.inner.namespace.clone();
        let (t, k, v) = (tree.to_string(), key.to_vec(), Arc::new(value.to_vec()));
        self.run(
            || format!("writing {} in tree {tree:?}", show(key)),
            move |mut conn| {
                let (ns, t, k, v) = (ns.clone(), t.clone(), k.clone(), v.clone());
                async move {
                    let r = write_one(&mut conn, PUT, &[&ns, &t, &k, &*v]).await;
                    (conn, r)
                }
            },
        )
    }

    fn delete(&self, tree: &str, key: &[u8]) -> Result<()> {
        let ns = self.inner.namespace.clone();
        let (t, k) = (tree.to_string(), key.to_vec());
        self.run(
            || format!("deleting {} in tree {tree:?}", show(key)),
            move |mut conn| {
                let (ns, t, k) = (ns.clone(), t.clone(), k.clone());
                async move {
                    let r = write_one(&mut conn, DELETE, &[&ns, &t, &k]).await;
                    (conn, r)
                }
            },
        )
    }

    fn scan_prefix(&self, tree: &str, prefix: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.rows(
            || format!("scanning prefix {} in tree {tree:?}", show(prefix)),
            tree,
            prefix,
            None,
        )
    }

    fn scan_prefix_page(
        &self,
        tree: &str,
        prefix: &[u8],
        skip: usize,
        take: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        if take == 0 {
            return Ok(Vec::new());
        }
        self.rows(
            || format!("scanning prefix {} in tree {tree:?}", show(prefix)),
            tree,
            prefix,
            Some((skip, take)),
        )
    }

    fn count_prefix(&self, tree: &str, prefix: &[u8]) -> Result<usize> {
        let ns = self.inner.namespace.clone();
        let (t, from, to) = (tree.to_string(), prefix.to_vec(), successor(prefix));
        self.run(
            || format!("counting prefix {} in tree {tree:?}", show(prefix)),
            move |mut conn| {
                let (ns, t, from, to) = (ns.clone(), t.clone(), from.clone(), to.clone());
                async move {
                    let mut params: Vec<&(dyn ToSql + Sync)> = Vec::with_capacity(4);
                    params.push(&ns);
                    params.push(&t);
                    params.push(&from);
                    let sql = match &to {
                        Some(to) => {
                            params.push(to);
                            COUNT_RANGE
                        }
                        None => COUNT_FROM,
                    };
                    let r = fetch(&mut conn, sql, &params).await.and_then(|rows| {
                        let n: i64 = rows
                            .first()
                            .ok_or_else(|| Failure::Corrupt("count(*) gave no row".into()))?
                            .try_get(0)
                            .map_err(|e| Failure::Corrupt(describe(&e)))?;
                        Ok(usize::try_from(n).unwrap_or(0))
                    });
                    (conn, r)
                }
            },
        )
    }

    fn apply(&self, batch: Vec<KvOp>) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let n = batch.len();
        let ns = self.inner.namespace.clone();
        let batch = Arc::new(batch);
        self.run(
            || format!("applying a batch of {n} writes"),
            move |mut conn| {
                let (ns, batch) = (ns.clone(), batch.clone());
                async move {
                    let r = apply_batch(&mut conn, &ns, &batch, None).await;
                    (conn, r)
                }
            },
        )
    }

    fn flush(&self) -> Result<()> {
        // Every write was committed (and so made durable) before it returned.
        Ok(())
    }

    fn leases(&self) -> Option<&dyn crate::storage::leases::Leases> {
        Some(self)
    }
}

#[cfg(test)]
#[path = "kv_postgres_tests.rs"]
mod tests;
