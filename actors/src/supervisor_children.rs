//! The [`Children`] trait: how a branch of the tree restarts its
//! children, implemented by each domain.

use ractor::ActorCell;

use super::error::SupervisionError;

/// How a branch restarts its children; implemented by each domain.
#[async_trait::async_trait]
pub trait Children: Send + Sync + 'static {
    /// The id of the entity whose actor this is (None: not one of ours any
    /// more, nothing to do).
    fn identify(&self, cell: &ActorCell) -> Option<String>;
    /// Starts the entity `id` again under `supervisor`, replacing `failed`.
    async fn restart(
        &self,
        id: &str,
        failed: &ActorCell,
        supervisor: ActorCell,
    ) -> Result<(), SupervisionError>;
    /// The entity failed more often than its policy allows.
    async fn give_up(&self, id: &str, failed: &ActorCell, reason: &str);
    /// The branch supervisor (re)started; `generation` counts its starts
    /// (1 = the node's first).
    async fn started(&self, supervisor: ActorCell, generation: u32);
    /// Whether giving up on a child fails the branch (escalates to the
    /// node supervisor) instead of going on without it.
    fn escalates_on_give_up(&self) -> bool {
        false
    }
    /// Whether the child `id` is started again when it fails; a one-shot
    /// child (a clip render) is not: the branch gives up on it at once.
    fn restarts(&self, _id: &str) -> bool {
        true
    }
}
