//! Periodic node work as supervised actors (the `housekeeping` branch of
//! the tree): each actor runs its job every `every` (ractor's
//! `send_interval`) — a blocking job on a blocking thread so a slow sweep
//! never holds an async worker, an async one (the cluster hand-off, the
//! platform token refresh) in a task of its own. A job that panics fails
//! its actor; the branch supervisor starts it again (its restarts show in
//! `/admin/actors`), so a panic in a sweep cannot silently stop it for the
//! life of the node. Ticks that arrive while a run is under way are
//! dropped, so a slow run is not followed by a burst of queued ones.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ractor::{Actor, ActorProcessingErr, ActorRef};

use crate::faults::{self, Point};

/// What a job asks for after a run.
pub enum Then {
    Nothing,
    /// Run this once after the delay (e.g. give freed memory back once the
    /// actors a sweep stopped are gone).
    After(Duration, Job),
}

/// One run of periodic blocking work.
pub type Job = Arc<dyn Fn() -> Then + Send + Sync>;

/// One run of periodic async work.
pub type AsyncJob = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// The work of a [`Periodic`].
#[derive(Clone)]
pub enum Work {
    Blocking(Job),
    Async(AsyncJob),
}

/// A named job and how often it runs.
#[derive(Clone)]
pub struct Periodic {
    pub name: &'static str,
    pub every: Duration,
    pub work: Work,
}

impl Periodic {
    /// Blocking work (run on a blocking thread).
    pub fn new(
        name: &'static str,
        every: Duration,
        job: impl Fn() -> Then + Send + Sync + 'static,
    ) -> Self {
        Periodic {
            name,
            every,
            work: Work::Blocking(Arc::new(job)),
        }
    }

    /// Async work: `job` makes the future of one run.
    pub fn new_async<F>(
        name: &'static str,
        every: Duration,
        job: impl Fn() -> F + Send + Sync + 'static,
    ) -> Self
    where
        F: Future<Output = ()> + Send + 'static,
    {
        Periodic {
            name,
            every,
            work: Work::Async(Arc::new(move || Box::pin(job()))),
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

/// The actor's state: its job and when its last run ended.
pub struct Running {
    periodic: Periodic,
    last_end: Option<Instant>,
}

/// Runs `job` on a blocking thread; its panic is this actor's (see
/// `tasks::blocking`), so its supervisor restarts it.
async fn run(job: Job) -> Then {
    crate::tasks::blocking(move || job()).await
}

/// Runs one async run in a task of its own; its panic becomes this
/// actor's failure.
async fn run_async(name: &str, job: &AsyncJob) -> Result<Then, ActorProcessingErr> {
    tokio::spawn(job())
        .await
        .map(|()| Then::Nothing)
        .map_err(|e| format!("housekeeping job {name} failed: {e}").into())
}

impl Actor for PeriodicActor {
    type Msg = PeriodicMsg;
    type State = Running;
    type Arguments = Periodic;

    async fn pre_start(
        &self,
        myself: ActorRef<PeriodicMsg>,
        periodic: Periodic,
    ) -> Result<Running, ActorProcessingErr> {
        // The timer ends with the actor (its sends fail then).
        myself.send_interval(periodic.every, || PeriodicMsg::Tick);
        Ok(Running {
            periodic,
            last_end: None,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<PeriodicMsg>,
        msg: PeriodicMsg,
        state: &mut Running,
    ) -> Result<(), ActorProcessingErr> {
        let periodic = &state.periodic;
        let then = match msg {
            PeriodicMsg::Tick => {
                // Queued while the last run was under way.
                if state
                    .last_end
                    .is_some_and(|t| t.elapsed() < periodic.every / 2)
                {
                    return Ok(());
                }
                if faults::hit(Point::Housekeeping(periodic.name)) {
                    panic!("fault injection: housekeeping-panic:{}", periodic.name);
                }
                match &periodic.work {
                    Work::Blocking(job) => run(job.clone()).await,
                    Work::Async(job) => run_async(periodic.name, job).await?,
                }
            }
            PeriodicMsg::Run(job) => run(job).await,
        };
        state.last_end = Some(Instant::now());
        if let Then::After(delay, next) = then {
            myself.send_after(delay, move || PeriodicMsg::Run(next));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// The actor running `periodic` ends (its job panicked).
    async fn ends_by_failing(periodic: Periodic) {
        let (_actor, handle) = Actor::spawn(None, PeriodicActor, periodic).await.unwrap();
        let ended = tokio::time::timeout(Duration::from_secs(5), handle).await;
        assert!(
            ended.is_ok(),
            "the actor kept running after its job panicked"
        );
    }

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
        ends_by_failing(panicking).await;
    }

    /// An async job runs every tick; the ticks queued during a slow run
    /// are dropped, not run back to back after it (each run starts at
    /// least half a period after the one before ended); a run that panics
    /// fails the actor.
    #[tokio::test]
    async fn runs_an_async_job_and_fails_when_it_panics() {
        let starts = Arc::new(std::sync::Mutex::new(Vec::<Instant>::new()));
        let s = starts.clone();
        let every = Duration::from_millis(20);
        let job = Periodic::new_async("test-async", every, move || {
            let s = s.clone();
            async move {
                let first = {
                    let mut starts = s.lock().unwrap();
                    starts.push(Instant::now());
                    starts.len() == 1
                };
                if first {
                    // Ten ticks' time: they are queued meanwhile.
                    tokio::time::sleep(every * 10).await;
                }
            }
        });
        let (actor, handle) = Actor::spawn(None, PeriodicActor, job).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while starts.lock().unwrap().len() < 4 && Instant::now() < deadline {
            tokio::time::sleep(every).await;
        }
        actor.stop(None);
        handle.await.unwrap();
        let starts = starts.lock().unwrap().clone();
        assert!(starts.len() >= 4, "{} runs", starts.len());
        let gaps: Vec<Duration> = starts.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps[0] >= every * 10, "{gaps:?}");
        assert!(gaps.iter().all(|g| *g >= every / 2), "{gaps:?}");

        let panicking =
            Periodic::new_async("test-async-panic", Duration::from_millis(10), || async {
                panic!("a hand-off that fails")
            });
        ends_by_failing(panicking).await;
    }
}
