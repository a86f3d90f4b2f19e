//! `[security]` (who is trusted, which browsers may call) and `[limits]`
//! (body sizes, rate limits, connections). Environment:
//! `CLIPFORGE_SECURITY_<FIELD>` and `CLIPFORGE_LIMITS_<FIELD>`; lists are
//! comma separated, e.g. `CLIPFORGE_SECURITY_TRUSTED_PROXIES=10.0.0.0/8`.

use super::error::ConfigError;
use std::net::IpAddr;

use serde::Deserialize;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SecurityConfig {
    /// Direct peers (IPs or CIDRs) whose `X-Forwarded-For` is believed;
    /// from anyone else the header is ignored.
    #[serde(deserialize_with = "super::serde_env::list")]
    pub trusted_proxies: Vec<String>,
    /// Origins (`https://app.example.com`) allowed to call the API from a
    /// browser with credentials; no wildcard.
    #[serde(deserialize_with = "super::serde_env::list")]
    pub cors_origins: Vec<String>,
}

/// A request rate: `per_minute` requests, all of them allowed at once.
/// 0 turns the limit off.
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// Largest request body of routes that take JSON, in KiB.
    pub json_body_kb: u64,
    /// Open connections per client address (trusted proxies excepted).
    pub connections_per_ip: usize,
    /// Open connections in all; 0: three quarters of the open-file limit.
    pub max_connections: usize,
    /// Seconds a request's header block may take to arrive.
    pub header_read_timeout_secs: u64,
    /// Seconds a kept-alive connection may stay quiet after a response.
    pub idle_timeout_secs: u64,
    /// Open `/status` event streams per account.
    pub sse_per_account: usize,
    pub sign_up_per_ip: u32,
    pub sign_in_per_ip: u32,
    pub meta_per_ip: u32,
    pub meta_per_account: u32,
    pub create_project_per_ip: u32,
    pub create_project_per_account: u32,
    pub upload_per_ip: u32,
    pub upload_per_account: u32,
    /// Avatar uploads per account and minute.
    pub avatar_per_account: u32,
    /// Requests per API key and minute (any operation).
    pub api_key_per_minute: u32,
    /// Failed sign-ins before an (email, address) pair is locked out.
    pub sign_in_failures_per_email: usize,
    /// Failed sign-ins before an address is locked out (any email).
    pub sign_in_failures_per_ip: usize,
    /// Failed sign-ins of an email from all addresses before each further
    /// attempt from an address it has not signed in from waits (1 s,
    /// doubling per failure); 0 turns it off.
    pub sign_in_failures_per_account: usize,
    /// The longest of those waits.
    pub sign_in_delay_max_secs: u64,
    /// The lockout window.
    pub sign_in_failure_window_secs: u64,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            json_body_kb: 64,
            connections_per_ip: 256,
            max_connections: 0,
            header_read_timeout_secs: 10,
            idle_timeout_secs: 60,
            sse_per_account: 16,
            sign_up_per_ip: 20,
            sign_in_per_ip: 30,
            meta_per_ip: 60,
            meta_per_account: 30,
            create_project_per_ip: 60,
            create_project_per_account: 30,
            upload_per_ip: 30,
            upload_per_account: 20,
            avatar_per_account: 5,
            api_key_per_minute: 600,
            sign_in_failures_per_email: 5,
            sign_in_failures_per_ip: 20,
            sign_in_failures_per_account: 10,
            sign_in_delay_max_secs: 30,
            sign_in_failure_window_secs: 15 * 60,
        }
    }
}

impl LimitsConfig {
    pub fn sign_in_limits(&self) -> clipforge_actors::accounts::SignInLimits {
        clipforge_actors::accounts::SignInLimits {
            per_email: self.sign_in_failures_per_email,
            per_client: self.sign_in_failures_per_ip,
            per_account: self.sign_in_failures_per_account,
            max_delay_ms: self.sign_in_delay_max_secs as i64 * 1000,
            window_ms: self.sign_in_failure_window_secs as i64 * 1000,
        }
    }
}

/// An address or a network in CIDR notation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpNet {
    addr: IpAddr,
    prefix: u8,
}

impl IpNet {
    pub fn parse(s: &str) -> Result<Self, ConfigError> {
        let s = s.trim();
        let (a, p) = s.split_once('/').unwrap_or((s, ""));
        let addr: IpAddr = a
            .parse()
            .map_err(|_| format!("{s:?} is not an IP or CIDR"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = if p.is_empty() {
            max
        } else {
            p.parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("{s:?}: bad prefix length"))?
        };
        Ok(Self { addr, prefix })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                let mask = u32::MAX.checked_shl(32 - self.prefix as u32).unwrap_or(0);
                u32::from(n) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                let mask = u128::MAX.checked_shl(128 - self.prefix as u32).unwrap_or(0);
                u128::from(n) & mask == u128::from(a) & mask
            }
            _ => false,
        }
    }
}

impl SecurityConfig {
    pub fn proxies(&self) -> Result<Vec<IpNet>, ConfigError> {
        self.trusted_proxies
            .iter()
            .map(|s| {
                IpNet::parse(s)
                    .map_err(|e| ConfigError::from(format!("security.trusted_proxies: {e}")))
            })
            .collect()
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        self.proxies()?;
        for o in &self.cors_origins {
            let ok = (o.starts_with("https://") || o.starts_with("http://"))
                && !o.contains('*')
                && !o.ends_with('/');
            if !ok {
                return Err(format!(
                    "security.cors_origins: {o:?} must be an exact origin such as https://app.example.com (no wildcard, no path)"
                ).into());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidrs_match() {
        let net = IpNet::parse("10.1.0.0/16").unwrap();
        assert!(net.contains("10.1.200.3".parse().unwrap()));
        assert!(!net.contains("10.2.0.1".parse().unwrap()));
        let one = IpNet::parse("127.0.0.1").unwrap();
        assert!(one.contains("127.0.0.1".parse().unwrap()));
        assert!(one.contains("::ffff:127.0.0.1".parse().unwrap()));
        assert!(!one.contains("127.0.0.2".parse().unwrap()));
        assert!(IpNet::parse("::/0")
            .unwrap()
            .contains("::1".parse().unwrap()));
        assert!(IpNet::parse("10.0.0.0/33").is_err());
        assert!(IpNet::parse("example.com").is_err());
    }

    #[test]
    fn the_shipped_cluster_toml_has_the_defaults_and_env_overrides() {
        use crate::config::Config;
        let file = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/cluster.toml"));
        let cfg = Config::layered(Some(file), Vec::<(&str, &str)>::new().into(), &[]).unwrap();
        let d = LimitsConfig::default();
        assert_eq!(cfg.limits.json_body_kb, d.json_body_kb);
        assert_eq!(cfg.limits.sign_in_per_ip, d.sign_in_per_ip);
        assert_eq!(cfg.limits.connections_per_ip, d.connections_per_ip);
        assert_eq!(
            cfg.limits.sign_in_failures_per_account,
            d.sign_in_failures_per_account
        );
        assert_eq!(cfg.limits.sign_in_delay_max_secs, d.sign_in_delay_max_secs);
        assert_eq!(
            cfg.limits.sign_in_failure_window_secs,
            d.sign_in_failure_window_secs
        );
        let env = vec![
            ("CLIPFORGE_LIMITS_SIGN_IN_PER_IP", "7"),
            (
                "CLIPFORGE_SECURITY_TRUSTED_PROXIES",
                "10.0.0.0/8, 127.0.0.1",
            ),
        ];
        let cfg = Config::layered(Some(file), env.into(), &[]).unwrap();
        assert_eq!(cfg.limits.sign_in_per_ip, 7);
        assert_eq!(cfg.security.proxies().unwrap().len(), 2);
        let bad = vec![("CLIPFORGE_LIMITS_JSON_BODY_KB", "lots")];
        let err = Config::layered(Some(file), bad.into(), &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("CLIPFORGE_LIMITS_JSON_BODY_KB"), "{err}");
    }

    #[test]
    fn wildcard_origins_are_refused() {
        let mut s = SecurityConfig {
            cors_origins: vec!["*".into()],
            ..SecurityConfig::default()
        };
        assert!(s.validate().is_err());
        s.cors_origins = vec!["https://app.example.com".into()];
        assert!(s.validate().is_ok());
    }
}
