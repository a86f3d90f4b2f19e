//! `[cluster]`: the node's cluster listener, cookie, seed peers, roles and
//! heartbeats. Off (one node, nothing to set) while `listen_addr` is empty.
//! Environment: `CLIPFORGE_CLUSTER_<FIELD>`; lists are comma separated.

use super::error::ConfigError;
use std::net::SocketAddr;
use std::time::Duration;

use clipforge_actors::cluster::{ClusterSettings, Role};
use serde::Deserialize;

use super::secret::Secret;

/// The shortest cluster cookie accepted: it is the only secret between
/// nodes that do not use TLS.
pub const MIN_COOKIE_CHARS: usize = 32;

#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterConfig {
    /// Cluster (ractor_cluster) listen address, e.g. "0.0.0.0:7070"; empty = no cluster.
    pub listen_addr: String,
    /// Host other nodes reach this one at (default: the listen IP, or the
    /// machine's host name when listening on every interface).
    #[serde(deserialize_with = "super::serde_env::opt")]
    pub advertise_host: Option<String>,
    /// Shared secret; peers with another cookie are refused.
    pub cookie: Secret,
    /// `host:port` cluster addresses to join; their peers are joined too.
    #[serde(deserialize_with = "super::serde_env::list")]
    pub seeds: Vec<String>,
    /// Any of "api" (hosts accounts and their projects), "worker" (runs
    /// stages), "scheduler" (hosts scheduled posts); default all three.
    #[serde(deserialize_with = "super::serde_env::list")]
    pub roles: Vec<String>,
    pub heartbeat_ms: u64,
    /// A peer silent this long is marked down.
    pub heartbeat_timeout_ms: u64,
    /// Lifetime of a project or post lease in PostgreSQL, renewed every
    /// third of it. A node that dies holding one delays the take-over of
    /// that project or post by at most this long.
    pub lease_ms: u64,
    /// Mutual TLS between nodes (tokio-rustls), on by default: every node
    /// presents `tls_cert`/`tls_key`, signed by `tls_ca`, and accepts only
    /// peers whose certificate that CA signed (`clipforge cluster
    /// init-certs` makes them). Peers are dialled by their advertised host,
    /// which their certificate must name. `false`: plain TCP, insecure
    /// (the cookie is the only check, and traffic is readable).
    pub tls: bool,
    pub tls_cert: String,
    pub tls_key: String,
    pub tls_ca: String,
    /// Stage jobs and results whose JSON is larger than this travel through
    /// object storage instead of inside a cluster message (a frame over
    /// 16 MiB closes the link between two nodes). 0 sends every one through
    /// storage.
    pub max_inline_bytes: usize,
    /// Declares `storage.local_dir` a path every node shares (NFS, …), so
    /// local object storage is allowed in a cluster.
    pub shared_local_storage: bool,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        Self {
            listen_addr: String::new(),
            advertise_host: None,
            cookie: Secret::default(),
            seeds: Vec::new(),
            roles: vec!["api".into(), "worker".into(), "scheduler".into()],
            heartbeat_ms: 1000,
            heartbeat_timeout_ms: 5000,
            lease_ms: 15000,
            tls: true,
            tls_cert: String::new(),
            tls_key: String::new(),
            tls_ca: String::new(),
            max_inline_bytes: clipforge_actors::cluster::stage_wire::DEFAULT_MAX_INLINE,
            shared_local_storage: false,
        }
    }
}

impl ClusterConfig {
    pub fn enabled(&self) -> bool {
        !self.listen_addr.trim().is_empty()
    }

    /// Checks the section; `storage_kv` is `storage.kv` and
    /// `storage_backend` is `storage.backend`.
    pub fn validate(&self, storage_kv: &str, storage_backend: &str) -> Result<(), ConfigError> {
        self.roles()?;
        if !self.enabled() {
            if !self.seeds.is_empty() {
                return Err("cluster.seeds needs cluster.listen_addr".into());
            }
            return Ok(());
        }
        self.listen_addr.trim().parse::<SocketAddr>().map_err(|_| {
            format!(
                "cluster.listen_addr {:?}: expected ip:port",
                self.listen_addr
            )
        })?;
        if self.cookie.is_empty() {
            return Err("cluster.cookie is required when cluster.listen_addr is set".into());
        }
        let length = self.cookie.expose().chars().count();
        if length < MIN_COOKIE_CHARS {
            return Err(format!(
                "cluster.cookie (CLIPFORGE_CLUSTER_COOKIE) is {length} characters; a cluster \
                 needs a secret of at least {MIN_COOKIE_CHARS} (e.g. `openssl rand -hex 32`)"
            )
            .into());
        }
        if self.tls
            && [&self.tls_cert, &self.tls_key, &self.tls_ca]
                .iter()
                .any(|p| p.trim().is_empty())
        {
            return Err(
                "cluster.tls (on by default) needs cluster.tls_cert, cluster.tls_key and \
                 cluster.tls_ca (PEM files): make them with `clipforge cluster init-certs DIR \
                 NODE...`, or set cluster.tls = false for plain TCP between nodes (insecure: \
                 readable traffic, the cookie as the only check)"
                    .into(),
            );
        }
        if self.heartbeat_ms == 0 || self.heartbeat_timeout_ms <= self.heartbeat_ms {
            return Err(
                "cluster.heartbeat_timeout_ms must be larger than cluster.heartbeat_ms (> 0)"
                    .into(),
            );
        }
        if self.lease_ms < 3 * self.heartbeat_ms {
            return Err(
                "cluster.lease_ms must be at least three heartbeats (cluster.heartbeat_ms)".into(),
            );
        }
        if storage_kv != "postgres" {
            return Err(
                "a cluster keeps its records in PostgreSQL, shared by every node: set \
                 storage.kv = \"postgres\" and storage.postgres_url (CLIPFORGE_STORAGE_KV, \
                 CLIPFORGE_STORAGE_POSTGRES_URL); sled is for a single node"
                    .into(),
            );
        }
        if storage_backend == "local" && !self.shared_local_storage {
            return Err("a cluster needs object storage every node can read: set \
                 storage.backend = \"s3\", or put storage.local_dir on a path all nodes \
                 share and set cluster.shared_local_storage = true"
                .into());
        }
        Ok(())
    }

    fn roles(&self) -> Result<Vec<Role>, ConfigError> {
        if self.roles.is_empty() {
            return Err("cluster.roles: give at least one of api, worker, scheduler".into());
        }
        self.roles
            .iter()
            .map(|r| match Role::parse(r) {
                Some(role) => Ok(role),
                None if r.trim() == "data" => Err(
                    "cluster.roles: the \"data\" role is gone: every node reads and writes \
                     the records shared in PostgreSQL; use api, worker, scheduler"
                        .into(),
                ),
                None => {
                    Err(format!("cluster.roles: {r:?} is not one of api, worker, scheduler").into())
                }
            })
            .collect()
    }

    /// The engine's settings; `None` when clustering is off.
    pub fn settings(&self, node_name: &str) -> Result<Option<ClusterSettings>, ConfigError> {
        if !self.enabled() {
            return Ok(None);
        }
        let listen: SocketAddr = self.listen_addr.trim().parse().map_err(|_| {
            format!(
                "cluster.listen_addr {:?}: expected ip:port",
                self.listen_addr
            )
        })?;
        Ok(Some(ClusterSettings {
            node_name: node_name.to_string(),
            listen,
            advertise_host: self.advertise_host.clone(),
            cookie: self.cookie.expose().to_string(),
            seeds: self.seeds.clone(),
            roles: self.roles()?,
            heartbeat: Duration::from_millis(self.heartbeat_ms),
            timeout: Duration::from_millis(self.heartbeat_timeout_ms),
            lease: Duration::from_millis(self.lease_ms),
            max_inline: self.max_inline_bytes,
            tls: if self.tls {
                Some(clipforge_actors::cluster::ClusterTls::from_pem(
                    std::path::Path::new(self.tls_cert.trim()),
                    std::path::Path::new(self.tls_key.trim()),
                    std::path::Path::new(self.tls_ca.trim()),
                )?)
            } else {
                None
            },
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COOKIE: &str = "0123456789abcdef0123456789abcdef";

    fn with_env(pairs: &[(&str, &str)]) -> ClusterConfig {
        crate::config::unchecked(pairs).cluster
    }

    #[test]
    fn off_by_default_and_needs_nothing() {
        let c = ClusterConfig::default();
        assert!(!c.enabled());
        c.validate("sled", "local").unwrap();
        assert!(c.settings("n").unwrap().is_none());
    }

    #[test]
    fn the_shipped_cluster_toml_is_a_single_node() {
        let cfg: crate::config::Config =
            toml::from_str(include_str!("../../cluster.toml")).unwrap();
        cfg.validate().unwrap();
        assert!(!cfg.cluster.enabled());
        assert_eq!(
            cfg.cluster.heartbeat_timeout_ms,
            ClusterConfig::default().heartbeat_timeout_ms
        );
    }

    #[test]
    fn env_overrides_and_checks() {
        let c = with_env(&[
            ("CLIPFORGE_CLUSTER_LISTEN_ADDR", "127.0.0.1:7070"),
            ("CLIPFORGE_CLUSTER_COOKIE", COOKIE),
            ("CLIPFORGE_CLUSTER_SEEDS", "127.0.0.1:7071, 127.0.0.1:7072"),
            ("CLIPFORGE_CLUSTER_ROLES", "worker"),
            ("CLIPFORGE_CLUSTER_HEARTBEAT_MS", "200"),
            ("CLIPFORGE_CLUSTER_HEARTBEAT_TIMEOUT_MS", "1500"),
            ("CLIPFORGE_CLUSTER_TLS", "false"),
        ]);
        assert!(!format!("{c:?}").contains(COOKIE));
        let err = c.validate("postgres", "local").unwrap_err().to_string();
        assert!(err.contains("storage.backend = \"s3\""), "{err}");
        let err = c.validate("sled", "s3").unwrap_err().to_string();
        assert!(err.contains("storage.kv = \"postgres\""), "{err}");
        c.validate("postgres", "s3").unwrap();
        let s = c.settings("a").unwrap().unwrap();
        assert_eq!(s.seeds, ["127.0.0.1:7071", "127.0.0.1:7072"]);
        assert_eq!(s.roles, [Role::Worker]);
        assert_eq!(s.timeout, Duration::from_millis(1500));
        assert_eq!(s.cookie, COOKIE);

        let shared = with_env(&[
            ("CLIPFORGE_CLUSTER_LISTEN_ADDR", "127.0.0.1:7070"),
            ("CLIPFORGE_CLUSTER_COOKIE", COOKIE),
            ("CLIPFORGE_CLUSTER_SHARED_LOCAL_STORAGE", "true"),
            ("CLIPFORGE_CLUSTER_TLS", "false"),
        ]);
        shared.validate("postgres", "local").unwrap();
        for bad in [
            vec![("CLIPFORGE_CLUSTER_LISTEN_ADDR", "127.0.0.1:7070")],
            vec![("CLIPFORGE_CLUSTER_SEEDS", "127.0.0.1:1")],
            vec![("CLIPFORGE_CLUSTER_ROLES", "api,cook")],
            vec![("CLIPFORGE_CLUSTER_ROLES", "api,data,worker")],
            vec![
                ("CLIPFORGE_CLUSTER_LISTEN_ADDR", "127.0.0.1:7070"),
                ("CLIPFORGE_CLUSTER_COOKIE", COOKIE),
                ("CLIPFORGE_CLUSTER_TLS", "true"),
            ],
            vec![
                ("CLIPFORGE_CLUSTER_LISTEN_ADDR", "nowhere"),
                ("CLIPFORGE_CLUSTER_COOKIE", COOKIE),
            ],
        ] {
            assert!(
                with_env(&bad).validate("postgres", "s3").is_err(),
                "{bad:?}"
            );
        }
        let err = with_env(&[("CLIPFORGE_CLUSTER_ROLES", "api,data")])
            .validate("postgres", "s3")
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"data\" role is gone"), "{err}");
        let all = with_env(&[
            ("CLIPFORGE_CLUSTER_LISTEN_ADDR", "127.0.0.1:7070"),
            ("CLIPFORGE_CLUSTER_COOKIE", COOKIE),
            ("CLIPFORGE_CLUSTER_TLS", "false"),
        ]);
        assert_eq!(all.settings("a").unwrap().unwrap().roles, Role::ALL);
        // TLS is on unless turned off: without certificates, refused.
        let err = with_env(&[
            ("CLIPFORGE_CLUSTER_LISTEN_ADDR", "127.0.0.1:7070"),
            ("CLIPFORGE_CLUSTER_COOKIE", COOKIE),
        ])
        .validate("postgres", "s3")
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("init-certs") && err.contains("tls = false"),
            "{err}"
        );
        let short = with_env(&[
            ("CLIPFORGE_CLUSTER_LISTEN_ADDR", "127.0.0.1:7070"),
            ("CLIPFORGE_CLUSTER_COOKIE", &COOKIE[1..]),
        ]);
        let err = short.validate("postgres", "s3").unwrap_err().to_string();
        assert!(
            err.contains("31 characters") && err.contains("at least 32"),
            "{err}"
        );
    }
}
