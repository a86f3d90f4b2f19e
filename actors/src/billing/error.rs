//! Why a billing call was refused or failed, and why billing could not be
//! set up.

use super::stripe_client::{StripeBuildError, StripeCallError};
use crate::accounts::AccountError;
use crate::webhooks::signing::SignatureError;

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

pub(super) type Result<T> = std::result::Result<T, BillingError>;

/// Why billing could not be set up (see [`Billing::new`]).
#[derive(Debug, thiserror::Error)]
pub enum BillingSetupError {
    /// Settings left empty, by name.
    #[error("billing settings missing: {names}", names = .0.join(", "))]
    Missing(Vec<&'static str>),
    #[error(transparent)]
    Client(#[from] StripeBuildError),
}
