//! [`Billing`]: subscription checkout and its return path, the customer
//! portal, and the helpers every billing operation uses to reach an account.
//! Plan changes, prices and webhooks are `impl Billing` in their own files.

use std::collections::HashMap;

use super::error::{BillingError, BillingSetupError, Result};
use super::price_cache::PriceCache;
use super::settings::{BillingSettings, PlanChoice};
use super::stripe_client::{NewCheckout, StripeApi, StripeCallError};
use crate::accounts::actor::{AccountMsg, BillingChange, Reply};
use crate::accounts::registry::AccountDesk;
use crate::accounts::{Account, Activation, Applied, Plan};

/// Sends `user_id`'s actor the message `build` makes and waits for its
/// answer.
pub(super) async fn on_account<T: Send + 'static>(
    desk: &AccountDesk,
    user_id: &str,
    build: impl FnOnce(Reply<T>) -> AccountMsg,
) -> Result<T> {
    Ok(desk.call(user_id, build).await?)
}

/// Applies a billing change (a Stripe event `event_id`, or the checkout's
/// return path) to `user_id`'s account.
pub(super) async fn apply(
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
    pub(super) settings: BillingSettings,
    pub(super) stripe: StripeApi,
    pub(super) prices: PriceCache,
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
            prices: PriceCache::default(),
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
            let recorded = desk.accounts.checkout_record(&session.id).await?;
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
