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
//! Two ways in, one pool of connections (`kv_postgres_pool.rs`):
//!
//! - the async side of the trait ([`KvStore::get_async`] and the other
//!   `_async` methods) awaits the queries on the caller's own task: no
//!   thread waits for the server. A caller that stops waiting drops the
//!   connection in use (the server rolls back a transaction it was in);
//!   the pool opens another when needed;
//! - the blocking methods (tools and tests; the domains use the async
//!   side) are called from threads that may wait. They spawn the same
//!   work on a small private tokio runtime and wait for its answer on a
//!   channel: no runtime is entered or nested on the caller's thread,
//!   which would panic inside another runtime.
//!
//! Every connection's I/O task runs on the private runtime, so a pooled
//! connection outlives the runtime of the caller that opened it.
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

use super::kv::{KvFuture, KvOp, KvStore, Result, Rows, StorageError};

#[path = "kv_postgres_leases.rs"]
mod leases;
#[path = "kv_postgres_pool.rs"]
mod pool;
#[path = "kv_postgres_sql.rs"]
mod sql;
use pool::{describe, Conn, Failure, Inner};
use sql::*;

/// The table every namespace shares.
pub const TABLE: &str = "clipforge_kv";

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

/// What an operation on one pooled connection returns: the connection
/// (back to the pool when the result is `Ok`) and the result.
type OpFuture<T> =
    std::pin::Pin<Box<dyn Future<Output = (Conn, std::result::Result<T, Failure>)> + Send>>;

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
            inner: Arc::new(Inner {
                handle: runtime.handle().clone(),
                config,
                namespace: options.namespace,
                idle: Mutex::new(Vec::new()),
                slots: tokio::sync::Semaphore::new(options.pool_size.max(1)),
                op_timeout: options.op_timeout,
            }),
            runtime: Some(runtime),
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
    /// it is) until it is done: the blocking methods.
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
            let _ = tx.send(inner.run(&op).await);
        });
        match rx.recv() {
            Ok(result) => result.map_err(|f| f.into_storage(context())),
            Err(_) => Err(StorageError::Backend(format!(
                "{}: the PostgreSQL client stopped",
                context()
            ))),
        }
    }

    /// Runs `op` awaited on the caller's task: the async methods.
    fn run_async<'a, T: Send + 'a, F>(
        &'a self,
        context: impl FnOnce() -> String + Send + 'a,
        op: F,
    ) -> KvFuture<'a, T>
    where
        F: Fn(Conn) -> OpFuture<T> + Send + Sync + 'a,
    {
        Box::pin(async move {
            self.inner
                .run(&op)
                .await
                .map_err(|f| f.into_storage(context()))
        })
    }

    /// The scan of `prefix` in `tree` (one page of it with `page`).
    fn rows_op(
        &self,
        tree: &str,
        prefix: &[u8],
        page: Option<(usize, usize)>,
    ) -> impl Fn(Conn) -> OpFuture<Rows> + Send + Sync + 'static {
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
        move |mut conn| {
            let (ns, tree, from, to) = (ns.clone(), tree.clone(), from.clone(), to.clone());
            Box::pin(async move {
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
            })
        }
    }

    /// The count of the keys starting with `prefix` in `tree`.
    fn count_op(
        &self,
        tree: &str,
        prefix: &[u8],
    ) -> impl Fn(Conn) -> OpFuture<usize> + Send + Sync + 'static {
        let ns = self.inner.namespace.clone();
        let (t, from, to) = (tree.to_string(), prefix.to_vec(), successor(prefix));
        move |mut conn| {
            let (ns, t, from, to) = (ns.clone(), t.clone(), from.clone(), to.clone());
            Box::pin(async move {
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
            })
        }
    }

    /// The read of `key` in `tree`.
    fn get_op(
        &self,
        tree: &str,
        key: &[u8],
    ) -> impl Fn(Conn) -> OpFuture<Option<Vec<u8>>> + Send + Sync + 'static {
        let (ns, t, k) = (self.inner.namespace.clone(), tree.to_string(), key.to_vec());
        move |mut conn| {
            let (ns, t, k) = (ns.clone(), t.clone(), k.clone());
            Box::pin(async move {
                let r = fetch(&mut conn, GET, &[&ns, &t, &k])
                    .await
                    .and_then(|rows| rows.first().map(|row| bytes(row, 0)).transpose());
                (conn, r)
            })
        }
    }

    /// The transaction of `batch` (not empty).
    fn apply_op(&self, batch: Vec<KvOp>) -> impl Fn(Conn) -> OpFuture<()> + Send + Sync + 'static {
        let ns = self.inner.namespace.clone();
        let batch = Arc::new(batch);
        move |mut conn| {
            let (ns, batch) = (ns.clone(), batch.clone());
            Box::pin(async move {
                let r = apply_batch(&mut conn, &ns, &batch, None).await;
                (conn, r)
            })
        }
    }
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

impl KvStore for PostgresStore {
    fn get(&self, tree: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.run(
            || format!("reading {} in tree {tree:?}", show(key)),
            self.get_op(tree, key),
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
        self.run(
            || format!("scanning prefix {} in tree {tree:?}", show(prefix)),
            self.rows_op(tree, prefix, None),
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
        self.run(
            || format!("scanning prefix {} in tree {tree:?}", show(prefix)),
            self.rows_op(tree, prefix, Some((skip, take))),
        )
    }

    fn count_prefix(&self, tree: &str, prefix: &[u8]) -> Result<usize> {
        self.run(
            || format!("counting prefix {} in tree {tree:?}", show(prefix)),
            self.count_op(tree, prefix),
        )
    }

    fn apply(&self, batch: Vec<KvOp>) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let n = batch.len();
        self.run(
            || format!("applying a batch of {n} writes"),
            self.apply_op(batch),
        )
    }

    fn get_async<'a>(&'a self, tree: &'a str, key: &'a [u8]) -> KvFuture<'a, Option<Vec<u8>>> {
        self.run_async(
            move || format!("reading {} in tree {tree:?}", show(key)),
            self.get_op(tree, key),
        )
    }

    fn scan_prefix_async<'a>(&'a self, tree: &'a str, prefix: &'a [u8]) -> KvFuture<'a, Rows> {
        self.run_async(
            move || format!("scanning prefix {} in tree {tree:?}", show(prefix)),
            self.rows_op(tree, prefix, None),
        )
    }

    fn count_prefix_async<'a>(&'a self, tree: &'a str, prefix: &'a [u8]) -> KvFuture<'a, usize> {
        self.run_async(
            move || format!("counting prefix {} in tree {tree:?}", show(prefix)),
            self.count_op(tree, prefix),
        )
    }

    fn scan_prefix_page_async<'a>(
        &'a self,
        tree: &'a str,
        prefix: &'a [u8],
        skip: usize,
        take: usize,
    ) -> KvFuture<'a, Rows> {
        if take == 0 {
            return Box::pin(std::future::ready(Ok(Vec::new())));
        }
        self.run_async(
            move || format!("scanning prefix {} in tree {tree:?}", show(prefix)),
            self.rows_op(tree, prefix, Some((skip, take))),
        )
    }

    fn apply_async(&self, batch: Vec<KvOp>) -> KvFuture<'_, ()> {
        if batch.is_empty() {
            return Box::pin(std::future::ready(Ok(())));
        }
        let n = batch.len();
        self.run_async(
            move || format!("applying a batch of {n} writes"),
            self.apply_op(batch),
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
