//! What a node is told at start: its roles, the cluster's TLS, and the
//! settings of its membership, leases and stage transport.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

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
    /// Host peers reach this node at; see [`advertised_host`](super::advertised_host).
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
