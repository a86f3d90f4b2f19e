//! What the paid plans cost, as Stripe holds their prices (the four price
//! ids of the billing settings, read with `GET /v1/prices/:id`), for the
//! plan list (`GET /api/plans`). The four are read at once, each waited for
//! at most five seconds, at most every ten minutes, and shared by every
//! request meanwhile; a price Stripe cannot give in time is left out (and
//! asked again after a minute), so the list still shows every plan.

use std::sync::Arc;
use std::time::Duration;

use super::checkout::Billing;
use super::price_cache::PlanPrice;
use super::settings::PlanChoice;
use crate::accounts::{BillingFrequency, Plan};

/// How long prices read from Stripe are kept.
const KEPT: Duration = Duration::from_secs(600);
/// How long a list with a price missing is kept before asking again.
const KEPT_INCOMPLETE: Duration = Duration::from_secs(60);
/// How long one price is waited for.
const ASK_FOR: Duration = Duration::from_secs(5);

impl Billing {
    /// The paid plans' prices (see the module documentation).
    pub async fn plan_prices(&self) -> Arc<Vec<PlanPrice>> {
        if let Some(prices) = self.prices.fresh() {
            return prices;
        }
        // The four at once, each given a few seconds: a slow Stripe delays
        // the list by one timeout, not four.
        let read = |plan, frequency| async move {
            let id = self.settings.prices.price(PlanChoice { plan, frequency });
            let read = tokio::time::timeout(ASK_FOR, self.stripe.retrieve_price(id)).await;
            (plan, frequency, id, read)
        };
        use BillingFrequency::{Monthly, Yearly};
        let answers = tokio::join!(
            read(Plan::Creator, Monthly),
            read(Plan::Creator, Yearly),
            read(Plan::Pro, Monthly),
            read(Plan::Pro, Yearly),
        );
        let mut prices = Vec::new();
        let mut complete = true;
        for (plan, frequency, id, read) in [answers.0, answers.1, answers.2, answers.3] {
            match read {
                Ok(Ok((Some(amount), currency))) => prices.push(PlanPrice {
                    plan,
                    frequency,
                    amount,
                    currency,
                }),
                Ok(Ok((None, _))) => {}
                Ok(Err(e)) => {
                    complete = false;
                    tracing::warn!(price = id, error = %e, "reading a plan's price at Stripe");
                }
                Err(_) => {
                    complete = false;
                    tracing::warn!(
                        price = id,
                        "reading a plan's price at Stripe: no answer in time"
                    );
                }
            }
        }
        let prices = Arc::new(prices);
        self.prices.keep(
            prices.clone(),
            if complete { KEPT } else { KEPT_INCOMPLETE },
        );
        prices
    }
}
