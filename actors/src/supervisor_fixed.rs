//! A branch whose children are a fixed set of named service actors (the
//! cluster's: node server, membership, seed dialer, HTTP relay, reply
//! router, stage worker; the webhooks branch's delivery actor; the
//! housekeeping branch's periodic jobs). Each is restarted by its own
//! spawner; one that fails more often than the child
//! policy allows escalates to the node supervisor, which restarts the
//! branch and with it every one of them (a node without its membership or
//! relay is not a working cluster node).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use ractor::ActorCell;

use super::children::Children;
use super::error::SupervisionError;

/// Spawns one fixed child linked to the given supervisor.
pub type Spawn = Arc<
    dyn Fn(ActorCell) -> Pin<Box<dyn Future<Output = Result<ActorCell, SupervisionError>> + Send>>
        + Send
        + Sync,
>;

/// The fixed children of a branch, by actor name.
#[derive(Default)]
pub struct FixedChildren(Mutex<Vec<(String, Spawn)>>);

impl FixedChildren {
    fn spawner(&self, name: &str) -> Option<Spawn> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, s)| s.clone())
    }

    /// Remembers `name`'s spawner (replacing an earlier one).
    pub(super) fn insert(&self, name: &str, spawn: Spawn) {
        let mut all = self.0.lock().unwrap_or_else(|e| e.into_inner());
        all.retain(|(n, _)| n != name);
        all.push((name.to_string(), spawn));
    }

    /// The children's names, in the order they were added.
    fn names(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(n, _)| n.clone())
            .collect()
    }
}

#[async_trait::async_trait]
impl Children for FixedChildren {
    fn identify(&self, cell: &ActorCell) -> Option<String> {
        let name = cell.get_name()?;
        self.spawner(&name).map(|_| name)
    }

    async fn restart(
        &self,
        id: &str,
        _failed: &ActorCell,
        sup: ActorCell,
    ) -> Result<(), SupervisionError> {
        let spawn = self
            .spawner(id)
            .ok_or_else(|| SupervisionError::NotAChild(id.to_string()))?;
        spawn(sup).await.map(|_| ())
    }

    async fn give_up(&self, id: &str, _failed: &ActorCell, reason: &str) {
        tracing::error!(actor = id, %reason, "a node service actor keeps failing");
    }

    fn escalates_on_give_up(&self) -> bool {
        true
    }

    async fn started(&self, sup: ActorCell, generation: u32) {
        // The first start has no children yet (they are added as the node
        // joins); a restarted branch brings every one of them back.
        if generation > 1 {
            for name in self.names() {
                if let Some(spawn) = self.spawner(&name) {
                    if let Err(e) = spawn(sup.clone()).await {
                        tracing::error!(actor = %name, error = %e, "cannot restart a node service actor");
                    }
                }
            }
        }
    }
}

/// A spawner for an actor that is rebuilt from `args` (cloned per start),
/// registered under `name`.
pub fn spawner<A>(name: &str, actor: A, args: A::Arguments) -> Spawn
where
    A: ractor::Actor + Clone,
    A::Arguments: Clone + Sync,
{
    let name = name.to_string();
    Arc::new(move |sup: ActorCell| {
        let (name, actor, args) = (name.clone(), actor.clone(), args.clone());
        let started: Pin<Box<dyn Future<Output = Result<ActorCell, SupervisionError>> + Send>> =
            Box::pin(async move {
                ractor::Actor::spawn_linked(Some(name), actor, args, sup)
                    .await
                    .map(|(a, _)| a.get_cell())
                    .map_err(SupervisionError::from)
            });
        started
    })
}
