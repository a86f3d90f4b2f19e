//! ractor_cluster's node server as a fixed child of the tree's `cluster`
//! branch (`cluster.node_server`): the TCP (or TLS) listener and, as its
//! own children, one session per peer. When it fails, the branch starts a
//! new one on the same port; the sessions went with the old one, so the
//! peers see this node's sessions close and the dialer (or the peers')
//! connects again.

use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ractor::{Actor, ActorCell, ActorRef};
use ractor_cluster::node::{NodeConnectionMode, NodeServerSessionInformation};
use ractor_cluster::{
    IncomingEncryptionMode, NodeEventSubscription, NodeServer, NodeServerMessage,
};

use super::view::View;
use crate::faults::{self, Point};
use crate::supervisor::{Spawn, SupervisionError};

/// The node server's name under the `cluster` branch.
pub const NODE_SERVER: &str = "cluster.node_server";

/// How long a new node server waits for the port its failed predecessor
/// held (the old listener closes as that actor's children stop).
const REBIND_WAIT: Duration = Duration::from_secs(5);

/// What every start of the node server is made from.
#[derive(Clone)]
pub struct ServerArgs {
    pub port: u16,
    pub listen: IpAddr,
    pub cookie: String,
    pub node_name: String,
    pub host: String,
    pub tls: Option<tokio_rustls::TlsAcceptor>,
    /// The membership view, where refused sessions and peers whose
    /// session closed are counted.
    pub view: Arc<Mutex<View>>,
}

impl ServerArgs {
    fn server(&self) -> NodeServer {
        NodeServer::new(
            self.port,
            self.cookie.clone(),
            self.node_name.clone(),
            self.host.clone(),
            self.tls.clone().map(IncomingEncryptionMode::Tls),
            // ractor_cluster's own transitive dialing is plain TCP, so with
            // TLS the membership actor dials the peers it hears of itself.
            Some(if self.tls.is_some() {
                NodeConnectionMode::Isolated
            } else {
                NodeConnectionMode::Transitive
            }),
        )
        .with_listen_addr(self.listen)
    }
}

/// Starts the node server linked to the supervisor it is given, retrying
/// while the port is still held by the one that failed.
pub fn spawner(args: ServerArgs) -> Spawn {
    Arc::new(move |sup: ActorCell| {
        let args = args.clone();
        Box::pin(async move {
            let deadline = tokio::time::Instant::now() + REBIND_WAIT;
            loop {
                let name = Some(NODE_SERVER.to_string());
                match Actor::spawn_linked(name, args.server(), (), sup.clone()).await {
                    Ok((server, _)) => {
                        subscribe(&server, &args.view)?;
                        return Ok(server.get_cell());
                    }
                    Err(e) if tokio::time::Instant::now() >= deadline => return Err(e.into()),
                    Err(e) => {
                        tracing::debug!(error = %e, "cluster node server: port not free yet");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            }
        })
    })
}

fn subscribe(
    server: &ActorRef<NodeServerMessage>,
    view: &Arc<Mutex<View>>,
) -> Result<(), SupervisionError> {
    let subscription = Box::new(RefusalCounter {
        view: view.clone(),
        authenticated: Mutex::default(),
    });
    server
        .cast(NodeServerMessage::SubscribeToEvents {
            id: "clipforge.membership".into(),
            subscription,
        })
        .map_err(|e| SupervisionError::from(ractor::SpawnErr::StartupFailed(e.to_string().into())))
}

/// The node server now (a restarted one has a new reference).
pub fn current() -> Option<ActorRef<NodeServerMessage>> {
    ractor::registry::where_is(NODE_SERVER).map(Into::into)
}

/// Counts sessions that closed without authenticating (wrong cookie,
/// protocol mismatch) so refusals show in the admin view.
struct RefusalCounter {
    view: Arc<Mutex<View>>,
    authenticated: Mutex<std::collections::HashSet<ractor::ActorId>>,
}

impl NodeEventSubscription for RefusalCounter {
    fn node_session_opened(&self, _ses: NodeServerSessionInformation) {}
    fn node_session_authenticated(&self, ses: NodeServerSessionInformation) {
        faults::check(Point::NodeServer);
        let mut set = self.authenticated.lock().unwrap_or_else(|e| e.into_inner());
        set.insert(ses.actor.get_id());
    }
    fn node_session_disconnected(&self, ses: NodeServerSessionInformation) {
        let was_authenticated = {
            let mut set = self.authenticated.lock().unwrap_or_else(|e| e.into_inner());
            set.remove(&ses.actor.get_id())
        };
        let mut view = self.view.lock().unwrap_or_else(|e| e.into_inner());
        match ses.peer_name {
            _ if !was_authenticated => {
                view.refused += 1;
                tracing::warn!(peer = %ses.peer_addr, "cluster: connection refused (cookie?)");
            }
            Some(name) => {
                // ractor_cluster names sessions "<node>@<host>".
                let node = name
                    .name
                    .rsplit_once('@')
                    .map_or(name.name.as_str(), |(n, _)| n);
                if view.mark_down(node) {
                    tracing::warn!(peer = %node, "cluster: node down (connection closed)");
                }
            }
            None => {}
        }
    }
}
