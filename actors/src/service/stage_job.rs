//! A stage job on a cluster worker: one actor per job, linked to the node's
//! `StageWorker`, running the stage inside its handler (never in a detached
//! task), so a panic is a supervision event of the worker.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio_util::sync::CancellationToken;

use super::workers::{report_done, run_job, StageJob};
use super::Services;
use crate::projects::stages::StageError;

pub struct JobActor;

pub struct JobArgs {
    pub services: Arc<Services>,
    pub job: StageJob,
    pub cancel: CancellationToken,
    pub slots: Arc<tokio::sync::Semaphore>,
    pub running: Arc<Mutex<HashMap<String, CancellationToken>>>,
}

pub enum JobMsg {
    Run,
}

// Local only: with ractor's `cluster` feature, messages opt in explicitly.
impl ractor::Message for JobMsg {}

impl Actor for JobActor {
    type Msg = JobMsg;
    type State = Option<JobArgs>;
    type Arguments = JobArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<JobMsg>,
        args: JobArgs,
    ) -> Result<Option<JobArgs>, ActorProcessingErr> {
        myself.send_message(JobMsg::Run)?;
        Ok(Some(args))
    }

    async fn handle(
        &self,
        myself: ActorRef<JobMsg>,
        _msg: JobMsg,
        state: &mut Option<JobArgs>,
    ) -> Result<(), ActorProcessingErr> {
        let Some(JobArgs {
            services,
            job,
            cancel,
            slots,
            running,
        }) = state.take()
        else {
            return Ok(());
        };
        // Cancelled when this handler is dropped (the actor killed).
        let _guard = cancel.clone().drop_guard();
        let started = Instant::now();
        let result = tokio::select! {
            permit = slots.acquire_owned() => match permit {
                Ok(_permit) => {
                    crate::faults::check(crate::faults::Point::Stage(job.stage.spec().fault));
                    run_job(&services, &job, cancel).await
                }
                Err(_) => Err(StageError::Io("the worker is shutting down".into())),
            },
            _ = cancel.cancelled() => Err(StageError::Cancelled),
        };
        services.stage_jobs.fetch_sub(1, Ordering::AcqRel);
        if let Some(c) = services.cluster.get() {
            c.load_changed();
        }
        services
            .metrics
            .observe_stage(job.stage, started.elapsed().as_secs_f64());
        running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&job.job);
        let cancelled = matches!(result, Err(StageError::Cancelled));
        tracing::info!(job = %job.job, ok = result.is_ok(), "worker: stage finished");
        if !cancelled {
            report_done(&services, &job, result).await;
        }
        myself.stop(None);
        Ok(())
    }
}

/// A job actor failed: undo its accounting and tell the project's
/// `RemoteStage` that the stage failed (it is retried like any failure).
/// The report is the future returned, which the worker runs in its own
/// task set (it retries for a few seconds while the reply group
/// propagates); no stage work runs there.
pub(super) fn crashed(
    services: &Arc<Services>,
    running: &Arc<Mutex<HashMap<String, CancellationToken>>>,
    job: StageJob,
) -> impl std::future::Future<Output = ()> + Send + 'static {
    let _ = services
        .stage_jobs
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            Some(n.saturating_sub(1))
        });
    if let Some(c) = services.cluster.get() {
        c.load_changed();
    }
    running
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&job.job);
    let stage = job.stage;
    let services = services.clone();
    async move {
        let failure = Err(StageError::Io(format!(
            "the {stage} stage crashed on a worker"
        )));
        report_done(&services, &job, failure).await;
    }
}
