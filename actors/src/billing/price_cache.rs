//! The paid plans' prices as last read from Stripe, and how long they are
//! kept (`prices.rs` reads them).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::accounts::{BillingFrequency, Plan};

/// The price of a paid plan at one billing frequency.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanPrice {
    pub plan: Plan,
    pub frequency: BillingFrequency,
    /// In the currency's smallest unit (cents for `usd`).
    pub amount: i64,
    /// ISO 4217, lower case as Stripe writes it.
    pub currency: String,
}

/// Prices read, when, and for how long they are kept.
type Kept = (Instant, Duration, Arc<Vec<PlanPrice>>);

/// The prices last read and when.
#[derive(Debug, Default)]
pub(super) struct PriceCache {
    kept: Mutex<Option<Kept>>,
}

impl PriceCache {
    pub(super) fn fresh(&self) -> Option<Arc<Vec<PlanPrice>>> {
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.as_ref()
            .filter(|(at, ttl, _)| at.elapsed() < *ttl)
            .map(|(_, _, prices)| prices.clone())
    }

    pub(super) fn keep(&self, prices: Arc<Vec<PlanPrice>>, ttl: Duration) {
        *self.kept.lock().unwrap_or_else(|e| e.into_inner()) = Some((Instant::now(), ttl, prices));
    }
}
