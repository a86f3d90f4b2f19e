//! Tests of `credits`.

use super::*;
use crate::accounts::testutil::Fixture;
use crate::accounts::NotificationKind;

fn credits(fx: &Fixture, user: &str) -> (u64, u64, u64) {
    let b = fx.accounts.balance(user).expect("balance");
    (b.credits, b.total_credits, b.reserved)
}

fn kinds(fx: &Fixture, user: &str) -> Vec<(LedgerKind, u64)> {
    let page = fx.accounts.ledger(user, 1, 100).expect("ledger");
    page.entries
        .iter()
        .rev()
        .map(|e| (e.kind, e.amount))
        .collect()
}

#[test]
fn reserve_charge_release_arithmetic_and_idempotency() {
    let fx = Fixture::new();
    let (ana, _) = fx.user("ana");
    let user = ana.id.as_str();
    fx.accounts.reserve(user, "p1", 20).expect("reserve");
    fx.accounts
        .reserve(user, "p1", 20)
        .expect("same reservation again");
    assert_eq!(credits(&fx, user), (40, 60, 20));
    let err = fx
        .accounts
        .reserve(user, "p1", 25)
        .expect_err("different amount");
    assert!(matches!(err, AccountError::Conflict(_)), "{err:?}");

    fx.accounts.charge(user, "p1", 15).expect("charge");
    assert_eq!(credits(&fx, user), (45, 60, 0));
    fx.accounts.charge(user, "p1", 15).expect("charge again");
    fx.accounts
        .release(user, "p1")
        .expect("release after charge");
    assert_eq!(credits(&fx, user), (45, 60, 0));

    fx.accounts.reserve(user, "p2", 10).expect("reserve");
    assert_eq!(credits(&fx, user), (35, 60, 10));
    fx.accounts.release(user, "p2").expect("release");
    fx.accounts.release(user, "p2").expect("release again");
    fx.accounts
        .charge(user, "p2", 10)
        .expect("charge after release");
    assert_eq!(credits(&fx, user), (45, 60, 0));

    fx.accounts.reserve(user, "p3", 5).expect("reserve");
    fx.accounts
        .charge(user, "p3", 50)
        .expect("charge above the reservation");
    assert_eq!(credits(&fx, user), (40, 60, 0), "capped at the reservation");

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
    assert_eq!(kinds(&fx, user), expected);

    let err = fx
        .accounts
        .charge(user, "nope", 1)
        .expect_err("no reservation");
    assert!(matches!(err, AccountError::NotFound(_)), "{err:?}");
    fx.accounts
        .release(user, "nope")
        .expect("releasing nothing is a no-op");
    assert!(matches!(
        fx.accounts.reserve(user, "p4", 0),
        Err(AccountError::InvalidInput(_))
    ));
    assert!(matches!(
        fx.accounts.reserve(user, "a/b", 1),
        Err(AccountError::InvalidInput(_))
    ));
}

#[test]
fn insufficient_credits_change_nothing() {
    let fx = Fixture::new();
    let (ana, _) = fx.user("ana");
    let user = ana.id.as_str();
    fx.accounts.reserve(user, "p1", 50).expect("reserve");
    let before = fx.dump();
    let err = fx.accounts.reserve(user, "p2", 11).expect_err("short");
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
        .expect("exactly what is left");
    assert_eq!(credits(&fx, user), (0, 60, 60));
}

#[test]
fn failed_writes_change_nothing() {
    let fx = Fixture::new();
    let (ana, _) = fx.user("ana");
    fx.accounts.reserve(&ana.id, "p1", 30).expect("reserve");
    let before = fx.dump();
    fx.fail_writes(true);
    assert!(fx.accounts.charge(&ana.id, "p1", 30).is_err());
    assert!(fx.accounts.reserve(&ana.id, "p2", 1).is_err());
    fx.fail_writes(false);
    assert_eq!(fx.dump(), before);
    fx.accounts.charge(&ana.id, "p1", 30).expect("charge");
    assert_eq!(credits(&fx, &ana.id), (30, 60, 0));
}

#[test]
fn cycles_renew_without_rollover_and_keep_reservations() {
    let fx = Fixture::new();
    let (ana, _) = fx.user("ana");
    let user = ana.id.as_str();
    fx.accounts.reserve(user, "p1", 20).expect("reserve");
    fx.accounts.charge(user, "p1", 20).expect("charge");
    fx.accounts.reserve(user, "p2", 5).expect("reserve");
    assert_eq!(credits(&fx, user), (35, 60, 5));

    fx.advance(CYCLE_MS - 1);
    assert_eq!(credits(&fx, user), (35, 60, 5), "not yet");
    fx.advance(1);
    assert_eq!(
        credits(&fx, user),
        (55, 60, 5),
        "35 unused do not roll over"
    );
    assert_eq!(kinds(&fx, user).last(), Some(&(LedgerKind::Renew, 60)));
    fx.accounts
        .charge(user, "p2", 5)
        .expect("charge the old reservation");
    assert_eq!(credits(&fx, user), (55, 60, 0));

    // Two whole cycles missed: one renewal, on the original anchor.
    fx.advance(2 * CYCLE_MS + DAY_MS);
    let balance = fx.accounts.balance(user).expect("balance");
    assert_eq!(balance.credits, 60);
    assert_eq!(
        balance.cycle_started_at,
        iso8601(ana.created_at_ms + 3 * CYCLE_MS)
    );
    assert_eq!(balance.renews_at, iso8601(ana.created_at_ms + 4 * CYCLE_MS));
    let renewals = kinds(&fx, user)
        .iter()
        .filter(|(kind, _)| *kind == LedgerKind::Renew)
        .count();
    assert_eq!(renewals, 2);
}

#[test]
fn credits_low_is_notified_once_per_cycle() {
    let fx = Fixture::new();
    let (ana, _) = fx.user("ana");
    let user = ana.id.as_str();
    let low = || {
        fx.accounts
            .notifications(user)
            .expect("notifications")
            .iter()
            .filter(|n| n.kind == NotificationKind::CreditsLow)
            .count()
    };
    for (project, used) in [("p1", 50), ("p2", 4), ("p3", 3)] {
        fx.accounts.reserve(user, project, used).expect("reserve");
        fx.accounts.charge(user, project, used).expect("charge");
        assert_eq!(low(), usize::from(project != "p1"), "after {project}");
    }
    let message = &fx.accounts.notifications(user).expect("list")[0].message;
    assert!(
        message.starts_with("Only 6 of your 60 credits"),
        "{message}"
    );

    fx.advance(CYCLE_MS);
    fx.accounts.reserve(user, "p4", 55).expect("reserve");
    fx.accounts.charge(user, "p4", 55).expect("charge");
    assert_eq!(low(), 2, "a new cycle may warn again");
}

#[test]
fn unlimited_plans_never_run_short() {
    let fx = Fixture::new();
    let (ana, _) = fx.user("ana");
    let user = ana.id.as_str();
    fx.accounts
        .grant_entitlement(user, Plan::Enterprise)
        .expect("grant");
    fx.accounts
        .select_plan(user, Plan::Enterprise)
        .expect("select");
    fx.accounts
        .reserve(user, "big", 1_000_000)
        .expect("reserve");
    fx.accounts.charge(user, "big", 999_999).expect("charge");
    let balance = fx.accounts.balance(user).expect("balance");
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
        .expect("list")
        .iter()
        .all(|n| n.kind != NotificationKind::CreditsLow));
}

#[test]
fn ledger_pages_newest_first() {
    let fx = Fixture::new();
    let (ana, _) = fx.user("ana");
    let user = ana.id.as_str();
    for i in 1..=4 {
        fx.advance(1000);
        fx.accounts
            .reserve(user, &format!("p{i}"), i)
            .expect("reserve");
    }
    let first = fx.accounts.ledger(user, 1, 2).expect("page 1");
    assert_eq!(first.total, 5);
    let amounts: Vec<u64> = first.entries.iter().map(|e| e.amount).collect();
    assert_eq!(amounts, [4, 3]);
    assert_eq!(first.entries[0].project_id.as_deref(), Some("p4"));
    assert_eq!(first.entries[0].balance_after, 50);
    let third = fx.accounts.ledger(user, 3, 2).expect("page 3");
    assert_eq!(third.entries.len(), 1);
    assert_eq!(third.entries[0].kind, LedgerKind::Grant);
    assert!(fx
        .accounts
        .ledger(user, 4, 2)
        .expect("past the end")
        .entries
        .is_empty());
    let clamped = fx.accounts.ledger(user, 0, 1000).expect("clamped");
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
