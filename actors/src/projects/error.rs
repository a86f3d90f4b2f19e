//! What the project domain's node-level operations fail with: resuming
//! projects after a start, a cluster hand-off, removing a project, failing
//! the renders a restart interrupted.

use crate::accounts::AccountError;
use crate::storage::kv::StorageError;
use crate::supervisor::SupervisionError;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The store (records) or the media storage (objects).
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// An account's actor refused or did not answer (credits, quota).
    #[error(transparent)]
    Account(#[from] AccountError),
    /// A project's actor could not be started.
    #[error(transparent)]
    Supervision(#[from] SupervisionError),
}

pub type RunResult<T> = std::result::Result<T, RunError>;
