//! Hand-off on a clustered node (`cluster::ownership`): after the set of
//! up nodes changed, stop the project actors this node no longer owns,
//! and start the unfinished projects of the accounts it now owns from
//! their stored records (they continue from their first unfinished
//! stage). The engine hands off account actors; scheduled posts hand off
//! in `posts::handoff`.

use std::sync::Arc;
use std::time::Duration;

use super::domain::Projects;
use crate::projects::records as projects;

/// How long a hand-off waits for a project actor to stop.
const STOP_WAIT: Duration = Duration::from_secs(5);

impl Projects {
    /// Whether this node hosts `user_id`'s actors: always on a single node.
    pub fn owns_account(&self, user_id: &str) -> bool {
        self.accounts.owns(user_id)
    }

    /// Brings the project actors on this node in line with the ownership
    /// now (see the module documentation); returns how many it stopped
    /// and started. Nothing to do on a single node.
    pub async fn hand_off(self: &Arc<Self>) -> super::error::RunResult<(usize, usize)> {
        let (mut stopped, mut started) = (0, 0);
        if self.cluster.get().is_none() {
            return Ok((stopped, started));
        }
        for (id, tracked) in self.live_projects() {
            let owner = projects::owner_of_async(&*self.kv, &id).await?;
            if owner.is_some_and(|u| !self.owns_account(&u)) {
                tracing::info!(project_id = %id, "handing the project off");
                for child in tracked.actor.get_children() {
                    child.stop(Some("handed off".into()));
                }
                // Waits for its `post_stop`, which releases the lease, so
                // the new owner need not wait for the expiry.
                let _ = tracked
                    .actor
                    .stop_and_wait(Some("handed off".into()), Some(STOP_WAIT))
                    .await;
                self.forget_project_actor(&id, tracked.actor.get_id());
                stopped += 1;
            }
        }
        let unfinished = projects::unfinished_projects(&*self.kv).await?;
        for p in unfinished {
            if self.owns_account(&p.user_id) && self.project_actor(&p.id).is_none() {
                tracing::info!(project_id = %p.id, state = p.state.as_str(), "taking the project over");
                self.start_project(p).await?;
                started += 1;
            }
        }
        Ok((stopped, started))
    }
}
