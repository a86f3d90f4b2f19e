//! `[webhooks]`: how signed webhooks are delivered (issue 31). Environment:
//! `CLIPFORGE_WEBHOOKS_<FIELD>`, e.g. `CLIPFORGE_WEBHOOKS_ALLOW_PRIVATE_TARGETS`.

use std::time::Duration;

use clipforge_actors::webhooks::delivery::DeliverySettings;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebhooksConfig {
    /// Lets webhooks point at loopback and private addresses (a test or an
    /// internal deployment); off, they are refused at registration and at
    /// every delivery.
    pub allow_private_targets: bool,
    /// Each attempt's time limit.
    pub attempt_timeout_ms: u64,
    /// First retry after this; each next one twice as late, up to `retry_max_ms`.
    pub retry_base_ms: u64,
    pub retry_max_ms: u64,
    /// A delivery is given up this long after its first attempt.
    pub retry_for_secs: u64,
    /// A webhook failing for this long is disabled (with a notification).
    pub disable_after_secs: u64,
    /// How often the queue is read for events written by other nodes.
    pub poll_ms: u64,
    /// Deliveries sent at once by one node.
    pub concurrency: usize,
    /// Sends every delivery through this HTTP proxy (an egress proxy);
    /// empty: direct.
    #[serde(deserialize_with = "super::serde_env::opt")]
    pub proxy_url: Option<String>,
}

impl Default for WebhooksConfig {
    fn default() -> Self {
        let d = DeliverySettings::default();
        Self {
            allow_private_targets: d.allow_private,
            attempt_timeout_ms: d.attempt_timeout.as_millis() as u64,
            retry_base_ms: d.retry_base.as_millis() as u64,
            retry_max_ms: d.retry_max.as_millis() as u64,
            retry_for_secs: d.retry_for.as_secs(),
            disable_after_secs: d.disable_after.as_secs(),
            poll_ms: d.poll.as_millis() as u64,
            concurrency: d.concurrency,
            proxy_url: d.proxy,
        }
    }
}

impl WebhooksConfig {
    pub fn settings(&self) -> DeliverySettings {
        DeliverySettings {
            attempt_timeout: Duration::from_millis(self.attempt_timeout_ms.max(100)),
            retry_base: Duration::from_millis(self.retry_base_ms.max(10)),
            retry_max: Duration::from_millis(self.retry_max_ms.max(self.retry_base_ms)),
            retry_for: Duration::from_secs(self.retry_for_secs),
            disable_after: Duration::from_secs(self.disable_after_secs),
            poll: Duration::from_millis(self.poll_ms.max(10)),
            concurrency: self.concurrency.max(1),
            allow_private: self.allow_private_targets,
            proxy: self.proxy_url.clone().filter(|p| !p.is_empty()),
        }
    }
}
