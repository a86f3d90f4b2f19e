//! One typed configuration, layered: built-in defaults, then `cluster.toml`
//! (or `--config FILE`), then `CLIPFORGE_*` environment variables, then
//! command-line flags. Secrets are wrapped so they never print.

use std::fmt;
use std::path::{Path, PathBuf};

use clipforge_actors::accounts::{PlanLimits, PlanTable};
use serde::Deserialize;

mod cluster;
mod publish;
mod security;
mod storage;
pub use cluster::ClusterConfig;
pub use publish::PublishConfig;
pub use security::{IpNet, LimitsConfig, SecurityConfig};
pub use storage::StorageConfig;

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
    pub plans: PlansConfig,
    pub billing: BillingConfig,
    pub publish: PublishConfig,
    pub cluster: ClusterConfig,
    pub security: SecurityConfig,
    pub limits: LimitsConfig,
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
    /// Log lines: "auto" (text on a terminal, JSON otherwise), "text" or "json".
    pub log_format: String,
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

    fn get_mut(&mut self, plan: &str) -> &mut PlanOverride {
        match plan {
            "FREE" => &mut self.free,
            "CREATOR" => &mut self.creator,
            "PRO" => &mut self.pro,
            _ => &mut self.enterprise,
        }
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

impl Default for Config {
    fn default() -> Self {
        Self {
            node: NodeConfig::default(),
            storage: StorageConfig::default(),
            pipeline: PipelineConfig::default(),
            auth: AuthConfig::default(),
            sources: SourcesConfig::default(),
            plans: PlansConfig::default(),
            billing: BillingConfig::default(),
            publish: PublishConfig::default(),
            cluster: ClusterConfig::default(),
            security: SecurityConfig::default(),
            limits: LimitsConfig::default(),
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
            meta_timeout_secs: 90,
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
    env_field!("CLIPFORGE_NODE_LOG_FORMAT", cfg.node.log_format, str);
    storage::apply_env(&mut cfg.storage, get)?;
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
    for plan in ["FREE", "CREATOR", "PRO", "ENTERPRISE"] {
        let o = cfg.plans.get_mut(plan);
        let num = |field: &str| -> Result<Option<u64>, String> {
            let name = format!("CLIPFORGE_PLANS_{plan}_{field}");
            get(&name).map(|v| parse(&name, v)).transpose()
        };
        if let Some(v) = num("UPLOAD_MAX_MB")? {
            o.upload_max_mb = Some(v);
        }
        if let Some(v) = num("STORAGE_MB")? {
            o.storage_mb = Some(v);
        }
        if let Some(v) = num("MONTHLY_CREDITS")? {
            o.monthly_credits = Some(v);
        }
        if let Some(v) = num("WELCOME_BONUS")? {
            o.welcome_bonus = Some(v);
        }
        let name = format!("CLIPFORGE_PLANS_{plan}_WATERMARK_FORCED");
        if let Some(v) = get(&name) {
            o.watermark_forced = Some(parse(&name, v)?);
        }
    }
    let b = &mut cfg.billing;
    env_field!(
        "CLIPFORGE_BILLING_STRIPE_SECRET_KEY",
        b.stripe_secret_key,
        secret
    );
    env_field!("CLIPFORGE_BILLING_WEBHOOK_SECRET", b.webhook_secret, secret);
    env_field!(
        "CLIPFORGE_BILLING_PRICE_CREATOR_MONTHLY",
        b.price_creator_monthly,
        str
    );
    env_field!(
        "CLIPFORGE_BILLING_PRICE_CREATOR_YEARLY",
        b.price_creator_yearly,
        str
    );
    env_field!(
        "CLIPFORGE_BILLING_PRICE_PRO_MONTHLY",
        b.price_pro_monthly,
        str
    );
    env_field!(
        "CLIPFORGE_BILLING_PRICE_PRO_YEARLY",
        b.price_pro_yearly,
        str
    );
    env_field!("CLIPFORGE_BILLING_SUCCESS_URL", b.success_url, str);
    env_field!("CLIPFORGE_BILLING_CANCEL_URL", b.cancel_url, str);
    env_field!(
        "CLIPFORGE_BILLING_PORTAL_RETURN_URL",
        b.portal_return_url,
        str
    );
    env_field!("CLIPFORGE_BILLING_STRIPE_API_BASE", b.stripe_api_base, opt);
    env_field!(
        "CLIPFORGE_BILLING_WEBHOOK_TOLERANCE_SECS",
        b.webhook_tolerance_secs,
        num
    );
    env_field!(
        "CLIPFORGE_SOURCES_META_TIMEOUT_SECS",
        cfg.sources.meta_timeout_secs,
        num
    );
    if let Some(v) = get("CLIPFORGE_SOURCES_EXTRA_HOSTS") {
        cfg.sources.extra_hosts = v
            .split(',')
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .collect();
    }
    publish::apply_env(&mut cfg.publish, get)?;
    cluster::apply_env(&mut cfg.cluster, get)?;
    security::apply_env(&mut cfg.security, &mut cfg.limits, get)?;
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
        self.storage.validate()?;
        if !["auto", "text", "json"].contains(&self.node.log_format.as_str()) {
            return Err(format!(
                "node.log_format {:?}: use \"auto\", \"text\" or \"json\"",
                self.node.log_format
            ));
        }
        if self.pipeline.workers == 0 {
            return Err("pipeline.workers must be at least 1".into());
        }
        self.cluster.validate(&self.storage.backend)?;
        self.security.validate()?;
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
            ("CLIPFORGE_PLANS_FREE_UPLOAD_MAX_MB", "3"),
            ("CLIPFORGE_PLANS_PRO_MONTHLY_CREDITS", "7"),
            ("CLIPFORGE_PIPELINE_WORKERS", "2"),
            ("CLIPFORGE_SOURCES_EXTRA_HOSTS", "127.0.0.1, localhost"),
            ("CLIPFORGE_BILLING_STRIPE_SECRET_KEY", "sk_test_hidden"),
            ("CLIPFORGE_BILLING_PRICE_PRO_YEARLY", "price_py"),
        ]
        .into();
        apply_env(&mut cfg, &|k| env.get(k).map(|v| v.to_string())).unwrap();
        assert_eq!(cfg.node.http_addr, "127.0.0.1:9000");
        assert_eq!(cfg.pipeline.workers, 2);
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
    fn bad_values_are_refused() {
        let mut cfg = Config::default();
        let env: HashMap<&str, &str> = [("CLIPFORGE_PIPELINE_WORKERS", "many")].into();
        assert!(apply_env(&mut cfg, &|k| env.get(k).map(|v| v.to_string())).is_err());
        assert!(toml::from_str::<Config>("[node]\nbogus = 1\n").is_err());
        cfg.storage.backend = "ftp".into();
        assert!(cfg.validate().is_err());
    }
}
