//! One typed configuration, layered: built-in defaults, then `cluster.toml`
//! (or `--config FILE`), then `CLIPFORGE_*` environment variables, then
//! command-line flags. Secrets are wrapped so they never print.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

mod publish;
pub use publish::PublishConfig;

/// A string that never appears in logs or `Debug` output.
#[derive(Clone, Default, Deserialize, PartialEq)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Self(s.into())
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_empty() { "\"\"" } else { "\"***\"" })
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub node: NodeConfig,
    pub storage: StorageConfig,
    pub pipeline: PipelineConfig,
    pub auth: AuthConfig,
    pub sources: SourcesConfig,
    pub publish: PublishConfig,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NodeConfig {
    pub name: String,
    /// HTTP listen address; port 0 picks a free port.
    pub http_addr: String,
    /// Base URL clients use (for signed media links); defaults to the bound address.
    pub public_url: Option<String>,
    pub data_dir: PathBuf,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageConfig {
    /// "local" or "s3".
    pub backend: String,
    /// Local object storage root (default: `<data_dir>/media`).
    pub local_dir: Option<PathBuf>,
    pub s3_bucket: String,
    pub s3_region: String,
    pub s3_endpoint: Option<String>,
    pub s3_access_key_id: String,
    pub s3_secret_access_key: Secret,
    /// Lifetime of signed media URLs.
    pub url_ttl_secs: u64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PipelineConfig {
    pub model_dir: Option<PathBuf>,
    pub threads: usize,
    pub compute_type: String,
    pub beam_size: usize,
    pub batch_size: usize,
    /// Projects processed at once on this node (CPU stages).
    pub workers: usize,
    /// Retries of a failed stage before the project fails.
    pub stage_retries: u32,
    pub x264_preset: String,
    /// Entity actors idle this long are passivated.
    pub idle_secs: u64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuthConfig {
    /// Token for `/admin/*`; admin routes are off when empty.
    pub admin_token: Secret,
    /// Key for signed media URLs; generated and kept in the data dir when empty.
    pub media_secret: Secret,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SourcesConfig {
    /// Hosts accepted as sources besides YouTube and Vimeo (e.g. a test server).
    pub extra_hosts: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            node: NodeConfig::default(),
            storage: StorageConfig::default(),
            pipeline: PipelineConfig::default(),
            auth: AuthConfig::default(),
            sources: SourcesConfig::default(),
            publish: PublishConfig::default(),
        }
    }
}

impl Default for NodeConfig {
    fn default() -> Self {
        Self {
            name: "node-1".into(),
            http_addr: "0.0.0.0:8080".into(),
            public_url: None,
            data_dir: "data".into(),
        }
    }
}

impl Default for StorageConfig {
    fn default() -> Self {
        Self {
            backend: "local".into(),
            local_dir: None,
            s3_bucket: "clipforge".into(),
            s3_region: "us-east-1".into(),
            s3_endpoint: None,
            s3_access_key_id: String::new(),
            s3_secret_access_key: Secret::default(),
            url_ttl_secs: 3600,
        }
    }
}

impl Default for PipelineConfig {
    fn default() -> Self {
        Self {
            model_dir: None,
            threads: 0,
            compute_type: "int8".into(),
            beam_size: 5,
            batch_size: 8,
            workers: 1,
            stage_retries: 2,
            x264_preset: "veryfast".into(),
            idle_secs: 300,
        }
    }
}

impl Default for AuthConfig {
    fn default() -> Self {
        Self {
            admin_token: Secret::default(),
            media_secret: Secret::default(),
        }
    }
}

impl Default for SourcesConfig {
    fn default() -> Self {
        Self {
            extra_hosts: Vec::new(),
        }
    }
}

/// `CLIPFORGE_<SECTION>_<FIELD>` for every field, e.g. `CLIPFORGE_NODE_HTTP_ADDR`.
fn apply_env(cfg: &mut Config, get: &dyn Fn(&str) -> Option<String>) -> Result<(), String> {
    fn parse<T: std::str::FromStr>(name: &str, v: String) -> Result<T, String> {
        v.trim()
            .parse()
            .map_err(|_| format!("{name}: cannot parse {v:?}"))
    }
    macro_rules! env_field {
        ($name:literal, $target:expr, str) => {
            if let Some(v) = get($name) {
                $target = v;
            }
        };
        ($name:literal, $target:expr, opt) => {
            if let Some(v) = get($name) {
                $target = (!v.is_empty()).then(|| v.into());
            }
        };
        ($name:literal, $target:expr, secret) => {
            if let Some(v) = get($name) {
                $target = Secret::new(v);
            }
        };
        ($name:literal, $target:expr, path) => {
            if let Some(v) = get($name) {
                $target = PathBuf::from(v);
            }
        };
        ($name:literal, $target:expr, num) => {
            if let Some(v) = get($name) {
                $target = parse($name, v)?;
            }
        };
    }
    env_field!("CLIPFORGE_NODE_NAME", cfg.node.name, str);
    env_field!("CLIPFORGE_NODE_HTTP_ADDR", cfg.node.http_addr, str);
    env_field!("CLIPFORGE_NODE_PUBLIC_URL", cfg.node.public_url, opt);
    env_field!("CLIPFORGE_NODE_DATA_DIR", cfg.node.data_dir, path);
    env_field!("CLIPFORGE_STORAGE_BACKEND", cfg.storage.backend, str);
    env_field!("CLIPFORGE_STORAGE_LOCAL_DIR", cfg.storage.local_dir, opt);
    env_field!("CLIPFORGE_STORAGE_S3_BUCKET", cfg.storage.s3_bucket, str);
    env_field!("CLIPFORGE_STORAGE_S3_REGION", cfg.storage.s3_region, str);
    env_field!(
        "CLIPFORGE_STORAGE_S3_ENDPOINT",
        cfg.storage.s3_endpoint,
        opt
    );
    env_field!(
        "CLIPFORGE_STORAGE_S3_ACCESS_KEY_ID",
        cfg.storage.s3_access_key_id,
        str
    );
    env_field!(
        "CLIPFORGE_STORAGE_S3_SECRET_ACCESS_KEY",
        cfg.storage.s3_secret_access_key,
        secret
    );
    env_field!(
        "CLIPFORGE_STORAGE_URL_TTL_SECS",
        cfg.storage.url_ttl_secs,
        num
    );
    env_field!("CLIPFORGE_PIPELINE_MODEL_DIR", cfg.pipeline.model_dir, opt);
    env_field!("CLIPFORGE_MODEL_DIR", cfg.pipeline.model_dir, opt);
    env_field!("CLIPFORGE_PIPELINE_THREADS", cfg.pipeline.threads, num);
    env_field!(
        "CLIPFORGE_PIPELINE_COMPUTE_TYPE",
        cfg.pipeline.compute_type,
        str
    );
    env_field!("CLIPFORGE_PIPELINE_BEAM_SIZE", cfg.pipeline.beam_size, num);
    env_field!(
        "CLIPFORGE_PIPELINE_BATCH_SIZE",
        cfg.pipeline.batch_size,
        num
    );
    env_field!("CLIPFORGE_PIPELINE_WORKERS", cfg.pipeline.workers, num);
    env_field!(
        "CLIPFORGE_PIPELINE_STAGE_RETRIES",
        cfg.pipeline.stage_retries,
        num
    );
    env_field!(
        "CLIPFORGE_PIPELINE_X264_PRESET",
        cfg.pipeline.x264_preset,
        str
    );
    env_field!("CLIPFORGE_PIPELINE_IDLE_SECS", cfg.pipeline.idle_secs, num);
    env_field!("CLIPFORGE_AUTH_ADMIN_TOKEN", cfg.auth.admin_token, secret);
    env_field!("CLIPFORGE_AUTH_MEDIA_SECRET", cfg.auth.media_secret, secret);
    if let Some(v) = get("CLIPFORGE_SOURCES_EXTRA_HOSTS") {
        cfg.sources.extra_hosts = v
            .split(',')
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .collect();
    }
    publish::apply_env(&mut cfg.publish, get)?;
    Ok(())
}

impl Config {
    /// Defaults, then `file` (when it exists), then the environment.
    pub fn load(file: Option<&Path>) -> Result<Self, String> {
        let mut cfg = match file {
            Some(path) if path.exists() => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?
            }
            _ => Config::default(),
        };
        apply_env(&mut cfg, &|k| std::env::var(k).ok())?;
        cfg.validate()?;
        Ok(cfg)
    }

    pub fn validate(&self) -> Result<(), String> {
        match self.storage.backend.as_str() {
            "local" => {}
            "s3" if !self.storage.s3_bucket.is_empty() => {}
            "s3" => return Err("storage.s3_bucket is required with the s3 backend".into()),
            other => {
                return Err(format!(
                    "storage.backend {other:?}: use \"local\" or \"s3\""
                ))
            }
        }
        if self.pipeline.workers == 0 {
            return Err("pipeline.workers must be at least 1".into());
        }
        self.publish.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn file_then_env_override_and_secrets_stay_hidden() {
        let mut cfg: Config = toml::from_str(
            "[node]\nhttp_addr = \"127.0.0.1:9000\"\n[auth]\nadmin_token = \"s3cr3t\"\n[pipeline]\nworkers = 3\n",
        )
        .unwrap();
        let env: HashMap<&str, &str> = [
            ("CLIPFORGE_PIPELINE_WORKERS", "2"),
            ("CLIPFORGE_SOURCES_EXTRA_HOSTS", "127.0.0.1, localhost"),
        ]
        .into();
        apply_env(&mut cfg, &|k| env.get(k).map(|v| v.to_string())).unwrap();
        assert_eq!(cfg.node.http_addr, "127.0.0.1:9000");
        assert_eq!(cfg.pipeline.workers, 2);
        assert_eq!(cfg.sources.extra_hosts, ["127.0.0.1", "localhost"]);
        assert!(!format!("{cfg:?}").contains("s3cr3t"));
        assert_eq!(cfg.auth.admin_token.expose(), "s3cr3t");
    }

    #[test]
    fn bad_values_are_refused() {
        let mut cfg = Config::default();
        let env: HashMap<&str, &str> = [("CLIPFORGE_PIPELINE_WORKERS", "many")].into();
        assert!(apply_env(&mut cfg, &|k| env.get(k).map(|v| v.to_string())).is_err());
        assert!(toml::from_str::<Config>("[node]\nbogus = 1\n").is_err());
        cfg.storage.backend = "ftp".into();
        assert!(cfg.validate().is_err());
    }
}
