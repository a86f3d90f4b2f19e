//! Wiring of scheduling and publishing: the token key (from config, or
//! generated once and kept in the data dir) and the engine's start, which
//! re-arms every scheduled post.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clipforge_actors::engine::Engine;
use clipforge_actors::posts::crypto::TokenCipher;
use clipforge_actors::posts::Publishing;

use crate::config::Config;

fn token_cipher(config: &Config) -> anyhow::Result<TokenCipher> {
    if !config.publish.token_key.is_empty() {
        return TokenCipher::from_hex(config.publish.token_key.expose())
            .map_err(|e| anyhow::anyhow!("publish.token_key: {e}"));
    }
    let path = config.node.data_dir.join("tokens.key");
    if let Ok(s) = std::fs::read_to_string(&path) {
        return TokenCipher::from_hex(&s).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()));
    }
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("random: {e}"))?;
    let hex = hex::encode(bytes);
    std::fs::write(&path, &hex).with_context(|| format!("writing {}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600));
    }
    TokenCipher::from_hex(&hex).map_err(|e| anyhow::anyhow!("{e}"))
}

pub async fn start(
    config: &Config,
    public_url: &str,
    engine: Arc<Engine>,
) -> anyhow::Result<Arc<Publishing>> {
    let settings = config
        .publish
        .settings(public_url, Duration::from_secs(config.storage.url_ttl_secs));
    Publishing::start(engine.post_host(), settings, token_cipher(config)?)
        .await
        .map_err(|e| anyhow::anyhow!("starting the scheduler: {e}"))
}
