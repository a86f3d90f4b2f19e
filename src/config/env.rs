//! The `CLIPFORGE_*` environment as a figment provider: one name per
//! setting, `CLIPFORGE_<SECTION>_<FIELD>` for the field `<section>.<field>`
//! of `cluster.toml` (`CLIPFORGE_PLANS_<PLAN>_<FIELD>` and
//! `CLIPFORGE_PUBLISH_<PLATFORM>_<FIELD>` for the nested tables), used by
//! every command. Values are passed on as strings (figment's lossy
//! extraction reads numbers and booleans from them; lists are comma
//! separated, an empty value clears an optional setting, see
//! [`super::serde_env`]). Variables of other sections (`CLIPFORGE_FAULTS`,
//! `CLIPFORGE_CONFIG`, `CLIPFORGE_CACHE_DIR`, …) are not settings and are
//! left alone; a misspelt field of a known section is refused by the
//! config's `deny_unknown_fields`.

use figment::value::{Dict, Map, Value};
use figment::{Error, Metadata, Profile, Provider};

const PREFIX: &str = "CLIPFORGE_";

/// The sections of `cluster.toml`.
const SECTIONS: [&str; 12] = [
    "node", "storage", "pipeline", "auth", "sources", "plans", "billing", "publish", "cluster",
    "security", "limits", "webhooks",
];
const PLATFORMS: [&str; 3] = ["youtube", "tiktok", "instagram"];
const PLATFORM_FIELDS: [&str; 6] = [
    "client_id",
    "client_secret",
    "auth_url",
    "token_url",
    "api_url",
    "upload_url",
];

/// The `clipforge clip` command's older names of the pipeline settings,
/// still read (the `CLIPFORGE_PIPELINE_*` name wins when both are set).
const ALIASES: [(&str, &str); 8] = [
    ("MODEL_DIR", "pipeline.model_dir"),
    ("THREADS", "pipeline.threads"),
    ("COMPUTE_TYPE", "pipeline.compute_type"),
    ("BEAM_SIZE", "pipeline.beam_size"),
    ("BATCH_SIZE", "pipeline.batch_size"),
    ("RERANK_URL", "pipeline.rerank_url"),
    ("RERANK_MODEL", "pipeline.rerank_model"),
    ("RERANK_API_KEY", "pipeline.rerank_api_key"),
];

/// The config key path a variable sets (`CLIPFORGE_NODE_HTTP_ADDR` →
/// `node.http_addr`) and whether it is the setting's own name (not an
/// older alias), or `None` when it is not a setting.
pub fn key_of(name: &str) -> Option<(String, bool)> {
    let rest = name.strip_prefix(PREFIX)?;
    if let Some((_, key)) = ALIASES.iter().find(|(alias, _)| *alias == rest) {
        return Some((key.to_string(), false));
    }
    let rest = rest.to_ascii_lowercase();
    let (section, field) = rest.split_once('_')?;
    if !SECTIONS.contains(&section) || field.is_empty() {
        return None;
    }
    let nested = |tables: &[&str], fields: Option<&[&str]>| {
        let (table, f) = field.split_once('_')?;
        (tables.contains(&table) && fields.is_none_or(|fs| fs.contains(&f)))
            .then(|| format!("{section}.{table}.{f}"))
    };
    let key = match section {
        "plans" => nested(&["free", "creator", "pro", "enterprise"], None)?,
        "publish" => {
            nested(&PLATFORMS, Some(&PLATFORM_FIELDS)).unwrap_or_else(|| format!("publish.{field}"))
        }
        _ => format!("{section}.{field}"),
    };
    Some((key, true))
}

/// The variable that sets `key` (for error messages).
pub fn name_of(key: &[&str]) -> String {
    format!("{PREFIX}{}", key.join("_").to_ascii_uppercase())
}

/// The settings among `vars` (name, value).
pub struct EnvVars(Vec<(String, String)>);

impl EnvVars {
    /// This process's environment.
    pub fn from_process() -> Self {
        Self::from(std::env::vars().collect::<Vec<_>>())
    }
}

impl<K: Into<String>, V: Into<String>> From<Vec<(K, V)>> for EnvVars {
    fn from(vars: Vec<(K, V)>) -> Self {
        Self(
            vars.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
}

impl Provider for EnvVars {
    fn metadata(&self) -> Metadata {
        Metadata::named("environment variable")
            .interpolater(|_: &Profile, keys: &[&str]| name_of(keys))
    }

    fn data(&self) -> Result<Map<Profile, Dict>, Error> {
        // Aliases first, so the setting's own name wins.
        let mut vars: Vec<(bool, String, &String)> = self
            .0
            .iter()
            .filter_map(|(name, value)| {
                let (key, own) = key_of(name)?;
                Some((own, key, value))
            })
            .collect();
        vars.sort_by_key(|(own, _, _)| *own);
        let mut dict = Dict::new();
        for (_, key, value) in vars {
            let nested = figment::util::nest(&key, Value::from(value.clone()));
            if let Value::Dict(_, d) = nested {
                dict = merge(dict, d);
            }
        }
        Ok(Profile::Default.collect(dict))
    }
}

/// `b` over `a`, recursively.
fn merge(mut a: Dict, b: Dict) -> Dict {
    for (k, v) in b {
        let merged = match (a.remove(&k), v) {
            (Some(Value::Dict(t, old)), Value::Dict(_, new)) => Value::Dict(t, merge(old, new)),
            (_, v) => v,
        };
        a.insert(k, merged);
    }
    a
}
