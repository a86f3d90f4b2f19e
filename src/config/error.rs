//! Why a configuration cannot be used ([`ConfigError`]).

use clipforge_actors::cluster::TlsError;

/// Why the configuration could not be read, or cannot work. Shown to the
/// operator as it is: each message names the setting.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A layer (the file, the environment, the flags) could not be read,
    /// or a value does not have its setting's type.
    #[error(transparent)]
    Load(#[from] Box<figment::Error>),
    /// A setting out of range, or settings that contradict each other.
    #[error("{0}")]
    Invalid(String),
    /// The cluster's TLS files (`cluster.tls_*`) cannot be used.
    #[error(transparent)]
    Tls(#[from] TlsError),
}

/// A validation message (the checks build them with `format!`).
impl From<String> for ConfigError {
    fn from(message: String) -> Self {
        ConfigError::Invalid(message)
    }
}

impl From<&str> for ConfigError {
    fn from(message: &str) -> Self {
        ConfigError::Invalid(message.to_string())
    }
}
