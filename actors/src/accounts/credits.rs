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
use super::model::{Plan, StoredAccount};
use super::notifications::NotificationKind;
use super::store::{user_key, Batch, CREDITS, LEDGER, RESERVATIONS};
use super::Accounts;
use crate::storage::kv::{KvOp, StorageError};
use crate::webhooks::Subject;

/// Length of a credit cycle.
pub const CYCLE_MS: i64 = 30 * DAY_MS;
/// A charge that leaves at most this share of the cycle's credits (percent)
/// sends the cycle's one `credits_low` notification.
const LOW_CREDITS_PERCENT: u64 = 10;
const MAX_LEDGER_PAGE: u64 = 100;
const PROJECT_ID_MAX_LEN: usize = 128;

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
    entries: Vec<(u64, LedgerEntry)>,
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

fn ledger_key(user_id: &str, seq: u64) -> Vec<u8> {
    user_key(user_id, &format!("{seq:016x}"))
}

fn validate_project_id(project_id: &str) -> Result<()> {
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

impl Accounts {
    /// Adds the credit state and first cycle of a new free account.
    pub(crate) fn open_first_cycle(
        &self,
        batch: &mut Batch,
        user_id: &str,
        now: i64,
    ) -> Result<()> {
        let limits = self.plans.get(Plan::Free);
        let mut book = Book {
            user_id: user_id.to_string(),
            plan: Plan::Free,
            unlimited: limits.unlimited_credits(),
            state: CreditState {
                cycle_start: now,
                cycle_end: now,
                cycle_total: 0,
                spent: 0,
                reserved: 0,
                low_notified: false,
                ledger_len: 0,
            },
            entries: Vec::new(),
        };
        let total = limits.monthly_credits.unwrap_or(0);
        book.start_cycle(total, 0, now);
        book.record(LedgerKind::Grant, total, None, "free plan".to_string(), now);
        book.write(batch)
    }

    /// The credit state of `account`, renewed if its cycle has ended. The
    /// caller holds the user's lock.
    pub(crate) fn book(&self, account: &StoredAccount, now: i64) -> Result<Book> {
        self.book_for(&account.id, account.plan, now)
    }

    fn book_for(&self, user_id: &str, plan: Plan, now: i64) -> Result<Book> {
        let state = self.credit_state(user_id)?;
        Ok(self.book_from(user_id, plan, state, now))
    }

    fn book_from(&self, user_id: &str, plan: Plan, state: CreditState, now: i64) -> Book {
        let limits = self.plans.get(plan);
        let mut book = Book {
            user_id: user_id.to_string(),
            plan,
            unlimited: limits.unlimited_credits(),
            state,
            entries: Vec::new(),
        };
        if now >= book.state.cycle_end {
            // Whole cycles since the last end, so renewals keep the anchor
            // (also when billing aligned the last cycle to a paid period).
            let cycles = (now - book.state.cycle_end).div_euclid(CYCLE_MS);
            let start = book
                .state
                .cycle_end
                .saturating_add(cycles.saturating_mul(CYCLE_MS));
            let total = limits.monthly_credits.unwrap_or(0);
            book.start_cycle(total, 0, start);
            let note = format!("{plan} plan: new cycle");
            book.record(LedgerKind::Renew, total, None, note, now);
        }
        book
    }

    /// The balance an account actor holds in memory (`held.rs`), when
    /// reading it changes nothing (no cycle to renew); `None` otherwise.
    pub fn held_balance(&self, held: &super::Held) -> Option<CreditBalance> {
        let account = held.account.as_ref()?;
        let state = held.credits.clone()?;
        let book = self.book_from(&account.id, account.plan, state, self.now());
        (!book.changed()).then(|| book.balance())
    }

    /// The balance of the current cycle (renewing it if due).
    pub fn balance(&self, user_id: &str) -> Result<CreditBalance> {
        let _guard = self.lock(user_id);
        let account = self.stored_account(user_id)?;
        let book = self.book(&account, self.now())?;
        let balance = book.balance();
        if book.changed() {
            let mut batch = Batch::new();
            book.write(&mut batch)?;
            self.commit(batch)?;
        }
        Ok(balance)
    }

    /// Reserves `amount` credits for `project_id`, or fails with
    /// [`AccountError::InsufficientCredits`] and changes nothing. Reserving
    /// the same amount again for the same project is a no-op.
    pub fn reserve(&self, user_id: &str, project_id: &str, amount: u64) -> Result<()> {
        self.reserve_with(user_id, project_id, amount, Vec::new())
    }

    /// [`Self::reserve`], writing `with` (the project's records) in the
    /// same batch: both or neither.
    pub fn reserve_with(
        &self,
        user_id: &str,
        project_id: &str,
        amount: u64,
        with: Vec<KvOp>,
    ) -> Result<()> {
        validate_project_id(project_id)?;
        if amount == 0 {
            return Err(AccountError::InvalidInput(
                "credits: a reservation must be at least 1 credit".to_string(),
            ));
        }
        let _guard = self.lock(user_id);
        let account = self.stored_account(user_id)?;
        let now = self.now();
        let key = user_key(user_id, project_id);
        if let Some(existing) = self.read::<Reservation>(RESERVATIONS, &key)? {
            return if existing.state == ReservationState::Reserved && existing.amount == amount {
                let mut batch = Batch::new();
                batch.extend(with);
                self.commit(batch)
            } else {
                Err(AccountError::Conflict(format!(
                    "credits were already reserved for project {project_id}"
                )))
            };
        }
        let mut book = self.book(&account, now)?;
        let available = book.available();
        if !book.unlimited && available < amount {
            return Err(AccountError::InsufficientCredits {
                needed: amount,
                available,
            });
        }
        book.state.reserved = book.state.reserved.saturating_add(amount);
        book.record(
            LedgerKind::Reserve,
            amount,
            Some(project_id),
            String::new(),
            now,
        );
        let reservation = Reservation {
            amount,
            state: ReservationState::Reserved,
            created_at: now,
            settled_at: None,
        };
        let mut batch = Batch::new();
        batch.extend(with);
        batch.put(RESERVATIONS, key, &reservation)?;
        book.write(&mut batch)?;
        self.commit(batch)
    }

    /// Turns the reservation of `project_id` into a charge of `used` credits
    /// (capped at the reservation; the rest returns to the balance). Does
    /// nothing if the reservation was already charged or released.
    pub fn charge(&self, user_id: &str, project_id: &str, used: u64) -> Result<()> {
        validate_project_id(project_id)?;
        let _guard = self.lock(user_id);
        let account = self.stored_account(user_id)?;
        let now = self.now();
        let key = user_key(user_id, project_id);
        let mut reservation: Reservation = self
            .read(RESERVATIONS, &key)?
            .ok_or(AccountError::NotFound("credit reservation"))?;
        if reservation.state != ReservationState::Reserved {
            return Ok(());
        }
        let mut book = self.book(&account, now)?;
        let charged = used.min(reservation.amount);
        let returned = reservation.amount - charged;
        book.state.reserved = book.state.reserved.saturating_sub(reservation.amount);
        book.state.spent = book.state.spent.saturating_add(charged);
        book.record(
            LedgerKind::Charge,
            charged,
            Some(project_id),
            String::new(),
            now,
        );
        if returned > 0 {
            let note = "unused part of the reservation".to_string();
            book.record(LedgerKind::Release, returned, Some(project_id), note, now);
        }
        reservation.state = ReservationState::Charged { used: charged };
        reservation.settled_at = Some(now);

        let mut batch = Batch::new();
        batch.put(RESERVATIONS, key, &reservation)?;
        let total = book.state.cycle_total;
        let available = book.available();
        let low = !book.unlimited
            && total > 0
            && !book.state.low_notified
            && available.saturating_mul(100) <= total.saturating_mul(LOW_CREDITS_PERCENT);
        let mut rings = false;
        if low {
            book.state.low_notified = true;
            let renews = iso8601(book.state.cycle_end);
            let message = format!(
                "Only {available} of your {total} credits are left in this cycle. \
                 They renew on {}.",
                &renews[..10]
            );
            let said = super::Said::new("Credits running low", message)
                .with("available", available)
                .with("total", total)
                .with("renews", &renews[..10]);
            self.push_notification(
                &mut batch,
                user_id,
                NotificationKind::CreditsLow,
                &said,
                now,
            )?;
            let subject = Subject::Credits {
                remaining: available,
                monthly: total,
            };
            rings = self.push_event(
                &mut batch,
                user_id,
                NotificationKind::CreditsLow,
                Some(&subject),
                now,
            )?;
        }
        book.write(&mut batch)?;
        self.commit(batch)?;
        if rings {
            crate::webhooks::outbox::ring();
        }
        Ok(())
    }

    /// Gives the reservation of `project_id` back. Does nothing if it was
    /// already charged or released, or if there is none.
    pub fn release(&self, user_id: &str, project_id: &str) -> Result<()> {
        validate_project_id(project_id)?;
        let _guard = self.lock(user_id);
        let account = self.stored_account(user_id)?;
        let now = self.now();
        let key = user_key(user_id, project_id);
        let Some(mut reservation) = self.read::<Reservation>(RESERVATIONS, &key)? else {
            return Ok(());
        };
        if reservation.state != ReservationState::Reserved {
            return Ok(());
        }
        let mut book = self.book(&account, now)?;
        book.state.reserved = book.state.reserved.saturating_sub(reservation.amount);
        book.record(
            LedgerKind::Release,
            reservation.amount,
            Some(project_id),
            String::new(),
            now,
        );
        reservation.state = ReservationState::Released;
        reservation.settled_at = Some(now);
        let mut batch = Batch::new();
        batch.put(RESERVATIONS, key, &reservation)?;
        book.write(&mut batch)?;
        self.commit(batch)
    }

    /// A page of the ledger, newest first. `page` counts from 1; `limit` is
    /// clamped to 1–100.
    pub fn ledger(&self, user_id: &str, page: u64, limit: u64) -> Result<LedgerPage> {
        let page = page.max(1);
        let limit = limit.clamp(1, MAX_LEDGER_PAGE);
        let account = self.stored_account(user_id)?;
        let state = self.credit_state(&account.id)?;
        let total = state.ledger_len;
        let skip = (page - 1).saturating_mul(limit);
        let newest = total.saturating_sub(skip);
        let oldest = newest.saturating_sub(limit);
        let entries = (oldest..newest)
            .rev()
            .map(|seq| {
                let entry: LedgerEntry =
                    self.read(LEDGER, &ledger_key(user_id, seq))?
                        .ok_or_else(|| {
                            StorageError::Corrupt(format!(
                                "ledger entry {seq} of {user_id} is missing"
                            ))
                        })?;
                Ok(LedgerEntryView {
                    kind: entry.kind,
                    amount: entry.amount,
                    project_id: entry.project_id,
                    note: entry.note,
                    balance_after: entry.balance_after,
                    created_at: iso8601(entry.at),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(LedgerPage {
            entries,
            total,
            page,
            limit,
        })
    }
}

#[cfg(test)]
#[path = "credits_tests.rs"]
mod tests;
