//! Plan selection, entitlements and storage quotas.
//!
//! Free is always selectable; a paid plan only with an entitlement, granted
//! by billing after checkout (creator, pro) or by an operator (enterprise).
//! Changing plan starts a new cycle at once with the new plan's credits and,
//! the first time the account has that plan, its welcome bonus. Credits
//! already charged in the interrupted cycle still count against the new one
//! (unless the old plan was unlimited), so switching back and forth never
//! creates credits. Selecting the current plan changes nothing.

use super::credits::{Book, CreditBalance, LedgerKind};
use super::domain::Accounts;
use super::error::{AccountError, Result};
use super::model::{Plan, StoredAccount};
use super::notifications::NotificationKind;
use super::store::{Batch, STORAGE, USERS};
use crate::storage::kv::KvOp;

impl Accounts {
    /// Switches the user to `plan` (see the module docs); returns the new
    /// balance.
    pub async fn select_plan(&self, user_id: &str, plan: Plan) -> Result<CreditBalance> {
        let _guard = self.lock(user_id).await;
        let mut account = self.stored_account(user_id).await?;
        let now = self.now();
        let mut book = self.book(&account, now).await?;
        let mut batch = Batch::new();
        if plan != account.plan {
            if plan != Plan::Free && !account.entitlements.contains(&plan) {
                return Err(AccountError::PlanNotAllowed(match plan {
                    Plan::Enterprise => {
                        "plan: the enterprise plan is arranged with sales; it is not self-service"
                            .to_string()
                    }
                    _ => format!("plan: the {plan} plan must be bought first: buy it through POST /api/stripe/checkout"),
                }));
            }
            self.switch_plan(&mut batch, &mut account, &mut book, plan, now)
                .await?;
        }
        let balance = book.balance();
        if book.changed() {
            book.write(&mut batch)?;
        }
        self.commit(batch).await?;
        Ok(balance)
    }

    /// Lets the user select `plan` (billing after checkout, operators for
    /// enterprise). Granting an entitlement the user has, or free, does
    /// nothing.
    pub async fn grant_entitlement(&self, user_id: &str, plan: Plan) -> Result<()> {
        let _guard = self.lock(user_id).await;
        let mut account = self.stored_account(user_id).await?;
        if plan == Plan::Free || account.entitlements.contains(&plan) {
            return Ok(());
        }
        account.entitlements.push(plan);
        account.updated_at = self.now();
        let mut batch = Batch::new();
        batch.put(USERS, user_id.as_bytes(), &account)?;
        self.commit(batch).await
    }

    /// Withdraws an entitlement (subscription ended); a user on that plan
    /// moves to free in the same write.
    pub async fn revoke_entitlement(&self, user_id: &str, plan: Plan) -> Result<()> {
        let _guard = self.lock(user_id).await;
        let mut account = self.stored_account(user_id).await?;
        if !account.entitlements.contains(&plan) && account.plan != plan {
            return Ok(());
        }
        let now = self.now();
        account.entitlements.retain(|p| *p != plan);
        account.updated_at = now;
        let mut batch = Batch::new();
        if account.plan == plan && plan != Plan::Free {
            let mut book = self.book(&account, now).await?;
            self.switch_plan(&mut batch, &mut account, &mut book, Plan::Free, now)
                .await?;
            book.write(&mut batch)?;
        } else {
            batch.put(USERS, user_id.as_bytes(), &account)?;
        }
        self.commit(batch).await
    }

    /// Moves `account` to `plan` with a new cycle, writing the account and a
    /// `plan_changed` notification into `batch`; the caller writes `book`.
    pub(super) async fn switch_plan(
        &self,
        batch: &mut Batch,
        account: &mut StoredAccount,
        book: &mut Book,
        plan: Plan,
        now: i64,
    ) -> Result<()> {
        let limits = self.plans.get(plan);
        let carried = if book.unlimited { 0 } else { book.state.spent };
        let total = limits.monthly_credits.unwrap_or(0);
        book.plan = plan;
        book.unlimited = limits.unlimited_credits();
        book.start_cycle(total, carried, now);
        let mut note = format!("plan changed to {plan}");
        if carried > 0 && !book.unlimited {
            note.push_str(&format!(
                "; {carried} credits used earlier in the cycle still count"
            ));
        }
        book.record(LedgerKind::Grant, total, None, note, now);
        let bonus = limits.welcome_bonus;
        if bonus > 0 && !book.unlimited && !account.bonuses_granted.contains(&plan) {
            book.state.cycle_total = book.state.cycle_total.saturating_add(bonus);
            let note = format!("welcome bonus of the {plan} plan");
            book.record(LedgerKind::Bonus, bonus, None, note, now);
            account.bonuses_granted.push(plan);
        }
        account.plan = plan;
        account.updated_at = now;
        batch.put(USERS, account.id.as_bytes(), &*account)?;

        let credits = match limits.monthly_credits {
            Some(credits) => format!("{credits} credits per cycle"),
            None => "unlimited credits".to_string(),
        };
        let message = format!("You are now on the {plan} plan, with {credits}.");
        let mut said = super::Said::new("Plan changed", message).with("plan", plan);
        if let Some(credits) = limits.monthly_credits {
            said = said.with("credits", credits);
        }
        self.push_notification(
            batch,
            &account.id,
            NotificationKind::PlanChanged,
            &said,
            now,
        )
        .await?;
        Ok(())
    }

    /// Bytes of uploads the user stores.
    pub async fn storage_used(&self, user_id: &str) -> Result<u64> {
        self.stored_account(user_id).await?;
        self.storage_counter(user_id).await
    }

    /// [`Self::storage_used`] as the store has it, for a request outside
    /// the account's actor (an upload's check on any node); async.
    pub async fn stored_storage_used(&self, user_id: &str) -> Result<u64> {
        let account = self
            .read::<StoredAccount>(USERS, user_id.as_bytes())
            .await?;
        account.ok_or(AccountError::NotFound("account"))?;
        Ok(self.read(STORAGE, user_id.as_bytes()).await?.unwrap_or(0))
    }

    /// Counts `bytes` more against the user's quota, or fails with
    /// [`AccountError::QuotaExceeded`] and counts nothing. Returns the new
    /// total.
    pub async fn add_storage(&self, user_id: &str, bytes: u64) -> Result<u64> {
        self.add_storage_with(user_id, bytes, Vec::new()).await
    }

    /// [`Self::add_storage`], writing `with` (the upload's record) in the
    /// same batch.
    pub async fn add_storage_with(
        &self,
        user_id: &str,
        bytes: u64,
        with: Vec<KvOp>,
    ) -> Result<u64> {
        self.change_storage(user_id, with, |used, account| {
            let limit = self.plans.get(account.plan).storage_bytes;
            let total = used.saturating_add(bytes);
            if total > limit {
                return Err(AccountError::QuotaExceeded {
                    needed: bytes,
                    used,
                    limit,
                });
            }
            Ok(total)
        })
        .await
    }

    /// Counts `bytes` less (not below zero); returns the new total.
    pub async fn remove_storage(&self, user_id: &str, bytes: u64) -> Result<u64> {
        self.remove_storage_with(user_id, bytes, Vec::new()).await
    }

    /// [`Self::remove_storage`], writing `with` (the upload record's
    /// deletion) in the same batch.
    pub async fn remove_storage_with(
        &self,
        user_id: &str,
        bytes: u64,
        with: Vec<KvOp>,
    ) -> Result<u64> {
        self.change_storage(user_id, with, |used, _| Ok(used.saturating_sub(bytes)))
            .await
    }

    /// Sets the user's storage counter to what `total` makes of it (and of
    /// the account), writing `with` in the same batch; returns the total.
    async fn change_storage(
        &self,
        user_id: &str,
        with: Vec<KvOp>,
        total: impl FnOnce(u64, &StoredAccount) -> Result<u64>,
    ) -> Result<u64> {
        let _guard = self.lock(user_id).await;
        let account = self.stored_account(user_id).await?;
        let used = self.storage_counter(user_id).await?;
        let total = total(used, &account)?;
        self.write_storage(user_id, total, with).await?;
        Ok(total)
    }

    /// The user's storage counter: held by the account's actor, else
    /// read from the store.
    async fn storage_counter(&self, user_id: &str) -> Result<u64> {
        match self.held_storage(user_id).await? {
            Some(used) => Ok(used),
            None => Ok(self.read(STORAGE, user_id.as_bytes()).await?.unwrap_or(0)),
        }
    }

    async fn write_storage(&self, user_id: &str, total: u64, with: Vec<KvOp>) -> Result<()> {
        let mut batch = Batch::new();
        batch.extend(with);
        batch.put(STORAGE, user_id.as_bytes(), &total)?;
        self.commit(batch).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounts::testutil::Fixture;
    use crate::accounts::{iso8601, CYCLE_MS, DAY_MS};

    const GIB: u64 = 1024 * 1024 * 1024;

    #[tokio::test]
    async fn paid_plans_need_an_entitlement() {
        let fx = Fixture::new();
        let (ana, _) = fx.user("ana").await;
        let user = ana.id.as_str();
        let err = fx
            .accounts
            .select_plan(user, Plan::Pro)
            .await
            .expect_err("not bought");
        assert!(matches!(err, AccountError::PlanNotAllowed(_)), "{err:?}");
        assert!(
            err.to_string().contains("POST /api/stripe/checkout"),
            "{err}"
        );
        let err = fx
            .accounts
            .select_plan(user, Plan::Enterprise)
            .await
            .expect_err("operators only");
        assert!(matches!(err, AccountError::PlanNotAllowed(_)), "{err:?}");
        assert_eq!(
            fx.accounts.get_account(user).await.expect("account").plan,
            Plan::Free
        );

        fx.accounts
            .grant_entitlement(user, Plan::Pro)
            .await
            .expect("grant");
        fx.accounts
            .grant_entitlement(user, Plan::Pro)
            .await
            .expect("grant twice");
        assert_eq!(
            fx.accounts
                .get_account(user)
                .await
                .expect("account")
                .entitlements,
            [Plan::Pro]
        );
        let pro = fx
            .accounts
            .select_plan(user, Plan::Pro)
            .await
            .expect("select pro");
        assert_eq!(
            (pro.plan, pro.credits, pro.total_credits),
            (Plan::Pro, 1200, 1200)
        );
        let notes = fx
            .accounts
            .notifications(user)
            .await
            .expect("notifications");
        assert_eq!(
            notes[0].kind,
            crate::accounts::NotificationKind::PlanChanged
        );

        let ledger_len = fx.accounts.ledger(user, 1, 1).await.expect("ledger").total;
        fx.accounts
            .select_plan(user, Plan::Pro)
            .await
            .expect("same plan");
        assert_eq!(
            fx.accounts.ledger(user, 1, 1).await.expect("ledger").total,
            ledger_len
        );
    }

    #[tokio::test]
    async fn switching_starts_a_cycle_without_minting_credits() {
        let fx = Fixture::new();
        let (ana, _) = fx.user("ana").await;
        let user = ana.id.as_str();
        fx.accounts
            .grant_entitlement(user, Plan::Creator)
            .await
            .expect("grant");
        fx.advance(10 * DAY_MS);
        let creator = fx
            .accounts
            .select_plan(user, Plan::Creator)
            .await
            .expect("creator");
        assert_eq!((creator.credits, creator.total_credits), (360, 360));
        assert_eq!(creator.renews_at, iso8601(fx.now() + CYCLE_MS));

        fx.accounts.reserve(user, "p1", 100).await.expect("reserve");
        fx.accounts.charge(user, "p1", 100).await.expect("charge");
        fx.accounts.reserve(user, "p2", 10).await.expect("reserve");
        let free = fx
            .accounts
            .select_plan(user, Plan::Free)
            .await
            .expect("free");
        assert_eq!(
            (free.credits, free.total_credits, free.reserved),
            (0, 60, 10)
        );
        let back = fx
            .accounts
            .select_plan(user, Plan::Creator)
            .await
            .expect("creator again");
        assert_eq!(
            (back.credits, back.total_credits),
            (190, 300),
            "no second bonus; the 100 charged and 10 reserved still count"
        );
    }

    #[tokio::test]
    async fn revoking_the_current_plan_moves_to_free() {
        let fx = Fixture::new();
        let (ana, _) = fx.user("ana").await;
        let user = ana.id.as_str();
        fx.accounts
            .grant_entitlement(user, Plan::Pro)
            .await
            .expect("grant");
        fx.accounts.select_plan(user, Plan::Pro).await.expect("pro");
        fx.accounts
            .revoke_entitlement(user, Plan::Pro)
            .await
            .expect("revoke");
        let account = fx.accounts.get_account(user).await.expect("account");
        assert_eq!((account.plan, account.entitlements.len()), (Plan::Free, 0));
        assert_eq!(
            fx.accounts
                .balance(user)
                .await
                .expect("balance")
                .total_credits,
            60
        );
        assert!(fx.accounts.select_plan(user, Plan::Pro).await.is_err());
    }

    #[tokio::test]
    async fn storage_quota_follows_the_plan() {
        let fx = Fixture::new();
        let (ana, _) = fx.user("ana").await;
        let user = ana.id.as_str();
        assert_eq!(
            fx.accounts.plan_limits(Plan::Free).upload_max_bytes,
            500 * 1024 * 1024
        );
        assert_eq!(
            fx.accounts.add_storage(user, 4 * GIB).await.expect("add"),
            4 * GIB
        );
        let err = fx
            .accounts
            .add_storage(user, 2 * GIB)
            .await
            .expect_err("over 5 GiB");
        assert!(
            matches!(err, AccountError::QuotaExceeded { used, limit, .. } if used == 4 * GIB && limit == 5 * GIB),
            "{err:?}"
        );
        assert_eq!(fx.accounts.storage_used(user).await.expect("used"), 4 * GIB);
        fx.accounts
            .grant_entitlement(user, Plan::Creator)
            .await
            .expect("grant");
        fx.accounts
            .select_plan(user, Plan::Creator)
            .await
            .expect("creator");
        fx.accounts
            .add_storage(user, 2 * GIB)
            .await
            .expect("50 GiB quota");
        assert_eq!(
            fx.accounts
                .remove_storage(user, 10 * GIB)
                .await
                .expect("remove"),
            0
        );
        assert!(matches!(
            fx.accounts.storage_used("nobody").await,
            Err(AccountError::NotFound(_))
        ));
    }
}
