//! The calls billing makes to Stripe, through the `async-stripe` client:
//! customers, Checkout Sessions (subscription mode), Billing Portal
//! Sessions and cancelling a subscription at the end of its period. Only what billing needs comes back out, as plain values.

use std::collections::HashMap;
use std::time::Duration;

use stripe::{Client, ClientBuilder, IdempotencyKey, RequestStrategy, StripeError, StripeRequest};
use stripe_billing::billing_portal_session::CreateBillingPortalSession;
use stripe_billing::subscription::UpdateSubscription;
use stripe_checkout::checkout_session::{
    CreateCheckoutSession, CreateCheckoutSessionLineItems, CreateCheckoutSessionSubscriptionData,
    RetrieveCheckoutSession,
};
use stripe_checkout::{CheckoutSessionMode, CheckoutSessionPaymentStatus, CheckoutSessionStatus};
use stripe_core::customer::CreateCustomer;

/// Per-attempt timeout of a Stripe call.
const CALL_TIMEOUT: Duration = Duration::from_secs(20);

/// Why a Stripe call failed.
#[derive(Debug, thiserror::Error)]
pub enum StripeCallError {
    /// Stripe answered 404 (`resource_missing`).
    #[error("not found at stripe")]
    NotFound,
    /// Any other failure: Stripe's error, the network, an unreadable answer.
    #[error("{0}")]
    Failed(String),
}

impl From<StripeError> for StripeCallError {
    fn from(e: StripeError) -> Self {
        match e {
            StripeError::Stripe(_, 404) => StripeCallError::NotFound,
            StripeError::Stripe(err, status) => StripeCallError::Failed(format!(
                "stripe answered {status}: {}",
                err.message.as_deref().unwrap_or("no message")
            )),
            other => StripeCallError::Failed(other.to_string()),
        }
    }
}

type CallResult<T> = Result<T, StripeCallError>;

/// The Stripe client could not be built (see [`StripeApi::new`]).
#[derive(Debug, thiserror::Error)]
#[error("stripe client: {0}")]
pub struct StripeBuildError(#[source] StripeError);

/// A new subscription-mode Checkout Session.
pub struct NewCheckout<'a> {
    pub customer_id: &'a str,
    pub price_id: &'a str,
    pub user_id: &'a str,
    pub success_url: &'a str,
    pub cancel_url: &'a str,
    /// Put on the session and on the subscription it creates.
    pub metadata: HashMap<String, String>,
}

/// What billing reads from a Checkout Session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionSnapshot {
    pub id: String,
    pub url: Option<String>,
    pub client_reference_id: Option<String>,
    pub customer_id: Option<String>,
    pub subscription_id: Option<String>,
    /// `open`, `complete` or `expired`.
    pub status: String,
    /// `paid`, `unpaid` or `no_payment_required`.
    pub payment_status: String,
    pub subscription_mode: bool,
    pub metadata: HashMap<String, String>,
}

impl SessionSnapshot {
    /// Complete and paid (or nothing to pay): the plan can be activated.
    pub fn is_paid(&self) -> bool {
        self.status == CheckoutSessionStatus::Complete.as_str()
            && (self.payment_status == CheckoutSessionPaymentStatus::Paid.as_str()
                || self.payment_status == CheckoutSessionPaymentStatus::NoPaymentRequired.as_str())
    }
}

/// The Stripe client billing uses.
pub struct StripeApi {
    client: Client,
}

impl std::fmt::Debug for StripeApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StripeApi").finish_non_exhaustive()
    }
}

impl StripeApi {
    /// A client with `secret_key`, talking to `api_base` (Stripe's own API
    /// when `None`; tests point it at a local server).
    pub fn new(secret_key: &str, api_base: Option<&str>) -> Result<Self, StripeBuildError> {
        let mut builder = ClientBuilder::new(secret_key)
            .timeout(CALL_TIMEOUT)
            .app_info(
                "clipforge",
                Some(env!("CARGO_PKG_VERSION").to_string()),
                None,
            );
        if let Some(base) = api_base {
            // The client appends `v1/...` to the base.
            let base = if base.ends_with('/') {
                base.to_string()
            } else {
                format!("{base}/")
            };
            builder = builder.url(base);
        }
        let client = builder.build().map_err(StripeBuildError)?;
        Ok(Self { client })
    }

    /// Creates the customer of `user_id`. The idempotency key is derived from
    /// the user, so concurrent first checkouts get the same customer.
    pub async fn create_customer(
        &self,
        user_id: &str,
        email: &str,
        name: &str,
    ) -> CallResult<String> {
        let key = IdempotencyKey::new(format!("clipforge-customer-{user_id}"))
            .map_err(|e| StripeCallError::Failed(format!("idempotency key: {e}")))?;
        let metadata = HashMap::from([("user_id".to_string(), user_id.to_string())]);
        let customer = CreateCustomer::new()
            .email(email)
            .name(name)
            .metadata(metadata)
            .customize()
            .request_strategy(RequestStrategy::Idempotent(key))
            .send(&self.client)
            .await?;
        Ok(customer.id.as_str().to_string())
    }

    /// Creates a subscription-mode Checkout Session for one unit of
    /// `price_id`.
    pub async fn create_checkout_session(
        &self,
        new: NewCheckout<'_>,
    ) -> CallResult<SessionSnapshot> {
        let mut item = CreateCheckoutSessionLineItems::new();
        item.price = Some(new.price_id.to_string());
        item.quantity = Some(1);
        let mut subscription = CreateCheckoutSessionSubscriptionData::new();
        subscription.metadata = Some(new.metadata.clone());
        let session = CreateCheckoutSession::new()
            .mode(CheckoutSessionMode::Subscription)
            .customer(new.customer_id)
            .client_reference_id(new.user_id)
            .line_items(vec![item])
            .success_url(new.success_url)
            .cancel_url(new.cancel_url)
            .metadata(new.metadata)
            .subscription_data(subscription)
            .send(&self.client)
            .await?;
        Ok(snapshot(session))
    }

    /// Reads a Checkout Session.
    pub async fn retrieve_checkout_session(&self, id: &str) -> CallResult<SessionSnapshot> {
        let session = RetrieveCheckoutSession::new(id).send(&self.client).await?;
        Ok(snapshot(session))
    }

    /// Reads a price: its amount in the currency's smallest unit and the
    /// currency (`GET /v1/prices/:id`); `None` amount for a price without
    /// a fixed one.
    pub async fn retrieve_price(&self, id: &str) -> CallResult<(Option<i64>, String)> {
        use stripe_client_core::{RequestBuilder, StripeMethod};
        /// The fields of Stripe's price object billing reads (the others
        /// are skipped).
        #[derive(miniserde::Deserialize)]
        struct PriceWire {
            unit_amount: Option<i64>,
            currency: String,
        }
        // A path segment: everything but the unreserved characters escaped.
        const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
            .remove(b'-')
            .remove(b'_')
            .remove(b'.')
            .remove(b'~');
        let id = percent_encoding::utf8_percent_encode(id, SEGMENT);
        let path = format!("/prices/{id}");
        let price = RequestBuilder::new(StripeMethod::Get, path)
            .customize::<PriceWire>()
            .send(&self.client)
            .await?;
        Ok((price.unit_amount, price.currency))
    }

    /// Creates a Billing Portal Session for `customer_id`; returns its URL.
    pub async fn create_portal_session(
        &self,
        customer_id: &str,
        return_url: &str,
    ) -> CallResult<String> {
        let session = CreateBillingPortalSession::new()
            .customer(customer_id)
            .return_url(return_url)
            .send(&self.client)
            .await?;
        Ok(session.url)
    }
}

/// What billing reads from a subscription Stripe returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubscriptionSnapshot {
    pub id: String,
    /// `active`, `past_due`, `canceled`, ...
    pub status: String,
    pub cancel_at_period_end: bool,
    /// When the subscription ends (unix seconds): its `cancel_at`, else the
    /// end of its items' current period.
    pub ends_at: Option<i64>,
}

impl StripeApi {
    /// Sets `cancel_at_period_end` on the subscription: with `true` it
    /// stays active until the end of the paid period, then Stripe ends it
    /// (and sends `customer.subscription.deleted`); `false` withdraws that.
    pub async fn set_cancel_at_period_end(
        &self,
        subscription_id: &str,
        cancel: bool,
    ) -> CallResult<SubscriptionSnapshot> {
        let sub = UpdateSubscription::new(subscription_id)
            .cancel_at_period_end(cancel)
            .send(&self.client)
            .await?;
        let period_end = sub.items.data.iter().map(|i| i.current_period_end).max();
        Ok(SubscriptionSnapshot {
            id: sub.id.as_str().to_string(),
            status: sub.status.as_str().to_string(),
            cancel_at_period_end: sub.cancel_at_period_end,
            ends_at: sub.cancel_at.or(period_end),
        })
    }
}

fn snapshot(session: stripe_checkout::CheckoutSession) -> SessionSnapshot {
    SessionSnapshot {
        id: session.id.as_str().to_string(),
        url: session.url,
        client_reference_id: session.client_reference_id,
        customer_id: session.customer.map(|c| c.id().as_str().to_string()),
        subscription_id: session.subscription.map(|s| s.id().as_str().to_string()),
        status: session
            .status
            .map(|s| s.as_str().to_string())
            .unwrap_or_default(),
        payment_status: session.payment_status.as_str().to_string(),
        subscription_mode: session.mode == CheckoutSessionMode::Subscription,
        metadata: session.metadata.unwrap_or_default(),
    }
}
