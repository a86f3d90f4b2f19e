//! Request rate limits (GCRA, `governor`) per client address and per
//! account, by route class, answering 429 with `Retry-After`. The lockout
//! after failed sign-ins (per email and address) is the account layer's
//! (`clipforge_actors::accounts`); its 429 gets `Retry-After` through
//! [`note_retry_after`].

use std::cell::Cell;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};
use poem::http::{Method, StatusCode};
use poem::Response;

use crate::config::LimitsConfig;

/// The limited routes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    SignUp,
    SignIn,
    Meta,
    CreateProject,
    Upload,
    Avatar,
}

impl Class {
    pub fn of(method: &Method, path: &str) -> Option<Class> {
        let path = path.trim_end_matches('/');
        if method == Method::PUT && path == "/api/auth/avatar" {
            return Some(Class::Avatar);
        }
        if method != Method::POST {
            return None;
        }
        Some(match path {
            "/api/auth/sign-up/email" => Class::SignUp,
            "/api/auth/sign-in/email" => Class::SignIn,
            "/api/meta" => Class::Meta,
            "/api/projects" => Class::CreateProject,
            "/api/upload" => Class::Upload,
            _ => return None,
        })
    }

    /// Whether the class names an account (signed-in routes).
    pub fn per_account(self) -> bool {
        matches!(
            self,
            Class::Meta | Class::CreateProject | Class::Upload | Class::Avatar
        )
    }

    fn index(self) -> usize {
        self as usize
    }
}

type Keyed<K> = RateLimiter<K, DefaultKeyedStateStore<K>, DefaultClock>;

fn limiter<K: std::hash::Hash + Eq + Clone>(per_minute: u32) -> Option<Keyed<K>> {
    let n = NonZeroU32::new(per_minute)?;
    Some(RateLimiter::keyed(Quota::per_minute(n)))
}

/// One limiter per class and key kind; `None` where the limit is off.
pub struct RateLimits {
    per_ip: [Option<Keyed<IpAddr>>; 6],
    per_account: [Option<Keyed<String>>; 6],
    /// Every request made with an API key, by key id (counted once the
    /// key is known, so made-up keys take no room).
    per_key: Option<Keyed<String>>,
    clock: DefaultClock,
}

impl RateLimits {
    pub fn new(c: &LimitsConfig) -> Self {
        Self {
            per_ip: [
                limiter(c.sign_up_per_ip),
                limiter(c.sign_in_per_ip),
                limiter(c.meta_per_ip),
                limiter(c.create_project_per_ip),
                limiter(c.upload_per_ip),
                None,
            ],
            per_account: [
                None,
                None,
                limiter(c.meta_per_account),
                limiter(c.create_project_per_account),
                limiter(c.upload_per_account),
                limiter(c.avatar_per_account),
            ],
            per_key: limiter(c.api_key_per_minute),
            clock: DefaultClock::default(),
        }
    }

    /// `Err(wait)` when `ip` (counted by [`rate_key`]:
    /// an IPv6 address by its /64) has used up the class's rate.
    pub fn check_ip(&self, class: Class, ip: IpAddr) -> Result<(), Duration> {
        match &self.per_ip[class.index()] {
            Some(l) => l
                .check_key(&rate_key(ip))
                .map_err(|n| n.wait_time_from(self.clock.now())),
            None => Ok(()),
        }
    }

    /// `Err(wait)` when `account` has used up the class's rate.
    pub fn check_account(&self, class: Class, account: &str) -> Result<(), Duration> {
        match &self.per_account[class.index()] {
            Some(l) => l
                .check_key(&account.to_string())
                .map_err(|n| n.wait_time_from(self.clock.now())),
            None => Ok(()),
        }
    }

    /// `Err(wait)` when the API key `key_id` has used up its rate.
    pub fn check_key(&self, key_id: &str) -> Result<(), Duration> {
        match &self.per_key {
            Some(l) => l
                .check_key(&key_id.to_string())
                .map_err(|n| n.wait_time_from(self.clock.now())),
            None => Ok(()),
        }
    }

    /// Forgets keys whose rate is fully replenished (bounded memory).
    pub fn prune(&self) {
        for l in self.per_ip.iter().flatten() {
            l.retain_recent();
            l.shrink_to_fit();
        }
        for l in self.per_account.iter().chain([&self.per_key]).flatten() {
            l.retain_recent();
            l.shrink_to_fit();
        }
    }
}

/// Whole seconds to wait, at least 1.
pub fn retry_secs(wait: Duration) -> u64 {
    (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
}

/// 429 with `Retry-After` and the uniform error body.
pub fn too_many(wait: Duration, what: &str) -> Response {
    let secs = retry_secs(wait);
    let mut resp = crate::error_body::error_response(
        StatusCode::TOO_MANY_REQUESTS,
        "rate_limited",
        &format!("too many {what}; try again in {secs} s"),
    );
    resp.headers_mut()
        .insert("retry-after", poem::http::HeaderValue::from(secs));
    resp
}

tokio::task_local! {
    static RETRY_AFTER: Cell<Option<u64>>;
}

/// Records the wait of a 429 answered by a handler (the account layer's
/// lockout), for [`with_retry_after`] to put in `Retry-After`.
pub fn note_retry_after(secs: u64) {
    let _ = RETRY_AFTER.try_with(|c| c.set(Some(secs)));
}

/// Runs `f` and returns the wait a handler noted, if any.
pub async fn with_retry_after<F: std::future::Future>(f: F) -> (F::Output, Option<u64>) {
    RETRY_AFTER
        .scope(Cell::new(None), async move {
            let out = f.await;
            (out, RETRY_AFTER.with(Cell::get))
        })
        .await
}

/// What rate limits and sign-in lockouts count a client address under:
/// IPv4 as is (and IPv4-mapped IPv6 as IPv4), IPv6 by its /64, the
/// smallest network one subscriber usually gets.
pub fn rate_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => IpAddr::V6((u128::from(v6) & !(u128::MAX >> 64)).into()),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_and_limits() {
        assert_eq!(
            Class::of(&Method::POST, "/api/auth/sign-in/email"),
            Some(Class::SignIn)
        );
        assert_eq!(Class::of(&Method::GET, "/api/projects"), None);
        assert_eq!(
            Class::of(&Method::PUT, "/api/auth/avatar"),
            Some(Class::Avatar)
        );
        assert_eq!(
            Class::of(&Method::POST, "/api/projects/"),
            Some(Class::CreateProject)
        );
        let c = LimitsConfig {
            sign_in_per_ip: 2,
            meta_per_account: 0,
            ..LimitsConfig::default()
        };
        let l = RateLimits::new(&c);
        let a: IpAddr = "203.0.113.1".parse().unwrap();
        let b: IpAddr = "203.0.113.2".parse().unwrap();
        assert!(l.check_ip(Class::SignIn, a).is_ok());
        assert!(l.check_ip(Class::SignIn, a).is_ok());
        let wait = l.check_ip(Class::SignIn, a).unwrap_err();
        assert!(retry_secs(wait) >= 1 && retry_secs(wait) <= 30, "{wait:?}");
        assert!(l.check_ip(Class::SignIn, b).is_ok(), "another address");
        for _ in 0..100 {
            assert!(l.check_account(Class::Meta, "u1").is_ok(), "off");
        }
        assert_eq!(retry_secs(Duration::from_millis(1)), 1);
        assert_eq!(retry_secs(Duration::ZERO), 1);
        assert_eq!(retry_secs(Duration::from_secs(3)), 3);
    }
}
