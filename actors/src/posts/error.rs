//! Errors at the API boundary of scheduling and integrations ([`PublishError`]).

use super::provider::Provider;

/// Errors at the API boundary of scheduling and integrations.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// A request field is invalid; the message starts with the field name.
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    #[error("{0} not found")]
    NotFound(&'static str),
    #[error("connect your {} account first (no active integration)", .0.display())]
    IntegrationRequired(Provider),
    #[error("{message}")]
    Conflict { code: &'static str, message: String },
    #[error("{} publishing is not configured on this server", .0.display())]
    NotConfigured(Provider),
    /// The platform refused the OAuth exchange (bad or used code, denied).
    #[error("{0}")]
    OAuth(String),
    /// The OAuth callback came without the session that started the flow.
    #[error("finish connecting in the browser session that started it (sign in there first)")]
    WrongSession,
    /// The platform could not be reached or failed.
    #[error("{0}")]
    Upstream(String),
    #[error(transparent)]
    Storage(#[from] crate::storage::kv::StorageError),
    /// The `scheduler` branch of the supervision tree is not running.
    #[error(transparent)]
    Supervision(#[from] crate::supervisor::SupervisionError),
}

impl PublishError {
    pub fn invalid(field: &str, message: impl Into<String>) -> Self {
        PublishError::Invalid {
            field: field.to_string(),
            message: message.into(),
        }
    }
}

pub type Result<T, E = PublishError> = std::result::Result<T, E>;
