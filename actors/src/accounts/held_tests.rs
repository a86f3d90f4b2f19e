//! Tests of `held` and `held_parts`: the parts of an account held in its
//! actor's memory, answered from there, kept in step by the versioned
//! commit and reloaded when the account was written elsewhere.

use std::sync::Arc;

use super::*;
use crate::accounts::auth::token_hash;
use crate::accounts::store;
use crate::accounts::testutil::Fixture;
use crate::accounts::{AccountError, Accounts, NotificationKind, PlanTable, Said, TemplateInput};
use crate::storage::kv::KvStore;

/// `fx`'s accounts acting for `user_id`, as its actor would.
fn acting(fx: &Fixture, user_id: &str) -> (Accounts, Arc<HeldAccount>) {
    let slot = Arc::new(HeldAccount::new(user_id));
    (fx.accounts.acting_for(slot.clone()), slot)
}

fn named(name: &str) -> TemplateInput {
    TemplateInput {
        name: Some(name.to_string()),
        ..TemplateInput::default()
    }
}

async fn template_names(a: &Accounts, user_id: &str) -> Vec<String> {
    let mut names: Vec<String> = a
        .list_templates(user_id)
        .await
        .expect("list")
        .into_iter()
        .map(|t| t.name)
        .collect();
    names.sort();
    names
}

/// Removes every entry of `tree` under `user/` behind the accounts' back
/// (no version change): what memory answers afterwards came from memory.
fn wipe(fx: &Fixture, tree: &str, user_id: &str) {
    for (key, _) in fx
        .kv
        .scan_prefix(tree, &user_prefix(user_id))
        .expect("scan")
    {
        fx.kv.delete(tree, &key).expect("delete");
    }
}

#[tokio::test]
async fn parts_are_loaded_on_first_need_and_then_answered_from_memory() {
    let fx = Fixture::new();
    let (account, token) = fx.user("ana").await;
    let user = account.id.as_str();
    let (a, slot) = acting(&fx, user);
    a.create_template(user, &named("Big"))
        .await
        .expect("create");
    a.notify(
        user,
        NotificationKind::PlanChanged,
        &Said::new("Plan", "now pro"),
        None,
    )
    .await
    .expect("notify");
    // Only what these commands needed was loaded (the templates for the
    // cap on their number, the notifications for theirs).
    let held = slot.loaded().expect("loaded");
    assert!(!held.holds_sessions(), "no command needed the sessions");
    assert!(held.storage().is_none(), "nor the storage counter");

    assert_eq!(template_names(&a, user).await, ["Big", "Default"]);
    assert_eq!(a.notifications(user).await.expect("list").len(), 1);
    a.load_held_sessions().await.expect("sessions");
    assert_eq!(a.storage_used(user).await.expect("used"), 0);
    let held = slot.loaded().expect("loaded");
    assert!(held.holds_sessions() && held.storage() == Some(0));

    // The store loses them behind the memory's back: memory still answers.
    wipe(&fx, store::TEMPLATES, user);
    wipe(&fx, store::NOTIFICATIONS, user);
    fx.kv
        .delete(store::SESSIONS, token_hash(&token).as_bytes())
        .expect("delete");
    fx.kv
        .put(
            store::STORAGE,
            user.as_bytes(),
            &crate::storage::kv::encode(&7u64).expect("encode"),
        )
        .expect("put");
    assert_eq!(template_names(&a, user).await, ["Big", "Default"]);
    assert_eq!(a.notifications(user).await.expect("list").len(), 1);
    let held = slot.loaded().expect("loaded");
    let (who, _) = a.held_session(&held, &token).expect("session from memory");
    assert_eq!(who.id, user);
    assert_eq!(a.storage_used(user).await.expect("used"), 0);
    // The shared accounts read the store.
    assert!(fx
        .accounts
        .session(&token)
        .await
        .expect("session")
        .is_none());
    assert_eq!(
        fx.accounts.list_templates(user).await.expect("list").len(),
        0
    );
    assert_eq!(fx.accounts.storage_used(user).await.expect("used"), 7);
    assert!(fx
        .accounts
        .held_notification_list(&held)
        .is_some_and(|l| l.len() == 1));

    // Unloaded (passivation): everything comes from the store again.
    slot.unload();
    assert!(a.notifications(user).await.expect("list").is_empty());
    assert_eq!(a.storage_used(user).await.expect("used"), 7);
}

#[tokio::test]
async fn commits_keep_the_held_parts_in_step() {
    let fx = Fixture::new();
    let (account, token) = fx.user("bo").await;
    let user = account.id.as_str();
    let (a, slot) = acting(&fx, user);
    a.load_held_sessions().await.expect("sessions");
    assert_eq!(template_names(&a, user).await, ["Default"]);
    assert!(a.notifications(user).await.expect("list").is_empty());
    assert_eq!(a.storage_used(user).await.expect("used"), 0);

    let created = a
        .create_template(user, &named("Small"))
        .await
        .expect("create");
    a.notify(
        user,
        NotificationKind::CreditsLow,
        &Said::new("Low", "top up"),
        None,
    )
    .await
    .expect("notify");
    a.add_storage(user, 1000).await.expect("add");
    let (_, second) = a
        .sign_in("bo@example.com", "correct horse", "")
        .await
        .expect("sign in");

    let held = slot.loaded().expect("loaded");
    assert_eq!(held.storage(), Some(1000));
    assert_eq!(held.templates.as_ref().expect("held").len(), 2);
    assert!(a.held_session(&held, &token).is_some());
    assert!(a.held_session(&held, &second).is_some());
    let list = a.held_notification_list(&held).expect("held");
    assert_eq!(list.len(), 1);
    assert!(!list[0].read);

    a.mark_all_read(user).await.expect("read");
    a.delete_template(user, &created.id).await.expect("delete");
    a.sign_out(&token).await.expect("sign out");
    let held = slot.loaded().expect("loaded");
    assert!(a.held_notification_list(&held).expect("held")[0].read);
    assert_eq!(held.templates.as_ref().expect("held").len(), 1);
    assert!(a.held_session(&held, &token).is_none(), "signed out");
    assert!(a.held_session(&held, &second).is_some());

    // Memory and a fresh load from the store agree.
    let fresh = {
        let (b, other) = acting(&fx, user);
        b.load_held_sessions().await.expect("sessions");
        b.list_templates(user).await.expect("list");
        b.notifications(user).await.expect("list");
        b.storage_used(user).await.expect("used");
        other.loaded().expect("loaded")
    };
    assert_eq!(fresh.version, held.version);
    assert_eq!(fresh.sessions, held.sessions);
    assert_eq!(fresh.templates, held.templates);
    assert_eq!(fresh.notifications, held.notifications);
    assert_eq!(fresh.storage, held.storage);
}

#[tokio::test]
async fn a_write_from_another_accounts_makes_the_actor_reload() {
    let fx = Fixture::new();
    let (account, token) = fx.user("cy").await;
    let user = account.id.as_str();
    let (a, slot) = acting(&fx, user);
    assert_eq!(template_names(&a, user).await, ["Default"]);
    a.load_held_sessions().await.expect("sessions");

    // A second `Accounts` over the same store (another node's actor).
    let other = Accounts::new(fx.kv.clone(), PlanTable::default());
    let b_slot = Arc::new(HeldAccount::new(user));
    let b = other.acting_for(b_slot.clone());
    b.create_template(user, &named("Theirs"))
        .await
        .expect("create elsewhere");
    b.sign_out(&token).await.expect("sign out elsewhere");

    // The stale memory is refused at its next write, writing nothing.
    let before = fx.dump();
    let refused = a.create_template(user, &named("Mine")).await;
    assert!(
        matches!(refused, Err(AccountError::Conflict(_))),
        "{refused:?}"
    );
    assert_eq!(fx.dump(), before);
    assert!(slot.take_stale(), "marked stale");
    // The actor reloads and runs the command again.
    slot.unload();
    a.create_template(user, &named("Mine"))
        .await
        .expect("create again");
    assert_eq!(
        template_names(&a, user).await,
        ["Default", "Mine", "Theirs"]
    );
    a.load_held_sessions().await.expect("sessions");
    let held = slot.loaded().expect("loaded");
    assert!(
        a.held_session(&held, &token).is_none(),
        "signed out elsewhere"
    );

    // A part loaded after the store moved on brings the rest along.
    b_slot.unload();
    b.update_profile(user, "Cy Elsewhere")
        .await
        .expect("rename elsewhere");
    assert_eq!(a.storage_used(user).await.expect("used"), 0);
    let held = slot.loaded().expect("loaded");
    assert_eq!(held.account().expect("account").name, "Cy Elsewhere");
    assert_eq!(
        held.version,
        fx.accounts.stored_version(user).await.expect("version")
    );
}

#[tokio::test]
async fn a_failed_write_leaves_memory_as_it_was() {
    let fx = Fixture::new();
    let (account, token) = fx.user("di").await;
    let user = account.id.as_str();
    let (a, slot) = acting(&fx, user);
    a.load_held_sessions().await.expect("sessions");
    assert_eq!(template_names(&a, user).await, ["Default"]);
    assert!(a.notifications(user).await.expect("list").is_empty());
    assert_eq!(a.storage_used(user).await.expect("used"), 0);
    let before = slot.loaded().expect("loaded");

    fx.fail_writes(true);
    assert!(a.create_template(user, &named("Lost")).await.is_err());
    assert!(a.sign_out(&token).await.is_err());
    assert!(a.add_storage(user, 5).await.is_err());
    assert!(a
        .notify(
            user,
            NotificationKind::PlanChanged,
            &Said::new("Plan", "x"),
            None
        )
        .await
        .is_err());
    fx.fail_writes(false);

    let after = slot.loaded().expect("loaded");
    assert_eq!(after.version, before.version);
    assert_eq!(after.templates, before.templates);
    assert_eq!(after.sessions, before.sessions);
    assert_eq!(after.notifications, before.notifications);
    assert_eq!(after.storage, before.storage);
    assert!(a.held_session(&after, &token).is_some());
    assert_eq!(template_names(&a, user).await, ["Default"]);
}

#[tokio::test]
async fn a_notification_written_outside_the_actor_moves_the_version_on() {
    let fx = Fixture::new();
    let (account, _) = fx.user("ed").await;
    let user = account.id.as_str();
    let (a, slot) = acting(&fx, user);
    assert!(a.notifications(user).await.expect("list").is_empty());
    let version = slot.loaded().expect("loaded").version;

    // The publishing engine's write: outside the actor, on the shared value.
    fx.accounts
        .notify_with(
            user,
            NotificationKind::PostPublished,
            &Said::new("Posted", "ok"),
            Vec::new(),
            None,
            None,
        )
        .await
        .expect("notify")
        .expect("the account exists");
    assert_eq!(
        fx.accounts.stored_version(user).await.expect("version"),
        version + 1
    );
    // The held memory is refused at its next write, and reloaded.
    assert!(a.mark_all_read(user).await.is_err());
    assert!(slot.take_stale());
    slot.unload();
    assert_eq!(a.mark_all_read(user).await.expect("read"), 1);
}

#[tokio::test]
async fn unloading_during_a_load_keeps_the_old_read_out_of_memory() {
    let fx = Fixture::new();
    let (account, _) = fx.user("fa").await;
    let user = account.id.as_str();
    let (a, slot) = acting(&fx, user);
    let (held, generation) = a.load_held(&slot).await.expect("load");
    slot.unload();
    a.hold_part(&slot, generation, &held, |h| h.storage = Some(1));
    assert!(slot.loaded().is_none(), "dropped since the read");
}
