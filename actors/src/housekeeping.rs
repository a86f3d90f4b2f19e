//! Periodic node work as supervised actors (the `housekeeping` branch of
//! the tree): each actor runs its job every `every` (ractor's
//! `send_interval`), on a blocking thread so a slow sweep never holds an
//! async worker. A job that panics fails its actor; the branch supervisor
//! starts it again (its restarts show in `/admin/actors`), so a panic in a
//! sweep cannot silently stop it for the life of the node.

use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef};

use crate::faults::{self, Point};

/// What a job asks for after a run.
pub enum Then {
    Nothing,
    /// Run this once after the delay (e.g. give freed memory back once the
    /// actors a sweep stopped are gone).
    After(Duration, Job),
}

/// One run of periodic work.
pub type Job = Arc<dyn Fn() -> Then + Send + Sync>;

/// A named job and how often it runs.
#[derive(Clone)]
pub struct Periodic {
    pub name: &'static str,
    pub every: Duration,
    pub job: Job,
}

impl Periodic {
    pub fn new(
        name: &'static str,
        every: Duration,
        job: impl Fn() -> Then + Send + Sync + 'static,
    ) -> Self {
        Periodic {
            name,
            every,
            job: Arc::new(job),
        }
    }
}

#[derive(Clone)]
pub struct PeriodicActor;

pub enum PeriodicMsg {
    Tick,
    Run(Job),
}

impl ractor::Message for PeriodicMsg {}

/// Runs `job` on a blocking thread; its panic becomes this actor's failure.
async fn run(name: &str, job: Job) -> Result<Then, ActorProcessingErr> {
    tokio::task::spawn_blocking(move || job())
        .await
        .map_err(|e| format!("housekeeping job {name} failed: {e}").into())
}

impl Actor for PeriodicActor {
    type Msg = PeriodicMsg;
    type State = Periodic;
    type Arguments = Periodic;

    async fn pre_start(
        &self,
        myself: ActorRef<PeriodicMsg>,
        periodic: Periodic,
    ) -> Result<Periodic, ActorProcessingErr> {
        // The timer ends with the actor (its sends fail then).
        myself.send_interval(periodic.every, || PeriodicMsg::Tick);
        Ok(periodic)
    }

    async fn handle(
        &self,
        myself: ActorRef<PeriodicMsg>,
        msg: PeriodicMsg,
        periodic: &mut Periodic,
    ) -> Result<(), ActorProcessingErr> {
        let job = match msg {
            PeriodicMsg::Tick => {
                if faults::hit(Point::Housekeeping(periodic.name)) {
                    panic!("fault injection: housekeeping-panic:{}", periodic.name);
                }
                periodic.job.clone()
            }
            PeriodicMsg::Run(job) => job,
        };
        if let Then::After(delay, next) = run(periodic.name, job).await? {
            myself.send_after(delay, move || PeriodicMsg::Run(next));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// The job runs every tick and its follow-up after its delay; a job that
    /// panics fails the actor (for its supervisor to see).
    #[tokio::test]
    async fn runs_its_job_and_fails_when_the_job_panics() {
        let runs = Arc::new(AtomicU32::new(0));
        let after = Arc::new(AtomicU32::new(0));
        let (r, a) = (runs.clone(), after.clone());
        let periodic = Periodic::new("test-sweep", Duration::from_millis(20), move || {
            r.fetch_add(1, Ordering::AcqRel);
            let a = a.clone();
            Then::After(
                Duration::from_millis(5),
                Arc::new(move || {
                    a.fetch_add(1, Ordering::AcqRel);
                    Then::Nothing
                }),
            )
        });
        let (actor, handle) = Actor::spawn(None, PeriodicActor, periodic).await.unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(runs.load(Ordering::Acquire) >= 3, "{runs:?}");
        assert!(after.load(Ordering::Acquire) >= 2, "{after:?}");
        actor.stop(None);
        handle.await.unwrap();

        let panicking = Periodic::new("test-panic", Duration::from_millis(10), || {
            panic!("a sweep that fails")
        });
        let (_actor, handle) = Actor::spawn(None, PeriodicActor, panicking).await.unwrap();
        let ended = tokio::time::timeout(Duration::from_secs(5), handle).await;
        assert!(
            ended.is_ok(),
            "the actor kept running after its job panicked"
        );
    }
}
