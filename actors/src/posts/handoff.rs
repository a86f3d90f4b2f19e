//! Hand-off of scheduled posts on a clustered node (`cluster::ownership`):
//! a post belongs to the rendezvous winner of its account id over the up
//! `scheduler` nodes (with the default roles, the node that hosts the
//! account). After a membership change every node stops the schedule
//! actors of posts it no longer owns and arms the unfinished posts it now
//! owns, from the `posts_due` index and the stored records.

use std::collections::HashSet;
use std::sync::Arc;

use super::engine::Publishing;
use super::error::Result;
use super::post;
use crate::cluster::Role;

impl Publishing {
    /// Whether this node hosts the schedule actors of `user_id`'s posts:
    /// always on a single node.
    pub fn owns_posts_of(&self, user_id: &str) -> bool {
        self.host
            .cluster()
            .is_none_or(|c| c.owns(user_id, Role::Scheduler))
    }

    /// Brings the schedule actors on this node in line with the ownership
    /// now; returns (stopped, armed). Nothing to do on a single node.
    pub async fn hand_off(self: &Arc<Self>) -> Result<(usize, usize)> {
        if self.host.cluster().is_none() {
            return Ok((0, 0));
        }
        let mut stopped = 0;
        for (id, _) in self.live.list() {
            let post = post::load_async(self.host.kv(), &id).await?;
            if post.is_some_and(|p| !self.owns_posts_of(&p.user_id)) {
                tracing::info!(post_id = %id, "handing the scheduled post off");
                self.live.stop(&id);
                stopped += 1;
            }
        }
        let live: HashSet<String> = self.live.list().into_iter().map(|(id, _)| id).collect();
        let entries = post::due_entries(self.host.kv()).await?;
        let mut armed = 0;
        for (at, id) in entries {
            if live.contains(&id) {
                continue;
            }
            let post = post::load_async(self.host.kv(), &id).await?;
            if post.is_some_and(|p| self.owns_posts_of(&p.user_id)) {
                self.arm(&id, at).await;
                armed += 1;
            }
        }
        Ok((stopped, armed))
    }
}
