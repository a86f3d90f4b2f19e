//! Key-value storage behind the [`KvStore`] trait.
//!
//! Values are bytes in named trees (namespaces). [`SledStore`] keeps them in
//! a sled 0.34 database on disk; [`MemoryStore`] keeps them in memory for
//! tests of code that needs a store. Typed values go through [`put_value`] /
//! [`get_value`], which encode with bincode 2 in its serde mode behind a
//! schema-version header ([`Record`], `storage/record.rs`).
//!
//! [`kv_conformance`] is the behaviour every implementation must show; the
//! unit tests run it against both stores and other crates may run it against
//! their own.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};

pub use super::error::{Result, StorageError};
pub use super::record::{decode, decode_payload, encode, Record};
use sled::transaction::{ConflictableTransactionError, TransactionError, Transactional};

/// One write of a batch given to [`KvStore::apply`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KvOp {
    Put {
        tree: String,
        key: Vec<u8>,
        value: Vec<u8>,
    },
    Delete {
        tree: String,
        key: Vec<u8>,
    },
}

impl KvOp {
    fn tree(&self) -> &str {
        match self {
            KvOp::Put { tree, .. } | KvOp::Delete { tree, .. } => tree,
        }
    }
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
/// key. The methods block; call them from `spawn_blocking` in async code
/// that must not stall its executor thread.
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
}

/// Shows a binary key readably in error messages.
struct KeyDisplay<'a>(&'a [u8]);

impl fmt::Display for KeyDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\"", self.0.escape_ascii())
    }
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

/// A [`KvStore`] in a sled 0.34 database directory.
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
        let db = sled::Config::new()
            .path(path)
            .cache_capacity(cache_bytes)
            .open()
            .map_err(|e| sled_error(format!("opening sled database {}", path.display()), e))?;
        Ok(SledStore { db, durable: true })
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

        let outcome: std::result::Result<(), TransactionError<()>> =
            trees.as_slice().transaction(|tx| {
                for op in &batch {
                    let tree = &tx[slot[op.tree()]];
                    match op {
                        KvOp::Put { key, value, .. } => {
                            tree.insert(key.as_slice(), value.as_slice())?;
                        }
                        KvOp::Delete { key, .. } => {
                            tree.remove(key.as_slice())?;
                        }
                    }
                }
                Ok::<(), ConflictableTransactionError<()>>(())
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
            Err(TransactionError::Abort(())) => {
                return Err(StorageError::Backend(format!(
                    "{}: transaction aborted",
                    context()
                )))
            }
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

/// Reads a value stored by [`put_value`].
pub fn get_value<T: Record>(kv: &dyn KvStore, tree: &str, key: &[u8]) -> Result<Option<T>> {
    let Some(bytes) = kv.get(tree, key)? else {
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

    kv.flush().expect("flush");
    clear(kv, A);
    clear(kv, B);
}

#[cfg(test)]
#[path = "kv_tests.rs"]
mod tests;
