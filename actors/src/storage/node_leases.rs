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
        match self.kv.leases() {
            Some(l) => l.acquire(key, &holder, ttl).await,
            None => Ok(None),
        }
    }

    /// Extends the lease; false when it is lost (or cannot be renewed now:
    /// the caller then stops, as it would have to by the expiry).
    pub async fn renew(&self, fence: &Fence) -> bool {
        let Some((_, ttl)) = self.leasing() else {
            return false;
        };
        let Some(l) = self.kv.leases() else {
            return false;
        };
        match l.renew(fence, ttl).await {
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
        let Some(l) = self.kv.leases() else {
            return;
        };
        if let Err(e) = l.release(fence).await {
            tracing::warn!(lease = %fence.key, error = %e, "cannot release a lease; it expires");
        }
    }

    /// Applies `ops` atomically; under `fence`, only while that lease is
    /// still current ([`kv::StorageError::Fenced`] otherwise).
    pub async fn apply_under(&self, fence: Option<&Fence>, ops: Vec<KvOp>) -> kv::Result<()> {
        match (fence, self.kv.leases()) {
            (Some(f), Some(l)) => l.apply_fenced(f, ops).await,
            _ => self.kv.apply_async(ops).await,
        }
    }
}
