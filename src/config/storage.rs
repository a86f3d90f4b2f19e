//! `[storage]`: where records (the key-value store: sled or PostgreSQL) and
//! media (object storage: local files or S3) are kept.
//! Environment: `CLIPFORGE_STORAGE_<FIELD>`.

use super::error::ConfigError;
use std::path::PathBuf;

use serde::Deserialize;

use super::secret::Secret;

#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageConfig {
    /// Records: "sled" (embedded, in `<data_dir>/db`) or "postgres".
    pub kv: String,
    /// With `kv = "postgres"`: `postgres://user:password@host:port/db`
    /// (or a `host=… dbname=…` connection string). Holds a password, so
    /// it never prints.
    pub postgres_url: Secret,
    /// The namespace (`ns` column) of the records in PostgreSQL. Every node
    /// of a cluster uses the same one: they share one set of records.
    /// Different namespaces keep separate deployments apart in one database.
    pub postgres_namespace: String,
    /// Connections the node keeps to PostgreSQL at most.
    pub postgres_pool_size: usize,
    /// Media: "local" or "s3".
    pub backend: String,
    /// Local object storage root (default: `<data_dir>/media`).
    #[serde(deserialize_with = "super::serde_env::opt")]
    pub local_dir: Option<PathBuf>,
    pub s3_bucket: String,
    pub s3_region: String,
    #[serde(deserialize_with = "super::serde_env::opt")]
    pub s3_endpoint: Option<String>,
    pub s3_access_key_id: String,
    pub s3_secret_access_key: Secret,
    /// Lifetime of signed media URLs.
    pub url_ttl_secs: u64,
    /// sled's page cache, in MB.
    pub db_cache_mb: u64,
}

impl Default for StorageConfig {
    fn default() -> Self {
        Self {
            kv: "sled".into(),
            postgres_url: Secret::default(),
            postgres_namespace: "clipforge".into(),
            postgres_pool_size: 8,
            backend: "local".into(),
            local_dir: None,
            s3_bucket: "clipforge".into(),
            s3_region: "us-east-1".into(),
            s3_endpoint: None,
            s3_access_key_id: String::new(),
            s3_secret_access_key: Secret::default(),
            url_ttl_secs: 3600,
            db_cache_mb: 128,
        }
    }
}

impl StorageConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        match self.kv.as_str() {
            "sled" => {}
            "postgres" if self.postgres_url.expose().trim().is_empty() => {
                return Err("storage.postgres_url (CLIPFORGE_STORAGE_POSTGRES_URL) is \
                     required with storage.kv = \"postgres\""
                    .into())
            }
            "postgres" if self.postgres_namespace.trim().is_empty() => {
                return Err("storage.postgres_namespace must not be empty".into())
            }
            "postgres" if self.postgres_pool_size == 0 => {
                return Err("storage.postgres_pool_size must be at least 1".into())
            }
            "postgres" => {}
            other => {
                return Err(format!("storage.kv {other:?}: use \"sled\" or \"postgres\"").into())
            }
        }
        match self.backend.as_str() {
            "local" => Ok(()),
            "s3" if !self.s3_bucket.is_empty() => Ok(()),
            "s3" => Err("storage.s3_bucket is required with the s3 backend".into()),
            other => Err(format!("storage.backend {other:?}: use \"local\" or \"s3\"").into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_env(pairs: &[(&str, &str)]) -> StorageConfig {
        crate::config::unchecked(pairs).storage
    }

    #[test]
    fn sled_by_default_postgres_needs_a_url_and_the_url_never_prints() {
        let s = StorageConfig::default();
        assert_eq!(s.kv, "sled");
        s.validate().unwrap();

        let err = with_env(&[("CLIPFORGE_STORAGE_KV", "postgres")])
            .validate()
            .unwrap_err()
            .to_string();
        assert!(err.contains("CLIPFORGE_STORAGE_POSTGRES_URL"), "{err}");
        let s = with_env(&[
            ("CLIPFORGE_STORAGE_KV", "postgres"),
            (
                "CLIPFORGE_STORAGE_POSTGRES_URL",
                "postgres://clipforge:hunter2@db:5432/clipforge",
            ),
            ("CLIPFORGE_STORAGE_POSTGRES_POOL_SIZE", "3"),
        ]);
        s.validate().unwrap();
        assert_eq!(s.postgres_pool_size, 3);
        assert!(!format!("{s:?}").contains("hunter2"));

        let err = with_env(&[("CLIPFORGE_STORAGE_KV", "mysql")])
            .validate()
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"sled\" or \"postgres\""), "{err}");
        let from_file: crate::config::Config =
            toml::from_str("[storage]\nkv = \"postgres\"\npostgres_url = \"postgres://u:p@h/d\"\n")
                .unwrap();
        from_file.storage.validate().unwrap();
        assert_eq!(
            from_file.storage.postgres_url.expose(),
            "postgres://u:p@h/d"
        );
    }
}
