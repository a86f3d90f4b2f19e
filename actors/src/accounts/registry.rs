//! The live account actors of this node ([`super::actor`]), activated on
//! demand under the supervision tree's `accounts` branch and passivated
//! when idle, and the typed calls to them: a message is sent to the
//! account's actor and its reply awaited (at most [`CALL_TIMEOUT`]); an
//! actor found dead (failed, its restart not yet done) is replaced once
//! and the same message goes to the new actor.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ractor::{Actor, ActorCell, ActorId, ActorRef, RpcReplyPort};

use super::actor::{AccountActor, AccountMsg, Part, Reply};
use super::domain::Accounts;
use super::error::{AccountError, Result};
use super::held::{Held, HeldAccount};
use crate::mailbox::ActorMeta;
use crate::supervisor::{Branch, SupervisionError};

/// How long a caller waits for an account actor's answer. Every message
/// is one or two store writes; a reply this late means the actor is stuck.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(60);

struct Live {
    actor: ActorRef<AccountMsg>,
    used: Instant,
    meta: Arc<ActorMeta>,
    held: Arc<HeldAccount>,
}

/// What the admin view shows of a live user actor.
pub struct UserActorInfo {
    pub user_id: String,
    pub actor: ActorRef<AccountMsg>,
    pub idle_secs: f64,
    pub meta: Arc<ActorMeta>,
}

/// Live user actors, activated on demand (linked to the supervision tree's
/// `accounts` branch) and passivated when idle.
pub struct UserRegistry {
    live: Mutex<HashMap<String, Live>>,
    branch: Arc<Branch>,
    /// Dead actors a request replaced before their supervisor heard of the
    /// failure (actor → account), so the supervisor can still tell whose
    /// actor failed. Bounded; each entry is taken once.
    replaced: Mutex<HashMap<ActorId, String>>,
    /// How long a caller waits for an answer ([`CALL_TIMEOUT`]).
    call_timeout: Duration,
}

impl UserRegistry {
    pub fn new(branch: Arc<Branch>) -> Self {
        Self {
            live: Mutex::new(HashMap::new()),
            branch,
            replaced: Mutex::new(HashMap::new()),
            call_timeout: CALL_TIMEOUT,
        }
    }

    /// The same, waiting at most `timeout` for an answer.
    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<String, Live>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn spawn(
        accounts: &Arc<Accounts>,
        sup: ActorCell,
        held: &Arc<HeldAccount>,
        meta: &Arc<ActorMeta>,
    ) -> std::result::Result<ActorRef<AccountMsg>, SupervisionError> {
        let args = (accounts.clone(), held.clone(), meta.clone());
        let (actor, _) = Actor::spawn_linked(None, AccountActor, args, sup).await?;
        Ok(actor)
    }

    async fn actor(
        &self,
        accounts: &Arc<Accounts>,
        user_id: &str,
    ) -> std::result::Result<(ActorRef<AccountMsg>, Arc<ActorMeta>), SupervisionError> {
        if let Some(l) = self.live().get_mut(user_id) {
            l.used = Instant::now();
            return Ok((l.actor.clone(), l.meta.clone()));
        }
        let meta = ActorMeta::new();
        let held = Arc::new(HeldAccount::new(user_id));
        let sup = self.branch.supervisor().await?;
        let actor = Self::spawn(accounts, sup, &held, &meta).await?;
        let mut live = self.live();
        // Another request may have activated it meanwhile: keep that one.
        if let Some(l) = live.get_mut(user_id) {
            l.used = Instant::now();
            actor.stop(None);
            return Ok((l.actor.clone(), l.meta.clone()));
        }
        live.insert(
            user_id.to_string(),
            Live {
                actor: actor.clone(),
                used: Instant::now(),
                meta: meta.clone(),
                held,
            },
        );
        Ok((actor, meta))
    }

    /// The state the user's actor holds, when it is active and has loaded
    /// it: a read answered from memory, without queueing behind the
    /// account's commands. Counts as a use (delays passivation).
    pub fn held(&self, user_id: &str) -> Option<Arc<Held>> {
        let mut live = self.live();
        let l = live.get_mut(user_id)?;
        let held = l.held.loaded()?;
        l.used = Instant::now();
        Some(held)
    }

    /// Asks the user's actor, when it is active, to load `part` of the
    /// account's state, without waiting (a read answered from the store
    /// meanwhile); `false` when the actor is not active or did not take it.
    pub fn load(&self, user_id: &str, part: Part) -> bool {
        let Some((actor, meta)) = self
            .live()
            .get(user_id)
            .map(|l| (l.actor.clone(), l.meta.clone()))
        else {
            return false;
        };
        meta.sent();
        if actor.send_message(AccountMsg::Load(part)).is_err() {
            meta.received();
            return false;
        }
        true
    }

    /// Drops the memory of `user_id`'s actor, if active (its account was
    /// written outside the actor); the next command loads it again.
    pub fn unload(&self, user_id: &str) {
        if let Some(l) = self.live().get(user_id) {
            l.held.unload();
        }
    }

    /// The memory of `user_id`'s actor, when it is active (whether or not
    /// it loaded anything). Does not count as a use.
    pub fn memory(&self, user_id: &str) -> Option<Arc<HeldAccount>> {
        self.live().get(user_id).map(|l| l.held.clone())
    }

    /// Sends the message `build` makes to the user's actor and waits for
    /// its answer (see the module documentation).
    pub async fn call<T: Send + 'static>(
        &self,
        accounts: &Arc<Accounts>,
        user_id: &str,
        build: impl FnOnce(Reply<T>) -> AccountMsg,
    ) -> Result<T> {
        let (tx, rx) = ractor::concurrency::oneshot();
        let mut msg = build(RpcReplyPort::from(tx));
        for attempt in 0..2 {
            let (actor, meta) = self.actor(accounts, user_id).await.map_err(unavailable)?;
            meta.sent();
            match actor.send_message(msg) {
                Ok(()) => {
                    return match tokio::time::timeout(self.call_timeout, rx).await {
                        Ok(Ok(out)) => out,
                        Ok(Err(_)) => Err(unavailable("it stopped before answering")),
                        Err(_) => Err(unavailable(format!(
                            "no answer within {:?}",
                            self.call_timeout
                        ))),
                    };
                }
                Err(e) => {
                    meta.received();
                    self.forget(user_id, actor.get_id());
                    let mut replaced = self.replaced.lock().unwrap_or_else(|e| e.into_inner());
                    if replaced.len() >= 1024 {
                        replaced.clear();
                    }
                    replaced.insert(actor.get_id(), user_id.to_string());
                    drop(replaced);
                    match e {
                        ractor::MessagingErr::SendErr(back) if attempt == 0 => msg = back,
                        e => return Err(unavailable(e)),
                    }
                }
            }
        }
        Err(unavailable("it is not running"))
    }

    /// Which account the actor `id` serves.
    pub fn user_of(&self, id: ActorId) -> Option<String> {
        let live = self
            .live()
            .iter()
            .find(|(_, l)| l.actor.get_id() == id)
            .map(|(u, _)| u.clone());
        live.or_else(|| {
            self.replaced
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id)
        })
    }

    /// Replaces the failed actor `failed` of `user_id` with a new one
    /// linked to `sup` (unless a request already did).
    pub async fn replace(
        &self,
        accounts: &Arc<Accounts>,
        user_id: &str,
        failed: ActorId,
        sup: ActorCell,
    ) -> std::result::Result<(), SupervisionError> {
        if self
            .live()
            .get(user_id)
            .is_none_or(|l| l.actor.get_id() != failed)
        {
            return Ok(());
        }
        // A new memory too: the new actor loads the account from the store.
        let meta = ActorMeta::new();
        let held = Arc::new(HeldAccount::new(user_id));
        let actor = Self::spawn(accounts, sup, &held, &meta).await?;
        let mut live = self.live();
        match live.get_mut(user_id) {
            Some(l) if l.actor.get_id() == failed => {
                l.actor = actor;
                l.meta = meta;
                l.held = held;
            }
            _ => actor.stop(None),
        }
        Ok(())
    }

    /// Forgets `user_id`'s actor if it is still `actor`.
    pub fn forget(&self, user_id: &str, actor: ActorId) {
        let mut live = self.live();
        if live.get(user_id).is_some_and(|l| l.actor.get_id() == actor) {
            live.remove(user_id);
        }
    }

    /// Forgets every actor (their supervisor was restarted).
    pub fn clear(&self) {
        self.live().clear();
    }

    /// Stops actors idle for longer than `idle`; returns how many.
    pub fn passivate(&self, idle: Duration) -> usize {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        let before = live.len();
        live.retain(|_, l| {
            let keep = l.used.elapsed() < idle || l.meta.mailbox() > 0;
            if !keep {
                l.actor.stop(Some("idle".into()));
            }
            keep
        });
        before - live.len()
    }

    /// Stops the actors of the accounts `keep` rejects (this node no
    /// longer owns them): each finishes the jobs already in its mailbox
    /// first. Returns how many.
    pub fn hand_off(&self, keep: impl Fn(&str) -> bool) -> usize {
        let mut live = self.live();
        let before = live.len();
        live.retain(|id, l| {
            let keep = keep(id);
            if !keep && l.actor.drain().is_err() {
                l.actor.stop(Some("handed off".into()));
            }
            keep
        });
        before - live.len()
    }

    pub fn len(&self) -> usize {
        self.live.lock().map(|l| l.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every live actor, for the admin view.
    pub fn snapshot(&self) -> Vec<UserActorInfo> {
        self.live
            .lock()
            .map(|live| {
                live.iter()
                    .map(|(id, l)| UserActorInfo {
                        user_id: id.clone(),
                        actor: l.actor.clone(),
                        idle_secs: l.used.elapsed().as_secs_f64(),
                        meta: l.meta.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The accounts domain as other domains use it: its store (reads, and
/// writes from outside an actor) and its actors (every change to an
/// account). Cheap to clone.
#[derive(Clone)]
pub struct AccountDesk {
    pub accounts: Arc<Accounts>,
    pub(super) users: Arc<UserRegistry>,
    owner: Owner,
}

/// Whether this node owns an account (always, on a single node; on a
/// cluster, by its ring): only the owner's actor memory may answer for it.
pub type Owner = Arc<dyn Fn(&str) -> bool + Send + Sync>;

impl AccountDesk {
    pub fn new(accounts: Arc<Accounts>, users: Arc<UserRegistry>, owner: Owner) -> Self {
        Self {
            accounts,
            users,
            owner,
        }
    }

    /// Whether this node owns `user_id`'s account ([`Owner`]).
    pub fn owns(&self, user_id: &str) -> bool {
        (self.owner)(user_id)
    }

    /// Sends `user_id`'s actor the message `build` makes and waits for
    /// its answer ([`UserRegistry::call`]).
    pub async fn call<T: Send + 'static>(
        &self,
        user_id: &str,
        build: impl FnOnce(Reply<T>) -> AccountMsg,
    ) -> Result<T> {
        self.users.call(&self.accounts, user_id, build).await
    }

    /// The memory of `user_id`'s actor when it is active on this node and
    /// has loaded the account ([`UserRegistry::held`]).
    pub fn held(&self, user_id: &str) -> Option<Arc<Held>> {
        self.users.held(user_id)
    }

    /// The live account actors of this node (for the admin view).
    pub fn live(&self) -> Vec<super::registry::UserActorInfo> {
        self.users.snapshot()
    }

    /// How many account actors live on this node.
    pub fn live_count(&self) -> usize {
        self.users.len()
    }

    /// Drops the memory of `user_id`'s actor, if active: its account was
    /// written from outside the actor ([`UserRegistry::unload`]).
    pub fn unload(&self, user_id: &str) {
        self.users.unload(user_id)
    }
}

fn unavailable(e: impl std::fmt::Display) -> AccountError {
    AccountError::Internal(format!("account actor: {e}"))
}

#[cfg(test)]
#[path = "actor_tests.rs"]
mod tests;
