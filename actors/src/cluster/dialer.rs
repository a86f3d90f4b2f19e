//! The seed dialer: a child of the `cluster` branch that dials, when the
//! membership actor asks (every few ticks), each seed no current session
//! leads to. Its own actor, so a slow connect does not delay heartbeats,
//! and a dial that panics is restarted by the branch like any other
//! cluster actor (`/admin/actors` counts it) instead of ending a loop
//! nobody watches.

use std::time::{Duration, Instant};

use ractor::{Actor, ActorProcessingErr, ActorRef};
use ractor_cluster::NodeServerMessage;

use crate::faults::{self, Point};

/// The dialer's registered name.
pub const DIALER: &str = "cluster.dialer";
/// How long one seed's connect may take.
const DIAL_TIMEOUT: Duration = Duration::from_secs(5);

pub enum DialerMsg {
    /// Dial these addresses (those already connected are skipped); `asked`
    /// is when the membership actor sent it.
    Dial { seeds: Vec<String>, asked: Instant },
}

// Local only: with ractor's `cluster` feature, messages opt in explicitly.
impl ractor::Message for DialerMsg {}

#[derive(Clone)]
pub struct Dialer;

#[derive(Clone)]
pub struct DialerArgs {
    /// This node's own cluster address (never dialled).
    pub own: String,
    /// Dial over TLS with this (the cluster's `ClusterTls` connector).
    pub tls: Option<tokio_rustls::TlsConnector>,
}

pub struct DialerState {
    args: DialerArgs,
    /// When the last dial ended: a request sent before it was queued while
    /// that dial ran, which has just covered it.
    last_end: Option<Instant>,
}

impl Actor for Dialer {
    type Msg = DialerMsg;
    type State = DialerState;
    type Arguments = DialerArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<DialerMsg>,
        args: DialerArgs,
    ) -> Result<DialerState, ActorProcessingErr> {
        Ok(DialerState {
            args,
            last_end: None,
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<DialerMsg>,
        msg: DialerMsg,
        st: &mut DialerState,
    ) -> Result<(), ActorProcessingErr> {
        let DialerMsg::Dial { seeds, asked } = msg;
        if st.last_end.is_some_and(|end| asked < end) {
            return Ok(());
        }
        faults::check(Point::Dial);
        let a = &st.args;
        // The node server now: the branch may have started a new one.
        if let Some(server) = super::node_server::current() {
            redial(&server, &seeds, &a.own, a.tls.as_ref()).await;
        }
        st.last_end = Some(Instant::now());
        Ok(())
    }
}

/// Dials every seed that no current session leads to; ractor_cluster joins
/// the seeds' peers itself (without TLS).
async fn redial(
    server: &ActorRef<NodeServerMessage>,
    seeds: &[String],
    own: &str,
    tls: Option<&tokio_rustls::TlsConnector>,
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
                Some(connector) => {
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
                        connector.clone(),
                        name,
                    )
                    .await
                }
            }
        };
        match tokio::time::timeout(DIAL_TIMEOUT, dial).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::debug!(seed = %seed, error = ?e, "cluster: seed not reachable"),
            Err(_) => tracing::debug!(seed = %seed, "cluster: seed dial timed out"),
        }
    }
}
