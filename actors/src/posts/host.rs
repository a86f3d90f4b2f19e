//! What publishing uses of the node it runs on, handed over by the engine
//! that wires the domains together (so publishing does not import it).

use std::sync::{Arc, OnceLock};

use crate::accounts::registry::AccountDesk;
use crate::cluster::Cluster;
use crate::storage::kv::KvStore;
use crate::storage::node_leases::NodeLeases;
use crate::storage::objects::ObjectStore;
use crate::supervisor::Tree;

/// The node's store (reads and writes through [`NodeLeases`], which also
/// leases posts and fences their writes on a cluster), its media, the
/// accounts domain (notifications, an account's memory dropped after a
/// write from outside its actor) and the supervision tree (the
/// `scheduler` branch), and the cluster once the node joined one (who
/// owns which account's posts). Cheap to clone.
#[derive(Clone)]
pub struct PostHost {
    pub leases: NodeLeases,
    pub cluster: Arc<OnceLock<Arc<Cluster>>>,
    pub objects: Arc<dyn ObjectStore>,
    pub desk: AccountDesk,
    pub tree: Arc<Tree>,
}

impl PostHost {
    /// The cluster this node is part of, once it joined one.
    pub fn cluster(&self) -> Option<&Arc<Cluster>> {
        self.cluster.get()
    }

    /// The store, for reads with its async side ([`KvStore::get_async`]).
    pub fn kv(&self) -> &dyn KvStore {
        self.leases.kv()
    }
}
