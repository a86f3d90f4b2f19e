//! Why the supervision tree could not start, or start again, an actor.

#[derive(Debug, thiserror::Error)]
pub enum SupervisionError {
    #[error("the supervision tree is not running")]
    TreeNotRunning,
    #[error("the {0} branch is not running")]
    BranchNotRunning(&'static str),
    #[error("{0} is not a child of this branch")]
    NotAChild(String),
    /// The node is shutting down: nothing is restarted.
    #[error("the node is stopping")]
    Stopping,
    #[error("spawning an actor: {0}")]
    Spawn(#[from] ractor::SpawnErr),
    /// The node supervisor did not take or answer a request.
    #[error("the node supervisor did not answer: {0}")]
    NoAnswer(String),
}
