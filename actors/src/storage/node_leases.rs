//! The project and post leases of a clustered node ([`super::leases`]):
//! taken in PostgreSQL under the node's name, for `cluster.lease_ms`, and
//! every write made under one fenced by it. A single node (sled) takes no
//! leases and writes plainly.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use super::kv::{self, KvOp, KvStore};
use super::leases::Fence;

/// Under what name and for how long a clustered node leases what it runs
/// (its node name and `cluster.lease_ms`).
#[derive(Clone, Debug)]
pub struct LeaseHolder {
    pub node: String,
    pub ttl: Duration,
}

/// The node's store as the domains that lease what they run (projects,
/// posts) use it: the lease holder (set once, when the node joins a
/// cluster) and the store. Cheap to clone.
#[derive(Clone)]
pub struct NodeLeases {
    kv: Arc<dyn KvStore>,
    holder: Arc<OnceLock<LeaseHolder>>,
}

impl NodeLeases {
    pub fn new(kv: Arc<dyn KvStore>) -> Self {
        Self {
            kv,
            holder: Arc::default(),
        }
    }

    /// The node joined a cluster: from now on it leases under `holder`.
    /// Once (a second call changes nothing).
    pub fn hold_as(&self, holder: LeaseHolder) {
        let _ = self.holder.set(holder);
    }

    /// Runs a blocking storage call off the async threads.
    pub async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&dyn KvStore) -> kv::Result<T> + Send + 'static,
    ) -> kv::Result<T> {
        kv::blocking(&self.kv, f).await
    }

    /// The store, for reads with its async side ([`KvStore::get_async`]).
    pub fn kv(&self) -> &dyn KvStore {
        &*self.kv
    }

    /// `(holder, ttl)` when this node must lease what it runs: clustered,
    /// on a store with leases.
    pub fn leasing(&self) -> Option<(String, Duration)> {
        let holder = self.holder.get()?;
        self.kv.leases()?;
        Some((holder.node.clone(), holder.ttl))
    }

    /// Takes `key` for this node; `Ok(None)` while another node holds it
    /// (or when this node takes no leases).
    pub async fn acquire(&self, key: &str) -> kv::Result<Option<Fence>> {
        let Some((holder, ttl)) = self.leasing() else {
            return Ok(None);
        };
        let key = key.to_string();
        self.blocking(move |kv| match kv.leases() {
            Some(l) => l.acquire(&key, &holder, ttl),
            None => Ok(None),
        })
        .await
    }

    /// Extends the lease; false when it is lost (or cannot be renewed now:
    /// the caller then stops, as it would have to by the expiry).
    pub async fn renew(&self, fence: &Fence) -> bool {
        let Some((_, ttl)) = self.leasing() else {
            return false;
        };
        let f = fence.clone();
        match self
            .blocking(move |kv| match kv.leases() {
                Some(l) => l.renew(&f, ttl),
                None => Ok(false),
            })
            .await
        {
            Ok(held) => held,
            Err(e) => {
                tracing::warn!(lease = %fence.key, error = %e, "cannot renew a lease");
                false
            }
        }
    }

    /// Gives the lease up (a hand-off: the next owner need not wait for
    /// the expiry).
    pub async fn release(&self, fence: &Fence) {
        let f = fence.clone();
        if let Err(e) = self
            .blocking(move |kv| match kv.leases() {
                Some(l) => l.release(&f),
                None => Ok(()),
            })
            .await
        {
            tracing::warn!(lease = %fence.key, error = %e, "cannot release a lease; it expires");
        }
    }

    /// Applies `ops` atomically; under `fence`, only while that lease is
    /// still current ([`kv::StorageError::Fenced`] otherwise).
    pub async fn apply_under(&self, fence: Option<&Fence>, ops: Vec<KvOp>) -> kv::Result<()> {
        let fence = fence.cloned();
        self.blocking(move |kv| match (&fence, kv.leases()) {
            (Some(f), Some(l)) => l.apply_fenced(f, ops),
            _ => kv.apply(ops),
        })
        .await
    }
}
