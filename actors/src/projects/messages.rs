//! What a project's actor is sent ([`ProjectMsg`]).

use ractor::RpcReplyPort;

use super::stages::{Stage, StageError};
use super::work::CaptionResult;

pub enum ProjectMsg {
    /// Take the project's lease (clustered), then start.
    Acquire,
    /// Renew the lease; stop when it is lost.
    Renew,
    /// Start (or resume) processing.
    Start,
    /// A worker slot was granted.
    SlotGranted(tokio::sync::OwnedSemaphorePermit),
    Progress(Stage, u8),
    /// The stage actor finished.
    StageDone(Stage, Result<Option<CaptionResult>, StageError>),
    /// Run `stage` again (after a backoff).
    Retry(Stage),
    /// Cancel processing; replies once everything is stopped and released.
    Cancel(RpcReplyPort<()>),
}

// Local only: with ractor's `cluster` feature, messages opt in explicitly.
impl ractor::Message for ProjectMsg {}
