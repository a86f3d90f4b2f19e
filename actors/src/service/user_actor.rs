//! `UserActor`: one per active account. Every change to an account (credits,
//! templates, notifications, profile) runs inside its actor, one at a time,
//! so concurrent requests of one user never race on its balance. Idle actors
//! are passivated (stopped) and re-activated from storage on the next request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ractor::{Actor, ActorProcessingErr, ActorRef};

use super::mailbox::ActorMeta;
use crate::accounts::Accounts;

type Job = Box<dyn FnOnce(&Accounts) + Send>;

pub enum UserMsg {
    /// Run a job against the account, in order with the account's other jobs.
    Run(Job),
}

// Local only: with ractor's `cluster` feature, messages opt in explicitly.
impl ractor::Message for UserMsg {}

pub struct UserActor;

pub struct UserState {
    accounts: Arc<Accounts>,
}

impl Actor for UserActor {
    type Msg = UserMsg;
    type State = UserState;
    type Arguments = Arc<Accounts>;

    async fn pre_start(
        &self,
        _myself: ActorRef<UserMsg>,
        accounts: Arc<Accounts>,
    ) -> Result<UserState, ActorProcessingErr> {
        Ok(UserState { accounts })
    }

    async fn handle(
        &self,
        _myself: ActorRef<UserMsg>,
        msg: UserMsg,
        state: &mut UserState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            // Storage calls block (sled flushes before acknowledging).
            UserMsg::Run(job) => tokio::task::block_in_place(|| job(&state.accounts)),
        }
        Ok(())
    }
}

struct Live {
    actor: ActorRef<UserMsg>,
    used: Instant,
    meta: Arc<ActorMeta>,
}

/// What the admin view shows of a live user actor.
pub struct UserActorInfo {
    pub user_id: String,
    pub actor: ActorRef<UserMsg>,
    pub idle_secs: f64,
    pub meta: Arc<ActorMeta>,
}

/// Live user actors, activated on demand and passivated when idle.
#[derive(Default)]
pub struct UserRegistry {
    live: Mutex<HashMap<String, Live>>,
}

impl UserRegistry {
    async fn actor(
        &self,
        accounts: &Arc<Accounts>,
        user_id: &str,
    ) -> Result<(ActorRef<UserMsg>, Arc<ActorMeta>), String> {
        if let Some(l) = self
            .live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(user_id)
        {
            l.used = Instant::now();
            return Ok((l.actor.clone(), l.meta.clone()));
        }
        let (actor, _) = Actor::spawn(None, UserActor, accounts.clone())
            .await
            .map_err(|e| e.to_string())?;
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        // Another request may have activated it meanwhile: keep that one.
        if let Some(l) = live.get_mut(user_id) {
            l.used = Instant::now();
            actor.stop(None);
            return Ok((l.actor.clone(), l.meta.clone()));
        }
        let meta = ActorMeta::new();
        live.insert(
            user_id.to_string(),
            Live {
                actor: actor.clone(),
                used: Instant::now(),
                meta: meta.clone(),
            },
        );
        Ok((actor, meta))
    }

    /// Runs `f` in the user's actor and returns its result.
    pub async fn run<T: Send + 'static>(
        &self,
        accounts: &Arc<Accounts>,
        user_id: &str,
        f: impl FnOnce(&Accounts) -> T + Send + 'static,
    ) -> Result<T, String> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let (actor, meta) = self.actor(accounts, user_id).await?;
        let taken = meta.clone();
        let job: Job = Box::new(move |a| {
            taken.received();
            let _ = tx.send(f(a));
        });
        meta.sent();
        if let Err(e) = actor.send_message(UserMsg::Run(job)) {
            meta.received();
            return Err(format!("account actor unavailable: {e}"));
        }
        rx.await.map_err(|_| "account actor stopped".to_string())
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
