//! The cluster: nodes joined with ractor_cluster (`NodeServer`, cookie
//! authentication, transitive connections to the seeds' peers) and a
//! heartbeat membership view with each node's roles, state and load; on a
//! `worker` node, the stage worker that runs other nodes' stages
//! (`worker.rs`). See ARCHITECTURE.md, "Cluster".

mod dialer;
mod dispatch;
mod heartbeat;
mod membership;
mod node_server;
mod ownership;
pub mod placement;
pub mod relay;
pub mod remote_stage;
mod replies;
mod settings;
pub mod stage_job;
pub mod stage_msgs;
pub mod stage_wire;
mod view;
pub mod wire;
pub mod worker;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ractor::ActorRef;

pub use heartbeat::{Heartbeat, Load};
pub use membership::{MembershipMsg, GROUP};
pub use settings::{ClusterSettings, ClusterTls, Role, TlsError};
use view::View;
pub use view::{ClusterSnapshot, NodeState, NodeStatus};

/// The membership actor's registered name.
const MEMBERSHIP: &str = "cluster.membership";

/// How long a job sent to this node's own worker counts against it before
/// the worker's live load shows it.
const LOCAL_SENT_FRESH: Duration = Duration::from_millis(250);

/// Where a stage goes ([`Cluster::pick_worker`]).
pub enum Pick {
    /// Send it to this node's worker.
    Worker(String, ractor::ActorCell),
    /// Every worker's slots are taken: hold it and ask again.
    AllBusy,
    /// No worker is up.
    NoWorker,
}

/// A running cluster membership of this node.
pub struct Cluster {
    settings: ClusterSettings,
    /// Stage jobs sent to a node and not yet visible in its heartbeat.
    pending: Mutex<Vec<(String, Instant)>>,
    /// When this node last sent a stage to each worker (round robin among
    /// equally loaded workers).
    last_pick: Mutex<std::collections::HashMap<String, Instant>>,
    view: Arc<Mutex<View>>,
    load: Arc<dyn Fn() -> Load + Send + Sync>,
    /// The supervision tree; its `cluster` branch holds this node's
    /// node server, dialer, membership actor, relay, reply router and
    /// stage worker.
    tree: Arc<crate::supervisor::Tree>,
    /// Set on a graceful stop: this node hands everything off.
    leaving: std::sync::atomic::AtomicBool,
    /// Requests this node forwarded, waiting for their responses.
    replies: Arc<replies::Replies>,
}

/// The advertised host: the setting, else the listen IP, else (listening
/// on every interface) the machine's host name.
fn advertised_host(s: &ClusterSettings) -> String {
    if let Some(h) = &s.advertise_host {
        return h.clone();
    }
    if !s.listen.ip().is_unspecified() {
        return s.listen.ip().to_string();
    }
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    match std::str::from_utf8(&buf[..end]) {
        Ok(h) if rc == 0 && !h.is_empty() => h.to_string(),
        _ => "localhost".into(),
    }
}

impl Cluster {
    /// Starts the node server on `settings.listen`, the membership actor,
    /// and dials the seeds. `load` reports this node's worker slots.
    pub async fn start(
        settings: ClusterSettings,
        load: Arc<dyn Fn() -> Load + Send + Sync>,
        tree: Arc<crate::supervisor::Tree>,
    ) -> anyhow::Result<Self> {
        tree.start_cluster()
            .await
            .map_err(|e| anyhow::anyhow!("cluster supervisor: {e}"))?;
        let host = advertised_host(&settings);
        let addr = format!("{host}:{}", settings.listen.port());
        let roles = settings
            .roles
            .iter()
            .map(|r| r.as_str().to_string())
            .collect();
        let view = Arc::new(Mutex::new(View::new(&settings.node_name, &addr, roles)));
        let server = node_server::ServerArgs {
            port: settings.listen.port(),
            listen: settings.listen.ip(),
            cookie: settings.cookie.clone(),
            node_name: settings.node_name.clone(),
            host,
            tls: settings.tls.as_ref().map(|t| t.acceptor.clone()),
            view: view.clone(),
        };
        tree.supervise_cluster_actor(node_server::NODE_SERVER, node_server::spawner(server))
            .await
            .map_err(|e| anyhow::anyhow!("cluster node server: {e}"))?;
        // Before the membership actor, whose first tick asks it to dial.
        let dialer = dialer::DialerArgs {
            own: addr.clone(),
            tls: settings.tls.as_ref().map(|t| t.connector.clone()),
        };
        tree.supervise_cluster_actor(
            dialer::DIALER,
            crate::supervisor::spawner(dialer::DIALER, dialer::Dialer, dialer),
        )
        .await
        .map_err(|e| anyhow::anyhow!("cluster dialer: {e}"))?;
        let args = membership::MembershipArgs {
            settings: settings.clone(),
            addr,
            view: view.clone(),
            load: load.clone(),
        };
        tree.supervise_cluster_actor(
            MEMBERSHIP,
            crate::supervisor::spawner(MEMBERSHIP, membership::Membership, args),
        )
        .await
        .map_err(|e| anyhow::anyhow!("cluster membership: {e}"))?;
        Ok(Self {
            settings,
            pending: Mutex::default(),
            last_pick: Mutex::default(),
            view,
            load,
            tree,
            leaving: std::sync::atomic::AtomicBool::new(false),
            replies: Arc::default(),
        })
    }

    /// The membership view now.
    pub fn snapshot(&self) -> ClusterSnapshot {
        let own = (self.load)();
        let view = self.view.lock().unwrap_or_else(|e| e.into_inner());
        view.snapshot(Instant::now(), own)
    }

    /// Up peers with their roles and load.
    pub fn up_peers(&self) -> Vec<(String, Vec<String>, Load)> {
        self.view
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .up_peers()
    }

    pub fn node_name(&self) -> &str {
        &self.settings.node_name
    }

    /// Starts a cluster actor under the tree's `cluster` branch, restarted
    /// with `spawn` whenever it fails.
    pub async fn supervise(
        &self,
        name: &str,
        spawn: crate::supervisor::Spawn,
    ) -> anyhow::Result<()> {
        self.tree
            .supervise_cluster_actor(name, spawn)
            .await
            .map_err(|e| anyhow::anyhow!("{name}: {e}"))
    }

    /// The membership actor now (it may have been restarted).
    fn membership(&self) -> Option<ActorRef<MembershipMsg>> {
        ractor::registry::where_is(MEMBERSHIP).map(Into::into)
    }

    pub fn has_role(&self, role: Role) -> bool {
        self.settings.roles.contains(&role)
    }

    /// The largest stage job or result sent inside a cluster message.
    pub fn max_inline(&self) -> usize {
        self.settings.max_inline
    }

    /// Tells the peers this node's load now (a stage started or ended), so
    /// a stage held for a free slot goes out at once.
    pub fn load_changed(&self) {
        if let Some(m) = self.membership() {
            let _ = m.cast(MembershipMsg::Beat);
        }
    }

    pub fn heartbeat_every(&self) -> Duration {
        self.settings.heartbeat
    }

    pub fn heartbeat_timeout(&self) -> Duration {
        self.settings.timeout
    }

    pub fn lease_ttl(&self) -> Duration {
        self.settings.lease
    }

    /// Whether `node` is this node or a peer that is up.
    pub fn is_up(&self, node: &str) -> bool {
        self.view
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_up(node)
    }

    /// The worker for a stage run ([`dispatch::choose`]): an up worker with
    /// a free slot (its last heartbeat plus the jobs this node sent it
    /// since), the least taken, round robin among equals; `avoid` is
    /// skipped when another worker is up.
    pub fn pick_worker(&self, run: &str, avoid: Option<&str>) -> Pick {
        let mut up: Vec<(String, Load)> = Vec::new();
        if self.has_role(Role::Worker) {
            up.push((self.settings.node_name.clone(), (self.load)()));
        }
        for (name, roles, load) in self.up_peers() {
            if roles.iter().any(|r| r == "worker") {
                up.push((name, load));
            }
        }
        let fresh = self.settings.heartbeat * 2;
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        pending.retain(|(_, at)| at.elapsed() < fresh);
        let own = self.settings.node_name.clone();
        let heard: std::collections::HashMap<String, Instant> = {
            let view = self.view.lock().unwrap_or_else(|e| e.into_inner());
            up.iter()
                .filter_map(|(n, _)| Some((n.clone(), view.heard_at(n)?)))
                .collect()
        };
        let mut cells = std::collections::HashMap::new();
        let candidates: Vec<dispatch::Candidate> = up
            .into_iter()
            .filter_map(|(node, load)| {
                let cell = ractor::pg::get_members(&wire::worker_group(&node))
                    .into_iter()
                    .next()?;
                // Jobs sent since the load was reported: a peer's after its
                // last heartbeat (a worker beats as soon as it takes or
                // ends a stage); this node's load is read live, so only
                // what its worker may not have taken yet.
                let sent = pending
                    .iter()
                    .filter(|(n, at)| {
                        *n == node
                            && if node == own {
                                at.elapsed() < LOCAL_SENT_FRESH
                            } else {
                                heard.get(&node).is_none_or(|h| at > h)
                            }
                    })
                    .count();
                cells.insert(node.clone(), cell);
                Some(dispatch::Candidate { node, load, sent })
            })
            .collect();
        let mut last = self.last_pick.lock().unwrap_or_else(|e| e.into_inner());
        match dispatch::choose(&candidates, run, avoid, &last) {
            dispatch::Choice::Worker(node) => {
                last.insert(node.clone(), Instant::now());
                pending.push((node.clone(), Instant::now()));
                match cells.remove(&node) {
                    Some(cell) => Pick::Worker(node, cell),
                    None => Pick::NoWorker,
                }
            }
            dispatch::Choice::AllBusy => Pick::AllBusy,
            dispatch::Choice::NoWorker => Pick::NoWorker,
        }
    }

    pub fn stop(&self) {
        if let Some(m) = self.membership() {
            m.stop(None);
        }
        if let Some(server) = node_server::current() {
            server.stop(None);
        }
    }
}
