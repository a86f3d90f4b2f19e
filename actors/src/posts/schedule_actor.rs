//! `ScheduleActor`: one per unfinished post, from the moment the post is
//! stored (or re-armed at start) until it is published or failed. It owns
//! the post's timer: armed for `scheduledAt` when the actor starts, re-armed
//! when a PATCH moves the post, and for each retry's backoff. When it goes
//! off the actor runs the publication one step at a time
//! (`posts/run.rs`); it stops when the post is finished or cancelled.

use std::sync::Arc;
use std::time::Duration;

use ractor::concurrency::JoinHandle;
use ractor::{Actor, ActorProcessingErr, ActorRef, MessagingErr};

use crate::accounts::now_ms;

/// What a fired timer leads to, decided by the publication step.
#[derive(Debug, PartialEq)]
pub enum Step {
    /// Finished (or nothing to do): the actor stops.
    Done,
    /// A transient failure: run again after the delay.
    RetryIn(Duration),
    /// Still pending and moved later (a PATCH): run again at this time (ms).
    NotBefore(i64),
}

/// What the actor drives: one publication step of a post, and the registry
/// of live actors it leaves when it stops (implemented by
/// [`crate::posts::Publishing`] in `posts/run.rs`; a trait so this file
/// does not import the engine that spawns it).
#[async_trait::async_trait]
pub trait Steps: Send + Sync + 'static {
    async fn fire(self: Arc<Self>, post_id: &str) -> Step;
    fn stopped(&self, post_id: &str, actor: ractor::ActorId);
}

pub enum ScheduleMsg {
    /// The post's time changed: the timer is re-armed for it (ms).
    Rearm(i64),
    /// The timer armed `n`-th went off (an older arming is ignored).
    Fire(u64),
}

// Local only: with ractor's `cluster` feature, messages opt in explicitly.
impl ractor::Message for ScheduleMsg {}

pub struct ScheduleActor;

/// The pending timer; dropping it (the actor stopped or failed) cancels it.
struct Timer(JoinHandle<Result<(), MessagingErr<ScheduleMsg>>>);

impl Drop for Timer {
    fn drop(&mut self) {
        self.0.abort();
    }
}

pub struct ScheduleState {
    steps: Arc<dyn Steps>,
    post_id: Arc<str>,
    /// When the timer was first armed (the post's `scheduledAt`).
    due: i64,
    armed: u64,
    timer: Option<Timer>,
}

impl ScheduleState {
    /// Arms the timer for `at` (ms since the epoch), replacing the last one.
    fn arm(&mut self, myself: &ActorRef<ScheduleMsg>, at: i64) {
        self.timer = None;
        self.armed += 1;
        let n = self.armed;
        let wait = at - now_ms();
        if wait <= 0 {
            let _ = myself.send_message(ScheduleMsg::Fire(n));
        } else {
            let wait = Duration::from_millis(wait as u64);
            self.timer = Some(Timer(myself.send_after(wait, move || ScheduleMsg::Fire(n))));
        }
    }
}

impl Actor for ScheduleActor {
    type Msg = ScheduleMsg;
    type State = ScheduleState;
    /// The engine, the post and its `scheduledAt` (ms).
    type Arguments = (Arc<dyn Steps>, Arc<str>, i64);

    async fn pre_start(
        &self,
        _myself: ActorRef<ScheduleMsg>,
        (steps, post_id, due): Self::Arguments,
    ) -> Result<ScheduleState, ActorProcessingErr> {
        Ok(ScheduleState {
            steps,
            post_id,
            due,
            armed: 0,
            timer: None,
        })
    }

    async fn post_start(
        &self,
        myself: ActorRef<ScheduleMsg>,
        state: &mut ScheduleState,
    ) -> Result<(), ActorProcessingErr> {
        state.arm(&myself, state.due);
        Ok(())
    }

    #[tracing::instrument(skip_all, fields(post_id = %state.post_id))]
    async fn handle(
        &self,
        myself: ActorRef<ScheduleMsg>,
        msg: ScheduleMsg,
        state: &mut ScheduleState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            ScheduleMsg::Rearm(at) => state.arm(&myself, at),
            ScheduleMsg::Fire(n) if n != state.armed => {}
            ScheduleMsg::Fire(_) => {
                state.timer = None;
                crate::faults::check(crate::faults::Point::Schedule);
                match state.steps.clone().fire(&state.post_id).await {
                    Step::Done => myself.stop(None),
                    // Moved later meanwhile: wait for the new time.
                    Step::NotBefore(at) => state.arm(&myself, at),
                    Step::RetryIn(delay) => state.arm(&myself, now_ms() + delay.as_millis() as i64),
                }
            }
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        myself: ActorRef<ScheduleMsg>,
        state: &mut ScheduleState,
    ) -> Result<(), ActorProcessingErr> {
        state.steps.stopped(&state.post_id, myself.get_id());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Records when each step ran; answers the scripted steps in order.
    struct Script {
        fired: Mutex<Vec<i64>>,
        answers: Mutex<Vec<Step>>,
        stopped: Mutex<bool>,
    }

    #[async_trait::async_trait]
    impl Steps for Script {
        async fn fire(self: Arc<Self>, _post_id: &str) -> Step {
            self.fired.lock().unwrap().push(now_ms());
            let mut a = self.answers.lock().unwrap();
            if a.is_empty() {
                Step::Done
            } else {
                a.remove(0)
            }
        }
        fn stopped(&self, _post_id: &str, _actor: ractor::ActorId) {
            *self.stopped.lock().unwrap() = true;
        }
    }

    fn script(answers: Vec<Step>) -> Arc<Script> {
        Arc::new(Script {
            fired: Mutex::new(Vec::new()),
            answers: Mutex::new(answers),
            stopped: Mutex::new(false),
        })
    }

    #[tokio::test]
    async fn a_rearmed_timer_fires_once_at_the_new_time_then_retries_and_stops() {
        let s = script(vec![Step::RetryIn(Duration::from_millis(20))]);
        let start = now_ms();
        let (actor, handle) = Actor::spawn(
            None,
            ScheduleActor,
            (s.clone() as Arc<dyn Steps>, "p".into(), start + 60_000),
        )
        .await
        .unwrap();
        // Moved from a minute ahead to 300 ms ahead: the first timer is
        // replaced, so only the new one fires.
        actor.send_message(ScheduleMsg::Rearm(start + 300)).unwrap();
        tokio::time::timeout(Duration::from_secs(30), handle)
            .await
            .expect("the actor stops when its post is done")
            .unwrap();
        let fired = s.fired.lock().unwrap().clone();
        assert_eq!(fired.len(), 2, "fired at the new time, then the retry");
        assert!(fired[0] >= start + 300, "not before its time");
        assert!(*s.stopped.lock().unwrap(), "it left the registry");
    }

    #[tokio::test]
    async fn a_post_moved_later_is_waited_for_and_a_stop_cancels_the_timer() {
        let s = script(vec![Step::NotBefore(now_ms() + 60_000)]);
        let (actor, handle) = Actor::spawn(
            None,
            ScheduleActor,
            (s.clone() as Arc<dyn Steps>, "p".into(), now_ms() - 1000),
        )
        .await
        .unwrap();
        // Overdue: fires at once, finds the post moved a minute ahead and
        // waits; stopping it (a cancel) ends it without another step.
        for _ in 0..300 {
            if !s.fired.lock().unwrap().is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(
            actor.get_status(),
            ractor::ActorStatus::Running,
            "still armed"
        );
        actor.stop(None);
        handle.await.unwrap();
        assert_eq!(s.fired.lock().unwrap().len(), 1);
    }
}
