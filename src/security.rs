//! Who the client is and what browsers may do: the client address (with
//! `X-Forwarded-For` only from trusted proxies), the cluster's internal
//! headers (never taken from a client), response headers (nosniff, frame
//! denial, HSTS and `Secure` cookies on https), the CORS allowlist, the
//! origin check of cookie-authenticated writes (CSRF), and the per-account
//! bound on open event streams.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};

use poem::http::{HeaderValue, Method, StatusCode};
use poem::{Request, Response};

use crate::config::{Config, IpNet};
use crate::ratelimit::RateLimits;

/// Set by the node that accepted the connection: the client's address as
/// it resolved it. Taken from clients never (removed on entry).
pub const CLIENT_IP: &str = "x-clipforge-client-ip";

/// Set on a request one node relays to another (the entry node already
/// resolved the client and applied the limits).
pub const FORWARDED: &str = "x-clipforge-forwarded";

/// Everything the middleware needs besides the engine.
pub struct Guard {
    pub rates: RateLimits,
    proxies: Vec<IpNet>,
    cors: Vec<String>,
    /// `scheme://host[:port]` of the public URL.
    public_origin: String,
    https: bool,
    pub json_limit: u64,
    sse_max: usize,
    sse: Arc<Mutex<HashMap<String, usize>>>,
}

impl Guard {
    pub fn new(config: &Config, public_url: &str) -> anyhow::Result<Self> {
        Ok(Self {
            rates: RateLimits::new(&config.limits),
            proxies: config.security.proxies().map_err(|e| anyhow::anyhow!(e))?,
            cors: config.security.cors_origins.clone(),
            public_origin: origin_of(public_url),
            https: public_url.starts_with("https://"),
            json_limit: config.limits.json_body_kb * 1024,
            sse_max: config.limits.sse_per_account,
            sse: Arc::default(),
        })
    }

    pub fn trusted(&self, ip: IpAddr) -> bool {
        self.proxies.iter().any(|n| n.contains(ip))
    }

    /// The client of a request that came in over a connection from `peer`:
    /// the peer itself, or when the peer is a trusted proxy the right-most
    /// `X-Forwarded-For` address that is not a trusted proxy.
    /// IPv4-mapped IPv6 addresses come out as IPv4.
    pub fn client_ip(&self, peer: IpAddr, xff: Option<&str>) -> IpAddr {
        self.forwarded_client(peer, xff).to_canonical()
    }

    fn forwarded_client(&self, peer: IpAddr, xff: Option<&str>) -> IpAddr {
        if !self.trusted(peer) {
            return peer;
        }
        let mut client = peer;
        for hop in xff.unwrap_or("").rsplit(',') {
            match hop.trim().parse::<IpAddr>() {
                Ok(ip) => {
                    client = ip;
                    if !self.trusted(ip) {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
        client
    }

    /// Removes the internal headers a client may have sent and records the
    /// resolved client address for this node's middleware and, through the
    /// relay, for the node that serves the request.
    pub fn on_entry(&self, req: &mut Request) {
        let headers = req.headers_mut();
        headers.remove(FORWARDED);
        headers.remove(CLIENT_IP);
        let peer = match req.remote_addr().as_socket_addr() {
            Some(a) => a.ip(),
            None => return,
        };
        let xff = req.header("x-forwarded-for").map(str::to_string);
        let ip = self.client_ip(peer, xff.as_deref());
        if let Ok(v) = HeaderValue::from_str(&ip.to_string()) {
            req.headers_mut().insert(CLIENT_IP, v);
        }
    }

    /// A permit for one open event stream of `account`; `None` at the limit.
    pub fn sse_permit(&self, account: &str) -> Option<SsePermit> {
        let mut open = self.sse.lock().unwrap_or_else(PoisonError::into_inner);
        let n = open.entry(account.to_string()).or_default();
        if *n >= self.sse_max {
            return None;
        }
        *n += 1;
        Some(SsePermit {
            account: account.to_string(),
            open: self.sse.clone(),
        })
    }

    /// The 403 for a cross-site write: an unsafe method (POST, PUT, PATCH,
    /// DELETE) authenticated by the session cookie alone whose `Origin` is
    /// neither the public URL's, nor the `Host` the request was sent to,
    /// nor a CORS origin — or, without `Origin`, whose `Sec-Fetch-Site` is
    /// not `same-origin`. A request with neither header is not a browser's
    /// (browsers send `Origin` on every cross-origin write) and passes, as
    /// do bearer-authenticated requests and requests without the cookie.
    pub fn cross_site_write(&self, req: &Request) -> Option<Response> {
        let safe = [Method::GET, Method::HEAD, Method::OPTIONS, Method::TRACE];
        if safe.contains(req.method())
            || req
                .header("authorization")
                .is_some_and(|h| h.starts_with("Bearer "))
            || !crate::session::has_session_cookie(req.headers())
        {
            return None;
        }
        let allowed = match req.header("origin") {
            Some(origin) => {
                let origin = origin.trim_end_matches('/');
                origin.eq_ignore_ascii_case(&self.public_origin)
                    || self.cors_allowed(origin)
                    || req
                        .header("host")
                        .or_else(|| req.uri().authority().map(|a| a.as_str()))
                        .is_some_and(|host| {
                            origin
                                .split_once("://")
                                .is_some_and(|(_, authority)| authority.eq_ignore_ascii_case(host))
                        })
            }
            None => req
                .header("sec-fetch-site")
                .is_none_or(|site| site.eq_ignore_ascii_case("same-origin")),
        };
        (!allowed).then(|| {
            crate::error_body::error_response(
                StatusCode::FORBIDDEN,
                "cross_site_request",
                "a request signed in by cookie must come from this site's pages",
            )
        })
    }

    fn cors_allowed(&self, origin: &str) -> bool {
        self.cors.iter().any(|o| o == origin)
    }

    /// Answers a CORS preflight (`OPTIONS` with `Origin` and
    /// `Access-Control-Request-Method`); `None` for other requests.
    pub fn preflight(&self, req: &Request) -> Option<Response> {
        if req.method() != Method::OPTIONS || req.header("access-control-request-method").is_none()
        {
            return None;
        }
        let origin = req.header("origin")?;
        if !self.cors_allowed(origin) {
            return Some(crate::error_body::error_response(
                StatusCode::FORBIDDEN,
                "cors_origin_not_allowed",
                "this origin may not call the API from a browser",
            ));
        }
        let mut resp = Response::builder().status(StatusCode::NO_CONTENT).finish();
        let h = resp.headers_mut();
        h.insert(
            "access-control-allow-methods",
            HeaderValue::from_static("GET, POST, PUT, PATCH, DELETE, OPTIONS"),
        );
        h.insert(
            "access-control-allow-headers",
            HeaderValue::from_static("authorization, content-type, last-event-id"),
        );
        h.insert("access-control-max-age", HeaderValue::from_static("600"));
        Some(resp)
    }

    /// Security headers on every response, CORS headers for allowed
    /// origins, `Secure` on cookies when the public URL is https.
    pub fn finish(&self, origin: Option<&str>, resp: &mut Response) {
        let h = resp.headers_mut();
        h.insert(
            "x-content-type-options",
            HeaderValue::from_static("nosniff"),
        );
        h.insert("x-frame-options", HeaderValue::from_static("DENY"));
        h.insert(
            "content-security-policy",
            HeaderValue::from_static("frame-ancestors 'none'"),
        );
        h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
        if self.https {
            h.insert(
                "strict-transport-security",
                HeaderValue::from_static("max-age=31536000; includeSubDomains"),
            );
            let cookies: Vec<HeaderValue> = h.get_all("set-cookie").iter().cloned().collect();
            if !cookies.is_empty() {
                h.remove("set-cookie");
                for c in cookies {
                    let text = c.to_str().unwrap_or_default();
                    let secure = if text.to_ascii_lowercase().contains("; secure") {
                        c
                    } else {
                        HeaderValue::from_str(&format!("{text}; Secure")).unwrap_or(c)
                    };
                    h.append("set-cookie", secure);
                }
            }
        }
        if let Some(origin) = origin.filter(|o| self.cors_allowed(o)) {
            if let Ok(v) = HeaderValue::from_str(origin) {
                h.insert("access-control-allow-origin", v);
                h.insert(
                    "access-control-allow-credentials",
                    HeaderValue::from_static("true"),
                );
                h.append("vary", HeaderValue::from_static("Origin"));
            }
        }
    }
}

/// `scheme://host[:port]` of `url`, lower case.
fn origin_of(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    format!("{scheme}://{authority}").to_ascii_lowercase()
}

/// The client address the entry node resolved (see [`Guard::on_entry`]).
pub fn client_ip(req: &Request) -> Option<IpAddr> {
    req.header(CLIENT_IP)?.parse().ok()
}

/// One open event stream; released when dropped.
pub struct SsePermit {
    account: String,
    open: Arc<Mutex<HashMap<String, usize>>>,
}

impl Drop for SsePermit {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = open.get_mut(&self.account) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.account);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(proxies: &[&str]) -> Guard {
        let mut c = Config::default();
        c.security.trusted_proxies = proxies.iter().map(|s| s.to_string()).collect();
        c.limits.sse_per_account = 2;
        Guard::new(&c, "http://x").unwrap()
    }

    #[test]
    fn forwarded_for_only_from_trusted_proxies() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let g = guard(&[]);
        assert_eq!(
            g.client_ip(ip("127.0.0.1"), Some("9.9.9.9")),
            ip("127.0.0.1")
        );
        let g = guard(&["127.0.0.1", "10.0.0.0/8"]);
        assert_eq!(g.client_ip(ip("127.0.0.1"), Some("9.9.9.9")), ip("9.9.9.9"));
        // A client's own XFF entries left of the real one are not believed.
        assert_eq!(
            g.client_ip(ip("127.0.0.1"), Some("1.1.1.1, 9.9.9.9, 10.0.0.5")),
            ip("9.9.9.9")
        );
        assert_eq!(g.client_ip(ip("127.0.0.1"), Some("junk")), ip("127.0.0.1"));
        assert_eq!(g.client_ip(ip("8.8.8.8"), Some("9.9.9.9")), ip("8.8.8.8"));
        assert_eq!(
            g.client_ip(ip("127.0.0.1"), Some("::ffff:203.0.113.7")),
            ip("203.0.113.7")
        );
        use crate::ratelimit::rate_key;
        assert_eq!(rate_key(ip("::ffff:203.0.113.7")), ip("203.0.113.7"));
        assert_eq!(rate_key(ip("2001:db8:1:2:3:4:5:6")), ip("2001:db8:1:2::"));
        assert_eq!(rate_key(ip("2001:db8:1:2::ffff")), ip("2001:db8:1:2::"));
        assert_ne!(rate_key(ip("2001:db8:1:3::1")), ip("2001:db8:1:2::"));
    }

    #[test]
    fn event_streams_are_bounded_per_account() {
        let g = guard(&[]);
        let a = g.sse_permit("u1").unwrap();
        let _b = g.sse_permit("u1").unwrap();
        assert!(g.sse_permit("u1").is_none());
        assert!(g.sse_permit("u2").is_some());
        drop(a);
        assert!(g.sse_permit("u1").is_some());
    }
}
