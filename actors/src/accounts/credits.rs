//! Credits: monthly cycles, per-project reservations and an append-only
//! ledger.
//!
//! A cycle lasts [`CYCLE_MS`] (30 days) from its start and renews lazily, on
//! the first credit operation after its end: the cycle's credits reset to the
//! plan's (unused ones do not roll over) while outstanding reservations stay
//! reserved. The state kept beside the ledger holds the cycle's total, what
//! was charged in it and what is reserved, so the balance is read in O(1):
//! `available = total - spent - reserved`.
//!
//! A project reserves its estimate at creation ([`Accounts::reserve`]); on
//! completion the reservation becomes a charge of the minutes actually
//! processed ([`Accounts::charge`], never more than reserved); on failure or
//! cancellation it is released ([`Accounts::release`]). Both settle a
//! reservation once; repeating them does nothing.
//!
//! Unlimited plans (enterprise) never run short; their reservations and
//! charges are still recorded, and their balance reads `unlimited: true`
//! with `credits` and `totalCredits` 0.

use serde::{Deserialize, Serialize};

use super::clock::{iso8601, DAY_MS};
use super::error::{AccountError, Result};
use super::model::Plan;
use super::store::{user_key, Batch, CREDITS, LEDGER};

/// Length of a credit cycle.
pub const CYCLE_MS: i64 = 30 * DAY_MS;
/// A charge that leaves at most this share of the cycle's credits (percent)
/// sends the cycle's one `credits_low` notification.
pub(super) const LOW_CREDITS_PERCENT: u64 = 10;
pub(super) const MAX_LEDGER_PAGE: u64 = 100;
pub(super) const PROJECT_ID_MAX_LEN: usize = 128;

/// Seconds of video one credit pays for (each started stretch costs one).
pub const SECONDS_PER_CREDIT: u32 = 60;

/// Credits for `seconds` of processed video: one per started minute.
pub fn credits_for_seconds(seconds: f64) -> u64 {
    if seconds.is_finite() && seconds > 0.0 {
        // Saturating float-to-int conversion; any realistic length fits.
        (seconds / f64::from(SECONDS_PER_CREDIT)).ceil() as u64
    } else {
        0
    }
}

/// What a ledger entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LedgerKind {
    /// Credits of a cycle started by sign-up or a plan change.
    Grant,
    /// Credits of a cycle started by renewal.
    Renew,
    /// A plan's welcome bonus.
    Bonus,
    /// Credits set aside for a project.
    Reserve,
    /// Credits a project used.
    Charge,
    /// Reserved credits given back.
    Release,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LedgerEntry {
    pub kind: LedgerKind,
    pub amount: u64,
    pub project_id: Option<String>,
    pub note: String,
    /// Credits available after this entry (0 on unlimited plans).
    pub balance_after: u64,
    pub at: i64,
}
crate::record!(LedgerEntry, "ledger entry", 1);

/// A ledger entry as the API shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerEntryView {
    #[serde(rename = "type")]
    pub kind: LedgerKind,
    pub amount: u64,
    pub project_id: Option<String>,
    pub note: String,
    pub balance_after: u64,
    pub created_at: String,
}

/// One page of the ledger, newest entry first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerPage {
    pub entries: Vec<LedgerEntryView>,
    pub total: u64,
    pub page: u64,
    pub limit: u64,
}

/// The credit state of an account, stored under its id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CreditState {
    pub cycle_start: i64,
    pub cycle_end: i64,
    /// Credits of the cycle (monthly credits, plus a welcome bonus).
    pub cycle_total: u64,
    /// Charged in the cycle.
    pub spent: u64,
    /// Held by unsettled reservations, whatever cycle made them.
    pub reserved: u64,
    /// Whether the cycle's `credits_low` notification went out.
    pub low_notified: bool,
    /// Number of ledger entries; the next one's sequence number.
    pub ledger_len: u64,
}
crate::record!(CreditState, "credit state", 1);

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum ReservationState {
    Reserved,
    Charged { used: u64 },
    Released,
}

/// A project's reservation, kept after settling so that settling twice is a
/// no-op.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Reservation {
    pub amount: u64,
    pub state: ReservationState,
    pub created_at: i64,
    pub settled_at: Option<i64>,
}
crate::record!(Reservation, "reservation", 1);

/// The credit balance (contract 2.6) with the cycle's dates.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreditBalance {
    pub plan: Plan,
    /// Available in the current cycle after reservations (0 when unlimited).
    pub credits: u64,
    /// The cycle's total (0 when unlimited).
    pub total_credits: u64,
    /// Held by projects still processing.
    pub reserved: u64,
    pub unlimited: bool,
    pub cycle_started_at: String,
    pub renews_at: String,
}

/// What an unlimited plan (enterprise) shows as its credits and its cycle's
/// total: a round number any client can print as it is (more minutes of
/// video than a 30-day cycle has), never reduced by use; `unlimited: true`
/// says the credits are not counted.
pub const UNLIMITED_CREDITS_SHOWN: u64 = 100_000;

/// The credit state of one account being changed, with the ledger entries to
/// append; written by [`Book::write`] into the operation's batch.
pub(crate) struct Book {
    pub user_id: String,
    pub plan: Plan,
    pub unlimited: bool,
    pub state: CreditState,
    pub(super) entries: Vec<(u64, LedgerEntry)>,
}

impl Book {
    pub(crate) fn available(&self) -> u64 {
        if self.unlimited {
            return UNLIMITED_CREDITS_SHOWN;
        }
        let state = &self.state;
        state
            .cycle_total
            .saturating_sub(state.spent.saturating_add(state.reserved))
    }

    /// Appends a ledger entry; `balance_after` is the balance at this point.
    pub(crate) fn record(
        &mut self,
        kind: LedgerKind,
        amount: u64,
        project_id: Option<&str>,
        note: String,
        now: i64,
    ) {
        let entry = LedgerEntry {
            kind,
            amount,
            project_id: project_id.map(str::to_string),
            note,
            balance_after: self.available(),
            at: now,
        };
        self.entries.push((self.state.ledger_len, entry));
        self.state.ledger_len += 1;
    }

    /// Whether anything changed that must be written.
    pub(crate) fn changed(&self) -> bool {
        !self.entries.is_empty()
    }

    /// Starts a new cycle at `now` with `total` credits.
    pub(crate) fn start_cycle(&mut self, total: u64, spent: u64, now: i64) {
        let state = &mut self.state;
        state.cycle_start = now;
        state.cycle_end = now.saturating_add(CYCLE_MS);
        state.cycle_total = total;
        state.spent = spent;
        state.low_notified = false;
    }

    pub(crate) fn write(self, batch: &mut Batch) -> Result<()> {
        batch.put(CREDITS, self.user_id.as_bytes(), &self.state)?;
        for (seq, entry) in &self.entries {
            batch.put(LEDGER, ledger_key(&self.user_id, *seq), entry)?;
        }
        Ok(())
    }

    pub(crate) fn balance(&self) -> CreditBalance {
        CreditBalance {
            plan: self.plan,
            credits: self.available(),
            total_credits: if self.unlimited {
                UNLIMITED_CREDITS_SHOWN
            } else {
                self.state.cycle_total
            },
            reserved: self.state.reserved,
            unlimited: self.unlimited,
            cycle_started_at: iso8601(self.state.cycle_start),
            renews_at: iso8601(self.state.cycle_end),
        }
    }
}

pub(super) fn ledger_key(user_id: &str, seq: u64) -> Vec<u8> {
    user_key(user_id, &format!("{seq:016x}"))
}

pub(super) fn validate_project_id(project_id: &str) -> Result<()> {
    if project_id.is_empty()
        || project_id.len() > PROJECT_ID_MAX_LEN
        || project_id.chars().any(|c| c.is_control() || c == '/')
    {
        return Err(AccountError::InvalidInput(
            "projectId: not a valid project id".to_string(),
        ));
    }
    Ok(())
}

#[cfg(test)]
#[path = "credits_tests.rs"]
mod tests;
