//! Tests of the account actor: its memory and its versioned
//! writes, on one node and on two nodes sharing one store.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::accounts::actor::Reserved;
use crate::accounts::actor::{AccountMsg, Part};
use crate::accounts::testutil::{FlakyStore, TREES};
use crate::accounts::Account;
use crate::accounts::{hash_password, AccountError, PlanTable};
use crate::captions::template::CaptionStyle;
use crate::storage::kv::KvOp;
use crate::storage::kv::KvStore;

/// A reservation's records: none, counting how often the actor asked
/// for them (once per run of the message).
struct Counted(Arc<AtomicUsize>);

impl Reserved for Counted {
    fn ops(&self, _: &CaptionStyle) -> Result<Vec<KvOp>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(Vec::new())
    }
}

/// One node: its accounts domain and account actors, over a shared store.
#[derive(Clone)]
struct Node {
    accounts: Arc<Accounts>,
    users: Arc<UserRegistry>,
}

/// A running tree's `accounts` branch, restarting nothing (these tests
/// watch the registry and the store; supervision has its own tests).
async fn accounts_branch() -> Arc<crate::supervisor::Branch> {
    struct Unwatched;
    #[async_trait::async_trait]
    impl crate::supervisor::Children for Unwatched {
        fn identify(&self, _: &ractor::ActorCell) -> Option<String> {
            None
        }
        async fn restart(
            &self,
            id: &str,
            _: &ractor::ActorCell,
            _: ractor::ActorCell,
        ) -> std::result::Result<(), crate::supervisor::SupervisionError> {
            Err(crate::supervisor::SupervisionError::NotAChild(id.into()))
        }
        async fn give_up(&self, _: &str, _: &ractor::ActorCell, _: &str) {}
        async fn started(&self, _: ractor::ActorCell, _: u32) {}
    }
    use crate::supervisor::policy;
    let tree = Arc::new(crate::supervisor::Tree::default());
    tree.start().await.expect("the tree starts");
    let (child, own) = (policy::ACCOUNT, policy::ACCOUNTS);
    tree.start_branch(&tree.accounts, child, own, Arc::new(Unwatched))
        .await
        .expect("the accounts branch starts");
    tree.accounts.clone()
}

impl Node {
    async fn new(kv: &Arc<FlakyStore>) -> Self {
        Self {
            accounts: Arc::new(Accounts::new(kv.clone(), PlanTable::default())),
            users: Arc::new(UserRegistry::new(accounts_branch().await)),
        }
    }

    async fn call<T: Send + 'static>(
        &self,
        user_id: &str,
        build: impl FnOnce(Reply<T>) -> AccountMsg,
    ) -> Result<T> {
        self.users.call(&self.accounts, user_id, build).await
    }

    /// Signs up `local@example.com` named `name` in its account's actor.
    async fn sign_up(&self, local: &str, name: &str, hash: &str) -> Result<String> {
        let email = format!("{local}@example.com");
        let id = crate::accounts::account_id_for_email(&email);
        self.call(&id, |reply| AccountMsg::SignUp {
            email,
            name: name.to_string(),
            password_hash: hash.to_string(),
            reply,
        })
        .await
        .map(|(account, _)| account.id)
    }

    async fn rename(&self, user_id: &str, name: &str) -> Result<Account> {
        let name = name.to_string();
        self.call(user_id, |reply| AccountMsg::UpdateProfile { name, reply })
            .await
    }

    /// Reserves `credits` for `project`; `runs` counts the runs.
    async fn reserve(
        &self,
        user_id: &str,
        project: &str,
        credits: u64,
        runs: &Arc<AtomicUsize>,
    ) -> Result<CaptionStyle> {
        self.call(user_id, |reply| AccountMsg::Reserve {
            project_id: project.to_string(),
            credits,
            template: "default".into(),
            records: Box::new(Counted(runs.clone())),
            reply,
        })
        .await
    }

    fn held(&self, user_id: &str) -> Arc<Held> {
        self.users
            .held(user_id)
            .expect("the actor holds the account")
    }
}

fn dump(kv: &FlakyStore) -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
    TREES
        .iter()
        .map(|tree| kv.scan_prefix(tree, b"").expect("scan"))
        .collect()
}

fn name(held: &Held) -> String {
    held.account().expect("an account").name
}

/// The state as stored, loaded by a fresh memory.
async fn stored(node: &Node, user_id: &str) -> Arc<Held> {
    node.accounts
        .acting_for(Arc::new(HeldAccount::new(user_id)))
        .held_state()
        .await
        .expect("load")
        .expect("acting for the account")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_are_answered_from_memory_after_a_write() {
    let kv = Arc::new(FlakyStore::default());
    let node = Node::new(&kv).await;
    let hash = hash_password("correct horse").expect("hash");
    let id = node.sign_up("ana", "Ana", &hash).await.expect("sign up");
    let held = node.held(&id);
    assert_eq!((held.version, name(&held)), (1, "Ana".to_string()));
    let credits = node.accounts.held_balance(&held).expect("no renewal due");
    assert_eq!((credits.credits, credits.reserved), (60, 0));

    node.rename(&id, "Ana Lima").await.expect("update");
    let runs = Arc::new(AtomicUsize::new(0));
    node.reserve(&id, "p1", 10, &runs).await.expect("reserve");
    let held = node.held(&id);
    assert_eq!((held.version, name(&held)), (3, "Ana Lima".to_string()));
    let credits = node.accounts.held_balance(&held).expect("no renewal due");
    assert_eq!((credits.credits, credits.reserved), (50, 10));

    // Changed behind the actor's back (which no writer may do): reads and
    // the actor's commands still see what the actor holds.
    let mut record = node.held(&id).account.clone().expect("an account");
    record.name = "Behind its back".into();
    crate::storage::kv::put_value(kv.as_ref(), "accounts.users", id.as_bytes(), &record)
        .expect("put");
    assert_eq!(name(&node.held(&id)), "Ana Lima");
    let account = node.call(&id, AccountMsg::Get).await;
    assert_eq!(account.expect("account").name, "Ana Lima");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_write_leaves_memory_and_store_unchanged() {
    let kv = Arc::new(FlakyStore::default());
    let node = Node::new(&kv).await;
    let hash = hash_password("correct horse").expect("hash");
    let id = node.sign_up("ana", "Ana", &hash).await.expect("sign up");
    let before = node.held(&id);
    let stored_before = dump(&kv);

    kv.fail_writes(true);
    let err = node
        .rename(&id, "Other")
        .await
        .expect_err("the store refuses the write");
    assert!(matches!(err, AccountError::Storage(_)), "{err:?}");
    let runs = Arc::new(AtomicUsize::new(0));
    let err = node
        .reserve(&id, "p1", 10, &runs)
        .await
        .expect_err("the store refuses the write");
    assert!(matches!(err, AccountError::Storage(_)), "{err:?}");
    let after = node.held(&id);
    assert_eq!(after.version, before.version);
    assert_eq!(after.account, before.account);
    assert_eq!(after.credits, before.credits);
    assert_eq!(dump(&kv), stored_before, "nothing written");

    kv.fail_writes(false);
    node.rename(&id, "Other").await.expect("update");
    let after = node.held(&id);
    assert_eq!((after.version, name(&after)), (2, "Other".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_sign_ups_with_one_email_make_one_account() {
    let kv = Arc::new(FlakyStore::default());
    let nodes = [Node::new(&kv).await, Node::new(&kv).await];
    let hash = hash_password("correct horse").expect("hash");
    let id = crate::accounts::account_id_for_email("same@example.com");
    // Both nodes' actors hold "no account yet" before any sign-up runs.
    for node in &nodes {
        let held = node.call(&id, AccountMsg::HeldState).await.expect("load");
        assert!(held.expect("held").account.is_none());
    }
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..8 {
        let node = nodes[i % 2].clone();
        let hash = hash.clone();
        tasks.spawn(async move { node.sign_up("same", &format!("Name {i}"), &hash).await });
    }
    let mut created = 0;
    while let Some(result) = tasks.join_next().await {
        match result.expect("task") {
            Ok(account) => {
                assert_eq!(account, id);
                created += 1;
            }
            Err(AccountError::Conflict(_)) => {}
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    assert_eq!(created, 1, "exactly one sign-up creates the account");
    for tree in ["accounts.users", "accounts.emails", "accounts.sessions"] {
        assert_eq!(kv.count_prefix(tree, b"").expect("count"), 1, "{tree}");
    }
    assert_eq!(stored(&nodes[0], &id).await.version, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_write_is_refused_then_reloaded_and_run_again() {
    let kv = Arc::new(FlakyStore::default());
    let (a, b) = (Node::new(&kv).await, Node::new(&kv).await);
    let hash = hash_password("correct horse").expect("hash");
    let id = a.sign_up("ana", "Ana", &hash).await.expect("sign up");
    assert_eq!(a.held(&id).version, 1);

    // Node B (which owns the account a moment later) reserves 10 credits:
    // A's memory is now stale.
    let runs = Arc::new(AtomicUsize::new(0));
    b.reserve(&id, "p1", 10, &runs).await.expect("reserve on B");
    assert_eq!(a.held(&id).version, 1);

    // A renames the account from its stale memory: the write is refused,
    // A reloads and handles the message again; B's reservation is not lost.
    assert_eq!(kv.conflicts(), 0);
    a.rename(&id, "Ana Lima").await.expect("rename on A");
    assert_eq!(kv.conflicts(), 1, "refused once, then handled again");
    for held in [a.held(&id), stored(&a, &id).await] {
        assert_eq!((held.version, name(&held)), (3, "Ana Lima".to_string()));
        let credits = a.accounts.held_balance(&held).expect("balance");
        assert_eq!((credits.credits, credits.reserved), (50, 10));
    }
    // Now B's memory is the stale one: its rename is refused once too.
    b.rename(&id, "Ana B").await.expect("rename on B");
    assert_eq!(kv.conflicts(), 2);
    assert_eq!(name(&b.held(&id)), "Ana B");
    a.reserve(&id, "p2", 5, &runs).await.expect("reserve on A");
    let credits = a.accounts.held_balance(&a.held(&id)).expect("balance");
    assert_eq!((credits.credits, credits.reserved), (45, 15));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_asked_for_are_held_and_sign_out_drops_them_from_memory() {
    let kv = Arc::new(FlakyStore::default());
    let node = Node::new(&kv).await;
    let hash = hash_password("correct horse").expect("hash");
    let email = "ana@example.com".to_string();
    let id = crate::accounts::account_id_for_email(&email);
    let (_, token) = node
        .call(&id, |reply| AccountMsg::SignUp {
            email,
            name: "Ana".into(),
            password_hash: hash,
            reply,
        })
        .await
        .expect("sign up");
    assert!(!node.held(&id).holds_sessions(), "not needed yet");

    // A session check asks (once) without waiting; the actor loads them.
    let memory = node.users.memory(&id).expect("active");
    assert!(memory.should_ask_sessions());
    assert!(!memory.should_ask_sessions(), "asked once");
    assert!(node.users.load(&id, Part::Sessions));
    // Behind the load in the mailbox.
    node.call(&id, AccountMsg::HeldState).await.expect("held");
    let held = node.held(&id);
    assert!(held.holds_sessions());
    let (account, _) = node
        .accounts
        .held_session(&held, &token)
        .expect("the session, from memory");
    assert_eq!(account.id, id);

    let t = token.clone();
    node.call(&id, |reply| AccountMsg::SignOut { token: t, reply })
        .await
        .expect("sign out");
    assert!(node
        .accounts
        .held_session(&node.held(&id), &token)
        .is_none());
    assert!(node
        .accounts
        .session(&token)
        .await
        .expect("store")
        .is_none());

    // Dropped from outside the actor (a write elsewhere): loaded again.
    node.users.unload(&id);
    assert!(node.users.held(&id).is_none());
    assert!(node
        .users
        .memory(&id)
        .expect("still active")
        .should_ask_sessions());
}

/// A reservation's records that take this long to produce (an actor
/// stuck in a slow store).
struct Slow(Duration);

impl Reserved for Slow {
    fn ops(&self, _: &CaptionStyle) -> Result<Vec<KvOp>> {
        std::thread::sleep(self.0);
        Ok(Vec::new())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_stops_waiting_for_a_stuck_actor() {
    let kv = Arc::new(FlakyStore::default());
    let node = Node {
        accounts: Arc::new(Accounts::new(kv.clone(), PlanTable::default())),
        users: Arc::new(
            UserRegistry::new(accounts_branch().await)
                .with_call_timeout(Duration::from_millis(200)),
        ),
    };
    let hash = hash_password("correct horse").expect("hash");
    let id = node.sign_up("ana", "Ana", &hash).await.expect("sign up");
    let late = node
        .call(&id, |reply| AccountMsg::Reserve {
            project_id: "p1".into(),
            credits: 10,
            template: "default".into(),
            records: Box::new(Slow(Duration::from_millis(1500))),
            reply,
        })
        .await;
    assert!(
        matches!(&late, Err(AccountError::Internal(m)) if m.contains("no answer within")),
        "{late:?}"
    );
    // The message was not taken back: the actor finishes it, then answers
    // again (asked until it does; each ask waits 200 ms at most).
    let mut held = None;
    for _ in 0..100 {
        if let Ok(h) = node.call(&id, AccountMsg::HeldState).await {
            held = h;
            break;
        }
    }
    let credits = node
        .accounts
        .held_balance(&held.expect("an account"))
        .expect("balance");
    assert_eq!((credits.credits, credits.reserved), (50, 10));
}
