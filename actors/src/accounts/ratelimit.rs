//! In-memory lockout after failed sign-ins, per (email, client IP) and per
//! client IP, and a progressive delay per email across all addresses. The
//! email is never locked out on its own: failures from one address cannot
//! lock the account's owner out at another address, and past the email's
//! failure budget attempts are only spaced out (a wait that doubles per
//! failure up to a cap), never refused for good; an address where the email
//! signed in successfully is exempt from that delay. Client keys are the
//! HTTP layer's (IPv4, or an IPv6 /64); its request rate limits (any
//! outcome) are in `src/ratelimit.rs`.

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
    /// Failures per normalised email from all clients before each further
    /// attempt from an address it has not signed in from waits (1 s,
    /// doubling per failure, up to `max_delay_ms`); 0: off.
    pub per_account: usize,
    pub max_delay_ms: i64,
    pub window_ms: i64,
}

impl Default for SignInLimits {
    fn default() -> Self {
        Self {
            per_email: 5,
            per_client: 20,
            per_account: 10,
            max_delay_ms: 30_000,
            window_ms: 15 * 60 * 1000,
        }
    }
}

/// Above this many tracked keys, keys without a recent failure are dropped.
const PRUNE_ABOVE: usize = 10_000;

/// How long an address where an email signed in stays exempt from the
/// email's delay.
const KNOWN_FOR_MS: i64 = 30 * 24 * 3600 * 1000;

/// The first wait past the per-account budget; it doubles per failure.
const FIRST_DELAY_MS: i64 = 1000;

/// Counts attempts as failures up front (so parallel attempts cannot all
/// slip past the check) and takes the count back on success.
#[derive(Debug)]
pub(crate) struct SignInLimiter {
    limits: SignInLimits,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Times of recent failures per key, oldest first.
    failures: HashMap<String, VecDeque<i64>>,
    /// (email, client) pairs that signed in: when they last did.
    known: HashMap<String, i64>,
}

fn email_key(email: &str, client: &str) -> String {
    format!("email:{email}|{client}")
}

fn client_key(client: &str) -> String {
    format!("client:{client}")
}

fn account_key(email: &str) -> String {
    format!("account:{email}")
}

/// Drops the failures that left the window.
fn slide(times: &mut VecDeque<i64>, now: i64, window: i64) {
    while times.front().is_some_and(|&t| t <= now - window) {
        times.pop_front();
    }
}

impl SignInLimiter {
    pub(crate) fn new(limits: SignInLimits) -> Self {
        Self {
            limits,
            state: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Each method leaves the maps valid before anything can panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
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

    /// How long an attempt for `email` from `client` must still wait because
    /// the email used up its failure budget across all addresses (0: none).
    fn account_wait(&self, st: &mut State, email: &str, client: &str, now: i64) -> i64 {
        let budget = self.limits.per_account;
        if budget == 0 || client.is_empty() {
            return 0;
        }
        let known = st
            .known
            .get(&email_key(email, client))
            .is_some_and(|&t| t > now - KNOWN_FOR_MS);
        let Some(times) = st.failures.get_mut(&account_key(email)) else {
            return 0;
        };
        slide(times, now, self.limits.window_ms);
        if known || times.len() < budget {
            return 0;
        }
        let over = (times.len() - budget).min(20) as u32;
        let delay = (FIRST_DELAY_MS << over).min(self.limits.max_delay_ms);
        let last = times.back().copied().unwrap_or(now);
        (last + delay - now).max(0)
    }

    /// Registers an attempt for `email` from `client` as a failure, or
    /// refuses it with [`AccountError::RateLimited`] when either has used up
    /// its failures in the window. A refused attempt is not counted.
    pub(crate) fn attempt(&self, email: &str, client: &str, now: i64) -> Result<()> {
        let window = self.limits.window_ms;
        let mut st = self.lock();
        let keys = self.keys(email, client);
        let mut retry_after_ms = self.account_wait(&mut st, email, client, now);
        let failures = &mut st.failures;
        for (key, limit) in &keys {
            let times = failures.entry(key.clone()).or_default();
            slide(times, now, window);
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
        if st.known.len() > PRUNE_ABOVE {
            st.known.retain(|_, &mut t| t > now - KNOWN_FOR_MS);
        }
        let failures = &mut st.failures;
        for (key, _) in keys {
            failures.entry(key).or_default().push_back(now);
        }
        if !client.is_empty() {
            failures
                .entry(account_key(email))
                .or_default()
                .push_back(now);
        }
        Ok(())
    }

    /// Takes back the attempt (the latest registered at or before `now`):
    /// the email's failures from this client are forgotten, the client's
    /// and the email's overall count lose this one, and the client becomes
    /// known for the email.
    pub(crate) fn succeeded(&self, email: &str, client: &str, now: i64) {
        let mut st = self.lock();
        st.failures.remove(&email_key(email, client));
        if client.is_empty() {
            return;
        }
        st.known.insert(email_key(email, client), now);
        for key in [client_key(client), account_key(email)] {
            if let Some(times) = st.failures.get_mut(&key) {
                // The attempt was registered when it began, at most `now`.
                if let Some(pos) = times.iter().rposition(|&t| t <= now) {
                    times.remove(pos);
                }
                if times.is_empty() {
                    st.failures.remove(&key);
                }
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
            ..SignInLimits::default()
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

    #[test]
    fn account_budget_spaces_attempts_but_spares_known_addresses() {
        let limiter = SignInLimiter::new(SignInLimits {
            per_account: 3,
            ..SignInLimits::default()
        });
        // The owner signs in once from home.
        limiter.attempt("a@x.io", "10.0.0.1", 0).unwrap();
        limiter.succeeded("a@x.io", "10.0.0.1", 0);
        // Three failures from three addresses use the budget up.
        for i in 1..=3 {
            limiter
                .attempt("a@x.io", &format!("192.0.2.{i}"), i)
                .expect("within the budget");
        }
        // A fourth address waits 1 s after the last failure.
        assert_eq!(limited(limiter.attempt("a@x.io", "192.0.2.9", 10)), 1);
        limiter
            .attempt("a@x.io", "192.0.2.9", 3 + 1000)
            .expect("waited");
        // Then 2 s, doubling per failure, up to the cap.
        assert_eq!(
            limited(limiter.attempt("a@x.io", "192.0.2.10", 1003 + 1000)),
            1
        );
        limiter
            .attempt("a@x.io", "192.0.2.10", 1003 + 2000)
            .expect("waited");
        // The owner at home is not delayed; other emails are not either.
        limiter
            .attempt("a@x.io", "10.0.0.1", 3004)
            .expect("known address");
        limiter
            .attempt("b@x.io", "192.0.2.11", 3004)
            .expect("other email");
        // Never more than the cap, however many failures.
        for i in 0..40 {
            let t = 60_000 + i * 40_000;
            limiter
                .attempt("a@x.io", &format!("198.51.100.{i}"), t)
                .expect("after the cap");
        }
        let retry = limited(limiter.attempt("a@x.io", "203.0.113.1", 60_000 + 39 * 40_000 + 1));
        assert!(retry <= 30, "{retry}");
    }
}
