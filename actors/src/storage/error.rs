//! [`StorageError`]: the errors of the storage layer (a leaf module:
//! `kv`, `record` and `objects` all use it).

/// Errors of the storage layer, shared by the key-value and object stores.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// A file-system operation failed.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// Stored data could not be read back: a damaged database or a value
    /// that does not decode as the requested type.
    #[error("corrupt data: {0}")]
    Corrupt(String),
    /// A value could not be encoded for storage.
    #[error("could not encode value: {0}")]
    Encode(String),
    /// The backend (sled, S3) reported an error.
    #[error("storage backend error: {0}")]
    Backend(String),
    /// An object key or prefix that the stores do not accept.
    #[error("invalid key {key:?}: {reason}")]
    InvalidKey { key: String, reason: &'static str },
    /// The object does not exist.
    #[error("object not found: {0}")]
    NotFound(String),
    /// The store was configured with unusable settings.
    #[error("invalid storage configuration: {0}")]
    Config(String),
    /// A write guarded by a lease was refused: the writer no longer holds
    /// the lease (it expired, was released, or another holder took it
    /// with a newer fencing token).
    #[error("lease {key:?} lost (fencing token {token} is no longer current)")]
    Fenced { key: String, token: i64 },
    /// A batch's precondition ([`super::kv::KvOp::Expect`]) did not hold:
    /// another writer changed the key first. Nothing was written.
    #[error("conflicting write: {0}")]
    Conflict(String),
    /// A stored record has a schema version this build cannot read: newer
    /// (written by a later build) or older with no upgrade.
    #[error("{kind} record of schema version {found}: this build reads version {supported}")]
    Version {
        kind: &'static str,
        found: u16,
        supported: u16,
    },
}

impl StorageError {
    /// An [`StorageError::Io`] saying what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        StorageError::Io {
            context: context.into(),
            source,
        }
    }
}

pub type Result<T> = std::result::Result<T, StorageError>;

/// What the async methods of the store (`KvStore`, `Leases`) return.
pub type KvFuture<'a, T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<T>> + Send + 'a>>;
