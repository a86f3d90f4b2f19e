//! The membership actor: one per node, joined to the process group
//! [`GROUP`]. ractor_cluster mirrors the group on every connected node, so
//! each tick the actor casts its heartbeat to the remote members, sweeps
//! peers silent past the timeout (a stopped process keeps its TCP
//! connection open, so ractor_cluster alone would never notice) and every
//! [`REDIAL_TICKS`] asks the dialer ([`super::dialer`]) to dial the seeds
//! that are not connected.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use ractor::{Actor, ActorProcessingErr, ActorRef};
use ractor_cluster::RactorClusterMessage;

use super::dialer::{DialerMsg, DIALER};
use super::heartbeat::{now_ms, Heartbeat, Load};
use super::settings::ClusterSettings;
use super::view::View;

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
}

pub struct MembershipState {
    args: MembershipArgs,
    ticks: u64,
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
                if st.ticks % REDIAL_TICKS == 1 {
                    self.ask_dial(st);
                }
            }
        }
        Ok(())
    }
}

impl Membership {
    /// Asks the dialer to dial the seeds (with TLS, also every address
    /// heard of: ractor_cluster's transitive dialing is plain TCP). A
    /// dialer being restarted misses one round.
    fn ask_dial(&self, st: &MembershipState) {
        let Some(dialer) = ractor::registry::where_is(DIALER) else {
            return;
        };
        let mut seeds = st.args.settings.seeds.clone();
        if st.args.settings.tls.is_some() {
            seeds.extend(
                st.heard
                    .iter()
                    .filter(|a| !seeds.contains(a))
                    .cloned()
                    .collect::<Vec<_>>(),
            );
        }
        let asked = Instant::now();
        let _ = ActorRef::<DialerMsg>::from(dialer).cast(DialerMsg::Dial { seeds, asked });
    }

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
