//! The node's live `ScheduleActor`s, one per unfinished post, by post id and
//! by actor id (so a supervision event is matched to its post at once, with
//! 100,000 of them). Every actor is spawned linked to the `scheduler` branch
//! supervisor (`posts/supervision.rs`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use ractor::{Actor, ActorCell, ActorId, ActorRef};

use super::schedule_actor::{ScheduleActor, ScheduleMsg, Steps};
use crate::supervisor::SupervisionError;

#[derive(Default)]
pub struct Live(Mutex<Maps>);

#[derive(Default)]
struct Maps {
    by_post: HashMap<Arc<str>, ActorRef<ScheduleMsg>>,
    by_actor: HashMap<ActorId, Arc<str>>,
}

impl Live {
    fn maps(&self) -> MutexGuard<'_, Maps> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Arms the post's timer for `at` (ms): re-arms its live actor, or
    /// spawns one under `supervisor`. Without one (the `scheduler` branch
    /// did not come back) the post waits in the store: the branch re-arms
    /// every unfinished post when it starts.
    pub async fn arm(
        &self,
        steps: Arc<dyn Steps>,
        supervisor: Result<ActorCell, SupervisionError>,
        id: &str,
        at: i64,
    ) {
        let existing = self.maps().by_post.get(id).cloned();
        if let Some(actor) = existing {
            if actor.send_message(ScheduleMsg::Rearm(at)).is_ok() {
                return;
            }
            self.forget(id, actor.get_id());
        }
        let post: Arc<str> = id.into();
        let args = (steps, post.clone(), at);
        let spawned = match supervisor {
            Ok(sup) => Actor::spawn_linked(None, ScheduleActor, args, sup)
                .await
                .map_err(SupervisionError::from),
            Err(e) => Err(e),
        };
        match spawned {
            Ok((actor, _)) => {
                let mut m = self.maps();
                m.by_actor.insert(actor.get_id(), post.clone());
                if let Some(old) = m.by_post.insert(post, actor) {
                    // Armed twice at once: one actor is enough (a second
                    // one would only find the post already taken).
                    m.by_actor.remove(&old.get_id());
                    old.stop(None);
                }
            }
            Err(e) => tracing::error!(post_id = id, error = %e, "cannot start a schedule actor"),
        }
    }

    /// Stops the post's actor (the post was cancelled or failed).
    pub fn stop(&self, id: &str) {
        let mut m = self.maps();
        if let Some(actor) = m.by_post.remove(id) {
            m.by_actor.remove(&actor.get_id());
            actor.stop(None);
        }
    }

    /// Forgets the post's actor if it is still `actor` (a stopped or failed one).
    pub fn forget(&self, id: &str, actor: ActorId) {
        let mut m = self.maps();
        m.by_actor.remove(&actor);
        if m.by_post.get(id).is_some_and(|a| a.get_id() == actor) {
            m.by_post.remove(id);
        }
    }

    /// The post whose live actor is `actor`.
    pub fn post_of(&self, actor: ActorId) -> Option<String> {
        self.maps().by_actor.get(&actor).map(|p| p.to_string())
    }

    /// Every live schedule actor (post id, actor), for the admin view.
    pub fn list(&self) -> Vec<(String, ActorRef<ScheduleMsg>)> {
        self.maps()
            .by_post
            .iter()
            .map(|(id, a)| (id.to_string(), a.clone()))
            .collect()
    }

    pub fn len(&self) -> usize {
        self.maps().by_post.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
