//! Tests of `auth`.

use super::*;
use crate::accounts::testutil::{Fixture, TREES};
use crate::storage::kv::KvStore;

#[tokio::test]
async fn sign_up_creates_account_template_credits_and_session() {
    let fx = Fixture::new();
    let (account, token) = fx
        .accounts
        .sign_up("  Ana.Lima@Example.COM ", "correct horse", "  Ana Lima ")
        .await
        .expect("sign up");
    assert_eq!(account.email, "ana.lima@example.com");
    assert_eq!(account.name, "Ana Lima");
    assert_eq!(account.plan, Plan::Free);
    // `<account id>.<32 random bytes in unpadded base64url>`; the id is the
    // one every node derives from the email.
    let (id, secret) = token.split_once('.').expect("account id prefix");
    assert_eq!(id, account.id);
    assert_eq!(
        id,
        crate::accounts::account_id_for_email("ana.lima@example.com")
    );
    assert_eq!(super::account_of_token(&token), Some(id));
    assert_eq!(secret.len(), 43, "32 bytes in unpadded base64url");

    let (session_account, info) = fx
        .accounts
        .session(&token)
        .await
        .expect("read")
        .expect("session");
    assert_eq!(session_account, account);
    assert_eq!(info.user_id, account.id);
    assert_eq!(info.expires_at, "2026-12-21T23:50:06.123Z");

    let templates = fx
        .accounts
        .list_templates(&account.id)
        .await
        .expect("templates");
    assert_eq!(templates.len(), 1);
    assert!(templates[0].is_default);
    assert_eq!(templates[0].name, "Default");
    assert_eq!(templates[0].id, account.default_template_id);

    let balance = fx.accounts.balance(&account.id).await.expect("balance");
    assert_eq!((balance.credits, balance.total_credits), (60, 60));
    let ledger = fx
        .accounts
        .ledger(&account.id, 1, 20)
        .await
        .expect("ledger");
    assert_eq!(ledger.total, 1);
}

#[tokio::test]
async fn sign_up_validates_and_refuses_taken_emails() {
    let fx = Fixture::new();
    let field_of = |result: Result<(Account, String)>| match result {
        Err(AccountError::InvalidInput(message)) => {
            message.split(':').next().unwrap_or_default().to_string()
        }
        other => panic!("expected InvalidInput, got {other:?}"),
    };
    let accounts = &fx.accounts;
    for bad in [
        "",
        "no-at-sign",
        "a@b",
        "a@.com",
        "a b@x.com",
        "@x.com",
        "a@x..com",
    ] {
        assert_eq!(
            field_of(accounts.sign_up(bad, "correct horse", "A").await),
            "email",
            "{bad}"
        );
    }
    assert_eq!(
        field_of(accounts.sign_up("a@x.com", "short", "A").await),
        "password"
    );
    assert_eq!(
        field_of(accounts.sign_up("a@x.com", "correct horse", "  ").await),
        "name"
    );
    let long_name = "n".repeat(101);
    assert_eq!(
        field_of(
            accounts
                .sign_up("a@x.com", "correct horse", &long_name)
                .await
        ),
        "name"
    );
    assert!(
        fx.dump().iter().all(|(_, entries)| entries.is_empty()),
        "nothing stored"
    );

    fx.user("ana").await;
    let err = accounts
        .sign_up("ANA@example.com", "another pass", "Other Ana")
        .await
        .expect_err("taken");
    assert!(matches!(err, AccountError::Conflict(_)), "{err:?}");
}

#[tokio::test]
async fn sign_in_checks_the_password_and_sign_out_ends_the_session() {
    let fx = Fixture::new();
    let (account, first) = fx.user("ana").await;
    let err = fx
        .accounts
        .sign_in("ana@example.com", "wrong horse", "10.0.0.1")
        .await
        .expect_err("wrong password");
    assert!(matches!(err, AccountError::InvalidCredentials), "{err:?}");
    let err = fx
        .accounts
        .sign_in("nobody@example.com", "correct horse", "10.0.0.1")
        .await
        .expect_err("unknown email");
    assert!(matches!(err, AccountError::InvalidCredentials), "{err:?}");

    let (signed_in, second) = fx
        .accounts
        .sign_in(" ANA@example.com", "correct horse", "10.0.0.1")
        .await
        .expect("sign in");
    assert_eq!(signed_in.id, account.id);
    assert_ne!(first, second);
    fx.accounts.sign_out(&second).await.expect("sign out");
    assert_eq!(fx.accounts.session(&second).await.expect("read"), None);
    fx.accounts
        .sign_out(&second)
        .await
        .expect("signing out twice is fine");
    assert!(
        fx.accounts.session(&first).await.expect("read").is_some(),
        "other session kept"
    );
    assert_eq!(
        fx.accounts.session("not a token").await.expect("read"),
        None
    );
}

#[tokio::test]
async fn sign_in_failures_are_rate_limited() {
    let fx = Fixture::new();
    fx.user("ana").await;
    let sign_in = async |password: &str, client: &str| {
        fx.accounts
            .sign_in("ana@example.com", password, client)
            .await
    };
    // Failures below the limit are forgiven by a success.
    for _ in 0..4 {
        sign_in("wrong horse", "10.0.0.1").await.expect_err("wrong");
    }
    sign_in("correct horse", "10.0.0.1")
        .await
        .expect("success resets");
    for _ in 0..5 {
        let err = sign_in("wrong horse", "10.0.0.2").await.expect_err("wrong");
        assert!(matches!(err, AccountError::InvalidCredentials), "{err:?}");
    }
    // Now even the right password from that address is refused...
    match sign_in("correct horse", "10.0.0.2").await {
        Err(AccountError::RateLimited { retry_after_secs }) => {
            assert!((1..=900).contains(&retry_after_secs), "{retry_after_secs}")
        }
        other => panic!("expected RateLimited, got {other:?}"),
    }
    // ...but the owner at another address is not locked out.
    sign_in("correct horse", "10.0.0.3")
        .await
        .expect("other address");
    fx.advance(15 * 60 * 1000);
    sign_in("correct horse", "10.0.0.2")
        .await
        .expect("window passed");
}

#[tokio::test]
async fn tokens_are_stored_only_as_hashes() {
    let fx = Fixture::new();
    let (account, token) = fx.user("ana").await;
    let (_, second) = fx
        .accounts
        .sign_in("ana@example.com", "correct horse", "")
        .await
        .expect("sign in");
    for raw in [&token, &second] {
        for (tree, entries) in fx.dump() {
            for (key, value) in entries {
                let contains = |hay: &[u8]| hay.windows(raw.len()).any(|w| w == raw.as_bytes());
                assert!(
                    !contains(&key) && !contains(&value),
                    "raw token in tree {tree}"
                );
            }
        }
    }
    let stored = fx.kv.scan_prefix(SESSIONS, b"").expect("scan");
    let keys: Vec<&[u8]> = stored.iter().map(|(k, _)| k.as_slice()).collect();
    assert!(keys.contains(&token_hash(&token).as_bytes()));
    assert!(keys.contains(&token_hash(&second).as_bytes()));
    assert_eq!(token_hash(&token).len(), 64);
    let stored_user = fx
        .accounts
        .stored_account(&account.id)
        .await
        .expect("account");
    assert!(
        stored_user.password_hash.starts_with("$argon2id$"),
        "PHC string"
    );
    assert!(!stored_user.password_hash.contains("correct horse"));
    assert!(TREES.contains(&SESSIONS));
}

#[tokio::test]
async fn sessions_expire_after_30_days() {
    let fx = Fixture::new();
    let (_, token) = fx.user("ana").await;
    fx.advance(SESSION_TTL_MS - 1);
    assert!(fx.accounts.session(&token).await.expect("read").is_some());
    fx.advance(1);
    assert_eq!(fx.accounts.session(&token).await.expect("read"), None);
    assert!(fx.kv.scan_prefix(SESSIONS, b"").expect("scan").is_empty());
    assert!(fx
        .kv
        .scan_prefix(USER_SESSIONS, b"")
        .expect("scan")
        .is_empty());
}

#[tokio::test]
async fn change_password_revokes_other_sessions_only_when_asked() {
    let fx = Fixture::new();
    let (account, current) = fx.user("ana").await;
    let sign_in = async |password: &str| fx.accounts.sign_in("ana@example.com", password, "").await;
    let (_, other) = sign_in("correct horse").await.expect("sign in");
    let id = account.id.as_str();

    let err = fx
        .accounts
        .change_password(id, &current, "wrong horse", "new horse 1", true)
        .await
        .expect_err("wrong current password");
    assert!(matches!(err, AccountError::InvalidCredentials), "{err:?}");
    let (bob, bob_token) = fx.user("bob").await;
    let err = fx
        .accounts
        .change_password(id, &bob_token, "correct horse", "new horse 1", true)
        .await
        .expect_err("another user's session");
    assert!(matches!(err, AccountError::Unauthorized), "{err:?}");

    fx.accounts
        .change_password(id, &current, "correct horse", "new horse 1", false)
        .await
        .expect("change, keep sessions");
    assert!(fx.accounts.session(&other).await.expect("read").is_some());
    assert!(matches!(
        sign_in("correct horse").await,
        Err(AccountError::InvalidCredentials)
    ));
    let (_, third) = sign_in("new horse 1").await.expect("new password");

    fx.accounts
        .change_password(id, &current, "new horse 1", "new horse 2", true)
        .await
        .expect("change, revoke others");
    assert!(
        fx.accounts.session(&current).await.expect("read").is_some(),
        "current kept"
    );
    assert_eq!(fx.accounts.session(&other).await.expect("read"), None);
    assert_eq!(fx.accounts.session(&third).await.expect("read"), None);
    assert!(
        fx.accounts
            .session(&bob_token)
            .await
            .expect("read")
            .is_some(),
        "bob untouched"
    );
    assert_eq!(
        fx.accounts.get_account(&bob.id).await.expect("bob").name,
        "bob"
    );
    sign_in("new horse 2").await.expect("newest password");
}

#[tokio::test]
async fn profile_and_avatar() {
    let fx = Fixture::new();
    let (account, _) = fx.user("ana").await;
    let updated = fx
        .accounts
        .update_profile(&account.id, " Ana Maria ")
        .await
        .expect("update");
    assert_eq!(updated.name, "Ana Maria");
    assert!(matches!(
        fx.accounts.update_profile(&account.id, "").await,
        Err(AccountError::InvalidInput(_))
    ));
    let first = "avatars/a/1.png".to_string();
    assert_eq!(
        fx.accounts
            .set_avatar(&account.id, Some(first.clone()))
            .await
            .expect("set"),
        None
    );
    let second = Some("avatars/a/2.png".to_string());
    assert_eq!(
        fx.accounts
            .set_avatar(&account.id, second.clone())
            .await
            .expect("set"),
        Some(first)
    );
    assert_eq!(
        fx.accounts
            .set_avatar(&account.id, None)
            .await
            .expect("clear"),
        second
    );
    let view = fx
        .accounts
        .get_account(&account.id)
        .await
        .expect("get")
        .view(None);
    let json = serde_json::to_value(&view).expect("json");
    assert_eq!(json["name"], "Ana Maria");
    assert_eq!(json["createdAt"], "2026-11-21T23:50:06.123Z");
    assert!(json["image"].is_null());
    assert!(matches!(
        fx.accounts.get_account("no-such-user").await,
        Err(AccountError::NotFound("account"))
    ));
}

#[tokio::test]
async fn failed_writes_leave_nothing_behind() {
    let fx = Fixture::new();
    let (account, token) = fx.user("ana").await;
    let before = fx.dump();
    fx.fail_writes(true);
    let result = fx
        .accounts
        .sign_up("bob@example.com", "correct horse", "Bob")
        .await;
    assert!(
        matches!(result, Err(AccountError::Storage(_))),
        "{result:?}"
    );
    assert!(fx
        .accounts
        .change_password(&account.id, &token, "correct horse", "new horse 1", true)
        .await
        .is_err());
    assert_eq!(fx.dump(), before);
    fx.fail_writes(false);
    fx.user("bob").await;
}

#[tokio::test]
async fn data_survives_a_sled_reopen() {
    use crate::storage::kv::SledStore;
    use std::sync::Arc;

    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db");
    let (user_id, token) = {
        let kv = Arc::new(SledStore::open(&path).expect("open"));
        let accounts = Accounts::new(kv, Default::default());
        let (account, token) = accounts
            .sign_up("ana@example.com", "correct horse", "Ana")
            .await
            .expect("sign up");
        accounts
            .reserve(&account.id, "p1", 25)
            .await
            .expect("reserve");
        accounts
            .notify(
                &account.id,
                crate::accounts::NotificationKind::ProjectCompleted,
                &crate::accounts::Said::new("Done", "3 clips"),
                None,
            )
            .await
            .expect("notify");
        (account.id, token)
    };
    // Another test's child process (ffmpeg, started in parallel) may hold
    // a copy of the lock's file descriptor until it has executed its
    // program: wait for it as a restarted server does.
    let kv = Arc::new(
        SledStore::open_waiting(
            &path,
            crate::storage::kv::DEFAULT_CACHE_BYTES,
            std::time::Duration::from_secs(10),
        )
        .expect("reopen"),
    );
    let accounts = Accounts::new(kv, Default::default());
    let (account, _) = accounts
        .session(&token)
        .await
        .expect("read")
        .expect("session");
    assert_eq!(account.id, user_id);
    let balance = accounts.balance(&user_id).await.expect("balance");
    assert_eq!((balance.credits, balance.reserved), (35, 25));
    accounts.charge(&user_id, "p1", 20).await.expect("charge");
    assert_eq!(
        accounts.balance(&user_id).await.expect("balance").credits,
        40
    );
    assert_eq!(
        accounts
            .list_templates(&user_id)
            .await
            .expect("templates")
            .len(),
        1
    );
    assert_eq!(
        accounts
            .notifications(&user_id)
            .await
            .expect("notifications")
            .len(),
        1
    );
    accounts
        .sign_in("ana@example.com", "correct horse", "127.0.0.1")
        .await
        .expect("sign in after reopen");
}

#[test]
fn token_hash_is_the_sha256_hex() {
    use sha2::{Digest, Sha256};
    for token in [
        "",
        "abc",
        "cf_x_00000000-0000-0000-0000-000000000000",
        "é.ü",
    ] {
        assert_eq!(
            token_hash(token),
            hex::encode(Sha256::digest(token.as_bytes()))
        );
    }
}
