//! Stripe webhooks: the `Stripe-Signature` check and the events billing
//! applies.
//!
//! The signature header is `t=<unix secs>,v1=<hex>[,v1=<hex>...]`; each `v1`
//! is HMAC-SHA256, keyed with the endpoint's signing secret, of
//! `"<t>.<raw body>"`. A request is accepted when one `v1` matches and `t` is
//! within the tolerance of now. Events are read as plain JSON, field by
//! field, so they do not depend on the account's Stripe API version (for
//! instance, an invoice's subscription is read from `subscription` or from
//! `parent.subscription_details.subscription`).

use serde_json::Value;

use super::checkout::{apply, Billing};
use super::error::BillingError;
use super::settings::PlanChoice;
use crate::accounts::actor::BillingChange;
use crate::accounts::registry::AccountDesk;
use crate::accounts::{Activation, Applied, SubscriptionUpdate};
pub use crate::webhooks::signing::{sign, verify_signature, SignatureError, MAX_SIGNATURES};

/// Largest accepted webhook body.
pub const MAX_WEBHOOK_BYTES: usize = 1024 * 1024;
/// What a webhook delivery did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookOutcome {
    pub event_id: String,
    pub event_type: String,
    /// `changed`, `unchanged`, `duplicate` or `ignored`.
    pub result: &'static str,
}

fn str_at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter()
        .try_fold(value, |v, key| v.get(key))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn int_at(value: &Value, path: &[&str]) -> Option<i64> {
    path.iter().try_fold(value, |v, key| v.get(key))?.as_i64()
}

/// An object id that may arrive expanded (`{"id": ...}`) or not.
fn id_at<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    match value.get(key)? {
        Value::String(s) if !s.is_empty() => Some(s.as_str()),
        Value::Object(_) => str_at(value, &[key, "id"]),
        _ => None,
    }
}

fn secs_to_ms(secs: i64) -> i64 {
    secs.saturating_mul(1000)
}

fn first_line(value: &Value, list: &str) -> Option<Value> {
    value.get(list)?.get("data")?.as_array()?.first().cloned()
}

impl Billing {
    /// Verifies and applies one webhook delivery. A bad signature or body
    /// changes nothing; an event already applied is answered as a duplicate.
    pub async fn handle_webhook(
        &self,
        desk: &AccountDesk,
        payload: &[u8],
        signature: Option<&str>,
        now_secs: i64,
    ) -> Result<WebhookOutcome, BillingError> {
        if payload.len() > MAX_WEBHOOK_BYTES {
            return Err(BillingError::InvalidInput("the event is too large".into()));
        }
        verify_signature(
            payload,
            signature,
            &self.settings.webhook_secret,
            now_secs,
            self.settings.webhook_tolerance_secs,
        )
        .map_err(BillingError::Signature)?;
        let event: Value = serde_json::from_slice(payload)
            .map_err(|_| BillingError::InvalidInput("the event is not JSON".into()))?;
        let (Some(id), Some(kind), Some(object)) = (
            str_at(&event, &["id"]),
            str_at(&event, &["type"]),
            event.get("data").and_then(|d| d.get("object")),
        ) else {
            return Err(BillingError::InvalidInput(
                "the event needs id, type and data.object".into(),
            ));
        };
        let outcome = |result| WebhookOutcome {
            event_id: id.to_string(),
            event_type: kind.to_string(),
            result,
        };
        if desk.accounts.event_applied(id).await? {
            return Ok(outcome("duplicate"));
        }
        let applied = match kind {
            "checkout.session.completed" => self.session_completed(desk, id, object).await?,
            "customer.subscription.updated" => self.subscription_updated(desk, id, object).await?,
            "customer.subscription.deleted" => self.subscription_deleted(desk, id, object).await?,
            "invoice.paid" => self.invoice_paid(desk, id, object).await?,
            "invoice.payment_failed" => self.invoice_failed(desk, id, object).await?,
            _ => None,
        };
        Ok(outcome(match applied {
            Some(Applied::Changed) => "changed",
            Some(Applied::Unchanged) => "unchanged",
            Some(Applied::Duplicate) => "duplicate",
            None => "ignored",
        }))
    }

    /// The account a delivery concerns, for sending it to the node that
    /// hosts that account (a cluster): read without checking the signature,
    /// which the node that applies it checks. `None` when it names none.
    pub async fn account_of_delivery(&self, desk: &AccountDesk, payload: &[u8]) -> Option<String> {
        let event: Value = serde_json::from_slice(payload).ok()?;
        let object = event.get("data")?.get("object")?;
        self.owner(desk, object).await.ok().flatten()
    }

    /// The account an object belongs to: its customer's, else the user id in
    /// its metadata or `client_reference_id` when that account exists.
    async fn owner(
        &self,
        desk: &AccountDesk,
        object: &Value,
    ) -> Result<Option<String>, BillingError> {
        let customer = id_at(object, "customer").map(str::to_string);
        let claimed = str_at(object, &["client_reference_id"])
            .or_else(|| str_at(object, &["metadata", "user_id"]))
            .map(str::to_string);
        let accounts = &desk.accounts;
        if let Some(c) = customer {
            if let Some(user) = accounts.user_for_customer(&c).await? {
                return Ok(Some(user));
            }
        }
        match claimed {
            Some(user) if accounts.account_exists(&user).await? => Ok(Some(user)),
            _ => Ok(None),
        }
    }

    /// Remembers an event that concerns no account, and answers `None`.
    async fn ignore(
        &self,
        desk: &AccountDesk,
        event_id: &str,
        why: &str,
    ) -> Result<Option<Applied>, BillingError> {
        tracing::info!(event_id, why, "stripe event ignored");
        desk.accounts.ignore_event(event_id).await?;
        Ok(None)
    }

    async fn session_completed(
        &self,
        desk: &AccountDesk,
        event_id: &str,
        session: &Value,
    ) -> Result<Option<Applied>, BillingError> {
        let paid = matches!(
            str_at(session, &["payment_status"]),
            Some("paid" | "no_payment_required")
        );
        if str_at(session, &["mode"]) != Some("subscription") || !paid {
            return self
                .ignore(desk, event_id, "not a paid subscription checkout")
                .await;
        }
        let (Some(session_id), Some(customer), Some(subscription)) = (
            str_at(session, &["id"]),
            id_at(session, "customer"),
            id_at(session, "subscription"),
        ) else {
            return self
                .ignore(desk, event_id, "session without customer or subscription")
                .await;
        };
        let Some(user) = self.owner(desk, session).await? else {
            return self.ignore(desk, event_id, "no such account").await;
        };
        let metadata = session.get("metadata");
        let Some(choice) = self.session_plan(desk, session_id, metadata).await? else {
            return self
                .ignore(desk, event_id, "session without a known plan")
                .await;
        };
        let activation = Activation {
            session_id: session_id.to_string(),
            customer_id: customer.to_string(),
            subscription_id: subscription.to_string(),
            plan: choice.plan,
            frequency: choice.frequency,
        };
        let change = BillingChange::Activate(activation);
        let applied = apply(desk, &user, change, Some(event_id)).await?;
        Ok(Some(applied))
    }

    async fn subscription_updated(
        &self,
        desk: &AccountDesk,
        event_id: &str,
        sub: &Value,
    ) -> Result<Option<Applied>, BillingError> {
        let Some(sub_id) = str_at(sub, &["id"]) else {
            return self.ignore(desk, event_id, "subscription without id").await;
        };
        let item = first_line(sub, "items").unwrap_or(Value::Null);
        let price = str_at(&item, &["price", "id"]).or_else(|| str_at(&item, &["plan", "id"]));
        let Some(choice) = price.and_then(|p| self.settings.prices.plan_of(p)) else {
            return self
                .ignore(desk, event_id, "subscription to an unknown price")
                .await;
        };
        let Some(user) = self.owner(desk, sub).await? else {
            return self.ignore(desk, event_id, "no such account").await;
        };
        let period_end = int_at(sub, &["current_period_end"])
            .or_else(|| int_at(&item, &["current_period_end"]))
            .map(secs_to_ms);
        let update = SubscriptionUpdate {
            subscription_id: sub_id.to_string(),
            plan: choice.plan,
            frequency: choice.frequency,
            status: str_at(sub, &["status"]).unwrap_or("active").to_string(),
            cancel_at_period_end: sub
                .get("cancel_at_period_end")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            current_period_end: period_end,
        };
        let change = BillingChange::Update(update);
        let applied = apply(desk, &user, change, Some(event_id)).await?;
        Ok(Some(applied))
    }

    async fn subscription_deleted(
        &self,
        desk: &AccountDesk,
        event_id: &str,
        sub: &Value,
    ) -> Result<Option<Applied>, BillingError> {
        let Some(sub_id) = str_at(sub, &["id"]).map(str::to_string) else {
            return self.ignore(desk, event_id, "subscription without id").await;
        };
        let Some(user) = self.owner(desk, sub).await? else {
            return self.ignore(desk, event_id, "no such account").await;
        };
        let change = BillingChange::End {
            subscription_id: sub_id,
        };
        let applied = apply(desk, &user, change, Some(event_id)).await?;
        Ok(Some(applied))
    }

    async fn invoice_paid(
        &self,
        desk: &AccountDesk,
        event_id: &str,
        invoice: &Value,
    ) -> Result<Option<Applied>, BillingError> {
        let subscription = id_at(invoice, "subscription")
            .or_else(|| str_at(invoice, &["parent", "subscription_details", "subscription"]));
        let Some(sub_id) = subscription.map(str::to_string) else {
            return self
                .ignore(desk, event_id, "invoice of no subscription")
                .await;
        };
        let Some(user) = self.owner(desk, invoice).await? else {
            return self.ignore(desk, event_id, "no such account").await;
        };
        let line = first_line(invoice, "lines").unwrap_or(Value::Null);
        let start = int_at(&line, &["period", "start"])
            .or_else(|| int_at(invoice, &["created"]))
            .map(secs_to_ms)
            .unwrap_or_else(crate::accounts::now_ms);
        let end = int_at(&line, &["period", "end"]).map(secs_to_ms);
        let change = BillingChange::Renew {
            subscription_id: sub_id,
            period_start: start,
            period_end: end,
        };
        let applied = apply(desk, &user, change, Some(event_id)).await?;
        Ok(Some(applied))
    }

    async fn invoice_failed(
        &self,
        desk: &AccountDesk,
        event_id: &str,
        invoice: &Value,
    ) -> Result<Option<Applied>, BillingError> {
        let Some(user) = self.owner(desk, invoice).await? else {
            return self.ignore(desk, event_id, "no such account").await;
        };
        let retry = int_at(invoice, &["next_payment_attempt"]).map(secs_to_ms);
        let change = BillingChange::PaymentFailed { retry_at: retry };
        let applied = apply(desk, &user, change, Some(event_id)).await?;
        Ok(Some(applied))
    }

    /// The plan a session bought: from the checkout recorded here, else from
    /// the metadata set on it at creation.
    async fn session_plan(
        &self,
        desk: &AccountDesk,
        session_id: &str,
        metadata: Option<&Value>,
    ) -> Result<Option<PlanChoice>, BillingError> {
        if let Some(record) = desk.accounts.checkout_record(session_id).await? {
            return Ok(Some(PlanChoice {
                plan: record.plan,
                frequency: record.frequency,
            }));
        }
        let meta = metadata.unwrap_or(&Value::Null);
        Ok(PlanChoice::parse(
            str_at(meta, &["plan"]).unwrap_or(""),
            str_at(meta, &["frequency"]).unwrap_or(""),
        )
        .ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_test_secret";

    #[test]
    fn signatures_are_checked_like_stripe() {
        let payload = br#"{"id":"evt_1","type":"invoice.paid"}"#;
        let now = 1_800_000_000;
        let header = sign(payload, SECRET, now);
        assert!(header.starts_with(&format!("t={now},v1=")));
        assert_eq!(
            verify_signature(payload, Some(&header), SECRET, now, 300),
            Ok(())
        );
        assert_eq!(
            verify_signature(payload, Some(&header), SECRET, now + 300, 300),
            Ok(())
        );
        // Another scheme's signature and an old secret's may stand beside it.
        let rotated = format!("{},v0=abcd,v1={}", header, "00".repeat(32));
        assert_eq!(
            verify_signature(payload, Some(&rotated), SECRET, now, 300),
            Ok(())
        );

        // A flood of signatures is not read: each would cost an HMAC check.
        let flood = format!("{header}{}", format!(",v1={}", "00".repeat(32)).repeat(8));
        assert_eq!(
            verify_signature(payload, Some(&flood), SECRET, now, 300),
            Err(SignatureError::Malformed)
        );
        let eight = format!("{header}{}", format!(",v1={}", "00".repeat(32)).repeat(7));
        assert_eq!(
            verify_signature(payload, Some(&eight), SECRET, now, 300),
            Ok(())
        );

        let cases = [
            (None, SignatureError::Missing),
            (Some("".to_string()), SignatureError::Missing),
            (Some("garbage".to_string()), SignatureError::Malformed),
            (Some(format!("t={now}")), SignatureError::Malformed),
            (Some(format!("t={now},v1=zz")), SignatureError::Malformed),
            (
                Some(sign(payload, "whsec_other", now)),
                SignatureError::Mismatch,
            ),
            (Some(sign(b"{}", SECRET, now)), SignatureError::Mismatch),
            (
                Some(sign(payload, SECRET, now - 301)),
                SignatureError::Stale,
            ),
            (
                Some(sign(payload, SECRET, now + 301)),
                SignatureError::Stale,
            ),
        ];
        for (header, expected) in cases {
            assert_eq!(
                verify_signature(payload, header.as_deref(), SECRET, now, 300),
                Err(expected.clone()),
                "{header:?}"
            );
        }
    }

    #[test]
    fn known_vector() {
        // HMAC-SHA256("key", "1.{}") computed independently (Python hmac).
        let header = sign(b"{}", "key", 1);
        assert_eq!(
            header,
            "t=1,v1=1ba6b8171186efc613e8bcc0cbdab2748f24984d7c5a84faa2637afa0e40d224"
        );
    }

    #[test]
    fn event_fields_are_read_across_api_versions() {
        let invoice: Value = serde_json::json!({
            "customer": {"id": "cus_1"},
            "parent": {"subscription_details": {"subscription": "sub_1"}},
            "lines": {"data": [{"period": {"start": 10, "end": 20}}]},
        });
        assert_eq!(id_at(&invoice, "customer"), Some("cus_1"));
        assert_eq!(id_at(&invoice, "subscription"), None);
        assert_eq!(
            str_at(
                &invoice,
                &["parent", "subscription_details", "subscription"]
            ),
            Some("sub_1")
        );
        let line = first_line(&invoice, "lines").expect("line");
        assert_eq!(
            int_at(&line, &["period", "end"]).map(secs_to_ms),
            Some(20_000)
        );
    }
}
