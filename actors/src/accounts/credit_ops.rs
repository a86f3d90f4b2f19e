//! The credit operations on an account: reserving a project's credits,
//! charging and releasing them, cycles and the ledger (the records are in
//! `credits.rs`).

use super::clock::iso8601;
use super::credits::*;
use super::domain::Accounts;
use super::error::{AccountError, Result};
use super::model::{Plan, StoredAccount};
use super::notifications::NotificationKind;
use super::store::{user_key, Batch, LEDGER, RESERVATIONS};
use crate::storage::kv::{KvOp, StorageError};
use crate::webhooks::Subject;

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
    pub(crate) async fn book(&self, account: &StoredAccount, now: i64) -> Result<Book> {
        self.book_for(&account.id, account.plan, now).await
    }

    async fn book_for(&self, user_id: &str, plan: Plan, now: i64) -> Result<Book> {
        let state = self.credit_state(user_id).await?;
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
    pub fn held_balance(&self, held: &super::held::Held) -> Option<CreditBalance> {
        let account = held.account.as_ref()?;
        let state = held.credits.clone()?;
        let book = self.book_from(&account.id, account.plan, state, self.now());
        (!book.changed()).then(|| book.balance())
    }

    /// The balance of the current cycle (renewing it if due).
    pub async fn balance(&self, user_id: &str) -> Result<CreditBalance> {
        let _guard = self.lock(user_id).await;
        let account = self.stored_account(user_id).await?;
        let book = self.book(&account, self.now()).await?;
        let balance = book.balance();
        if book.changed() {
            let mut batch = Batch::new();
            book.write(&mut batch)?;
            self.commit(batch).await?;
        }
        Ok(balance)
    }

    /// Reserves `amount` credits for `project_id`, or fails with
    /// [`AccountError::InsufficientCredits`] and changes nothing. Reserving
    /// the same amount again for the same project is a no-op.
    pub async fn reserve(&self, user_id: &str, project_id: &str, amount: u64) -> Result<()> {
        self.reserve_with(user_id, project_id, amount, Vec::new())
            .await
    }

    /// [`Self::reserve`], writing `with` (the project's records) in the
    /// same batch: both or neither.
    pub async fn reserve_with(
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
        let _guard = self.lock(user_id).await;
        let account = self.stored_account(user_id).await?;
        let now = self.now();
        let key = user_key(user_id, project_id);
        if let Some(existing) = self.read::<Reservation>(RESERVATIONS, &key).await? {
            return if existing.state == ReservationState::Reserved && existing.amount == amount {
                let mut batch = Batch::new();
                batch.extend(with);
                self.commit(batch).await
            } else {
                Err(AccountError::Conflict(format!(
                    "credits were already reserved for project {project_id}"
                )))
            };
        }
        let mut book = self.book(&account, now).await?;
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
        self.commit(batch).await
    }

    /// Turns the reservation of `project_id` into a charge of `used` credits
    /// (capped at the reservation; the rest returns to the balance). Does
    /// nothing if the reservation was already charged or released.
    pub async fn charge(&self, user_id: &str, project_id: &str, used: u64) -> Result<()> {
        validate_project_id(project_id)?;
        let _guard = self.lock(user_id).await;
        let account = self.stored_account(user_id).await?;
        let now = self.now();
        let key = user_key(user_id, project_id);
        let mut reservation: Reservation = self
            .read(RESERVATIONS, &key)
            .await?
            .ok_or(AccountError::NotFound("credit reservation"))?;
        if reservation.state != ReservationState::Reserved {
            return Ok(());
        }
        let mut book = self.book(&account, now).await?;
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
            let said = super::notifications::Said::new("Credits running low", message)
                .with("available", available)
                .with("total", total)
                .with("renews", &renews[..10]);
            self.push_notification(
                &mut batch,
                user_id,
                NotificationKind::CreditsLow,
                &said,
                now,
            )
            .await?;
            let subject = Subject::Credits {
                remaining: available,
                monthly: total,
            };
            rings = self
                .push_event(
                    &mut batch,
                    user_id,
                    NotificationKind::CreditsLow,
                    Some(&subject),
                    now,
                )
                .await?;
        }
        book.write(&mut batch)?;
        self.commit(batch).await?;
        if rings {
            crate::webhooks::outbox::ring();
        }
        Ok(())
    }

    /// Gives the reservation of `project_id` back. Does nothing if it was
    /// already charged or released, or if there is none.
    pub async fn release(&self, user_id: &str, project_id: &str) -> Result<()> {
        validate_project_id(project_id)?;
        let _guard = self.lock(user_id).await;
        let account = self.stored_account(user_id).await?;
        let now = self.now();
        let key = user_key(user_id, project_id);
        let Some(mut reservation) = self.read::<Reservation>(RESERVATIONS, &key).await? else {
            return Ok(());
        };
        if reservation.state != ReservationState::Reserved {
            return Ok(());
        }
        let mut book = self.book(&account, now).await?;
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
        self.commit(batch).await
    }

    /// A page of the ledger, newest first. `page` counts from 1; `limit` is
    /// clamped to 1–100.
    pub async fn ledger(&self, user_id: &str, page: u64, limit: u64) -> Result<LedgerPage> {
        let page = page.max(1);
        let limit = limit.clamp(1, MAX_LEDGER_PAGE);
        let account = self.stored_account(user_id).await?;
        let state = self.credit_state(&account.id).await?;
        let total = state.ledger_len;
        let skip = (page - 1).saturating_mul(limit);
        let newest = total.saturating_sub(skip);
        let oldest = newest.saturating_sub(limit);
        let mut entries = Vec::new();
        for seq in (oldest..newest).rev() {
            let entry: LedgerEntry = self
                .read(LEDGER, &ledger_key(user_id, seq))
                .await?
                .ok_or_else(|| {
                    StorageError::Corrupt(format!("ledger entry {seq} of {user_id} is missing"))
                })?;
            entries.push(LedgerEntryView {
                kind: entry.kind,
                amount: entry.amount,
                project_id: entry.project_id,
                note: entry.note,
                balance_after: entry.balance_after,
                created_at: iso8601(entry.at),
            });
        }
        Ok(LedgerPage {
            entries,
            total,
            page,
            limit,
        })
    }
}
