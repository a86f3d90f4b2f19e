//! Tests of `credits`.

use super::*;
use crate::accounts::testutil::Fixture;
use crate::accounts::NotificationKind;

async fn credits(fx: &Fixture, user: &str) -> (u64, u64, u64) {
    let b = fx.accounts.balance(user).await.expect("balance");
    (b.credits, b.total_credits, b.reserved)
}

async fn kinds(fx: &Fixture, user: &str) -> Vec<(LedgerKind, u64)> {
    let page = fx.accounts.ledger(user, 1, 100).await.expect("ledger");
    page.entries
        .iter()
        .rev()
        .map(|e| (e.kind, e.amount))
        .collect()
}

#[tokio::test]
async fn reserve_charge_release_arithmetic_and_idempotency() {
    let fx = Fixture::new();
    let (ana, _) = fx.user("ana").await;
    let user = ana.id.as_str();
    fx.accounts.reserve(user, "p1", 20).await.expect("reserve");
    fx.accounts
        .reserve(user, "p1", 20)
        .await
        .expect("same reservation again");
    assert_eq!(credits(&fx, user).await, (40, 60, 20));
    let err = fx
        .accounts
        .reserve(user, "p1", 25)
        .await
        .expect_err("different amount");
    assert!(matches!(err, AccountError::Conflict(_)), "{err:?}");

    fx.accounts.charge(user, "p1", 15).await.expect("charge");
    assert_eq!(credits(&fx, user).await, (45, 60, 0));
    fx.accounts
        .charge(user, "p1", 15)
        .await
        .expect("charge again");
    fx.accounts
        .release(user, "p1")
        .await
        .expect("release after charge");
    assert_eq!(credits(&fx, user).await, (45, 60, 0));

    fx.accounts.reserve(user, "p2", 10).await.expect("reserve");
    assert_eq!(credits(&fx, user).await, (35, 60, 10));
    fx.accounts.release(user, "p2").await.expect("release");
    fx.accounts
        .release(user, "p2")
        .await
        .expect("release again");
    fx.accounts
        .charge(user, "p2", 10)
        .await
        .expect("charge after release");
    assert_eq!(credits(&fx, user).await, (45, 60, 0));

    fx.accounts.reserve(user, "p3", 5).await.expect("reserve");
    fx.accounts
        .charge(user, "p3", 50)
        .await
        .expect("charge above the reservation");
    assert_eq!(
        credits(&fx, user).await,
        (40, 60, 0),
        "capped at the reservation"
    );

    let expected = [
        (LedgerKind::Grant, 60),
        (LedgerKind::Reserve, 20),
        (LedgerKind::Charge, 15),
        (LedgerKind::Release, 5),
        (LedgerKind::Reserve, 10),
        (LedgerKind::Release, 10),
        (LedgerKind::Reserve, 5),
        (LedgerKind::Charge, 5),
    ];
    assert_eq!(kinds(&fx, user).await, expected);

    let err = fx
        .accounts
        .charge(user, "nope", 1)
        .await
        .expect_err("no reservation");
    assert!(matches!(err, AccountError::NotFound(_)), "{err:?}");
    fx.accounts
        .release(user, "nope")
        .await
        .expect("releasing nothing is a no-op");
    assert!(matches!(
        fx.accounts.reserve(user, "p4", 0).await,
        Err(AccountError::InvalidInput(_))
    ));
    assert!(matches!(
        fx.accounts.reserve(user, "a/b", 1).await,
        Err(AccountError::InvalidInput(_))
    ));
}

#[tokio::test]
async fn insufficient_credits_change_nothing() {
    let fx = Fixture::new();
    let (ana, _) = fx.user("ana").await;
    let user = ana.id.as_str();
    fx.accounts.reserve(user, "p1", 50).await.expect("reserve");
    let before = fx.dump();
    let err = fx
        .accounts
        .reserve(user, "p2", 11)
        .await
        .expect_err("short");
    assert!(
        matches!(
            err,
            AccountError::InsufficientCredits {
                needed: 11,
                available: 10
            }
        ),
        "{err:?}"
    );
    assert_eq!(fx.dump(), before);
    fx.accounts
        .reserve(user, "p2", 10)
        .await
        .expect("exactly what is left");
    assert_eq!(credits(&fx, user).await, (0, 60, 60));
}

#[tokio::test]
async fn failed_writes_change_nothing() {
    let fx = Fixture::new();
    let (ana, _) = fx.user("ana").await;
    fx.accounts
        .reserve(&ana.id, "p1", 30)
        .await
        .expect("reserve");
    let before = fx.dump();
    fx.fail_writes(true);
    assert!(fx.accounts.charge(&ana.id, "p1", 30).await.is_err());
    assert!(fx.accounts.reserve(&ana.id, "p2", 1).await.is_err());
    fx.fail_writes(false);
    assert_eq!(fx.dump(), before);
    fx.accounts.charge(&ana.id, "p1", 30).await.expect("charge");
    assert_eq!(credits(&fx, &ana.id).await, (30, 60, 0));
}

#[tokio::test]
async fn cycles_renew_without_rollover_and_keep_reservations() {
    let fx = Fixture::new();
    let (ana, _) = fx.user("ana").await;
    let user = ana.id.as_str();
    fx.accounts.reserve(user, "p1", 20).await.expect("reserve");
    fx.accounts.charge(user, "p1", 20).await.expect("charge");
    fx.accounts.reserve(user, "p2", 5).await.expect("reserve");
    assert_eq!(credits(&fx, user).await, (35, 60, 5));

    fx.advance(CYCLE_MS - 1);
    assert_eq!(credits(&fx, user).await, (35, 60, 5), "not yet");
    fx.advance(1);
    assert_eq!(
        credits(&fx, user).await,
        (55, 60, 5),
        "35 unused do not roll over"
    );
    assert_eq!(
        kinds(&fx, user).await.last(),
        Some(&(LedgerKind::Renew, 60))
    );
    fx.accounts
        .charge(user, "p2", 5)
        .await
        .expect("charge the old reservation");
    assert_eq!(credits(&fx, user).await, (55, 60, 0));

    // Two whole cycles missed: one renewal, on the original anchor.
    fx.advance(2 * CYCLE_MS + DAY_MS);
    let balance = fx.accounts.balance(user).await.expect("balance");
    assert_eq!(balance.credits, 60);
    assert_eq!(
        balance.cycle_started_at,
        iso8601(ana.created_at_ms + 3 * CYCLE_MS)
    );
    assert_eq!(balance.renews_at, iso8601(ana.created_at_ms + 4 * CYCLE_MS));
    let renewals = kinds(&fx, user)
        .await
        .iter()
        .filter(|(kind, _)| *kind == LedgerKind::Renew)
        .count();
    assert_eq!(renewals, 2);
}

#[tokio::test]
async fn credits_low_is_notified_once_per_cycle() {
    let fx = Fixture::new();
    let (ana, _) = fx.user("ana").await;
    let user = ana.id.as_str();
    let low = async || {
        fx.accounts
            .notifications(user)
            .await
            .expect("notifications")
            .iter()
            .filter(|n| n.kind == NotificationKind::CreditsLow)
            .count()
    };
    for (project, used) in [("p1", 50), ("p2", 4), ("p3", 3)] {
        fx.accounts
            .reserve(user, project, used)
            .await
            .expect("reserve");
        fx.accounts
            .charge(user, project, used)
            .await
            .expect("charge");
        assert_eq!(low().await, usize::from(project != "p1"), "after {project}");
    }
    let message = &fx.accounts.notifications(user).await.expect("list")[0].message;
    assert!(
        message.starts_with("Only 6 of your 60 credits"),
        "{message}"
    );

    fx.advance(CYCLE_MS);
    fx.accounts.reserve(user, "p4", 55).await.expect("reserve");
    fx.accounts.charge(user, "p4", 55).await.expect("charge");
    assert_eq!(low().await, 2, "a new cycle may warn again");
}

#[tokio::test]
async fn unlimited_plans_never_run_short() {
    let fx = Fixture::new();
    let (ana, _) = fx.user("ana").await;
    let user = ana.id.as_str();
    fx.accounts
        .grant_entitlement(user, Plan::Enterprise)
        .await
        .expect("grant");
    fx.accounts
        .select_plan(user, Plan::Enterprise)
        .await
        .expect("select");
    fx.accounts
        .reserve(user, "big", 1_000_000)
        .await
        .expect("reserve");
    fx.accounts
        .charge(user, "big", 999_999)
        .await
        .expect("charge");
    let balance = fx.accounts.balance(user).await.expect("balance");
    assert!(balance.unlimited);
    assert_eq!(
        (balance.credits, balance.total_credits),
        (UNLIMITED_CREDITS_SHOWN, UNLIMITED_CREDITS_SHOWN),
        "a printable number, not reduced by use"
    );
    let json = serde_json::to_value(&balance).expect("json");
    assert_eq!(json["plan"], "enterprise");
    assert_eq!(json["totalCredits"], 100_000);
    assert_eq!(json["unlimited"], true);
    assert!(fx
        .accounts
        .notifications(user)
        .await
        .expect("list")
        .iter()
        .all(|n| n.kind != NotificationKind::CreditsLow));
}

#[tokio::test]
async fn ledger_pages_newest_first() {
    let fx = Fixture::new();
    let (ana, _) = fx.user("ana").await;
    let user = ana.id.as_str();
    for i in 1..=4 {
        fx.advance(1000);
        fx.accounts
            .reserve(user, &format!("p{i}"), i)
            .await
            .expect("reserve");
    }
    let first = fx.accounts.ledger(user, 1, 2).await.expect("page 1");
    assert_eq!(first.total, 5);
    let amounts: Vec<u64> = first.entries.iter().map(|e| e.amount).collect();
    assert_eq!(amounts, [4, 3]);
    assert_eq!(first.entries[0].project_id.as_deref(), Some("p4"));
    assert_eq!(first.entries[0].balance_after, 50);
    let third = fx.accounts.ledger(user, 3, 2).await.expect("page 3");
    assert_eq!(third.entries.len(), 1);
    assert_eq!(third.entries[0].kind, LedgerKind::Grant);
    assert!(fx
        .accounts
        .ledger(user, 4, 2)
        .await
        .expect("past the end")
        .entries
        .is_empty());
    let clamped = fx.accounts.ledger(user, 0, 1000).await.expect("clamped");
    assert_eq!((clamped.page, clamped.limit), (1, 100));
    let json = serde_json::to_value(&first.entries[0]).expect("json");
    assert_eq!(json["type"], "reserve");
    assert_eq!(json["projectId"], "p4");
}

#[test]
fn credits_are_started_minutes() {
    assert_eq!(credits_for_seconds(0.0), 0);
    assert_eq!(credits_for_seconds(0.5), 1);
    assert_eq!(credits_for_seconds(60.0), 1);
    assert_eq!(credits_for_seconds(60.01), 2);
    assert_eq!(credits_for_seconds(f64::NAN), 0);
    assert_eq!(credits_for_seconds(-5.0), 0);
}
