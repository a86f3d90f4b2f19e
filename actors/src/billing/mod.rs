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

mod checkout;
mod error;
mod plan_change;
mod price_cache;
mod prices;
mod settings;
pub mod stripe_client;
pub mod webhook;

pub use checkout::{Billing, CheckoutStatus};
pub use error::{BillingError, BillingSetupError};
pub use plan_change::FreeSelection;
pub use price_cache::PlanPrice;
pub use settings::{BillingSettings, PlanChoice, Prices, SESSION_PLACEHOLDER};
pub use webhook::{sign, verify_signature, SignatureError, WebhookOutcome, MAX_WEBHOOK_BYTES};

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
