//! What publishing uses of the node it runs on, handed over by the engine
//! that wires the domains together (so publishing does not import it).

use std::sync::Arc;

use crate::accounts::registry::AccountDesk;
use crate::cluster::leases::NodeLeases;
use crate::storage::kv::{self, KvStore};
use crate::storage::objects::ObjectStore;
use crate::supervisor::Tree;

/// The node's store (reads and writes through [`NodeLeases`], which also
/// leases posts and fences their writes on a cluster), its media, the
/// accounts domain (notifications, an account's memory dropped after a
/// write from outside its actor) and the supervision tree (the
/// `scheduler` branch). Cheap to clone.
#[derive(Clone)]
pub struct PostHost {
    pub leases: NodeLeases,
    pub objects: Arc<dyn ObjectStore>,
    pub desk: AccountDesk,
    pub tree: Arc<Tree>,
}

impl PostHost {
    /// Runs a blocking storage call off the async threads.
    pub async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&dyn KvStore) -> kv::Result<T> + Send + 'static,
    ) -> kv::Result<T> {
        self.leases.blocking(f).await
    }
}
