//! Moving between a paid subscription and the free plan: choosing free with
//! a live subscription cancels it at the end of its paid period (the paid
//! plan stays until Stripe ends the subscription), choosing the same paid
//! plan again before then keeps it (the cancellation is withdrawn), and
//! [`Billing::plan_ends_at`] tells when a plan set to end becomes free.

use super::checkout::{apply, on_account, Billing};
use super::error::Result;
use crate::accounts::actor::{AccountMsg, BillingChange};
use crate::accounts::registry::AccountDesk;
use crate::accounts::{iso8601, Plan, SubscriptionRecord, SubscriptionUpdate};

/// What selecting the free plan did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FreeSelection {
    /// The account's plan now.
    pub plan: Plan,
    /// When the plan becomes free (ISO 8601): the end of the paid period of
    /// a subscription set to cancel then; `None` when it changed at once.
    pub changes_at: Option<String>,
}

impl Billing {
    /// `select-plan free`: a live subscription not already ending is set to
    /// cancel at the end of its paid period at Stripe, and the account keeps
    /// the plan it paid for until Stripe says the subscription ended
    /// (`customer.subscription.deleted`, or an update to a status that no
    /// longer entitles). Without a live subscription, or on another plan
    /// than the subscription's, the account moves to free at once.
    pub async fn select_free(&self, desk: &AccountDesk, user_id: &str) -> Result<FreeSelection> {
        let record = on_account(desk, user_id, AccountMsg::BillingRecord).await?;
        if let Some(sub) = record.subscription.filter(|s| s.is_live()) {
            let mut changes_at = sub.current_period_end;
            if !sub.cancel_at_period_end {
                let update = self.set_ending(desk, user_id, &sub, true).await?;
                changes_at = update.current_period_end;
            }
            let account = on_account(desk, user_id, AccountMsg::Get).await?;
            if account.plan == sub.plan {
                return Ok(FreeSelection {
                    plan: account.plan,
                    changes_at: changes_at.map(iso8601),
                });
            }
        }
        let balance = on_account(desk, user_id, |reply| AccountMsg::SelectPlan {
            plan: Plan::Free,
            reply,
        })
        .await?;
        Ok(FreeSelection {
            plan: balance.plan,
            changes_at: None,
        })
    }

    /// `select-plan <paid plan>` while the account's live subscription to
    /// that plan is set to end: the cancellation is withdrawn at Stripe and
    /// the subscription renews as before. `true` when that happened; `false`
    /// when there was nothing to keep (the caller then applies the plan
    /// rules as usual).
    pub async fn keep_plan(&self, desk: &AccountDesk, user_id: &str, plan: Plan) -> Result<bool> {
        let record = on_account(desk, user_id, AccountMsg::BillingRecord).await?;
        let Some(sub) = record.subscription.filter(|s| s.is_live()) else {
            return Ok(false);
        };
        if sub.plan != plan || !sub.cancel_at_period_end {
            return Ok(false);
        }
        self.set_ending(desk, user_id, &sub, false).await?;
        Ok(true)
    }

    /// When the account's paid plan becomes free (ISO 8601): the end of the
    /// paid period of a live subscription set to cancel then.
    pub fn plan_ends_at(record: Option<&SubscriptionRecord>) -> Option<String> {
        record
            .filter(|s| s.is_live() && s.cancel_at_period_end)
            .and_then(|s| s.current_period_end)
            .map(iso8601)
    }

    /// Sets (or withdraws) the subscription's cancellation at the end of its
    /// period at Stripe, then stores what Stripe answered on the account.
    async fn set_ending(
        &self,
        desk: &AccountDesk,
        user_id: &str,
        sub: &SubscriptionRecord,
        ending: bool,
    ) -> Result<SubscriptionUpdate> {
        let snap = self
            .stripe
            .set_cancel_at_period_end(&sub.id, ending)
            .await?;
        tracing::info!(user_id = %user_id, subscription_id = %sub.id, ending, "subscription cancellation at period end set");
        let update = SubscriptionUpdate {
            subscription_id: sub.id.clone(),
            plan: sub.plan,
            frequency: sub.frequency,
            status: snap.status,
            cancel_at_period_end: snap.cancel_at_period_end,
            current_period_end: snap
                .ends_at
                .map(|s| s.saturating_mul(1000))
                .or(sub.current_period_end),
        };
        let stored = BillingChange::Update(update.clone());
        apply(desk, user_id, stored, None).await?;
        Ok(update)
    }
}
