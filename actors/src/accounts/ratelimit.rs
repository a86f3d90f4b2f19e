//! In-memory lockout after failed sign-ins, per (email, client IP) and per
//! client IP. The email is never limited on its own: failures from one
//! address cannot lock the account's owner out at another address. The
//! request rate limits (any outcome) are the HTTP layer's (`src/ratelimit.rs`).

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::error::{AccountError, Result};

/// How many failed attempts are allowed in a sliding window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignInLimits {
    /// Failures allowed per normalised email from one client (IP address);
    /// without a client key (password change) per email.
    pub per_email: usize,
    /// Failures allowed per client key (IP address); higher than the email
    /// limit because many people may share one address.
    pub per_client: usize,
    pub window_ms: i64,
}

impl Default for SignInLimits {
    fn default() -> Self {
        Self {
            per_email: 5,
            per_client: 20,
            window_ms: 15 * 60 * 1000,
        }
    }
}

/// Above this many tracked keys, keys without a recent failure are dropped.
const PRUNE_ABOVE: usize = 10_000;

/// Counts attempts as failures up front (so parallel attempts cannot all
/// slip past the check) and takes the count back on success.
#[derive(Debug)]
pub(crate) struct SignInLimiter {
    limits: SignInLimits,
    /// Times of recent failures per key, oldest first.
    failures: Mutex<HashMap<String, VecDeque<i64>>>,
}

fn email_key(email: &str, client: &str) -> String {
    format!("email:{email}|{client}")
}

fn client_key(client: &str) -> String {
    format!("client:{client}")
}

impl SignInLimiter {
    pub(crate) fn new(limits: SignInLimits) -> Self {
        Self {
            limits,
            failures: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, VecDeque<i64>>> {
        // Each method leaves the map valid before anything can panic.
        self.failures.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The keys and limits that apply; an empty client key (unknown address)
    /// is not limited by address.
    fn keys(&self, email: &str, client: &str) -> Vec<(String, usize)> {
        let mut keys = vec![(email_key(email, client), self.limits.per_email)];
        if !client.is_empty() {
            keys.push((client_key(client), self.limits.per_client));
        }
        keys
    }

    /// Registers an attempt for `email` from `client` as a failure, or
    /// refuses it with [`AccountError::RateLimited`] when either has used up
    /// its failures in the window. A refused attempt is not counted.
    pub(crate) fn attempt(&self, email: &str, client: &str, now: i64) -> Result<()> {
        let window = self.limits.window_ms;
        let mut failures = self.lock();
        let keys = self.keys(email, client);
        let mut retry_after_ms = 0;
        for (key, limit) in &keys {
            let times = failures.entry(key.clone()).or_default();
            while times.front().is_some_and(|&t| t <= now - window) {
                times.pop_front();
            }
            if times.len() >= *limit {
                // With a limit of 0 there is no failure to wait for.
                let oldest = times.front().copied().unwrap_or(now);
                retry_after_ms = retry_after_ms.max(oldest + window - now);
            }
        }
        if retry_after_ms > 0 {
            let secs = u64::try_from((retry_after_ms + 999) / 1000).unwrap_or(u64::MAX);
            return Err(AccountError::RateLimited {
                retry_after_secs: secs,
            });
        }
        if failures.len() > PRUNE_ABOVE {
            failures.retain(|_, times| times.back().is_some_and(|&t| t > now - window));
        }
        for (key, _) in keys {
            failures.entry(key).or_default().push_back(now);
        }
        Ok(())
    }

    /// Takes back the attempt registered at `now`: the email's failures from
    /// this client are forgotten, the client's loses this one.
    pub(crate) fn succeeded(&self, email: &str, client: &str, now: i64) {
        let mut failures = self.lock();
        failures.remove(&email_key(email, client));
        if client.is_empty() {
            return;
        }
        let key = client_key(client);
        if let Some(times) = failures.get_mut(&key) {
            if let Some(pos) = times.iter().rposition(|&t| t == now) {
                times.remove(pos);
            }
            if times.is_empty() {
                failures.remove(&key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: i64 = 60_000;

    fn limited(result: Result<()>) -> u64 {
        match result {
            Err(AccountError::RateLimited { retry_after_secs }) => retry_after_secs,
            other => panic!("expected RateLimited, got {other:?}"),
        }
    }

    #[test]
    fn email_limit_slides_and_success_resets() {
        let limiter = SignInLimiter::new(SignInLimits::default());
        for i in 0..5 {
            limiter
                .attempt("a@x.io", "1.1.1.1", i * MINUTE)
                .expect("allowed");
        }
        let retry = limited(limiter.attempt("a@x.io", "1.1.1.1", 5 * MINUTE));
        assert_eq!(
            retry,
            10 * 60,
            "the oldest failure leaves the window in 10 min"
        );
        // The owner at another address is not locked out.
        limiter
            .attempt("a@x.io", "2.2.2.2", 5 * MINUTE)
            .expect("other address");
        // Another email from the same client is still allowed.
        limiter
            .attempt("b@x.io", "1.1.1.1", 5 * MINUTE)
            .expect("other email");
        // Once the oldest failure leaves the window, one attempt is allowed.
        limiter
            .attempt("a@x.io", "1.1.1.1", 15 * MINUTE)
            .expect("slid");
        limited(limiter.attempt("a@x.io", "1.1.1.1", 15 * MINUTE + 1));

        limiter.succeeded("a@x.io", "1.1.1.1", 15 * MINUTE);
        limiter
            .attempt("a@x.io", "1.1.1.1", 16 * MINUTE)
            .expect("reset by success");
    }

    #[test]
    fn client_limit_spans_emails() {
        let limiter = SignInLimiter::new(SignInLimits {
            per_email: 5,
            per_client: 3,
            window_ms: 15 * MINUTE,
        });
        for i in 0..3 {
            limiter
                .attempt(&format!("u{i}@x.io"), "9.9.9.9", 0)
                .expect("allowed");
        }
        limited(limiter.attempt("new@x.io", "9.9.9.9", 1));
        limiter
            .attempt("new@x.io", "8.8.8.8", 1)
            .expect("other client");
        // Without a client key only the email limit applies.
        limiter.attempt("new@x.io", "", 1).expect("no client key");
    }
}
