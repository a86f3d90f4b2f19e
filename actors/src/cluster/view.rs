//! The membership view: every peer heard from, its roles, load and state.
//! Pure bookkeeping (no I/O), driven by the membership actor.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::heartbeat::{Heartbeat, Load};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeState {
    Up,
    /// No heartbeat within the timeout, or its connection closed.
    Down,
}

#[derive(Clone, Debug)]
struct Peer {
    roles: Vec<String>,
    load: Load,
    addr: String,
    last: Instant,
    state: NodeState,
}

/// One node as the admin view shows it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStatus {
    pub name: String,
    pub addr: String,
    pub roles: Vec<String>,
    pub state: NodeState,
    pub load: Load,
    /// Age of the last heartbeat received (`None` for this node).
    pub last_heartbeat_ms: Option<u64>,
    #[serde(rename = "self")]
    pub is_self: bool,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSnapshot {
    pub enabled: bool,
    pub node: String,
    /// Cluster connections closed before authenticating (e.g. a wrong cookie).
    pub refused_connections: u64,
    /// This node first, then the peers by name.
    pub nodes: Vec<NodeStatus>,
}

impl ClusterSnapshot {
    /// A node without a cluster: itself, up.
    pub fn single(node: &str, roles: &[String], load: Load) -> Self {
        Self {
            enabled: false,
            node: node.to_string(),
            refused_connections: 0,
            nodes: vec![own_status(node, "", roles, load)],
        }
    }
}

fn own_status(node: &str, addr: &str, roles: &[String], load: Load) -> NodeStatus {
    NodeStatus {
        name: node.to_string(),
        addr: addr.to_string(),
        roles: roles.to_vec(),
        state: NodeState::Up,
        load,
        last_heartbeat_ms: None,
        is_self: true,
    }
}

#[derive(Debug)]
pub struct View {
    node: String,
    addr: String,
    roles: Vec<String>,
    peers: BTreeMap<String, Peer>,
    pub(crate) refused: u64,
    /// Grows whenever the set of up nodes changes (ownership moves).
    generation: u64,
}

impl View {
    pub fn new(node: &str, addr: &str, roles: Vec<String>) -> Self {
        Self {
            node: node.to_string(),
            addr: addr.to_string(),
            roles,
            peers: BTreeMap::new(),
            refused: 0,
            generation: 0,
        }
    }

    /// How many times the set of up nodes has changed.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The nodes with `role` that are up: this one (when it has the role)
    /// and the up peers that announce it.
    pub fn up_with_role(&self, role: &str) -> Vec<String> {
        let mut out = Vec::new();
        if self.roles.iter().any(|r| r == role) {
            out.push(self.node.clone());
        }
        out.extend(
            self.peers
                .iter()
                .filter(|(_, p)| p.state == NodeState::Up && p.roles.iter().any(|r| r == role))
                .map(|(n, _)| n.clone()),
        );
        out
    }

    /// Records a heartbeat; returns true when the peer is new or was down.
    pub fn record(&mut self, hb: Heartbeat, now: Instant) -> bool {
        if hb.node.is_empty() || hb.node == self.node {
            return false;
        }
        let peer = Peer {
            roles: hb.roles,
            load: hb.load,
            addr: hb.addr,
            last: now,
            state: NodeState::Up,
        };
        let came_up = match self.peers.insert(hb.node, peer) {
            Some(old) => old.state == NodeState::Down,
            None => true,
        };
        if came_up {
            self.generation += 1;
        }
        came_up
    }

    /// Marks down every up peer silent for longer than `timeout`; returns
    /// the names that went down.
    pub fn sweep(&mut self, now: Instant, timeout: Duration) -> Vec<String> {
        let mut down = Vec::new();
        for (name, p) in &mut self.peers {
            if p.state == NodeState::Up && now.saturating_duration_since(p.last) > timeout {
                p.state = NodeState::Down;
                down.push(name.clone());
            }
        }
        if !down.is_empty() {
            self.generation += 1;
        }
        down
    }

    /// Marks a peer down at once (its connection closed).
    pub fn mark_down(&mut self, name: &str) -> bool {
        match self.peers.get_mut(name) {
            Some(p) if p.state == NodeState::Up => {
                p.state = NodeState::Down;
                self.generation += 1;
                true
            }
            _ => false,
        }
    }

    /// Whether `name` is this node or a peer that is up.
    pub fn is_up(&self, name: &str) -> bool {
        name == self.node
            || self
                .peers
                .get(name)
                .is_some_and(|p| p.state == NodeState::Up)
    }

    /// Cluster addresses of the up peers.
    pub fn up_addrs(&self) -> Vec<String> {
        self.peers
            .values()
            .filter(|p| p.state == NodeState::Up && !p.addr.is_empty())
            .map(|p| p.addr.clone())
            .collect()
    }

    /// The up peers with their load (for placement).
    /// When `name`'s last heartbeat arrived.
    pub fn heard_at(&self, name: &str) -> Option<Instant> {
        self.peers.get(name).map(|p| p.last)
    }

    pub fn up_peers(&self) -> Vec<(String, Vec<String>, Load)> {
        self.peers
            .iter()
            .filter(|(_, p)| p.state == NodeState::Up)
            .map(|(n, p)| (n.clone(), p.roles.clone(), p.load))
            .collect()
    }

    pub fn snapshot(&self, now: Instant, own_load: Load) -> ClusterSnapshot {
        let mut nodes = vec![own_status(&self.node, &self.addr, &self.roles, own_load)];
        nodes.extend(self.peers.iter().map(|(name, p)| NodeStatus {
            name: name.clone(),
            addr: p.addr.clone(),
            roles: p.roles.clone(),
            state: p.state,
            load: p.load,
            last_heartbeat_ms: Some(now.saturating_duration_since(p.last).as_millis() as u64),
            is_self: false,
        }));
        ClusterSnapshot {
            enabled: true,
            node: self.node.clone(),
            refused_connections: self.refused,
            nodes,
        }
    }
}

#[cfg(test)]
#[path = "view_tests.rs"]
mod tests;
