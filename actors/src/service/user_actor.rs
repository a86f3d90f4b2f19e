//! `UserActor`: one per active account. Every change to an account (credits,
//! templates, notifications, profile) runs inside its actor, one at a time,
//! so concurrent requests of one user never race on its balance. Idle actors
//! are passivated (stopped) and re-activated from storage on the next request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ractor::{Actor, ActorProcessingErr, ActorRef};

use crate::accounts::Accounts;

type Job = Box<dyn FnOnce(&Accounts) + Send>;

pub enum UserMsg {
    /// Run a job against the account, in order with the account's other jobs.
    Run(Job),
}

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

/// Live user actors, activated on demand and passivated when idle.
#[derive(Default)]
pub struct UserRegistry {
    live: Mutex<HashMap<String, (ActorRef<UserMsg>, Instant)>>,
}

impl UserRegistry {
    async fn actor(
        &self,
        accounts: &Arc<Accounts>,
        user_id: &str,
    ) -> Result<ActorRef<UserMsg>, String> {
        if let Some((actor, used)) = self
            .live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(user_id)
        {
            *used = Instant::now();
            return Ok(actor.clone());
        }
        let (actor, _) = Actor::spawn(None, UserActor, accounts.clone())
            .await
            .map_err(|e| e.to_string())?;
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        // Another request may have activated it meanwhile: keep that one.
        if let Some((existing, used)) = live.get_mut(user_id) {
            *used = Instant::now();
            actor.stop(None);
            return Ok(existing.clone());
        }
        live.insert(user_id.to_string(), (actor.clone(), Instant::now()));
        Ok(actor)
    }

    /// Runs `f` in the user's actor and returns its result.
    pub async fn run<T: Send + 'static>(
        &self,
        accounts: &Arc<Accounts>,
        user_id: &str,
        f: impl FnOnce(&Accounts) -> T + Send + 'static,
    ) -> Result<T, String> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |a| {
            let _ = tx.send(f(a));
        });
        let actor = self.actor(accounts, user_id).await?;
        actor
            .send_message(UserMsg::Run(job))
            .map_err(|e| format!("account actor unavailable: {e}"))?;
        rx.await.map_err(|_| "account actor stopped".to_string())
    }

    /// Stops actors idle for longer than `idle`; returns how many.
    pub fn passivate(&self, idle: Duration) -> usize {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        let before = live.len();
        live.retain(|_, (actor, used)| {
            let keep = used.elapsed() < idle;
            if !keep {
                actor.stop(Some("idle".into()));
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

    /// (user id, mailbox length, seconds since last use) of every live actor.
    pub fn snapshot(&self) -> Vec<(String, ActorRef<UserMsg>, f64)> {
        self.live
            .lock()
            .map(|l| {
                l.iter()
                    .map(|(id, (a, used))| (id.clone(), a.clone(), used.elapsed().as_secs_f64()))
                    .collect()
            })
            .unwrap_or_default()
    }
}
