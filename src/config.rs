//! One typed configuration, layered with figment: built-in defaults (the
//! `Default` impls), then `cluster.toml` (or `--config FILE`), then
//! `CLIPFORGE_*` environment variables ([`env`]: one name per setting, the
//! same for every command), then command-line flags. Secrets are wrapped so
//! they never print.

use std::path::{Path, PathBuf};

use clipforge_actors::accounts::{PlanLimits, PlanTable};
use figment::providers::{Format, Toml};
use figment::value::Value;
use figment::Figment;
use serde::Deserialize;

mod cluster;
pub mod env;
mod error;
mod publish;
mod secret;
mod security;
mod serde_env;
mod storage;
mod webhooks;
pub use cluster::ClusterConfig;
pub use env::EnvVars;
pub use error::ConfigError;
pub use publish::PublishConfig;
pub use secret::Secret;
pub use security::{IpNet, LimitsConfig, SecurityConfig};
pub use storage::StorageConfig;
pub use webhooks::WebhooksConfig;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub node: NodeConfig,
    pub storage: StorageConfig,
    pub pipeline: PipelineConfig,
    pub auth: AuthConfig,
    pub sources: SourcesConfig,
    pub plans: PlansConfig,
    pub billing: BillingConfig,
    pub publish: PublishConfig,
    pub cluster: ClusterConfig,
    pub security: SecurityConfig,
    pub limits: LimitsConfig,
    pub webhooks: WebhooksConfig,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NodeConfig {
    pub name: String,
    /// HTTP listen address; port 0 picks a free port.
    pub http_addr: String,
    /// Base URL clients use (for signed media links); defaults to the bound address.
    #[serde(deserialize_with = "serde_env::opt")]
    pub public_url: Option<String>,
    pub data_dir: PathBuf,
    /// Log lines: "auto" (text on a terminal, JSON otherwise), "text" or "json".
    pub log_format: String,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PipelineConfig {
    /// Whisper model directory (default: [`default_model_dir`]).
    #[serde(deserialize_with = "serde_env::opt")]
    pub model_dir: Option<PathBuf>,
    /// CPU threads for speech recognition (0 = all cores).
    pub threads: usize,
    pub compute_type: String,
    pub beam_size: usize,
    pub batch_size: usize,
    /// Projects processed at once on this node (CPU stages).
    pub workers: usize,
    /// Retries of a failed stage before the project fails.
    pub stage_retries: u32,
    pub x264_preset: String,
    /// Clip renders (editor re-renders) one account may have running or
    /// queued at once on this node; more answer 429.
    pub renders_per_account: usize,
    /// Entity actors idle this long are passivated.
    pub idle_secs: u64,
    /// Base URL of an OpenAI-compatible chat API that re-ranks clip
    /// candidates (e.g. `http://127.0.0.1:8000/v1`); off when unset.
    #[serde(deserialize_with = "serde_env::opt")]
    pub rerank_url: Option<String>,
    pub rerank_model: String,
    pub rerank_api_key: Secret,
    /// Limit of one re-rank request; the local ranking is kept past it.
    pub rerank_timeout_secs: u64,
}

impl PipelineConfig {
    /// The re-ranker's settings, when `rerank_url` is set.
    pub fn rerank(&self) -> Option<clipforge_actors::projects::stages::rerank::RerankConfig> {
        let url = self
            .rerank_url
            .as_deref()
            .map(str::trim)
            .filter(|u| !u.is_empty())?;
        Some(clipforge_actors::projects::stages::rerank::RerankConfig {
            base_url: url.to_string(),
            api_key: Some(self.rerank_api_key.expose().to_string()).filter(|k| !k.is_empty()),
            model: self.rerank_model.clone(),
            timeout: std::time::Duration::from_secs(self.rerank_timeout_secs.max(1)),
        })
    }
}

#[derive(Clone, Debug, Default, Deserialize)]
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
    #[serde(deserialize_with = "serde_env::list")]
    pub extra_hosts: Vec<String>,
    /// Longest wait for a URL's metadata (yt-dlp) before answering 503.
    pub meta_timeout_secs: u64,
}

/// Overrides of the plan defaults of DESIGN.md (`[plans.free]`, …; env
/// `CLIPFORGE_PLANS_<PLAN>_<FIELD>`, e.g. `CLIPFORGE_PLANS_FREE_UPLOAD_MAX_MB`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlansConfig {
    pub free: PlanOverride,
    pub creator: PlanOverride,
    pub pro: PlanOverride,
    pub enterprise: PlanOverride,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlanOverride {
    pub upload_max_mb: Option<u64>,
    pub storage_mb: Option<u64>,
    pub monthly_credits: Option<u64>,
    pub welcome_bonus: Option<u64>,
    pub watermark_forced: Option<bool>,
}

impl PlanOverride {
    fn apply(&self, limits: &mut PlanLimits) {
        const MB: u64 = 1024 * 1024;
        if let Some(v) = self.upload_max_mb {
            limits.upload_max_bytes = v * MB;
        }
        if let Some(v) = self.storage_mb {
            limits.storage_bytes = v * MB;
        }
        if let Some(v) = self.monthly_credits {
            limits.monthly_credits = Some(v);
        }
        if let Some(v) = self.welcome_bonus {
            limits.welcome_bonus = v;
        }
        if let Some(v) = self.watermark_forced {
            limits.watermark_forced = v;
        }
    }
}

/// Stripe billing. Billing routes answer 503 `billing_not_configured` until
/// the key, webhook secret, the four price ids and both URLs are set.
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BillingConfig {
    pub stripe_secret_key: Secret,
    /// Signing secret of the webhook endpoint (`whsec_...`).
    pub webhook_secret: Secret,
    pub price_creator_monthly: String,
    pub price_creator_yearly: String,
    pub price_pro_monthly: String,
    pub price_pro_yearly: String,
    /// Where Stripe returns the user after paying; `{CHECKOUT_SESSION_ID}`
    /// is added as `session_id` when the URL does not carry it.
    pub success_url: String,
    pub cancel_url: String,
    /// Where the customer portal returns the user (default: `cancel_url`).
    pub portal_return_url: String,
    /// Stripe API base URL (default: Stripe's own).
    #[serde(deserialize_with = "serde_env::opt")]
    pub stripe_api_base: Option<String>,
    /// Largest accepted age of a webhook signature.
    pub webhook_tolerance_secs: u64,
}

impl Default for BillingConfig {
    fn default() -> Self {
        Self {
            stripe_secret_key: Secret::default(),
            webhook_secret: Secret::default(),
            price_creator_monthly: String::new(),
            price_creator_yearly: String::new(),
            price_pro_monthly: String::new(),
            price_pro_yearly: String::new(),
            success_url: String::new(),
            cancel_url: String::new(),
            portal_return_url: String::new(),
            stripe_api_base: None,
            webhook_tolerance_secs: 300,
        }
    }
}

impl PlansConfig {
    /// The plan table: DESIGN.md's defaults with these overrides.
    pub fn table(&self) -> PlanTable {
        let mut t = PlanTable::default();
        self.free.apply(&mut t.free);
        self.creator.apply(&mut t.creator);
        self.pro.apply(&mut t.pro);
        self.enterprise.apply(&mut t.enterprise);
        t
    }
}

impl BillingConfig {
    /// The engine's billing settings.
    pub fn settings(&self) -> clipforge_actors::billing::BillingSettings {
        use clipforge_actors::billing::{BillingSettings, Prices};
        BillingSettings {
            secret_key: self.stripe_secret_key.expose().to_string(),
            webhook_secret: self.webhook_secret.expose().to_string(),
            prices: Prices {
                creator_monthly: self.price_creator_monthly.clone(),
                creator_yearly: self.price_creator_yearly.clone(),
                pro_monthly: self.price_pro_monthly.clone(),
                pro_yearly: self.price_pro_yearly.clone(),
            },
            success_url: self.success_url.clone(),
            cancel_url: self.cancel_url.clone(),
            portal_return_url: self.portal_return_url.clone(),
            api_base: self.stripe_api_base.clone(),
            webhook_tolerance_secs: self.webhook_tolerance_secs,
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
            log_format: "auto".into(),
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
            renders_per_account: 2,
            idle_secs: 300,
            rerank_url: None,
            rerank_model: "gpt-4o-mini".into(),
            rerank_api_key: Secret::default(),
            rerank_timeout_secs: 60,
        }
    }
}

impl Default for SourcesConfig {
    fn default() -> Self {
        Self {
            extra_hosts: Vec::new(),
            meta_timeout_secs: 90,
        }
    }
}

/// `$CLIPFORGE_CACHE_DIR/models/whisper-base` (default
/// `~/.cache/clipforge/...`), where `make setup` installs the model.
pub fn default_model_dir() -> PathBuf {
    let cache = std::env::var_os("CLIPFORGE_CACHE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("."));
            home.join(".cache").join("clipforge")
        });
    cache.join("models").join("whisper-base")
}

impl Config {
    /// Defaults, then `file` (when it exists), then the process's
    /// environment, then `flags` (key path → value, e.g.
    /// `("node.data_dir", "/srv/data")`).
    pub fn load(file: Option<&Path>, flags: &[(&str, Value)]) -> Result<Self, ConfigError> {
        Self::layered(file, EnvVars::from_process(), flags)
    }

    /// [`Config::load`] with the environment given.
    pub fn layered(
        file: Option<&Path>,
        env: EnvVars,
        flags: &[(&str, Value)],
    ) -> Result<Self, ConfigError> {
        Self::extract(Self::figment(file, env, flags))
    }

    /// The layers, merged in order (each overrides the one before).
    pub fn figment(file: Option<&Path>, env: EnvVars, flags: &[(&str, Value)]) -> Figment {
        let mut f = Figment::new();
        if let Some(path) = file.filter(|p| p.exists()) {
            f = f.merge(Toml::file_exact(path));
        }
        f = f.merge(env);
        for (key, value) in flags {
            f = f.merge((*key, value.clone()));
        }
        f
    }

    /// The typed config from merged layers: numbers and booleans are also
    /// read from strings (environment values), then checked.
    pub fn extract(f: Figment) -> Result<Self, ConfigError> {
        let cfg: Config = f.extract_lossy().map_err(Box::new)?;
        cfg.validate()?;
        Ok(cfg)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        self.storage.validate()?;
        if !["auto", "text", "json"].contains(&self.node.log_format.as_str()) {
            return Err(format!(
                "node.log_format {:?}: use \"auto\", \"text\" or \"json\"",
                self.node.log_format
            )
            .into());
        }
        if self.pipeline.workers == 0 {
            return Err("pipeline.workers must be at least 1".into());
        }
        self.cluster
            .validate(&self.storage.kv, &self.storage.backend)?;
        if self.cluster.enabled()
            && (self.auth.media_secret.is_empty() || self.publish.token_key.is_empty())
        {
            // Each node would otherwise generate its own in its data
            // directory: links signed on one node would fail on another,
            // and tokens sealed on one could not be opened on another.
            return Err(
                "a cluster needs the same auth.media_secret and publish.token_key \
                 on every node (CLIPFORGE_AUTH_MEDIA_SECRET, CLIPFORGE_PUBLISH_TOKEN_KEY: \
                 e.g. `openssl rand -hex 32` each)"
                    .into(),
            );
        }
        self.security.validate()?;
        self.publish.validate()
    }
}

/// The config from `env` alone, not validated (tests of one section's checks).
#[cfg(test)]
pub(crate) fn unchecked(env: &[(&str, &str)]) -> Config {
    Config::figment(None, env.to_vec().into(), &[])
        .extract_lossy()
        .unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layers(
        toml: &str,
        env: Vec<(&str, &str)>,
        flags: &[(&str, Value)],
    ) -> Result<Config, String> {
        let mut f = Figment::from(Toml::string(toml)).merge(EnvVars::from(env));
        for (k, v) in flags {
            f = f.merge((*k, v.clone()));
        }
        Config::extract(f).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_then_file_then_env_then_flags_and_secrets_stay_hidden() {
        let cfg = layers(
            "[node]\nhttp_addr = \"127.0.0.1:9000\"\nname = \"from-file\"\n[auth]\nadmin_token = \"s3cr3t\"\n[pipeline]\nworkers = 3\nthreads = 3\n",
            vec![
                ("CLIPFORGE_PLANS_FREE_UPLOAD_MAX_MB", "3"),
                ("CLIPFORGE_PLANS_PRO_MONTHLY_CREDITS", "7"),
                ("CLIPFORGE_PIPELINE_WORKERS", "2"),
                ("CLIPFORGE_NODE_NAME", "4711"),
                ("CLIPFORGE_SOURCES_EXTRA_HOSTS", "127.0.0.1, localhost"),
                ("CLIPFORGE_BILLING_STRIPE_SECRET_KEY", "sk_test_hidden"),
                ("CLIPFORGE_BILLING_PRICE_PRO_YEARLY", "price_py"),
                ("CLIPFORGE_CLUSTER_TLS", "false"),
                // Not settings: left alone.
                ("CLIPFORGE_FAULTS", "account-panic:once"),
                ("CLIPFORGE_CACHE_DIR", "/tmp"),
                ("HOME", "/root"),
            ],
            &[("pipeline.threads", 5.into())],
        )
        .unwrap();
        assert_eq!(cfg.node.http_addr, "127.0.0.1:9000", "file over defaults");
        assert_eq!(
            cfg.node.name, "4711",
            "env over file, a number kept as text"
        );
        assert_eq!(cfg.pipeline.workers, 2);
        assert_eq!(cfg.pipeline.threads, 5, "flags over everything");
        assert_eq!(cfg.pipeline.beam_size, 5, "defaults stay");
        assert_eq!(cfg.sources.extra_hosts, ["127.0.0.1", "localhost"]);
        assert!(!format!("{cfg:?}").contains("s3cr3t"));
        assert_eq!(cfg.auth.admin_token.expose(), "s3cr3t");
        let plans = cfg.plans.table();
        assert_eq!(plans.free.upload_max_bytes, 3 * 1024 * 1024);
        assert_eq!(plans.pro.monthly_credits, Some(7));
        assert_eq!(plans.creator.monthly_credits, Some(300), "defaults stay");
        assert!(!format!("{cfg:?}").contains("sk_test_hidden"));
        let billing = cfg.billing.settings();
        assert_eq!(billing.secret_key, "sk_test_hidden");
        assert_eq!(billing.prices.pro_yearly, "price_py");
        assert_eq!(billing.webhook_tolerance_secs, 300);
        assert!(
            !billing.missing().is_empty(),
            "incomplete: billing stays off"
        );
    }

    #[test]
    fn one_name_per_setting_older_cli_names_still_read() {
        let cfg = layers(
            "",
            vec![
                ("CLIPFORGE_THREADS", "3"),
                ("CLIPFORGE_BEAM_SIZE", "2"),
                ("CLIPFORGE_PIPELINE_BEAM_SIZE", "1"),
                ("CLIPFORGE_MODEL_DIR", "/models/x"),
            ],
            &[],
        )
        .unwrap();
        assert_eq!(cfg.pipeline.threads, 3);
        assert_eq!(cfg.pipeline.beam_size, 1, "the canonical name wins");
        assert_eq!(cfg.pipeline.model_dir, Some(PathBuf::from("/models/x")));
        // An empty value clears an optional setting the file gave.
        let cfg = layers(
            "[node]\npublic_url = \"https://a.example\"\n",
            vec![("CLIPFORGE_NODE_PUBLIC_URL", "")],
            &[],
        )
        .unwrap();
        assert_eq!(cfg.node.public_url, None);
    }

    #[test]
    fn the_reranker_is_a_pipeline_setting_for_every_command() {
        assert!(
            Config::default().pipeline.rerank().is_none(),
            "off by default"
        );
        let cfg = layers(
            "[pipeline]\nrerank_model = \"local-llm\"\n",
            vec![
                ("CLIPFORGE_RERANK_URL", "http://127.0.0.1:8000/v1"),
                ("CLIPFORGE_PIPELINE_RERANK_API_KEY", "sk-secret"),
            ],
            &[],
        )
        .unwrap();
        let r = cfg.pipeline.rerank().expect("configured");
        assert_eq!(
            (r.base_url.as_str(), r.model.as_str(), r.api_key.as_deref()),
            ("http://127.0.0.1:8000/v1", "local-llm", Some("sk-secret"))
        );
        assert_eq!(r.timeout, std::time::Duration::from_secs(60));
        assert!(!format!("{cfg:?}").contains("sk-secret"));
    }

    #[test]
    fn bad_values_are_refused() {
        let err = layers("", vec![("CLIPFORGE_PIPELINE_WORKERS", "many")], &[]).unwrap_err();
        assert!(err.contains("CLIPFORGE_PIPELINE_WORKERS"), "{err}");
        let err = layers("", vec![("CLIPFORGE_NODE_HTTP_ADR", "x")], &[]).unwrap_err();
        assert!(err.contains("http_adr"), "a misspelt setting: {err}");
        assert!(layers("[node]\nbogus = 1\n", vec![], &[]).is_err());
        assert!(layers("", vec![("CLIPFORGE_STORAGE_BACKEND", "ftp")], &[]).is_err());
        let err = layers(
            "",
            vec![
                ("CLIPFORGE_AUTH_ADMIN_TOKEN", "t0ps3cret"),
                ("CLIPFORGE_PIPELINE_WORKERS", "0"),
            ],
            &[],
        )
        .unwrap_err();
        assert!(!err.contains("t0ps3cret"), "{err}");
    }
}
