//! What the project domain uses of the cluster this node joined: the
//! node's name (renders record it) and running a stage on the cluster's
//! workers. The cluster implements it (`cluster::remote_stage`), so the
//! domain does not import the cluster, which imports the domain's stages.

use std::sync::Arc;

use ractor::{ActorCell, SpawnErr};

use super::records::ProjectRecord;
use super::stages::{Stage, StageError};
use super::work::CaptionResult;

/// The cluster as a project's actor uses it.
#[async_trait::async_trait]
pub trait Clustered: Send + Sync + 'static {
    /// This node's name in the cluster.
    fn node_name(&self) -> &str;

    /// Spawns the actor (named `name`, linked to `supervisor`: the
    /// project's actor) that runs `stage` of `project` on a worker of the
    /// cluster and reports to `parent`.
    async fn spawn_stage(
        &self,
        name: String,
        supervisor: ActorCell,
        project: ProjectRecord,
        stage: Stage,
        parent: Arc<dyn StageParent>,
    ) -> Result<(), SpawnErr>;
}

/// Where a stage run elsewhere reports (the project's actor).
pub trait StageParent: Send + Sync + 'static {
    /// The stage's own progress, in percent.
    fn progress(&self, stage: Stage, pct: u8);
    /// The stage ended (once).
    fn done(&self, stage: Stage, result: Result<Option<CaptionResult>, StageError>);
}
