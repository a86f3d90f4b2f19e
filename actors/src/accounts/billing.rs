//! Billing state of an account: its payment-provider customer, its
//! subscription, the checkout sessions it opened and the provider events
//! already applied.
//!
//! Nothing here talks to the provider; `crate::billing` does, and calls
//! these operations with what it learned. Each operation runs under the
//! user's lock and writes everything it changes, including the id of the
//! event that caused it, in one batch, so an event is applied at most once
//! and a crash never leaves half of it.
//!
//! A subscription is what entitles the account to a paid plan: activation
//! grants the entitlement and moves the account to the plan (with the plan's
//! welcome bonus the first time), the end of the subscription withdraws it
//! and moves the account back to free.

use serde::{Deserialize, Serialize};

use super::clock::{iso8601, DAY_MS};
use super::credits::{LedgerKind, CYCLE_MS};
use super::domain::Accounts;
use super::error::{AccountError, Result};
use super::model::{Plan, StoredAccount};
use super::notifications::NotificationKind;
use super::store::{Batch, BILLING, CHECKOUTS, STRIPE_CUSTOMERS, STRIPE_EVENTS, USERS};

/// A paid period that starts within this of the current cycle's start was
/// already renewed (by activation or by the lazy monthly renewal).
const RENEWAL_SLACK_MS: i64 = 3 * DAY_MS;

/// How often a subscription is billed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BillingFrequency {
    Monthly,
    Yearly,
}

impl BillingFrequency {
    pub const ALL: [BillingFrequency; 2] = [BillingFrequency::Monthly, BillingFrequency::Yearly];

    pub fn as_str(self) -> &'static str {
        match self {
            BillingFrequency::Monthly => "monthly",
            BillingFrequency::Yearly => "yearly",
        }
    }

    /// Parses `monthly` or `yearly` (exactly).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == s)
    }
}

/// The account's subscription as last reported by the provider.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubscriptionRecord {
    pub id: String,
    pub plan: Plan,
    pub frequency: BillingFrequency,
    /// The provider's status (`active`, `past_due`, `canceled`, ...).
    pub status: String,
    pub cancel_at_period_end: bool,
    /// End of the paid period (unix ms), when known.
    pub current_period_end: Option<i64>,
}

impl SubscriptionRecord {
    /// Whether it still entitles the account to its plan.
    pub fn is_live(&self) -> bool {
        matches!(self.status.as_str(), "active" | "trialing" | "past_due")
    }
}

/// Billing state of one account, stored under its id.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BillingRecord {
    /// The provider's customer, created once and reused.
    pub customer_id: Option<String>,
    pub subscription: Option<SubscriptionRecord>,
    /// Whether a checkout was ever paid (the customer portal needs one).
    pub ever_paid: bool,
}
crate::record!(BillingRecord, "billing", 1);

/// A checkout session the account opened, stored under the session id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckoutRecord {
    pub user_id: String,
    pub plan: Plan,
    pub frequency: BillingFrequency,
    pub created_at: i64,
    pub activated_at: Option<i64>,
}
crate::record!(CheckoutRecord, "checkout", 1);

/// A paid checkout: what activation needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Activation {
    pub session_id: String,
    pub customer_id: String,
    pub subscription_id: String,
    pub plan: Plan,
    pub frequency: BillingFrequency,
}

/// A subscription change reported by the provider.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubscriptionUpdate {
    pub subscription_id: String,
    pub plan: Plan,
    pub frequency: BillingFrequency,
    pub status: String,
    pub cancel_at_period_end: bool,
    pub current_period_end: Option<i64>,
}

/// What applying a provider event did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Applied {
    /// The state changed.
    Changed,
    /// Nothing needed changing (already done, or not about this account's
    /// subscription); the event is remembered all the same.
    Unchanged,
    /// The event was applied before; nothing was written.
    Duplicate,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct EventRecord {
    user_id: String,
    at: i64,
}
crate::record!(EventRecord, "stripe event", 1);

impl Accounts {
    /// The account's billing state (empty before any checkout).
    pub async fn billing_record(&self, user_id: &str) -> Result<BillingRecord> {
        self.stored_account(user_id).await?;
        Ok(self
            .read(BILLING, user_id.as_bytes())
            .await?
            .unwrap_or_default())
    }

    /// The account whose provider customer is `customer_id`.
    pub async fn user_for_customer(&self, customer_id: &str) -> Result<Option<String>> {
        self.read(STRIPE_CUSTOMERS, customer_id.as_bytes()).await
    }

    /// Remembers the provider customer of the account unless it has one;
    /// returns the one in force.
    pub async fn remember_customer(&self, user_id: &str, customer_id: &str) -> Result<String> {
        let _guard = self.lock(user_id).await;
        let mut record = self.billing_record(user_id).await?;
        if let Some(existing) = record.customer_id {
            return Ok(existing);
        }
        record.customer_id = Some(customer_id.to_string());
        let mut batch = Batch::new();
        batch.put(BILLING, user_id.as_bytes(), &record)?;
        batch.put(
            STRIPE_CUSTOMERS,
            customer_id.as_bytes(),
            &user_id.to_string(),
        )?;
        self.commit(batch).await?;
        Ok(customer_id.to_string())
    }

    /// Records a checkout session opened by the account.
    pub async fn record_checkout(
        &self,
        user_id: &str,
        session_id: &str,
        plan: Plan,
        frequency: BillingFrequency,
    ) -> Result<()> {
        self.stored_account(user_id).await?;
        let record = CheckoutRecord {
            user_id: user_id.to_string(),
            plan,
            frequency,
            created_at: self.now(),
            activated_at: None,
        };
        let mut batch = Batch::new();
        batch.put(CHECKOUTS, session_id.as_bytes(), &record)?;
        self.commit(batch).await
    }

    /// A checkout session opened here.
    pub async fn checkout_record(&self, session_id: &str) -> Result<Option<CheckoutRecord>> {
        self.read(CHECKOUTS, session_id.as_bytes()).await
    }

    /// Whether the provider event `event_id` was applied.
    pub async fn event_applied(&self, event_id: &str) -> Result<bool> {
        Ok(self
            .read::<EventRecord>(STRIPE_EVENTS, event_id.as_bytes())
            .await?
            .is_some())
    }

    /// Activates a paid checkout: records the subscription, grants its plan
    /// and moves the account to it. Activating the same session again (return
    /// path and webhook both do) changes nothing.
    pub async fn activate_subscription(
        &self,
        user_id: &str,
        activation: &Activation,
        event_id: Option<&str>,
    ) -> Result<Applied> {
        self.with_event(user_id, event_id, async |account, batch, now| {
            let mut checkout = self.checkout_record(&activation.session_id).await?;
            if checkout.as_ref().is_some_and(|c| c.activated_at.is_some()) {
                return Ok(Applied::Unchanged);
            }
            let mut record = self.billing_record(user_id).await?;
            let previous = record.subscription.take();
            record.customer_id = Some(activation.customer_id.clone());
            record.ever_paid = true;
            record.subscription = Some(SubscriptionRecord {
                id: activation.subscription_id.clone(),
                plan: activation.plan,
                frequency: activation.frequency,
                status: "active".to_string(),
                cancel_at_period_end: false,
                current_period_end: None,
            });
            if let Some(old) = previous.filter(|old| old.plan != activation.plan) {
                account.entitlements.retain(|p| *p != old.plan);
            }
            self.entitle(batch, account, activation.plan, now).await?;
            batch.put(BILLING, user_id.as_bytes(), &record)?;
            let customer = activation.customer_id.as_bytes();
            batch.put(STRIPE_CUSTOMERS, customer, &user_id.to_string())?;
            if let Some(checkout) = checkout.as_mut() {
                checkout.activated_at = Some(now);
                batch.put(CHECKOUTS, activation.session_id.as_bytes(), &*checkout)?;
            }
            Ok(Applied::Changed)
        })
        .await
    }

    /// Applies a subscription change: a plan change moves the entitlement
    /// (and the account, if it was on the old plan); a status that no longer
    /// entitles ends it like [`end_subscription`](Self::end_subscription).
    /// Changes to another subscription than the account's are ignored.
    pub async fn update_subscription(
        &self,
        user_id: &str,
        update: &SubscriptionUpdate,
        event_id: Option<&str>,
    ) -> Result<Applied> {
        self.with_event(user_id, event_id, async |account, batch, now| {
            let mut record = self.billing_record(user_id).await?;
            let Some(sub) = record
                .subscription
                .as_mut()
                .filter(|s| s.id == update.subscription_id)
            else {
                return Ok(Applied::Unchanged);
            };
            let old_plan = sub.plan;
            sub.plan = update.plan;
            sub.frequency = update.frequency;
            sub.status = update.status.clone();
            sub.cancel_at_period_end = update.cancel_at_period_end;
            sub.current_period_end = update.current_period_end;
            let live = sub.is_live();
            batch.put(BILLING, user_id.as_bytes(), &record)?;
            if !live {
                self.disentitle(batch, account, old_plan, now).await?;
            } else if old_plan != update.plan {
                account.entitlements.retain(|p| *p != old_plan);
                if account.plan == old_plan {
                    self.entitle(batch, account, update.plan, now).await?;
                } else {
                    if !account.entitlements.contains(&update.plan) {
                        account.entitlements.push(update.plan);
                    }
                    batch.put(USERS, user_id.as_bytes(), &*account)?;
                }
            }
            Ok(Applied::Changed)
        })
        .await
    }

    /// The subscription `subscription_id` ended: its plan is withdrawn and an
    /// account on it moves to free.
    pub async fn end_subscription(
        &self,
        user_id: &str,
        subscription_id: &str,
        event_id: Option<&str>,
    ) -> Result<Applied> {
        self.with_event(user_id, event_id, async |account, batch, now| {
            let mut record = self.billing_record(user_id).await?;
            let Some(sub) = record
                .subscription
                .as_mut()
                .filter(|s| s.id == subscription_id && s.status != "canceled")
            else {
                return Ok(Applied::Unchanged);
            };
            sub.status = "canceled".to_string();
            let plan = sub.plan;
            batch.put(BILLING, user_id.as_bytes(), &record)?;
            self.disentitle(batch, account, plan, now).await?;
            Ok(Applied::Changed)
        })
        .await
    }

    /// A paid invoice of `subscription_id` for the period starting at
    /// `period_start` (unix ms): starts a new cycle with the plan's credits
    /// (unused ones do not roll over) unless the current cycle already began
    /// with that period. Monthly cycles end with the paid period; yearly
    /// plans get monthly allotments inside the year.
    pub async fn renew_paid_cycle(
        &self,
        user_id: &str,
        subscription_id: &str,
        period_start: i64,
        period_end: Option<i64>,
        event_id: Option<&str>,
    ) -> Result<Applied> {
        self.with_event(user_id, event_id, async |account, batch, now| {
            let mut record = self.billing_record(user_id).await?;
            let Some(sub) = record
                .subscription
                .as_mut()
                .filter(|s| s.id == subscription_id && s.is_live() && s.plan == account.plan)
            else {
                return Ok(Applied::Unchanged);
            };
            let monthly = sub.frequency == BillingFrequency::Monthly;
            if period_end.is_some() {
                sub.current_period_end = period_end;
            }
            batch.put(BILLING, user_id.as_bytes(), &record)?;
            let mut book = self.book(account, now).await?;
            let renew = book.state.cycle_start < period_start.saturating_sub(RENEWAL_SLACK_MS);
            if renew {
                let total = self.plans.get(account.plan).monthly_credits.unwrap_or(0);
                book.start_cycle(total, 0, period_start.min(now));
                let note = format!("{} plan: paid period renewed", account.plan);
                book.record(LedgerKind::Renew, total, None, note, now);
            }
            if let Some(end) = period_end.filter(|end| monthly && *end > book.state.cycle_start) {
                // Align the cycle with the paid month; never longer than two
                // cycles, whatever the provider says.
                book.state.cycle_end = end.min(book.state.cycle_start + 2 * CYCLE_MS);
            }
            book.write(batch)?;
            Ok(if renew {
                Applied::Changed
            } else {
                Applied::Unchanged
            })
        })
        .await
    }

    /// A payment of the subscription failed: tells the user.
    pub async fn payment_failed(
        &self,
        user_id: &str,
        retry_at: Option<i64>,
        event_id: Option<&str>,
    ) -> Result<Applied> {
        self.with_event(user_id, event_id, async |account, batch, now| {
            let mut message = "The payment of your subscription failed. Update your payment \
                               method in the customer portal to keep your plan."
                .to_string();
            let retry = retry_at.map(|at| iso8601(at)[..10].to_string());
            if let Some(day) = &retry {
                message.push_str(&format!(" We will try again on {day}."));
            }
            let mut said = super::notifications::Said::new("Payment failed", message)
                .with("plan", account.plan);
            if let Some(day) = retry {
                said = said.with("retryOn", day);
            }
            let kind = NotificationKind::PaymentFailed;
            self.push_notification(batch, user_id, kind, &said, now)
                .await?;
            Ok(Applied::Changed)
        })
        .await
    }

    /// Runs `f` on the account under its lock, unless `event_id` was applied
    /// before; writes what `f` put in the batch together with the event id.
    async fn with_event(
        &self,
        user_id: &str,
        event_id: Option<&str>,
        f: impl AsyncFnOnce(&mut StoredAccount, &mut Batch, i64) -> Result<Applied>,
    ) -> Result<Applied> {
        let _guard = self.lock(user_id).await;
        let mut account = self.stored_account(user_id).await?;
        if self.seen(event_id).await? {
            return Ok(Applied::Duplicate);
        }
        let now = self.now();
        let mut batch = Batch::new();
        self.remember_event(&mut batch, event_id, user_id, now)?;
        let applied = f(&mut account, &mut batch, now).await?;
        self.commit(batch).await?;
        Ok(applied)
    }

    /// Remembers an event that concerns no account here, so a retry of it is
    /// answered as a duplicate.
    pub async fn ignore_event(&self, event_id: &str) -> Result<()> {
        let mut batch = Batch::new();
        self.remember_event(&mut batch, Some(event_id), "", self.now())?;
        self.commit(batch).await
    }

    /// Operators: `enterprise` grants the plan and moves the account to it;
    /// `free` withdraws enterprise (the account moves to free if on it).
    /// Paid self-service plans are bought through checkout, not granted.
    pub async fn set_plan_by_operator(&self, user_id: &str, plan: Plan) -> Result<Plan> {
        let _guard = self.lock(user_id).await;
        let mut account = self.stored_account(user_id).await?;
        let now = self.now();
        let mut batch = Batch::new();
        match plan {
            Plan::Enterprise => {
                self.entitle(&mut batch, &mut account, Plan::Enterprise, now)
                    .await?
            }
            Plan::Free => {
                self.disentitle(&mut batch, &mut account, Plan::Enterprise, now)
                    .await?
            }
            Plan::Creator | Plan::Pro => {
                return Err(AccountError::InvalidInput(format!(
                    "plan: {plan} is bought through checkout; operators grant enterprise or free"
                )))
            }
        }
        self.commit(batch).await?;
        Ok(account.plan)
    }

    async fn seen(&self, event_id: Option<&str>) -> Result<bool> {
        match event_id {
            Some(id) => self.event_applied(id).await,
            None => Ok(false),
        }
    }

    fn remember_event(
        &self,
        batch: &mut Batch,
        event_id: Option<&str>,
        user_id: &str,
        now: i64,
    ) -> Result<()> {
        if let Some(id) = event_id {
            let record = EventRecord {
                user_id: user_id.to_string(),
                at: now,
            };
            batch.put(STRIPE_EVENTS, id.as_bytes(), &record)?;
        }
        Ok(())
    }

    /// Grants `plan` and moves the account to it (new cycle, welcome bonus
    /// once per plan); writes the account.
    async fn entitle(
        &self,
        batch: &mut Batch,
        account: &mut StoredAccount,
        plan: Plan,
        now: i64,
    ) -> Result<()> {
        if !account.entitlements.contains(&plan) {
            account.entitlements.push(plan);
        }
        account.updated_at = now;
        if account.plan == plan {
            batch.put(USERS, account.id.as_bytes(), &*account)?;
            return Ok(());
        }
        let mut book = self.book(account, now).await?;
        self.switch_plan(batch, account, &mut book, plan, now)
            .await?;
        book.write(batch)
    }

    /// Withdraws `plan`; an account on it moves to free. Writes the account.
    async fn disentitle(
        &self,
        batch: &mut Batch,
        account: &mut StoredAccount,
        plan: Plan,
        now: i64,
    ) -> Result<()> {
        account.entitlements.retain(|p| *p != plan);
        account.updated_at = now;
        if account.plan != plan || plan == Plan::Free {
            batch.put(USERS, account.id.as_bytes(), &*account)?;
            return Ok(());
        }
        let mut book = self.book(account, now).await?;
        self.switch_plan(batch, account, &mut book, Plan::Free, now)
            .await?;
        book.write(batch)
    }
}

#[cfg(test)]
#[path = "billing_tests.rs"]
mod tests;
