//! `UserActor`: one per active account, the account's single writer on
//! this node. It holds the account's state ([`HeldAccount`]: record,
//! credit state, version), loaded once from the store, and, once a
//! command needs them, its sessions, templates, notifications and storage
//! counter (`accounts/held_parts.rs`), and runs every
//! command for the account (sign-up and sign-in included) one at a time
//! through [`Accounts::acting_for`]: each command is one atomic store
//! write, conditional on the version held, and memory changes only after
//! it succeeded. Reads are answered from that memory
//! ([`UserRegistry::held`]). A write refused as stale (the account was
//! changed elsewhere: another node owned it a moment ago) reloads the
//! state and runs the command again. Idle actors are passivated (stopped,
//! their memory dropped) and re-activated from the store on the next
//! request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ractor::{Actor, ActorCell, ActorId, ActorProcessingErr, ActorRef};

use super::mailbox::ActorMeta;
use crate::accounts::{Accounts, Held, HeldAccount};
use crate::supervisor::Branch;

/// How many times a command meeting a newer version runs again on
/// reloaded state before its conflict is returned.
const STALE_RETRIES: usize = 3;

/// A command for one account: run (again, after a stale write) against the
/// account's state, then answered.
pub trait Command: Send {
    fn run(&mut self, accounts: &Accounts);
    fn answer(self: Box<Self>);
}

struct Call<F, T> {
    f: F,
    out: Option<T>,
    reply: tokio::sync::oneshot::Sender<T>,
}

impl<F: FnMut(&Accounts) -> T + Send, T: Send> Command for Call<F, T> {
    fn run(&mut self, accounts: &Accounts) {
        self.out = Some((self.f)(accounts));
    }

    fn answer(self: Box<Self>) {
        if let Some(out) = self.out {
            let _ = self.reply.send(out);
        }
    }
}

pub enum UserMsg {
    /// Run a command on the account, in order with its other commands.
    Run(Box<dyn Command>),
}

// Local only: with ractor's `cluster` feature, messages opt in explicitly.
impl ractor::Message for UserMsg {}

pub struct UserActor;

pub struct UserState {
    /// Acting for this actor's account (reads it from `held`).
    accounts: Accounts,
    held: Arc<HeldAccount>,
    meta: Arc<ActorMeta>,
}

impl Actor for UserActor {
    type Msg = UserMsg;
    type State = UserState;
    type Arguments = (Arc<Accounts>, Arc<HeldAccount>, Arc<ActorMeta>);

    async fn pre_start(
        &self,
        _myself: ActorRef<UserMsg>,
        (accounts, held, meta): (Arc<Accounts>, Arc<HeldAccount>, Arc<ActorMeta>),
    ) -> Result<UserState, ActorProcessingErr> {
        Ok(UserState {
            accounts: accounts.acting_for(held.clone()),
            held,
            meta,
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<UserMsg>,
        msg: UserMsg,
        state: &mut UserState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            UserMsg::Run(mut command) => {
                state.meta.received();
                crate::faults::check(crate::faults::Point::Account);
                // Storage calls block (sled flushes before acknowledging).
                tokio::task::block_in_place(|| {
                    for attempt in 1..=STALE_RETRIES {
                        command.run(&state.accounts);
                        if !state.held.take_stale() {
                            break;
                        }
                        // Loaded again by the next run (or the next command).
                        state.held.unload();
                        tracing::info!(
                            user_id = state.held.user_id(),
                            attempt,
                            "stale account state reloaded"
                        );
                    }
                });
                command.answer();
            }
        }
        Ok(())
    }
}

struct Live {
    actor: ActorRef<UserMsg>,
    used: Instant,
    meta: Arc<ActorMeta>,
    held: Arc<HeldAccount>,
}

/// What the admin view shows of a live user actor.
pub struct UserActorInfo {
    pub user_id: String,
    pub actor: ActorRef<UserMsg>,
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
}

impl UserRegistry {
    pub fn new(branch: Arc<Branch>) -> Self {
        Self {
            live: Mutex::new(HashMap::new()),
            branch,
            replaced: Mutex::new(HashMap::new()),
        }
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<String, Live>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn spawn(
        accounts: &Arc<Accounts>,
        sup: Option<ActorCell>,
        held: &Arc<HeldAccount>,
        meta: &Arc<ActorMeta>,
    ) -> Result<ActorRef<UserMsg>, String> {
        let args = (accounts.clone(), held.clone(), meta.clone());
        match sup {
            Some(sup) => Actor::spawn_linked(None, UserActor, args, sup).await,
            None => Actor::spawn(None, UserActor, args).await,
        }
        .map(|(a, _)| a)
        .map_err(|e| e.to_string())
    }

    async fn actor(
        &self,
        accounts: &Arc<Accounts>,
        user_id: &str,
    ) -> Result<(ActorRef<UserMsg>, Arc<ActorMeta>), String> {
        if let Some(l) = self.live().get_mut(user_id) {
            l.used = Instant::now();
            return Ok((l.actor.clone(), l.meta.clone()));
        }
        let meta = ActorMeta::new();
        let held = Arc::new(HeldAccount::new(user_id));
        let actor = Self::spawn(accounts, self.branch.cell(), &held, &meta).await?;
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

    /// Queues `f` in the user's actor when it is active, without waiting
    /// for it (a load asked by a read answered from the store meanwhile);
    /// `false` when the actor is not active or did not take it.
    pub fn ask(&self, user_id: &str, f: impl FnMut(&Accounts) + Send + 'static) -> bool {
        let Some((actor, meta)) = self
            .live()
            .get(user_id)
            .map(|l| (l.actor.clone(), l.meta.clone()))
        else {
            return false;
        };
        // Nobody waits for the answer: it is dropped.
        let (reply, _) = tokio::sync::oneshot::channel();
        meta.sent();
        let job = Box::new(Call {
            f,
            out: None,
            reply,
        });
        if actor.send_message(UserMsg::Run(job)).is_err() {
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

    /// Runs `f` in the user's actor and returns its result; `f` runs again
    /// when its write met a newer version of the account (see the module
    /// documentation). An actor found dead (failed, its restart not yet
    /// done) is replaced once: the command comes back undelivered and goes
    /// to the new actor.
    pub async fn run<T: Send + 'static>(
        &self,
        accounts: &Arc<Accounts>,
        user_id: &str,
        f: impl FnMut(&Accounts) -> T + Send + 'static,
    ) -> Result<T, String> {
        let (reply, rx) = tokio::sync::oneshot::channel();
        let mut job: Box<dyn Command> = Box::new(Call {
            f,
            out: None,
            reply,
        });
        for attempt in 0..2 {
            let (actor, meta) = self.actor(accounts, user_id).await?;
            meta.sent();
            match actor.send_message(UserMsg::Run(job)) {
                Ok(()) => return rx.await.map_err(|_| "account actor stopped".to_string()),
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
                        ractor::MessagingErr::SendErr(UserMsg::Run(back)) if attempt == 0 => {
                            job = back
                        }
                        e => return Err(format!("account actor unavailable: {e}")),
                    }
                }
            }
        }
        Err("account actor unavailable".into())
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
    ) -> Result<(), String> {
        if !self
            .live()
            .get(user_id)
            .is_some_and(|l| l.actor.get_id() == failed)
        {
            return Ok(());
        }
        // A new memory too: the new actor loads the account from the store.
        let meta = ActorMeta::new();
        let held = Arc::new(HeldAccount::new(user_id));
        let actor = Self::spawn(accounts, Some(sup), &held, &meta).await?;
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

#[cfg(test)]
#[path = "user_actor_tests.rs"]
mod tests;
