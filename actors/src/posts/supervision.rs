//! How publishing starts: the `scheduler` branch of the supervision tree
//! (`crate::supervisor`) first, then the schedule actors it restarts.

use std::sync::{Arc, Weak};

use ractor::ActorCell;

use super::crypto::TokenCipher;
use super::engine::Publishing;
use super::error::Result;
use super::host::PostHost;
use super::settings::PublishSettings;
use crate::supervisor::{policy, Children, SupervisionError};

impl Publishing {
    /// Creates the engine, starts the `scheduler` branch and re-arms every
    /// unfinished post: one `ScheduleActor` each, holding its timer (posts
    /// whose time passed while the node was down fire at once).
    pub async fn start(
        host: PostHost,
        settings: PublishSettings,
        cipher: TokenCipher,
    ) -> Result<Arc<Self>> {
        let this = Self::new(host, settings, cipher)?;
        start(&this).await?;
        this.rearm_all().await?;
        Ok(this)
    }
}

/// Starts the `scheduler` branch under the node supervisor (which must
/// run: a schedule actor is never spawned unsupervised).
async fn start(publishing: &Arc<Publishing>) -> std::result::Result<(), SupervisionError> {
    let tree = publishing.host.tree.clone();
    let children = Arc::new(ScheduleChildren(Arc::downgrade(publishing)));
    tree.start_branch(&tree.scheduler, policy::POST, policy::SCHEDULER, children)
        .await
}

struct ScheduleChildren(Weak<Publishing>);

#[async_trait::async_trait]
impl Children for ScheduleChildren {
    fn identify(&self, cell: &ActorCell) -> Option<String> {
        self.0.upgrade()?.post_of(cell.get_id())
    }

    /// A new actor fires at once: a post still pending and not yet due is
    /// re-armed for its time; one found `publishing` asks the platform about
    /// its handle first, so it is never published twice.
    async fn restart(
        &self,
        id: &str,
        failed: &ActorCell,
        _sup: ActorCell,
    ) -> Result<(), SupervisionError> {
        let p = self.0.upgrade().ok_or(SupervisionError::Stopping)?;
        p.forget_actor(id, failed.get_id());
        p.arm(id, crate::accounts::now_ms()).await;
        Ok(())
    }

    async fn give_up(&self, id: &str, failed: &ActorCell, reason: &str) {
        let Some(p) = self.0.upgrade() else {
            return;
        };
        p.forget_actor(id, failed.get_id());
        // Only a post that has not started publishing can be failed safely;
        // one that has stays due and is looked at again at the next start.
        let why = format!("publishing kept crashing ({reason})");
        if let Err(e) = p.fail_if_pending(id, &why).await {
            tracing::error!(post_id = id, error = %e, "cannot fail the post");
        }
    }

    async fn started(&self, _sup: ActorCell, generation: u32) {
        // After a branch restart no schedule actor is left (they stopped
        // with their supervisor): re-arm every unfinished post from the
        // store (due ones fire at once). The first start is
        // `Publishing::start`'s.
        if generation > 1 {
            if let Some(p) = self.0.upgrade() {
                if let Err(e) = p.rearm_all().await {
                    tracing::error!(error = %e, "cannot re-arm posts");
                }
            }
        }
    }
}
