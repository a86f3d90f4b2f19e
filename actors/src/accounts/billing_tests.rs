//! Tests of `billing` (the account side of subscriptions).

use super::*;
use crate::accounts::testutil::Fixture;
use crate::accounts::{LedgerKind, NotificationKind};

fn activation(session: &str, plan: Plan, frequency: BillingFrequency) -> Activation {
    Activation {
        session_id: session.to_string(),
        customer_id: "cus_1".to_string(),
        subscription_id: format!("sub_{session}"),
        plan,
        frequency,
    }
}

async fn balance(fx: &Fixture, user: &str) -> (Plan, u64, u64) {
    let b = fx.accounts.balance(user).await.expect("balance");
    (b.plan, b.credits, b.total_credits)
}

async fn bonuses(fx: &Fixture, user: &str) -> usize {
    let page = fx.accounts.ledger(user, 1, 100).await.expect("ledger");
    page.entries
        .iter()
        .filter(|e| e.kind == LedgerKind::Bonus)
        .count()
}

#[tokio::test]
async fn activation_grants_the_plan_and_its_bonus_once() {
    let fx = Fixture::new();
    let (ana, _) = fx.user("ana").await;
    let user = ana.id.as_str();
    fx.accounts
        .record_checkout(user, "cs_1", Plan::Creator, BillingFrequency::Monthly)
        .await
        .expect("record");
    let act = activation("cs_1", Plan::Creator, BillingFrequency::Monthly);
    assert_eq!(
        fx.accounts
            .activate_subscription(user, &act, None)
            .await
            .expect("activate"),
        Applied::Changed
    );
    assert_eq!(balance(&fx, user).await, (Plan::Creator, 360, 360));
    let before = fx.dump();
    assert_eq!(
        fx.accounts
            .activate_subscription(user, &act, Some("evt_1"))
            .await
            .expect("again through the webhook"),
        Applied::Unchanged
    );
    assert_eq!(balance(&fx, user).await, (Plan::Creator, 360, 360));
    assert_eq!(
        fx.accounts
            .activate_subscription(user, &act, Some("evt_1"))
            .await
            .expect("replayed event"),
        Applied::Duplicate
    );
    let after = fx.dump();
    let changed: Vec<_> = before
        .iter()
        .zip(&after)
        .filter(|(b, a)| b != a)
        .map(|(b, _)| b.0)
        .collect();
    assert_eq!(changed, ["accounts.stripe_events"], "only the event id");

    let record = fx.accounts.billing_record(user).await.expect("record");
    assert!(record.ever_paid);
    assert_eq!(record.customer_id.as_deref(), Some("cus_1"));
    assert_eq!(
        fx.accounts.user_for_customer("cus_1").await.expect("index"),
        Some(ana.id.clone())
    );
    assert!(fx
        .accounts
        .checkout_record("cs_1")
        .await
        .expect("checkout")
        .expect("kept")
        .activated_at
        .is_some());

    // Cancelled, then bought again: no second bonus.
    fx.accounts
        .end_subscription(user, "sub_cs_1", Some("evt_2"))
        .await
        .expect("end");
    assert_eq!(
        fx.accounts.get_account(user).await.expect("account").plan,
        Plan::Free
    );
    assert!(fx.accounts.select_plan(user, Plan::Creator).await.is_err());
    let again = activation("cs_2", Plan::Creator, BillingFrequency::Yearly);
    fx.accounts
        .activate_subscription(user, &again, Some("evt_3"))
        .await
        .expect("activate again");
    assert_eq!(bonuses(&fx, user).await, 1);
    assert_eq!(balance(&fx, user).await.0, Plan::Creator);
    assert_eq!(balance(&fx, user).await.2, 300, "no second welcome bonus");
}

#[tokio::test]
async fn renewal_resets_without_rollover_and_once_per_period() {
    let fx = Fixture::new();
    let (ana, _) = fx.user("ana").await;
    let user = ana.id.as_str();
    let act = activation("cs_1", Plan::Pro, BillingFrequency::Monthly);
    fx.accounts
        .activate_subscription(user, &act, None)
        .await
        .expect("activate");
    fx.accounts.reserve(user, "p1", 100).await.expect("reserve");
    fx.accounts.charge(user, "p1", 100).await.expect("charge");
    fx.accounts.reserve(user, "p2", 10).await.expect("reserve");
    assert_eq!(balance(&fx, user).await, (Plan::Pro, 1090, 1200));

    // The first invoice covers the period activation already started.
    let start = fx.now();
    let applied = fx
        .accounts
        .renew_paid_cycle(
            user,
            "sub_cs_1",
            start,
            Some(start + 31 * DAY_MS),
            Some("in_1"),
        )
        .await
        .expect("first invoice");
    assert_eq!(applied, Applied::Unchanged);
    assert_eq!(balance(&fx, user).await.1, 1090);
    let b = fx.accounts.balance(user).await.expect("balance");
    assert_eq!(b.renews_at, iso8601(start + 31 * DAY_MS), "aligned");

    fx.advance(31 * DAY_MS);
    let next = fx.now();
    let applied = fx
        .accounts
        .renew_paid_cycle(
            user,
            "sub_cs_1",
            next,
            Some(next + 30 * DAY_MS),
            Some("in_2"),
        )
        .await
        .expect("renewal");
    // The lazy renewal at the aligned end already started this period.
    assert_eq!(applied, Applied::Unchanged);
    assert_eq!(
        balance(&fx, user).await,
        (Plan::Pro, 990, 1000),
        "the plan's credits, less the open reservation; nothing rolled over"
    );
    assert_eq!(
        fx.accounts
            .renew_paid_cycle(user, "sub_cs_1", next, None, Some("in_2"))
            .await
            .expect("replay"),
        Applied::Duplicate
    );
    fx.accounts.reserve(user, "p3", 500).await.expect("reserve");
    fx.accounts.charge(user, "p3", 500).await.expect("charge");

    // A paid period the lazy renewal has not reached resets the cycle.
    fx.advance(29 * DAY_MS);
    let period = fx.now() + DAY_MS * 4;
    let applied = fx
        .accounts
        .renew_paid_cycle(
            user,
            "sub_cs_1",
            period,
            Some(period + 30 * DAY_MS),
            Some("in_3"),
        )
        .await
        .expect("early invoice");
    assert_eq!(applied, Applied::Changed);
    assert_eq!(balance(&fx, user).await, (Plan::Pro, 990, 1000));
    assert_eq!(
        fx.accounts
            .renew_paid_cycle(user, "sub_other", period, None, Some("in_4"))
            .await
            .expect("another subscription"),
        Applied::Unchanged
    );
}

#[tokio::test]
async fn yearly_plans_get_monthly_allotments() {
    let fx = Fixture::new();
    let (ana, _) = fx.user("ana").await;
    let user = ana.id.as_str();
    let act = activation("cs_1", Plan::Creator, BillingFrequency::Yearly);
    fx.accounts
        .activate_subscription(user, &act, None)
        .await
        .expect("activate");
    let start = fx.now();
    fx.accounts
        .renew_paid_cycle(user, "sub_cs_1", start, Some(start + 365 * DAY_MS), None)
        .await
        .expect("first invoice");
    let b = fx.accounts.balance(user).await.expect("balance");
    assert_eq!(
        b.renews_at,
        iso8601(start + CYCLE_MS),
        "a month, not a year"
    );
    fx.accounts.reserve(user, "p1", 200).await.expect("reserve");
    fx.accounts.charge(user, "p1", 200).await.expect("charge");
    fx.advance(CYCLE_MS);
    assert_eq!(balance(&fx, user).await, (Plan::Creator, 300, 300));
}

#[tokio::test]
async fn subscription_updates_move_the_plan_and_end_it() {
    let fx = Fixture::new();
    let (ana, _) = fx.user("ana").await;
    let user = ana.id.as_str();
    let act = activation("cs_1", Plan::Creator, BillingFrequency::Monthly);
    fx.accounts
        .activate_subscription(user, &act, None)
        .await
        .expect("activate");
    let mut update = SubscriptionUpdate {
        subscription_id: "sub_cs_1".into(),
        plan: Plan::Pro,
        frequency: BillingFrequency::Yearly,
        status: "active".into(),
        cancel_at_period_end: false,
        current_period_end: None,
    };
    fx.accounts
        .update_subscription(user, &update, Some("evt_1"))
        .await
        .expect("upgrade");
    let account = fx.accounts.get_account(user).await.expect("account");
    assert_eq!(
        (account.plan, account.entitlements),
        (Plan::Pro, vec![Plan::Pro])
    );
    assert_eq!(bonuses(&fx, user).await, 2, "creator's and pro's");

    update.cancel_at_period_end = true;
    fx.accounts
        .update_subscription(user, &update, Some("evt_2"))
        .await
        .expect("cancel at period end");
    assert_eq!(
        balance(&fx, user).await.0,
        Plan::Pro,
        "kept until the period ends"
    );
    let sub = fx
        .accounts
        .billing_record(user)
        .await
        .expect("record")
        .subscription;
    assert!(sub.expect("subscription").cancel_at_period_end);

    let other = SubscriptionUpdate {
        subscription_id: "sub_unknown".into(),
        status: "canceled".into(),
        ..update.clone()
    };
    assert_eq!(
        fx.accounts
            .update_subscription(user, &other, Some("evt_3"))
            .await
            .expect("not ours"),
        Applied::Unchanged
    );
    update.status = "unpaid".into();
    fx.accounts
        .update_subscription(user, &update, Some("evt_4"))
        .await
        .expect("unpaid");
    let account = fx.accounts.get_account(user).await.expect("account");
    assert_eq!((account.plan, account.entitlements.len()), (Plan::Free, 0));
}

#[tokio::test]
async fn payment_failures_notify_and_operators_grant_enterprise() {
    let fx = Fixture::new();
    let (ana, _) = fx.user("ana").await;
    let user = ana.id.as_str();
    fx.accounts
        .payment_failed(user, Some(fx.now() + 3 * DAY_MS), Some("evt_1"))
        .await
        .expect("failed");
    fx.accounts
        .payment_failed(user, None, Some("evt_1"))
        .await
        .expect("replayed");
    let notes = fx
        .accounts
        .notifications(user)
        .await
        .expect("notifications");
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0].kind, NotificationKind::PaymentFailed);

    assert!(fx
        .accounts
        .select_plan(user, Plan::Enterprise)
        .await
        .is_err());
    assert!(fx
        .accounts
        .set_plan_by_operator(user, Plan::Pro)
        .await
        .is_err());
    assert_eq!(
        fx.accounts
            .set_plan_by_operator(user, Plan::Enterprise)
            .await
            .expect("grant"),
        Plan::Enterprise
    );
    let b = fx.accounts.balance(user).await.expect("balance");
    assert!(b.unlimited);
    fx.accounts
        .select_plan(user, Plan::Free)
        .await
        .expect("free");
    fx.accounts
        .select_plan(user, Plan::Enterprise)
        .await
        .expect("granted, so selectable");
    assert_eq!(
        fx.accounts
            .set_plan_by_operator(user, Plan::Free)
            .await
            .expect("withdraw"),
        Plan::Free
    );
    assert!(fx
        .accounts
        .select_plan(user, Plan::Enterprise)
        .await
        .is_err());
}
