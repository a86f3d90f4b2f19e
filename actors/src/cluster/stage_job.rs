//! A stage job on a cluster worker: one actor per job, linked to the node's
//! `StageWorker`, running the stage inside its handler (never in a detached
//! task), so a panic is a supervision event of the worker. A job fetches
//! the stage's inputs from object storage into a scratch folder, runs the
//! stage there (`projects::work`), stores its outputs back and reports the
//! result to the project's `RemoteStage`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio_util::sync::CancellationToken;

use super::stage_msgs::{report, StageJob, StageReport};
use super::stage_wire::{self, Carried};
use super::Cluster;
use crate::metrics::Metrics;
use crate::projects::stages::table::WorkFile;
use crate::projects::stages::{Progress, Stage, StageError};
use crate::projects::work::{self, work_prefix, CaptionResult, StageHost};
use crate::storage::objects::ObjectStore;

/// What a node's stage worker uses of its node: the stages' host, the
/// cluster (its load is announced as jobs start and end), the node's count
/// of stage jobs (`Load::stages`), its metrics and its slots.
#[derive(Clone)]
pub struct WorkerHost {
    pub stages: StageHost,
    pub cluster: Arc<Cluster>,
    pub jobs: Arc<AtomicU32>,
    pub metrics: Arc<Metrics>,
    /// Stages run at once (`pipeline.workers`).
    pub slots: usize,
}

impl WorkerHost {
    /// A job was taken (`+1`) or ended (`-1`): the count, and the load
    /// the heartbeats announce.
    pub(super) fn count_job(&self, started: bool) {
        if started {
            self.jobs.fetch_add(1, Ordering::AcqRel);
        } else {
            let _ = self
                .jobs
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                    Some(n.saturating_sub(1))
                });
        }
        self.cluster.load_changed();
    }
}

pub struct JobActor;

pub struct JobArgs {
    pub host: WorkerHost,
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
            host,
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
                    run_job(&host, &job, cancel).await
                }
                Err(_) => Err(StageError::Io("the worker is shutting down".into())),
            },
            _ = cancel.cancelled() => Err(StageError::Cancelled),
        };
        host.count_job(false);
        host.metrics
            .observe_stage(job.stage.name(), started.elapsed().as_secs_f64());
        running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&job.job);
        let cancelled = matches!(result, Err(StageError::Cancelled));
        tracing::info!(job = %job.job, ok = result.is_ok(), "worker: stage finished");
        if !cancelled {
            report_done(&host, &job, result).await;
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
    host: &WorkerHost,
    running: &Arc<Mutex<HashMap<String, CancellationToken>>>,
    job: StageJob,
) -> impl std::future::Future<Output = ()> + Send + 'static {
    host.count_job(false);
    running
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&job.job);
    let stage = job.stage;
    let host = host.clone();
    async move {
        let failure = Err(StageError::Io(format!(
            "the {stage} stage crashed on a worker"
        )));
        report_done(&host, &job, failure).await;
    }
}

/// The result must arrive: the reply group may still be propagating (the
/// job can overtake the group update), so it is retried for a while.
pub(super) async fn report_done(
    host: &WorkerHost,
    job: &StageJob,
    result: Result<Option<CaptionResult>, StageError>,
) {
    let limit = host.cluster.max_inline();
    let key = stage_wire::payload_key(&work_prefix(&job.project.id), &job.job, "result");
    let result = match stage_wire::carry(&*host.stages.objects, &key, result, limit).await {
        Ok(carried) => carried,
        Err(e) => Carried::Inline(Err(e)),
    };
    let r = StageReport::Done {
        job: job.job.clone(),
        result,
    };
    for _ in 0..40 {
        if report(&job.run, r.clone()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    tracing::warn!(job = %job.job, "worker: nobody waits for this stage's result any more");
}

fn scratch_dir(host: &WorkerHost, job: &str) -> PathBuf {
    let name = stage_wire::safe_name(job);
    host.stages.knobs.data_dir.join("stagework").join(name)
}

pub(super) async fn run_job(
    host: &WorkerHost,
    job: &StageJob,
    cancel: CancellationToken,
) -> Result<Option<CaptionResult>, StageError> {
    let dir = scratch_dir(host, &job.job);
    let objects = host.stages.objects.as_ref();
    let result = async {
        fetch_inputs(objects, &job.project.id, job.stage, &dir).await?;
        let progress = {
            let (run, id) = (job.run.clone(), job.job.clone());
            Progress::new(move |pct| {
                report(
                    &run,
                    StageReport::Progress {
                        job: id.clone(),
                        pct,
                    },
                );
            })
        };
        let out = work::run_stage_in(
            &host.stages,
            job.project.clone(),
            job.stage,
            &dir,
            cancel,
            progress,
        )
        .await?;
        store_outputs(objects, &job.project.id, job.stage, &dir).await?;
        Ok(out)
    }
    .await;
    let _ = tokio::fs::remove_dir_all(&dir).await;
    result
}

async fn fetch_inputs(
    objects: &dyn ObjectStore,
    project_id: &str,
    stage: Stage,
    dir: &Path,
) -> Result<(), StageError> {
    std::fs::create_dir_all(dir).map_err(|e| StageError::io("creating the scratch folder", e))?;
    let needed = stage.spec().reads;
    if needed.is_empty() {
        return Ok(());
    }
    let prefix = work_prefix(project_id);
    let listed = objects
        .list_prefix(&prefix)
        .await
        .map_err(|e| StageError::Io(format!("listing the work files: {e}")))?;
    for wanted in needed {
        let found = listed
            .iter()
            .find(|(k, _)| wanted.matches(&k[prefix.len()..]));
        let Some((key, _)) = found else {
            if stage.spec().optional.contains(wanted) {
                continue;
            }
            return Err(StageError::Io(format!(
                "the {stage} stage's input {} is missing from storage",
                wanted.name()
            )));
        };
        let file = &key[prefix.len()..];
        objects
            .get_to_file(key, &dir.join(file))
            .await
            .map_err(|e| StageError::Io(format!("fetching {file}: {e}")))?;
    }
    Ok(())
}

async fn store_outputs(
    objects: &dyn ObjectStore,
    project_id: &str,
    stage: Stage,
    dir: &Path,
) -> Result<(), StageError> {
    let prefix = work_prefix(project_id);
    for made in stage.spec().writes {
        let path = made.locate(dir).ok_or_else(|| {
            StageError::Io(format!(
                "the {stage} stage's output {} is missing",
                made.name()
            ))
        })?;
        let file = path
            .file_name()
            .map(|f| f.to_string_lossy().to_string())
            .unwrap_or_default();
        if *made == WorkFile::Source {
            // A re-run download may have a different extension.
            if let Ok(old) = objects.list_prefix(&format!("{prefix}source.")).await {
                for (k, _) in old {
                    let _ = objects.delete(&k).await;
                }
            }
        }
        let ctype = if file.ends_with(".json") {
            "application/json"
        } else {
            "application/octet-stream"
        };
        objects
            .put_file(&format!("{prefix}{file}"), &path, ctype)
            .await
            .map_err(|e| StageError::Io(format!("storing {file}: {e}")))?;
    }
    Ok(())
}
