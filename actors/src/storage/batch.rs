//! The writes of one atomic batch ([`KvOp`]), shared by the stores and the
//! fenced writes of [`super::leases`].

/// One write of a batch given to [`KvStore::apply`](super::kv::KvStore::apply).
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
    /// A precondition, not a write: the batch is applied only if `key`
    /// holds `value` (`None`: is absent) when it commits, checked before
    /// any of the batch's writes; otherwise nothing is written and
    /// [`KvStore::apply`](super::kv::KvStore::apply) fails with [`StorageError::Conflict`](super::error::StorageError::Conflict). This is
    /// how a writer makes a change conditional on a version it read
    /// (optimistic concurrency) or on a key being still free.
    Expect {
        tree: String,
        key: Vec<u8>,
        value: Option<Vec<u8>>,
    },
}

impl KvOp {
    pub(crate) fn tree(&self) -> &str {
        match self {
            KvOp::Put { tree, .. } | KvOp::Delete { tree, .. } | KvOp::Expect { tree, .. } => tree,
        }
    }
}
