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

impl AccountError {
    /// The snake_case error code of the error body.
    pub fn code(&self) -> &'static str {
        match self {
            AccountError::InvalidInput(_) => "invalid_input",
            AccountError::InvalidCredentials => "invalid_credentials",
            AccountError::Unauthorized => "unauthorized",
            AccountError::InsufficientCredits { .. } => "insufficient_credits",
            AccountError::PlanNotAllowed(_) => "checkout_required",
            AccountError::NotFound(_) => "not_found",
            AccountError::Conflict(_) => "conflict",
            AccountError::RateLimited { .. } => "rate_limited",
            AccountError::QuotaExceeded { .. } => "storage_quota_exceeded",
            AccountError::Storage(_) | AccountError::Internal(_) => "internal_error",
        }
    }

    /// The HTTP status.
    pub fn status(&self) -> u16 {
        match self {
            AccountError::InvalidInput(_) => 400,
            AccountError::InvalidCredentials | AccountError::Unauthorized => 401,
            AccountError::InsufficientCredits { .. } | AccountError::PlanNotAllowed(_) => 402,
            AccountError::NotFound(_) => 404,
            AccountError::Conflict(_) => 409,
            AccountError::QuotaExceeded { .. } => 413,
            AccountError::RateLimited { .. } => 429,
            AccountError::Storage(_) | AccountError::Internal(_) => 500,
        }
    }

    /// The message for the client: the error's text, except for server
    /// faults, whose details belong in the log only.
    pub fn public_message(&self) -> String {
        match self {
            AccountError::Storage(_) | AccountError::Internal(_) => "internal error".to_string(),
            other => other.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_to_http() {
        let cases = [
            (
                AccountError::InvalidInput("name: empty".into()),
                400,
                "invalid_input",
            ),
            (AccountError::InvalidCredentials, 401, "invalid_credentials"),
            (AccountError::Unauthorized, 401, "unauthorized"),
            (
                AccountError::InsufficientCredits {
                    needed: 3,
                    available: 1,
                },
                402,
                "insufficient_credits",
            ),
            (
                AccountError::PlanNotAllowed("buy".into()),
                402,
                "checkout_required",
            ),
            (AccountError::NotFound("caption template"), 404, "not_found"),
            (AccountError::Conflict("taken".into()), 409, "conflict"),
            (
                AccountError::QuotaExceeded {
                    needed: 1,
                    used: 2,
                    limit: 2,
                },
                413,
                "storage_quota_exceeded",
            ),
            (
                AccountError::RateLimited {
                    retry_after_secs: 9,
                },
                429,
                "rate_limited",
            ),
            (
                AccountError::Storage(StorageError::Corrupt("secret detail".into())),
                500,
                "internal_error",
            ),
        ];
        for (err, status, code) in cases {
            assert_eq!((err.status(), err.code()), (status, code), "{err}");
        }
        let storage = AccountError::Storage(StorageError::Corrupt("secret detail".into()));
        assert_eq!(storage.public_message(), "internal error");
        assert_eq!(
            AccountError::NotFound("caption template").public_message(),
            "caption template not found"
        );
    }
}
