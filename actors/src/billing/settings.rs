//! What billing is configured with: the Stripe keys, the four plan prices
//! and the return URLs; and the paid plan a price stands for.

use super::error::{BillingError, Result};
use crate::accounts::{BillingFrequency, Plan};

/// Placeholder Stripe replaces with the session id in the success URL.
pub const SESSION_PLACEHOLDER: &str = "{CHECKOUT_SESSION_ID}";

/// The Stripe prices of the paid plans.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Prices {
    pub creator_monthly: String,
    pub creator_yearly: String,
    pub pro_monthly: String,
    pub pro_yearly: String,
}

impl Prices {
    fn entries(&self) -> [(&str, PlanChoice); 4] {
        use BillingFrequency::{Monthly, Yearly};
        let choice = |plan, frequency| PlanChoice { plan, frequency };
        [
            (
                self.creator_monthly.as_str(),
                choice(Plan::Creator, Monthly),
            ),
            (self.creator_yearly.as_str(), choice(Plan::Creator, Yearly)),
            (self.pro_monthly.as_str(), choice(Plan::Pro, Monthly)),
            (self.pro_yearly.as_str(), choice(Plan::Pro, Yearly)),
        ]
    }

    /// The price of a plan and frequency.
    pub fn price(&self, choice: PlanChoice) -> &str {
        self.entries()
            .into_iter()
            .find(|(_, c)| *c == choice)
            .map(|(price, _)| price)
            .unwrap_or("")
    }

    /// The plan and frequency a price stands for.
    pub fn plan_of(&self, price_id: &str) -> Option<PlanChoice> {
        self.entries()
            .into_iter()
            .find(|(price, _)| !price.is_empty() && *price == price_id)
            .map(|(_, choice)| choice)
    }
}

/// Everything billing needs from the configuration.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct BillingSettings {
    pub secret_key: String,
    pub webhook_secret: String,
    pub prices: Prices,
    /// Where Stripe sends the user after paying; carries
    /// [`SESSION_PLACEHOLDER`] (added as `session_id` when missing).
    pub success_url: String,
    pub cancel_url: String,
    /// Where the customer portal sends the user back.
    pub portal_return_url: String,
    /// Stripe's API base URL; `None` for Stripe itself.
    pub api_base: Option<String>,
    pub webhook_tolerance_secs: u64,
}

impl std::fmt::Debug for BillingSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BillingSettings")
            .field("prices", &self.prices)
            .field("success_url", &self.success_url)
            .field("cancel_url", &self.cancel_url)
            .field("api_base", &self.api_base)
            .finish_non_exhaustive()
    }
}

impl BillingSettings {
    /// The settings still missing for billing to work (empty when complete).
    pub fn missing(&self) -> Vec<&'static str> {
        let fields = [
            ("stripe_secret_key", &self.secret_key),
            ("webhook_secret", &self.webhook_secret),
            ("price_creator_monthly", &self.prices.creator_monthly),
            ("price_creator_yearly", &self.prices.creator_yearly),
            ("price_pro_monthly", &self.prices.pro_monthly),
            ("price_pro_yearly", &self.prices.pro_yearly),
            ("success_url", &self.success_url),
            ("cancel_url", &self.cancel_url),
        ];
        fields
            .into_iter()
            .filter(|(_, v)| v.trim().is_empty())
            .map(|(name, _)| name)
            .collect()
    }

    /// The success URL with the session placeholder Stripe fills in.
    pub fn success_url_with_session(&self) -> String {
        if self.success_url.contains(SESSION_PLACEHOLDER) {
            return self.success_url.clone();
        }
        let sep = if self.success_url.contains('?') {
            '&'
        } else {
            '?'
        };
        format!("{}{sep}session_id={SESSION_PLACEHOLDER}", self.success_url)
    }
}

/// A paid plan and how often it is billed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanChoice {
    pub plan: Plan,
    pub frequency: BillingFrequency,
}

impl PlanChoice {
    /// `creator|pro` and `monthly|yearly`, exactly.
    pub fn parse(plan: &str, frequency: &str) -> Result<Self> {
        let plan = match plan {
            "creator" => Plan::Creator,
            "pro" => Plan::Pro,
            _ => {
                return Err(BillingError::InvalidInput(
                    "plan: use creator or pro".into(),
                ))
            }
        };
        let frequency = BillingFrequency::parse(frequency)
            .ok_or_else(|| BillingError::InvalidInput("frequency: use monthly or yearly".into()))?;
        Ok(Self { plan, frequency })
    }
}
