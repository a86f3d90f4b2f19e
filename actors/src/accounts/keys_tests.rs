//! Tests of `keys`.

use super::*;
use crate::accounts::testutil::Fixture;

#[tokio::test]
async fn a_key_is_shown_once_stored_as_a_hash_and_names_its_account() {
    let fx = Fixture::new();
    let (account, _) = fx.user("ana").await;
    let (view, key) = fx
        .accounts
        .create_api_key(
            &account.id,
            "  CI bot ",
            &[Scope::Write, Scope::Read, Scope::Read],
        )
        .await
        .expect("create");
    assert_eq!(view.name, "CI bot");
    assert_eq!(view.scopes, vec![Scope::Read, Scope::Write]);
    assert!(key.starts_with("cf_"), "{key}");
    assert!(key.starts_with(&view.prefix) && view.prefix.len() == 11);
    assert_eq!(
        crate::accounts::account_of_token(&key),
        Some(account.id.as_str())
    );
    let secret = key
        .strip_prefix("cf_")
        .and_then(|k| k.strip_suffix(&format!("_{}", account.id)))
        .expect("cf_<secret>_<account>");
    assert_eq!(secret.len(), 43, "32 random bytes in unpadded base64url");
    // Only the hash is stored: the key appears nowhere in the store.
    for (_, entries) in fx.dump() {
        for (k, v) in entries {
            let (k, v) = (String::from_utf8_lossy(&k), String::from_utf8_lossy(&v));
            assert!(!k.contains(secret) && !v.contains(secret));
        }
    }

    let (found, info) = fx
        .accounts
        .api_key(&key)
        .await
        .expect("read")
        .expect("known key");
    assert_eq!(found.id, account.id);
    assert_eq!(
        (info.id.as_str(), info.allows(Scope::Publish)),
        (view.id.as_str(), false)
    );
    assert!(info.allows(Scope::Read) && info.allows(Scope::Write));
    // A session token is not a key, and a key is not a session.
    let (_, token) = fx.user("bea").await;
    assert!(fx.accounts.api_key(&token).await.expect("read").is_none());
    assert!(fx.accounts.session(&key).await.expect("read").is_none());
    let forged = format!("cf_{}_{}", "A".repeat(43), account.id);
    assert!(fx.accounts.api_key(&forged).await.expect("read").is_none());
}

#[tokio::test]
async fn listing_shows_the_last_use_and_revoking_ends_the_key() {
    let fx = Fixture::new();
    let (account, _) = fx.user("ana").await;
    let (a, key_a) = fx
        .accounts
        .create_api_key(&account.id, "reader", &[Scope::Read])
        .await
        .expect("create");
    fx.advance(1000);
    let (b, _) = fx
        .accounts
        .create_api_key(&account.id, "publisher", &[Scope::Publish])
        .await
        .expect("create");
    let listed = fx.accounts.list_api_keys(&account.id).await.expect("list");
    assert_eq!(
        listed.iter().map(|k| k.id.as_str()).collect::<Vec<_>>(),
        [a.id.as_str(), b.id.as_str()]
    );
    assert_eq!(listed[0].last_used_at, None);

    fx.accounts
        .api_key(&key_a)
        .await
        .expect("use")
        .expect("known");
    let used = fx.accounts.list_api_keys(&account.id).await.expect("list")[0].clone();
    assert_eq!(
        used.last_used_at.as_deref(),
        Some("2026-11-21T23:50:07.123Z")
    );
    // Within the minute the time is not written again.
    fx.advance(30_000);
    fx.accounts
        .api_key(&key_a)
        .await
        .expect("use")
        .expect("known");
    let again = fx.accounts.list_api_keys(&account.id).await.expect("list")[0].clone();
    assert_eq!(again.last_used_at, used.last_used_at);

    // Another account cannot revoke it; its owner can, once.
    let (other, _) = fx.user("bea").await;
    assert!(matches!(
        fx.accounts.revoke_api_key(&other.id, &a.id).await,
        Err(AccountError::NotFound(_))
    ));
    fx.accounts
        .revoke_api_key(&account.id, &a.id)
        .await
        .expect("revoke");
    assert!(fx.accounts.api_key(&key_a).await.expect("read").is_none());
    assert!(matches!(
        fx.accounts.revoke_api_key(&account.id, &a.id).await,
        Err(AccountError::NotFound(_))
    ));
    let left = fx.accounts.list_api_keys(&account.id).await.expect("list");
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].id, b.id);
}

#[tokio::test]
async fn bad_names_scopes_and_too_many_keys_change_nothing() {
    let fx = Fixture::new();
    let (account, _) = fx.user("ana").await;
    let before = fx.dump();
    for (name, scopes) in [
        ("", vec![Scope::Read]),
        ("x".repeat(101).as_str(), vec![Scope::Read]),
        ("evil\u{202E}", vec![Scope::Read]),
        ("fine", vec![]),
    ] {
        let got = fx.accounts.create_api_key(&account.id, name, &scopes).await;
        assert!(matches!(got, Err(AccountError::InvalidInput(_))), "{got:?}");
    }
    assert!(matches!(
        parse_scopes(&["read", "admin"]),
        Err(AccountError::InvalidInput(m)) if m.contains("admin")
    ));
    assert_eq!(
        parse_scopes(&["publish", "read", "publish"]).expect("valid"),
        vec![Scope::Read, Scope::Publish]
    );
    // A failed write leaves no half of a key behind.
    fx.fail_writes(true);
    assert!(fx
        .accounts
        .create_api_key(&account.id, "ok", &[Scope::Read])
        .await
        .is_err());
    fx.fail_writes(false);
    assert_eq!(fx.dump(), before);

    for i in 0..MAX_API_KEYS {
        fx.accounts
            .create_api_key(&account.id, &format!("k{i}"), &[Scope::Read])
            .await
            .expect("within the limit");
    }
    assert!(matches!(
        fx.accounts
            .create_api_key(&account.id, "one more", &[Scope::Read])
            .await,
        Err(AccountError::Conflict(_))
    ));
}

/// The keys an account's actor holds answer key checks, and every key
/// change the actor commits reaches them: a revoked key is gone from
/// memory at once, a new one is there. The time of use is still noted in
/// the store, at most once a minute.
#[tokio::test]
async fn held_keys_follow_the_actors_commits() {
    use crate::accounts::HeldAccount;
    use std::sync::Arc;
    let fx = Fixture::new();
    let (account, _) = fx.user("ana").await;
    let (other, _) = fx.user("bea").await;
    let user = account.id.as_str();
    let slot = Arc::new(HeldAccount::new(user));
    let a = fx.accounts.acting_for(slot.clone());
    let (first, key) = a
        .create_api_key(user, "first", &[Scope::Read])
        .await
        .expect("create");
    let (_, foreign) = fx
        .accounts
        .create_api_key(&other.id, "hers", &[Scope::Read])
        .await
        .expect("create");
    a.load_held_sessions().await.expect("load");
    assert!(
        !slot.loaded().expect("loaded").holds_keys(),
        "loaded only when a key check asks"
    );
    a.load_held_keys().await.expect("load");
    let held = slot.loaded().expect("loaded");
    assert!(held.holds_keys());
    let info = a.held_api_key(&held, &key).await.expect("held");
    assert_eq!(
        (info.id.as_str(), info.scopes.as_slice()),
        (first.id.as_str(), &[Scope::Read][..])
    );
    assert!(
        a.held_api_key(&held, &foreign).await.is_none(),
        "another account's key"
    );
    assert!(a.held_api_key(&held, "cf_unknown").await.is_none());

    // Noted once a minute: the first check wrote it, the next within the
    // minute does not, one after it does.
    let stored = async |k: &str| {
        fx.accounts
            .list_api_keys(user)
            .await
            .unwrap()
            .into_iter()
            .find(|v| v.id == k)
            .unwrap()
    };
    let noted = stored(&first.id).await.last_used_at.expect("noted");
    fx.advance(30_000);
    a.held_api_key(&held, &key).await.expect("held");
    assert_eq!(
        stored(&first.id).await.last_used_at.as_deref(),
        Some(noted.as_str())
    );
    fx.advance(31_000);
    a.held_api_key(&held, &key).await.expect("held");
    assert_ne!(
        stored(&first.id).await.last_used_at.as_deref(),
        Some(noted.as_str())
    );

    // A key made after the load is held; a revoked one is gone, though the
    // check never went to the store.
    let (second, key2) = a
        .create_api_key(user, "second", &[Scope::Write])
        .await
        .expect("create");
    let held = slot.loaded().expect("loaded");
    assert_eq!(
        a.held_api_key(&held, &key2).await.expect("new key held").id,
        second.id
    );
    a.revoke_api_key(user, &first.id).await.expect("revoke");
    let held = slot.loaded().expect("loaded");
    assert!(a.held_api_key(&held, &key).await.is_none(), "revoked");
    assert!(fx
        .accounts
        .api_key_info(&key)
        .await
        .expect("read")
        .is_none());
    assert!(a.held_api_key(&held, &key2).await.is_some());
}
