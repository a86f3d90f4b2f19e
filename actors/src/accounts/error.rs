//! Errors of the accounts layer and their HTTP mapping.

use crate::storage::kv::StorageError;

pub type Result<T> = std::result::Result<T, AccountError>;

/// Why an account operation was refused or failed. [`status`](Self::status)
/// and [`code`](Self::code) give the HTTP status and the `error` field of the
/// error body; [`public_message`](Self::public_message) its `message`.
#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    /// A field is missing or malformed; the message starts with its name.
    #[error("{0}")]
    InvalidInput(String),
    /// Sign-in or password check with a wrong email or password.
    #[error("invalid email or password")]
    InvalidCredentials,
    /// No session, or an expired or unknown one.
    #[error("not signed in or the session has expired")]
    Unauthorized,
    #[error("insufficient credits: {needed} needed, {available} available")]
    InsufficientCredits { needed: u64, available: u64 },
    /// The plan must be bought (or granted) before it can be selected.
    #[error("{0}")]
    PlanNotAllowed(String),
    /// The named resource does not exist or belongs to another user.
    #[error("{0} not found")]
    NotFound(&'static str),
    #[error("{0}")]
    Conflict(String),
    #[error("too many attempts; try again in {retry_after_secs} s")]
    RateLimited { retry_after_secs: u64 },
    /// Storing `needed` more bytes would exceed the plan's storage quota.
    #[error("storage quota exceeded: {used} of {limit} bytes used, {needed} more requested")]
    QuotaExceeded { needed: u64, used: u64, limit: u64 },
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// A failure that is neither the caller's nor the store's (e.g. the
    /// password hasher).
    #[error("internal error: {0}")]
    Internal(String),
}
