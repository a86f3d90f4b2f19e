//! Billing through Stripe: subscription checkout, the return path that
//! activates a paid checkout at once, the customer portal and webhooks.
//!
//! The account side (entitlements, cycles, the applied events) lives in
//! [`crate::accounts`]; this module talks to Stripe ([`stripe_client`]),
//! checks and reads webhooks ([`webhook`]) and calls the accounts
//! operations, each inside the account's actor.
//!
//! ```text
//! POST /stripe/checkout ──► customer (once) ──► Checkout Session ──► {url}
//! user pays at Stripe ──► success_url?session_id=cs_…
//!   GET /stripe/checkout/:id ──► retrieve session ──► paid? activate
//!   POST /stripe/webhook ──► verify ──► checkout.session.completed ──► activate (same, once)
//!                                      invoice.paid ──► renew the cycle
//!                                      customer.subscription.updated|deleted ──► move / end the plan
//! POST /credits/select-plan {free} ──► live subscription? cancel_at_period_end at Stripe
//!                                      (the plan ends with the subscription's deleted event)
//! POST /credits/select-plan {its paid plan} while ending ──► cancel_at_period_end=false
//! ```

mod plan_change;
mod prices;
pub mod stripe_client;
pub mod webhook;

use std::collections::HashMap;

use crate::accounts::actor::{AccountMsg, BillingChange, Reply};
use crate::accounts::registry::AccountDesk;
use crate::accounts::{Account, AccountError, Activation, Applied, BillingFrequency, Plan};
pub use plan_change::FreeSelection;
pub use prices::PlanPrice;
use stripe_client::{NewCheckout, StripeApi, StripeBuildError, StripeCallError};
pub use webhook::{sign, verify_signature, SignatureError, WebhookOutcome, MAX_WEBHOOK_BYTES};

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

/// Why a billing call was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum BillingError {
    #[error("{0}")]
    InvalidInput(String),
    #[error("webhook signature: {0}")]
    Signature(SignatureError),
    #[error("{0} not found")]
    NotFound(&'static str),
    #[error("{message}")]
    Conflict { code: &'static str, message: String },
    /// Stripe failed or answered something unusable.
    #[error("payment provider: {0}")]
    Provider(String),
    #[error(transparent)]
    Account(#[from] AccountError),
    /// The account's actor could not run the operation.
    #[error("account actor: {0}")]
    Actor(String),
}

impl From<StripeCallError> for BillingError {
    fn from(e: StripeCallError) -> Self {
        BillingError::Provider(e.to_string())
    }
}

type Result<T> = std::result::Result<T, BillingError>;

/// Why billing could not be set up (see [`Billing::new`]).
#[derive(Debug, thiserror::Error)]
pub enum BillingSetupError {
    /// Settings left empty, by name.
    #[error("billing settings missing: {names}", names = .0.join(", "))]
    Missing(Vec<&'static str>),
    #[error(transparent)]
    Client(#[from] StripeBuildError),
}

/// Runs a blocking accounts read off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> crate::accounts::Result<T> + Send + 'static,
) -> Result<T> {
    crate::tasks::blocking(f).await.map_err(BillingError::from)
}

/// Sends `user_id`'s actor the message `build` makes and waits for its
/// answer.
async fn on_account<T: Send + 'static>(
    desk: &AccountDesk,
    user_id: &str,
    build: impl FnOnce(Reply<T>) -> AccountMsg,
) -> Result<T> {
    Ok(desk.call(user_id, build).await?)
}

/// Applies a billing change (a Stripe event `event_id`, or the checkout's
/// return path) to `user_id`'s account.
async fn apply(
    desk: &AccountDesk,
    user_id: &str,
    change: BillingChange,
    event_id: Option<&str>,
) -> Result<Applied> {
    let event_id = event_id.map(str::to_string);
    on_account(desk, user_id, |reply| AccountMsg::Billing {
        change,
        event_id,
        reply,
    })
    .await
}

/// The state of a checkout seen from the return path.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckoutStatus {
    pub session_id: String,
    /// Stripe's session status: `open`, `complete` or `expired`.
    pub status: String,
    pub payment_status: String,
    /// Whether the bought plan is active on the account now.
    pub activated: bool,
    /// The account's plan after this call.
    pub plan: Plan,
}

/// Billing, configured.
#[derive(Debug)]
pub struct Billing {
    settings: BillingSettings,
    stripe: StripeApi,
    prices: prices::PriceCache,
}

impl Billing {
    /// Billing with complete `settings` (see [`BillingSettings::missing`]).
    pub fn new(settings: BillingSettings) -> std::result::Result<Self, BillingSetupError> {
        let missing = settings.missing();
        if !missing.is_empty() {
            return Err(BillingSetupError::Missing(missing));
        }
        let stripe = StripeApi::new(&settings.secret_key, settings.api_base.as_deref())?;
        Ok(Self {
            settings,
            stripe,
            prices: prices::PriceCache::default(),
        })
    }

    pub fn settings(&self) -> &BillingSettings {
        &self.settings
    }

    /// Opens a subscription checkout for `user`; returns the URL to send the
    /// user to. An account with a live subscription changes plan in the
    /// customer portal instead (409), so it is never billed twice.
    pub async fn checkout(
        &self,
        desk: &AccountDesk,
        user: &Account,
        plan: &str,
        frequency: &str,
    ) -> Result<String> {
        let choice = PlanChoice::parse(plan, frequency)?;
        let user_id = user.id.clone();
        let record = on_account(desk, &user_id, AccountMsg::BillingRecord).await?;
        if let Some(sub) = record.subscription.as_ref().filter(|s| s.is_live()) {
            return Err(BillingError::Conflict {
                code: "subscription_active",
                message: format!(
                    "the account already has an active {} subscription; change or cancel it \
                     in the customer portal: POST /api/stripe/customer-portal",
                    sub.plan
                ),
            });
        }
        let customer = match record.customer_id {
            Some(customer) => customer,
            None => {
                let created = self
                    .stripe
                    .create_customer(&user_id, &user.email, &user.name)
                    .await?;
                on_account(desk, &user_id, |reply| AccountMsg::RememberCustomer {
                    customer_id: created,
                    reply,
                })
                .await?
            }
        };
        let metadata = HashMap::from([
            ("user_id".to_string(), user_id.clone()),
            ("plan".to_string(), choice.plan.as_str().to_string()),
            (
                "frequency".to_string(),
                choice.frequency.as_str().to_string(),
            ),
        ]);
        let success_url = self.settings.success_url_with_session();
        let session = self
            .stripe
            .create_checkout_session(NewCheckout {
                customer_id: &customer,
                price_id: self.settings.prices.price(choice),
                user_id: &user_id,
                success_url: &success_url,
                cancel_url: &self.settings.cancel_url,
                metadata,
            })
            .await?;
        let url = session
            .url
            .clone()
            .ok_or_else(|| BillingError::Provider("the checkout session has no url".into()))?;
        let session_id = session.id.clone();
        on_account(desk, &user_id, |reply| AccountMsg::RecordCheckout {
            session_id,
            plan: choice.plan,
            frequency: choice.frequency,
            reply,
        })
        .await?;
        tracing::info!(user_id = %user_id, session_id = %session.id, plan = %choice.plan, "checkout opened");
        Ok(url)
    }

    /// The return path: reads the session at Stripe and, when it is paid,
    /// activates the plan at once (idempotent; the webhook may come later).
    /// Another account's session is not found.
    pub async fn checkout_status(
        &self,
        desk: &AccountDesk,
        user_id: &str,
        session_id: &str,
    ) -> Result<CheckoutStatus> {
        let valid = session_id.len() <= 255
            && session_id.starts_with("cs_")
            && session_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !valid {
            return Err(BillingError::NotFound("checkout session"));
        }
        let session = match self.stripe.retrieve_checkout_session(session_id).await {
            Err(StripeCallError::NotFound) => {
                return Err(BillingError::NotFound("checkout session"))
            }
            other => other?,
        };
        if session.client_reference_id.as_deref() != Some(user_id) {
            return Err(BillingError::NotFound("checkout session"));
        }
        let mut activated = false;
        if session.is_paid() && session.subscription_mode {
            let meta = |k: &str| session.metadata.get(k).map(String::as_str).unwrap_or("");
            let recorded = blocking({
                let accounts = desk.accounts.clone();
                let id = session.id.clone();
                move || accounts.checkout_record(&id)
            })
            .await?;
            let choice = match recorded {
                Some(r) => PlanChoice {
                    plan: r.plan,
                    frequency: r.frequency,
                },
                None => PlanChoice::parse(meta("plan"), meta("frequency"))
                    .map_err(|_| BillingError::Provider("the session names no plan".into()))?,
            };
            let (Some(customer), Some(subscription)) =
                (session.customer_id.clone(), session.subscription_id.clone())
            else {
                return Err(BillingError::Provider(
                    "a paid session without customer or subscription".into(),
                ));
            };
            let activation = Activation {
                session_id: session.id.clone(),
                customer_id: customer,
                subscription_id: subscription,
                plan: choice.plan,
                frequency: choice.frequency,
            };
            apply(desk, user_id, BillingChange::Activate(activation), None).await?;
            activated = true;
        }
        let account = on_account(desk, user_id, AccountMsg::Get).await?;
        Ok(CheckoutStatus {
            session_id: session.id,
            status: session.status,
            payment_status: session.payment_status,
            activated,
            plan: account.plan,
        })
    }

    /// A customer-portal session for an account that has paid before.
    pub async fn customer_portal(&self, desk: &AccountDesk, user_id: &str) -> Result<String> {
        let record = on_account(desk, user_id, AccountMsg::BillingRecord).await?;
        let customer = record
            .customer_id
            .filter(|_| record.ever_paid)
            .ok_or_else(|| BillingError::Conflict {
                code: "no_billing_account",
                message:
                    "the account has never paid: buy a plan first with POST /api/stripe/checkout"
                        .into(),
            })?;
        let return_url = if self.settings.portal_return_url.is_empty() {
            &self.settings.cancel_url
        } else {
            &self.settings.portal_return_url
        };
        Ok(self
            .stripe
            .create_portal_session(&customer, return_url)
            .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prices() -> Prices {
        Prices {
            creator_monthly: "price_cm".into(),
            creator_yearly: "price_cy".into(),
            pro_monthly: "price_pm".into(),
            pro_yearly: "price_py".into(),
        }
    }

    #[test]
    fn choices_and_prices() {
        let p = prices();
        for plan in ["creator", "pro"] {
            for freq in ["monthly", "yearly"] {
                let choice = PlanChoice::parse(plan, freq).expect("valid");
                assert_eq!(p.plan_of(p.price(choice)), Some(choice));
            }
        }
        for (plan, freq) in [
            ("free", "monthly"),
            ("enterprise", "yearly"),
            ("pro", "weekly"),
            ("Pro", "monthly"),
            ("", ""),
        ] {
            assert!(
                matches!(
                    PlanChoice::parse(plan, freq),
                    Err(BillingError::InvalidInput(_))
                ),
                "{plan} {freq}"
            );
        }
        assert_eq!(p.plan_of("price_other"), None);
        assert_eq!(Prices::default().plan_of(""), None);
    }

    #[test]
    fn settings_name_what_is_missing_and_fix_the_success_url() {
        let mut s = BillingSettings::default();
        assert_eq!(s.missing().len(), 8);
        assert!(Billing::new(s.clone()).is_err());
        s.secret_key = "sk_test_1".into();
        s.webhook_secret = "whsec_1".into();
        s.prices = prices();
        s.success_url = "https://app.example/billing?ok=1".into();
        s.cancel_url = "https://app.example/billing".into();
        assert!(s.missing().is_empty());
        assert_eq!(
            s.success_url_with_session(),
            "https://app.example/billing?ok=1&session_id={CHECKOUT_SESSION_ID}"
        );
        s.success_url = "https://app.example/done/{CHECKOUT_SESSION_ID}".into();
        assert_eq!(s.success_url_with_session(), s.success_url);
        assert!(!format!("{s:?}").contains("sk_test_1"));
        crate::storage::objects::install_default_crypto_provider();
        assert!(Billing::new(s).is_ok());
    }
}
