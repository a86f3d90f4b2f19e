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
pub mod stage_job;
pub mod stage_msgs;
pub mod stage_wire;
mod view;
pub mod wire;
pub mod worker;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ractor::ActorRef;

pub use heartbeat::{Heartbeat, Load};
pub use membership::{MembershipMsg, GROUP};
use view::View;
pub use view::{ClusterSnapshot, NodeState, NodeStatus};

/// The membership actor's registered name.
const MEMBERSHIP: &str = "cluster.membership";

/// What a node does. Every node serves every HTTP request (forwarding
/// it to the account's owner); the roles say which actors it may host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Hosts account actors and their projects (owner by rendezvous
    /// hashing of the account id over the up `api` nodes).
    Api,
    /// Runs pipeline stages.
    Worker,
    /// Hosts scheduled-post actors (owner by rendezvous hashing of the
    /// post id over the up `scheduler` nodes).
    Scheduler,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Api, Role::Worker, Role::Scheduler];

    pub fn parse(s: &str) -> Option<Self> {
        match s.trim() {
            "api" => Some(Self::Api),
            "worker" => Some(Self::Worker),
            "scheduler" => Some(Self::Scheduler),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Api => "api",
            Self::Worker => "worker",
            Self::Scheduler => "scheduler",
        }
    }
}

/// Mutual TLS between nodes: every node presents a certificate signed by
/// the cluster's CA and accepts only peers that do.
#[derive(Clone)]
pub struct ClusterTls {
    pub acceptor: tokio_rustls::TlsAcceptor,
    pub connector: tokio_rustls::TlsConnector,
}

impl std::fmt::Debug for ClusterTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterTls")
    }
}

/// Why the cluster's TLS files could not be used (see
/// [`ClusterTls::from_pem`]).
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A PEM file that cannot be read, or holds no certificate.
    #[error("cluster TLS: reading {}: {source}", .path.display())]
    Read {
        path: std::path::PathBuf,
        #[source]
        source: tokio_rustls::rustls::pki_types::pem::Error,
    },
    #[error("cluster TLS: no certificate in {}", .path.display())]
    NoCertificate { path: std::path::PathBuf },
    /// The CA's certificate is not usable as a trust anchor.
    #[error("cluster TLS: CA {}: {source}", .path.display())]
    Ca {
        path: std::path::PathBuf,
        #[source]
        source: tokio_rustls::rustls::Error,
    },
    #[error("cluster TLS: client verifier: {0}")]
    Verifier(#[source] tokio_rustls::rustls::server::VerifierBuilderError),
    /// rustls refused the protocol versions or the node's certificate and
    /// key, for serving (`ServerCert`) or connecting (`ClientCert`).
    #[error("cluster TLS: {0}")]
    Protocol(#[source] tokio_rustls::rustls::Error),
    #[error("cluster TLS: certificate/key: {0}")]
    ServerCert(#[source] tokio_rustls::rustls::Error),
    #[error("cluster TLS: client certificate/key: {0}")]
    ClientCert(#[source] tokio_rustls::rustls::Error),
}

impl ClusterTls {
    /// From PEM files: this node's certificate chain and key, and the CA
    /// that signs every node's certificate.
    pub fn from_pem(
        cert: &std::path::Path,
        key: &std::path::Path,
        ca: &std::path::Path,
    ) -> Result<Self, TlsError> {
        use tokio_rustls::rustls::pki_types::pem::PemObject;
        use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
        use tokio_rustls::rustls::{self, server::WebPkiClientVerifier, RootCertStore};
        let read = |path: &std::path::Path| {
            let path = path.to_path_buf();
            move |source| TlsError::Read { path, source }
        };
        let read_certs = |p: &std::path::Path| -> Result<Vec<CertificateDer<'static>>, TlsError> {
            let certs = CertificateDer::pem_file_iter(p)
                .and_then(|it| it.collect::<Result<Vec<_>, _>>())
                .map_err(read(p))?;
            if certs.is_empty() {
                return Err(TlsError::NoCertificate { path: p.into() });
            }
            Ok(certs)
        };
        let chain = read_certs(cert)?;
        let key = PrivateKeyDer::from_pem_file(key).map_err(read(key))?;
        let mut roots = RootCertStore::empty();
        for c in read_certs(ca)? {
            roots.add(c).map_err(|source| TlsError::Ca {
                path: ca.into(),
                source,
            })?;
        }
        let roots = Arc::new(roots);
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let verifier = WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone())
            .build()
            .map_err(TlsError::Verifier)?;
        let server = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(TlsError::Protocol)?
            .with_client_cert_verifier(verifier)
            .with_single_cert(chain.clone(), key.clone_key())
            .map_err(TlsError::ServerCert)?;
        let client = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(TlsError::Protocol)?
            .with_root_certificates(roots)
            .with_client_auth_cert(chain, key)
            .map_err(TlsError::ClientCert)?;
        Ok(Self {
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(server)),
            connector: tokio_rustls::TlsConnector::from(Arc::new(client)),
        })
    }
}

#[derive(Clone, Debug)]
pub struct ClusterSettings {
    pub node_name: String,
    pub listen: SocketAddr,
    /// Host peers reach this node at; see [`advertised_host`].
    pub advertise_host: Option<String>,
    pub cookie: String,
    pub seeds: Vec<String>,
    pub roles: Vec<Role>,
    pub heartbeat: Duration,
    pub timeout: Duration,
    /// How long a project or post lease lasts unless renewed (a third of
    /// it between renewals).
    pub lease: Duration,
    /// `None`: plain TCP (cookie authentication only).
    pub tls: Option<ClusterTls>,
    /// Stage jobs and results whose JSON is larger travel through object
    /// storage (`cluster.max_inline_bytes`).
    pub max_inline: usize,
}

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
    replies: Arc<relay::Replies>,
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
        ractor::registry::where_is(MEMBERSHIP.to_string()).map(Into::into)
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
                                heard.get(&node).map_or(true, |h| at > h)
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
