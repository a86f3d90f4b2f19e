//! Leases with fencing tokens: how a cluster keeps two nodes from running
//! the same project stage or publishing the same post, also when their
//! views of the membership differ (a partition, a paused process).
//!
//! A lease is a row per key (`project:<id>`, `post:<id>`) naming its
//! holder, a token that grows by one on every acquisition, and an expiry.
//! A holder renews it on a timer; one that cannot stops what it runs. Every
//! write the holder makes under the lease goes through
//! [`Leases::apply_fenced`], which commits only while the lease is still
//! held with the same token, in the same transaction: a holder that lost
//! its lease (expired while it was paused, taken over by another node)
//! cannot write any more, whatever it believes.
//!
//! PostgreSQL implements it (`kv_postgres_leases.rs`); a single node on
//! sled has no leases ([`super::kv::KvStore::leases`] is `None`): one
//! process owns the database.

use std::time::Duration;

use super::batch::KvOp;
use super::error::KvFuture;

/// A lease as held: the proof a fenced write presents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fence {
    pub key: String,
    pub holder: String,
    /// Grows on every acquisition of `key`: a larger token is a newer
    /// holder.
    pub token: i64,
}

/// Leases in the shared store (see the module documentation), awaited on
/// the caller's task.
pub trait Leases: Send + Sync {
    /// Takes `key` for `holder` for `ttl` when it is free (never taken,
    /// released or expired) or already `holder`'s; `None` while another
    /// holder has it. Every acquisition gets a new, larger token.
    fn acquire<'a>(
        &'a self,
        key: &'a str,
        holder: &'a str,
        ttl: Duration,
    ) -> KvFuture<'a, Option<Fence>>;

    /// Extends the lease by `ttl` from now; false when it is lost (expired
    /// or taken with a newer token).
    fn renew<'a>(&'a self, fence: &'a Fence, ttl: Duration) -> KvFuture<'a, bool>;

    /// Gives the lease up at once (another holder may take it now).
    /// Releasing a lost lease changes nothing.
    fn release<'a>(&'a self, fence: &'a Fence) -> KvFuture<'a, ()>;

    /// Applies `batch` atomically only while `fence` is still the current,
    /// unexpired lease of its key; otherwise nothing is written and the
    /// result is [`super::error::StorageError::Fenced`].
    fn apply_fenced<'a>(&'a self, fence: &'a Fence, batch: Vec<KvOp>) -> KvFuture<'a, ()>;
}
