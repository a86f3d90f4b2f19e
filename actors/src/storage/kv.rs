//! Key-value storage behind the [`KvStore`] trait.
//!
//! Values are bytes in named trees (namespaces). [`SledStore`] keeps them in
//! a sled 0.34 database on disk; [`MemoryStore`] keeps them in memory for
//! tests of code that needs a store. Typed values go through [`put_value`] /
//! [`get_value`], which encode with bincode 2 in its serde mode behind a
//! schema-version header ([`Record`], `storage/record.rs`).
//!
//! [`kv_conformance`](super::kv_conformance) is the behaviour every implementation must show; the
//! unit tests run it against both stores and other crates may run it against
//! their own.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

pub use super::batch::KvOp;
pub use super::error::{KvFuture, Result, StorageError};
pub use super::record::{decode, decode_payload, encode, Record};
use sled::transaction::{ConflictableTransactionError, TransactionError, Transactional};

/// The message of a failed [`KvOp::Expect`].
pub(crate) fn unmet(tree: &str, key: &[u8], expected: Option<&[u8]>) -> String {
    let what = if expected.is_some() {
        "a value that changed meanwhile"
    } else {
        "absent, but it exists"
    };
    format!("{} in tree {tree:?} expected {what}", KeyDisplay(key))
}

/// A byte-oriented key-value store with named trees.
///
/// # Durability
///
/// Every mutating method ([`put`](Self::put), [`delete`](Self::delete),
/// [`apply`](Self::apply)) has made its change durable when it returns `Ok`:
/// a process crash or power loss afterwards does not lose it. Implementations
/// whose backend acknowledges writes before they reach the disk (sled 0.34
/// does) must flush before returning. Each write therefore costs a sync;
/// group related writes into one [`apply`](Self::apply).
///
/// # Semantics
///
/// Trees are created on first use and are independent key spaces. Keys and
/// values may be empty. Scans return entries in ascending byte order of the
/// key. The methods block; call them from `tasks::blocking` in async code
/// that must not stall its executor thread, or use the async side
/// ([`get_async`](Self::get_async) and the methods after it).
pub trait KvStore: Send + Sync + 'static {
    /// The value stored under `key`, if any.
    fn get(&self, tree: &str, key: &[u8]) -> Result<Option<Vec<u8>>>;

    /// Stores `value` under `key`, replacing any previous value.
    fn put(&self, tree: &str, key: &[u8], value: &[u8]) -> Result<()>;

    /// Removes `key`; removing a missing key is not an error.
    fn delete(&self, tree: &str, key: &[u8]) -> Result<()>;

    /// All entries whose key starts with `prefix`, ordered by key.
    fn scan_prefix(&self, tree: &str, prefix: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>>;

    /// How many keys start with `prefix`.
    fn count_prefix(&self, tree: &str, prefix: &[u8]) -> Result<usize>;

    /// The entries of [`scan_prefix`](Self::scan_prefix) after skipping
    /// `skip`, at most `take` of them (one page of a listing). Stores that
    /// can iterate lazily should override it.
    fn scan_prefix_page(
        &self,
        tree: &str,
        prefix: &[u8],
        skip: usize,
        take: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        Ok(self
            .scan_prefix(tree, prefix)?
            .into_iter()
            .skip(skip)
            .take(take)
            .collect())
    }

    /// Applies the operations in order, atomically across all the trees they
    /// name: readers see either none or all of them.
    fn apply(&self, batch: Vec<KvOp>) -> Result<()>;

    /// Makes everything written so far durable.
    fn flush(&self) -> Result<()>;

    /// The store's leases with fencing tokens, when it is shared between
    /// nodes (PostgreSQL); `None` for a store one process owns.
    fn leases(&self) -> Option<&dyn super::leases::Leases> {
        None
    }

    /// [`get`](Self::get) for async code. The default runs the blocking
    /// method inline, which is right for a store that answers in this
    /// process (memory; sled from its cache and local disk), where handing
    /// the call to another thread would cost more than the call (the
    /// session lookup: `make bench-api`). A networked store overrides the
    /// async methods so that no thread waits on the network; sled hands
    /// [`apply_async`](Self::apply_async) (a disk sync) to the blocking pool.
    fn get_async<'a>(&'a self, tree: &'a str, key: &'a [u8]) -> KvFuture<'a, Option<Vec<u8>>> {
        Box::pin(std::future::ready(self.get(tree, key)))
    }

    /// [`scan_prefix`](Self::scan_prefix) for async code (see
    /// [`get_async`](Self::get_async)).
    fn scan_prefix_async<'a>(&'a self, tree: &'a str, prefix: &'a [u8]) -> KvFuture<'a, Rows> {
        Box::pin(std::future::ready(self.scan_prefix(tree, prefix)))
    }

    /// [`count_prefix`](Self::count_prefix) for async code (see
    /// [`get_async`](Self::get_async)).
    fn count_prefix_async<'a>(&'a self, tree: &'a str, prefix: &'a [u8]) -> KvFuture<'a, usize> {
        Box::pin(std::future::ready(self.count_prefix(tree, prefix)))
    }

    /// [`scan_prefix_page`](Self::scan_prefix_page) for async code (see
    /// [`get_async`](Self::get_async)).
    fn scan_prefix_page_async<'a>(
        &'a self,
        tree: &'a str,
        prefix: &'a [u8],
        skip: usize,
        take: usize,
    ) -> KvFuture<'a, Rows> {
        Box::pin(std::future::ready(
            self.scan_prefix_page(tree, prefix, skip, take),
        ))
    }

    /// [`apply`](Self::apply) for async code (see
    /// [`get_async`](Self::get_async)): durable when it resolves to `Ok`.
    fn apply_async(&self, batch: Vec<KvOp>) -> KvFuture<'_, ()> {
        Box::pin(std::future::ready(self.apply(batch)))
    }
}

/// Entries of a scan: keys with their values, in key order.
pub type Rows = Vec<(Vec<u8>, Vec<u8>)>;

/// Shows a binary key readably in error messages.
struct KeyDisplay<'a>(&'a [u8]);

impl fmt::Display for KeyDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\"", self.0.escape_ascii())
    }
}

/// Whether sled refused to open because another process holds the lock
/// (sled reports it as an `Other` I/O error with this text).
fn is_locked(err: &sled::Error) -> bool {
    matches!(err, sled::Error::Io(e) if e.to_string().starts_with("could not acquire lock"))
}

fn sled_error(context: String, err: sled::Error) -> StorageError {
    match err {
        sled::Error::Io(source) => StorageError::Io { context, source },
        err @ sled::Error::Corruption { .. } => StorageError::Corrupt(format!("{context}: {err}")),
        err => StorageError::Backend(format!("{context}: {err}")),
    }
}

/// Page cache of [`SledStore::open`]: 128 MiB.
pub const DEFAULT_CACHE_BYTES: u64 = 128 * 1024 * 1024;

/// A [`KvStore`] in a sled 0.34 database directory. A clone is another
/// handle on the same open database.
#[derive(Clone)]
pub struct SledStore {
    db: sled::Db,
    /// Flush every write before returning (off only for bulk imports,
    /// which flush once at the end).
    durable: bool,
}

impl fmt::Debug for SledStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SledStore").finish_non_exhaustive()
    }
}

impl SledStore {
    /// Opens (or creates) the database at `path`. Only one process may have
    /// it open at a time.
    pub fn open(path: &Path) -> Result<Self> {
        Self::open_with_cache(path, DEFAULT_CACHE_BYTES)
    }

    /// Opens with a page cache of at most `cache_bytes` (sled's own default
    /// is 1 GB, which a node reading many accounts would fill and keep).
    pub fn open_with_cache(path: &Path, cache_bytes: u64) -> Result<Self> {
        Self::open_waiting(path, cache_bytes, Duration::ZERO)
    }

    /// [`Self::open_with_cache`], waiting up to `lock_wait` while another
    /// process holds the database's lock. A server started again right
    /// after it was killed needs this: a child process the dead server was
    /// starting holds a copy of its open files (the lock among them) until
    /// the child has executed its program, which on a busy machine can
    /// take a moment after the server is gone.
    pub fn open_waiting(path: &Path, cache_bytes: u64, lock_wait: Duration) -> Result<Self> {
        let deadline = Instant::now() + lock_wait;
        let mut warned = false;
        loop {
            match sled::Config::new()
                .path(path)
                .cache_capacity(cache_bytes)
                .open()
            {
                Ok(db) => return Ok(SledStore { db, durable: true }),
                Err(e) if is_locked(&e) && Instant::now() < deadline => {
                    if !warned {
                        tracing::warn!(
                            path = %path.display(),
                            wait_secs = lock_wait.as_secs_f64(),
                            "the database is locked by another process: waiting for it"
                        );
                        warned = true;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(e) if is_locked(&e) => {
                    return Err(StorageError::Backend(format!(
                        "opening sled database {}: another process has it open \
                         (waited {:.0} s for it to let go)",
                        path.display(),
                        lock_wait.as_secs_f64()
                    )))
                }
                Err(e) => {
                    return Err(sled_error(
                        format!("opening sled database {}", path.display()),
                        e,
                    ))
                }
            }
        }
    }

    /// Opens the database for a bulk import (a data seeder, a migration):
    /// writes are not flushed one by one; the importer must call
    /// [`KvStore::flush`] when it is done. Never used by a serving node.
    pub fn open_for_import(path: &Path) -> Result<Self> {
        let mut store = Self::open(path)?;
        store.durable = false;
        Ok(store)
    }

    fn tree(&self, name: &str) -> Result<sled::Tree> {
        self.db
            .open_tree(name)
            .map_err(|e| sled_error(format!("opening tree {name:?}"), e))
    }

    fn sync(&self, what: impl FnOnce() -> String) -> Result<()> {
        if !self.durable {
            return Ok(());
        }
        self.db
            .flush()
            .map(drop)
            .map_err(|e| sled_error(format!("flushing after {}", what()), e))
    }
}

impl KvStore for SledStore {
    /// On the blocking pool: the write ends with a flush, a disk sync that
    /// must not hold an async thread (reads stay inline, from the cache).
    fn apply_async(&self, batch: Vec<KvOp>) -> KvFuture<'_, ()> {
        let store = self.clone();
        Box::pin(crate::tasks::blocking(move || store.apply(batch)))
    }

    fn get(&self, tree: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let value = self
            .tree(tree)?
            .get(key)
            .map_err(|e| sled_error(format!("reading {} in tree {tree:?}", KeyDisplay(key)), e))?;
        Ok(value.map(|v| v.to_vec()))
    }

    fn put(&self, tree: &str, key: &[u8], value: &[u8]) -> Result<()> {
        self.tree(tree)?
            .insert(key, value)
            .map_err(|e| sled_error(format!("writing {} in tree {tree:?}", KeyDisplay(key)), e))?;
        self.sync(|| format!("writing {} in tree {tree:?}", KeyDisplay(key)))
    }

    fn delete(&self, tree: &str, key: &[u8]) -> Result<()> {
        self.tree(tree)?
            .remove(key)
            .map_err(|e| sled_error(format!("deleting {} in tree {tree:?}", KeyDisplay(key)), e))?;
        self.sync(|| format!("deleting {} in tree {tree:?}", KeyDisplay(key)))
    }

    fn scan_prefix(&self, tree: &str, prefix: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.tree(tree)?
            .scan_prefix(prefix)
            .map(|entry| {
                entry.map(|(k, v)| (k.to_vec(), v.to_vec())).map_err(|e| {
                    sled_error(
                        format!("scanning prefix {} in tree {tree:?}", KeyDisplay(prefix)),
                        e,
                    )
                })
            })
            .collect()
    }

    fn scan_prefix_page(
        &self,
        tree: &str,
        prefix: &[u8],
        skip: usize,
        take: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.tree(tree)?
            .scan_prefix(prefix)
            .skip(skip)
            .take(take)
            .map(|entry| {
                entry.map(|(k, v)| (k.to_vec(), v.to_vec())).map_err(|e| {
                    sled_error(
                        format!("scanning prefix {} in tree {tree:?}", KeyDisplay(prefix)),
                        e,
                    )
                })
            })
            .collect()
    }

    fn count_prefix(&self, tree: &str, prefix: &[u8]) -> Result<usize> {
        let mut count = 0;
        for key in self.tree(tree)?.scan_prefix(prefix).keys() {
            key.map_err(|e| {
                sled_error(
                    format!("counting prefix {} in tree {tree:?}", KeyDisplay(prefix)),
                    e,
                )
            })?;
            count += 1;
        }
        Ok(count)
    }

    fn apply(&self, batch: Vec<KvOp>) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        // A tree may appear only once in a sled transaction, so each distinct
        // name gets one slot and the operations refer to it by index.
        let names: Vec<&str> = batch
            .iter()
            .map(KvOp::tree)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let slot: HashMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let trees = names
            .iter()
            .map(|name| self.tree(name))
            .collect::<Result<Vec<_>>>()?;

        let outcome: std::result::Result<(), TransactionError<String>> =
            trees.as_slice().transaction(|tx| {
                // Every precondition first, on the values before the batch.
                for op in &batch {
                    if let KvOp::Expect { tree, key, value } = op {
                        let found = tx[slot[tree.as_str()]].get(key.as_slice())?;
                        if found.as_deref() != value.as_deref() {
                            return Err(ConflictableTransactionError::Abort(unmet(
                                tree,
                                key,
                                value.as_deref(),
                            )));
                        }
                    }
                }
                for op in &batch {
                    let tree = &tx[slot[op.tree()]];
                    match op {
                        KvOp::Put { key, value, .. } => {
                            tree.insert(key.as_slice(), value.as_slice())?;
                        }
                        KvOp::Delete { key, .. } => {
                            tree.remove(key.as_slice())?;
                        }
                        KvOp::Expect { .. } => {}
                    }
                }
                Ok::<(), ConflictableTransactionError<String>>(())
            });
        let context = || {
            format!(
                "applying a batch of {} writes to trees {names:?}",
                batch.len()
            )
        };
        match outcome {
            Ok(()) => {}
            Err(TransactionError::Storage(e)) => return Err(sled_error(context(), e)),
            Err(TransactionError::Abort(unmet)) => return Err(StorageError::Conflict(unmet)),
        }
        self.sync(context)
    }

    fn flush(&self) -> Result<()> {
        self.db
            .flush()
            .map(drop)
            .map_err(|e| sled_error("flushing on request".to_string(), e))
    }
}

type Trees = BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>>;

/// A [`KvStore`] in memory, for tests. Its contents go when it is dropped; the
/// durability contract holds trivially for the life of the process.
#[derive(Debug, Default)]
pub struct MemoryStore {
    trees: Mutex<Trees>,
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Trees> {
        // Every method leaves the map consistent before it can panic, so a
        // poisoned lock still guards valid data.
        self.trees.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn prefixed<'a>(
    tree: Option<&'a BTreeMap<Vec<u8>, Vec<u8>>>,
    prefix: &'a [u8],
) -> impl Iterator<Item = (&'a Vec<u8>, &'a Vec<u8>)> + 'a {
    tree.into_iter().flat_map(move |t| {
        t.range(prefix.to_vec()..)
            .take_while(move |(k, _)| k.starts_with(prefix))
    })
}

impl KvStore for MemoryStore {
    fn get(&self, tree: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.lock().get(tree).and_then(|t| t.get(key)).cloned())
    }

    fn put(&self, tree: &str, key: &[u8], value: &[u8]) -> Result<()> {
        self.lock()
            .entry(tree.to_string())
            .or_default()
            .insert(key.to_vec(), value.to_vec());
        Ok(())
    }

    fn delete(&self, tree: &str, key: &[u8]) -> Result<()> {
        if let Some(t) = self.lock().get_mut(tree) {
            t.remove(key);
        }
        Ok(())
    }

    fn scan_prefix(&self, tree: &str, prefix: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let trees = self.lock();
        Ok(prefixed(trees.get(tree), prefix)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect())
    }

    fn count_prefix(&self, tree: &str, prefix: &[u8]) -> Result<usize> {
        let trees = self.lock();
        Ok(prefixed(trees.get(tree), prefix).count())
    }

    fn apply(&self, batch: Vec<KvOp>) -> Result<()> {
        let mut trees = self.lock();
        for op in &batch {
            if let KvOp::Expect { tree, key, value } = op {
                let found = trees.get(tree).and_then(|t| t.get(key));
                if found.map(Vec::as_slice) != value.as_deref() {
                    return Err(StorageError::Conflict(unmet(tree, key, value.as_deref())));
                }
            }
        }
        for op in batch {
            match op {
                KvOp::Put { tree, key, value } => {
                    trees.entry(tree).or_default().insert(key, value);
                }
                KvOp::Delete { tree, key } => {
                    if let Some(t) = trees.get_mut(&tree) {
                        t.remove(&key);
                    }
                }
                KvOp::Expect { .. } => {}
            }
        }
        Ok(())
    }

    fn flush(&self) -> Result<()> {
        Ok(())
    }
}

/// Stores `value` encoded with [`encode`] (see there for the types allowed).
pub fn put_value<T: Record>(kv: &dyn KvStore, tree: &str, key: &[u8], value: &T) -> Result<()> {
    kv.put(tree, key, &encode(value)?)
}

/// Reads a value stored by [`put_value`] ([`KvStore::get_async`]).
pub async fn get_value_async<T: Record>(
    kv: &dyn KvStore,
    tree: &str,
    key: &[u8],
) -> Result<Option<T>> {
    decode_at(tree, key, kv.get_async(tree, key).await?)
}

/// Decodes the value read under `key`, naming the key when it is corrupt.
fn decode_at<T: Record>(tree: &str, key: &[u8], bytes: Option<Vec<u8>>) -> Result<Option<T>> {
    let Some(bytes) = bytes else {
        return Ok(None);
    };
    match decode(&bytes) {
        Ok(value) => Ok(Some(value)),
        Err(StorageError::Corrupt(message)) => Err(StorageError::Corrupt(format!(
            "{} in tree {tree:?}: {message}",
            KeyDisplay(key)
        ))),
        Err(other) => Err(other),
    }
}

#[cfg(test)]
#[path = "kv_tests.rs"]
mod tests;

/// Runs a blocking storage call on the blocking pool, off the async
/// threads: `bench-store`'s baseline for the async side, which the
/// domains use.
pub async fn blocking<T: Send + 'static>(
    kv: &std::sync::Arc<dyn KvStore>,
    f: impl FnOnce(&dyn KvStore) -> Result<T> + Send + 'static,
) -> Result<T> {
    let kv = kv.clone();
    crate::tasks::blocking(move || f(kv.as_ref())).await
}
