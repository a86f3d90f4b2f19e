//! The membership actor: one per node, joined to the process group
//! [`GROUP`]. ractor_cluster mirrors the group on every connected node, so
//! each tick the actor casts its heartbeat to the remote members, sweeps
//! peers silent past the timeout (a stopped process keeps its TCP
//! connection open, so ractor_cluster alone would never notice) and
//! re-dials seeds that are not connected.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ractor::{Actor, ActorProcessingErr, ActorRef};
use ractor_cluster::{NodeServerMessage, RactorClusterMessage};

use super::heartbeat::{now_ms, Heartbeat, Load};
use super::view::View;
use super::ClusterSettings;

/// The process group every node's membership actor joins.
pub const GROUP: &str = "clipforge.membership";
/// Seeds are re-dialled every this many ticks when not connected.
const REDIAL_TICKS: u64 = 5;

#[derive(RactorClusterMessage)]
pub enum MembershipMsg {
    /// A peer's heartbeat (arrives over the cluster).
    Heartbeat(Heartbeat),
    /// The local timer.
    Tick,
    /// This node's load changed (a stage started or ended): tell the peers
    /// now rather than at the next tick.
    Beat,
}

#[derive(Clone)]
pub struct Membership;

#[derive(Clone)]
pub struct MembershipArgs {
    pub settings: ClusterSettings,
    pub addr: String,
    pub view: Arc<Mutex<View>>,
    pub load: Arc<dyn Fn() -> Load + Send + Sync>,
    pub node_server: ActorRef<NodeServerMessage>,
}

pub struct MembershipState {
    args: MembershipArgs,
    ticks: u64,
    /// A redial task is running.
    redialling: Arc<AtomicBool>,
    /// Cluster addresses heard of in heartbeats (dialled with TLS on).
    heard: std::collections::BTreeSet<String>,
}

impl Actor for Membership {
    type Msg = MembershipMsg;
    type State = MembershipState;
    type Arguments = MembershipArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<MembershipMsg>,
        args: MembershipArgs,
    ) -> Result<MembershipState, ActorProcessingErr> {
        ractor::pg::join(GROUP.to_string(), vec![myself.get_cell()]);
        myself.send_interval(args.settings.heartbeat, || MembershipMsg::Tick);
        Ok(MembershipState {
            args,
            ticks: 0,
            redialling: Arc::default(),
            heard: std::collections::BTreeSet::new(),
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<MembershipMsg>,
        msg: MembershipMsg,
        st: &mut MembershipState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            MembershipMsg::Heartbeat(hb) => {
                let name = hb.node.clone();
                if st.heard.len() < 1024 {
                    st.heard.extend(hb.peers.iter().cloned());
                    if !hb.addr.is_empty() {
                        st.heard.insert(hb.addr.clone());
                    }
                }
                let mut view = st.args.view.lock().unwrap_or_else(|e| e.into_inner());
                if view.record(hb, Instant::now()) {
                    tracing::info!(peer = %name, "cluster: node up");
                }
            }
            MembershipMsg::Beat => self.beat(st),
            MembershipMsg::Tick => {
                st.ticks += 1;
                self.beat(st);
                let down = {
                    let mut view = st.args.view.lock().unwrap_or_else(|e| e.into_inner());
                    view.sweep(Instant::now(), st.args.settings.timeout)
                };
                for name in down {
                    tracing::warn!(peer = %name, "cluster: node down (no heartbeat)");
                }
                if st.ticks % REDIAL_TICKS == 1 && !st.redialling.swap(true, Ordering::AcqRel) {
                    // Off the actor: a slow connect must not delay heartbeats.
                    let server = st.args.node_server.clone();
                    let mut seeds = st.args.settings.seeds.clone();
                    let tls = st.args.settings.tls.clone();
                    if tls.is_some() {
                        // No transitive dialing over TLS: dial what we heard of.
                        seeds.extend(
                            st.heard
                                .iter()
                                .filter(|a| !seeds.contains(a))
                                .cloned()
                                .collect::<Vec<_>>(),
                        );
                    }
                    let (own, busy) = (st.args.addr.clone(), st.redialling.clone());
                    spawn_clearing(busy, async move {
                        redial(&server, &seeds, &own, tls.as_ref()).await;
                    });
                }
            }
        }
        Ok(())
    }
}

impl Membership {
    fn beat(&self, st: &MembershipState) {
        let s = &st.args.settings;
        let hb = Heartbeat {
            node: s.node_name.clone(),
            roles: s.roles.iter().map(|r| r.as_str().to_string()).collect(),
            load: (st.args.load)(),
            sent_ms: now_ms(),
            addr: st.args.addr.clone(),
            peers: {
                let view = st.args.view.lock().unwrap_or_else(|e| e.into_inner());
                view.up_addrs()
            },
        };
        for cell in ractor::pg::get_members(&GROUP.to_string()) {
            if !cell.get_id().is_local() {
                let peer: ActorRef<MembershipMsg> = cell.into();
                let _ = peer.cast(MembershipMsg::Heartbeat(hb.clone()));
            }
        }
    }
}

/// Runs `work` in a task and clears `busy` when it ends, also by a panic
/// (the flag would otherwise stay set and the node never dial again).
fn spawn_clearing(
    busy: Arc<AtomicBool>,
    work: impl std::future::Future<Output = ()> + Send + 'static,
) -> tokio::task::JoinHandle<()> {
    struct Clear(Arc<AtomicBool>);
    impl Drop for Clear {
        fn drop(&mut self) {
            self.0.store(false, Ordering::Release);
        }
    }
    tokio::spawn(async move {
        let _clear = Clear(busy);
        work.await;
    })
}

/// Dials every seed that no current session leads to (first tick, then
/// every [`REDIAL_TICKS`]); ractor_cluster joins the seeds' peers itself.
async fn redial(
    server: &ActorRef<NodeServerMessage>,
    seeds: &[String],
    own: &str,
    tls: Option<&super::ClusterTls>,
) {
    let connected: Vec<String> = match ractor::call_t!(server, NodeServerMessage::GetSessions, 2000)
    {
        Ok(sessions) => sessions
            .values()
            .flat_map(|s| {
                let named = s.peer_name.as_ref().map(|n| n.connection_string.clone());
                named.into_iter().chain([s.peer_addr.clone()])
            })
            .collect(),
        Err(_) => return,
    };
    for seed in seeds {
        if seed == own || connected.iter().any(|c| c == seed) {
            continue;
        }
        let dial = async {
            match tls {
                None => ractor_cluster::client_connect(server, seed.as_str()).await,
                Some(t) => {
                    let host = seed.rsplit_once(':').map_or(seed.as_str(), |(h, _)| h);
                    let name =
                        tokio_rustls::rustls::pki_types::ServerName::try_from(host.to_string())
                            .map_err(|e| {
                                ractor_cluster::ClientConnectErr::Socket(std::io::Error::new(
                                    std::io::ErrorKind::InvalidInput,
                                    e.to_string(),
                                ))
                            })?;
                    ractor_cluster::client_connect_enc(
                        server,
                        seed.as_str(),
                        t.connector.clone(),
                        name,
                    )
                    .await
                }
            }
        };
        match tokio::time::timeout(Duration::from_secs(5), dial).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::debug!(seed = %seed, error = ?e, "cluster: seed not reachable"),
            Err(_) => tracing::debug!(seed = %seed, "cluster: seed dial timed out"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A redial that panics does not leave the flag set: the next tick
    /// dials again.
    #[tokio::test]
    async fn the_redial_flag_is_cleared_by_a_panic() {
        let busy = Arc::new(AtomicBool::new(true));
        let ended = spawn_clearing(busy.clone(), async { panic!("a redial that fails") }).await;
        assert!(ended.is_err_and(|e| e.is_panic()));
        assert!(!busy.load(Ordering::Acquire));
        busy.store(true, Ordering::Release);
        spawn_clearing(busy.clone(), async {}).await.unwrap();
        assert!(!busy.load(Ordering::Acquire));
    }
}
