//! Single activation: which live node hosts an entity's actor. Accounts
//! (and with them their projects) belong to the rendezvous winner of the
//! account id over the up `api` nodes, scheduled posts to the winner of the
//! post id over the up `scheduler` nodes. Every node computes the same
//! owner from the same view; when the set of up nodes changes the view's
//! generation grows and the nodes hand off (see `projects::handoff` and `engine.rs`). The
//! store's leases (`storage::leases`) keep two nodes whose views differ for
//! a moment from running the same project or post.

use super::{placement, Cluster, Role};

impl Cluster {
    /// The up node that owns `key` among those with `role` (this node
    /// included when it has the role); `None` when no such node is up.
    pub fn owner_of(&self, key: &str, role: Role) -> Option<String> {
        let nodes = self
            .view
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .up_with_role(role.as_str());
        placement::owner(key, nodes.iter().map(String::as_str)).map(str::to_string)
    }

    /// Whether this node owns `key` for `role` now. Always false once the
    /// node is leaving (everything it hosts is handed off).
    pub fn owns(&self, key: &str, role: Role) -> bool {
        !self.is_leaving() && self.owner_of(key, role).as_deref() == Some(self.node_name())
    }

    /// Grows whenever the set of up nodes changes.
    pub fn generation(&self) -> u64 {
        let g = self
            .view
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .generation();
        // Leaving changes what this node owns as much as a peer going down.
        g + u64::from(self.is_leaving())
    }

    /// Marks this node as leaving (a graceful stop): it owns nothing from
    /// now on, so the next hand-off stops every actor it hosts.
    pub fn leave(&self) {
        self.leaving
            .store(true, std::sync::atomic::Ordering::Release);
    }

    pub fn is_leaving(&self) -> bool {
        self.leaving.load(std::sync::atomic::Ordering::Acquire)
    }
}
