//! Where a webhook may point. A webhook makes the server send requests to a
//! URL a user chose, so by default it refuses addresses inside the
//! server's own networks (loopback, private, link-local — the cloud
//! metadata service —, unique-local, CGNAT, multicast, unspecified): at
//! registration for an address literal, and at every delivery after
//! resolving the name, connecting only to the addresses it checked (so a
//! name that resolves differently the second time gains nothing).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::Url;

use super::{WebhookError, URL_MAX_CHARS};

/// Whether a delivery may go to `ip` when private targets are not allowed.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => public_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => public_v4(v4),
            None => public_v6(v6),
        },
    }
}

fn public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    !(ip.is_private()
        || ip.is_loopback()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_documentation()
        || ip.is_unspecified()
        || ip.is_multicast()
        || a == 0
        // Shared address space (carrier-grade NAT), 100.64.0.0/10.
        || (a == 100 && (64..128).contains(&b))
        // IETF protocol assignments and benchmarking.
        || (a == 192 && b == 0 && ip.octets()[2] == 0)
        || (a == 198 && (18..20).contains(&b))
        || a >= 240)
}

fn public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    !(ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        // Unique local fc00::/7, link-local fe80::/10, documentation.
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || first == 0x2001 && ip.segments()[1] == 0x0db8
        // NAT64 (64:ff9b::/96) could reach private IPv4 addresses.
        || (first == 0x0064 && ip.segments()[1] == 0xff9b))
}

/// Checks a webhook URL: absolute `http` or `https`, with a host, no user
/// name or password, at most 2,048 characters; an address literal must be
/// public unless `allow_private`. Returns the URL as it will be called.
pub fn check_url(raw: &str, allow_private: bool) -> Result<String, WebhookError> {
    let invalid = |why: &str| WebhookError::Invalid(format!("url: {why}"));
    if raw.chars().count() > URL_MAX_CHARS {
        return Err(invalid("longer than 2048 characters"));
    }
    let url = Url::parse(raw.trim()).map_err(|e| invalid(&format!("not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid("must be http or https"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid("must not carry a user name or password"));
    }
    let host = url.host().ok_or_else(|| invalid("has no host"))?;
    let literal = match host {
        url::Host::Ipv4(v4) => Some(IpAddr::V4(v4)),
        url::Host::Ipv6(v6) => Some(IpAddr::V6(v6)),
        url::Host::Domain(d)
            if d.eq_ignore_ascii_case("localhost") || d.ends_with(".localhost") =>
        {
            Some(IpAddr::V4(Ipv4Addr::LOCALHOST))
        }
        url::Host::Domain(_) => None,
    };
    if let Some(ip) = literal {
        if !allow_private && !is_public(ip) {
            return Err(WebhookError::PrivateTarget(format!(
                "url: {ip} is a private, loopback or link-local address; webhooks go to public addresses"
            )));
        }
    }
    Ok(url.to_string())
}

/// The address of an address-literal URL, refused when private (reqwest
/// does not ask the resolver for those).
pub fn literal_refused(url: &Url, allow_private: bool) -> Option<String> {
    if allow_private {
        return None;
    }
    let ip = match url.host()? {
        url::Host::Ipv4(v4) => IpAddr::V4(v4),
        url::Host::Ipv6(v6) => IpAddr::V6(v6),
        url::Host::Domain(_) => return None,
    };
    (!is_public(ip)).then(|| format!("{ip} is a private address"))
}

/// A resolver that drops private addresses (and fails when none is left).
pub struct PublicOnly;

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        Box::pin(async move {
            let host = name.as_str().to_string();
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let public: Vec<SocketAddr> = found.into_iter().filter(|a| is_public(a.ip())).collect();
            if public.is_empty() {
                let e: Box<dyn std::error::Error + Send + Sync> =
                    format!("{host} resolves only to private addresses").into();
                return Err(e);
            }
            let addrs: Addrs = Box::new(public.into_iter());
            Ok(addrs)
        })
    }
}

/// The HTTP client deliveries use: no redirects (a 3xx is a failure: the
/// target must be the URL registered), `timeout` per attempt, and, unless
/// private targets are allowed, only public addresses. Through `proxy`
/// when given (an egress proxy: it resolves names and enforces its own
/// rules; address literals are still checked here), else direct (the
/// environment's proxy variables are not read).
pub fn client(
    timeout: std::time::Duration,
    allow_private: bool,
    proxy: Option<&str>,
) -> reqwest::Result<reqwest::Client> {
    let mut b = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout)
        .connect_timeout(timeout)
        .user_agent(concat!("Clipforge-Webhooks/", env!("CARGO_PKG_VERSION")));
    b = match proxy {
        Some(p) => b.proxy(reqwest::Proxy::all(p)?),
        None if allow_private => b.no_proxy(),
        None => b.no_proxy().dns_resolver(Arc::new(PublicOnly)),
    };
    b.build()
}
