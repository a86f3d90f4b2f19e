//! Stage workers across the cluster. ractor_cluster cannot spawn an actor
//! on another node, so every `worker` node runs one [`StageWorker`] joined
//! to the process groups [`WORKERS`] and `clipforge.worker.<node>`; it runs
//! the stages it is sent, locally. A project's node runs each stage through
//! a `RemoteStage` actor (`remote_stage.rs`, linked to the `ProjectActor`)
//! that picks a worker with a free slot from the heartbeats, casts it the job, relays its
//! progress and result, and sends the job again elsewhere when that worker's
//! node goes down (heartbeat timeout or closed connection) or never accepts.
//!
//! Media moves through object storage: a worker fetches the stage's inputs
//! (the `reads` of its row in `projects/stages/table.rs`) from
//! `work/<project>/` into a scratch folder, runs the stage there, stores its
//! outputs (the row's `writes`) back and removes the folder. Replies travel to the
//! process group `clipforge.stage.<run>` the `RemoteStage` joined.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef};
use ractor_cluster::RactorClusterMessage;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::stage_wire::{self, Carried};
use super::work::{self, CaptionResult};
use super::Services;
use crate::cluster::wire::{worker_group, Wire, WORKERS};
use crate::projects::records::ProjectRecord;
use crate::projects::stages::table::WorkFile;
use crate::projects::stages::{Progress, Stage, StageError};

pub(super) fn reply_group(run: &str) -> String {
    format!("clipforge.stage.{run}")
}

/// One stage of one project, sent to a worker.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StageJob {
    /// Unique per dispatch: `<run>#<n>`.
    pub job: String,
    /// The sender's run (reply group key).
    pub run: String,
    pub stage: Stage,
    pub project: ProjectRecord,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum StageReport {
    Accepted {
        job: String,
        node: String,
    },
    Progress {
        job: String,
        pct: u8,
    },
    Done {
        job: String,
        result: Carried<Result<Option<CaptionResult>, StageError>>,
    },
}

impl StageReport {
    pub(super) fn job(&self) -> &str {
        match self {
            Self::Accepted { job, .. } | Self::Progress { job, .. } | Self::Done { job, .. } => job,
        }
    }
}

#[derive(RactorClusterMessage)]
pub enum WorkerMsg {
    Run(Wire<Carried<StageJob>>),
    /// Cancel a job by id.
    Cancel(String),
}

#[derive(RactorClusterMessage)]
pub enum RemoteStageMsg {
    Report(Wire<StageReport>),
    /// The local timer: check the worker is alive.
    Tick,
    /// The local timer of a held stage: look for a free slot again.
    Retry,
}

// ---------------------------------------------------------------- worker side

/// Starts this node's stage worker (role `worker`).
pub async fn start_worker(
    cluster: &crate::cluster::Cluster,
    services: Arc<Services>,
    node: String,
) -> anyhow::Result<()> {
    let name = "cluster.stage_worker";
    let spawn = crate::supervisor::spawner(name, StageWorker, (services, node));
    cluster.supervise(name, spawn).await
}

/// Runs the stages sent to this node, at most `pipeline.workers` at once.
#[derive(Clone)]
pub struct StageWorker;

pub struct StageWorkerState {
    services: Arc<Services>,
    node: String,
    slots: Arc<tokio::sync::Semaphore>,
    running: Arc<Mutex<HashMap<String, CancellationToken>>>,
    /// The job each live job actor runs.
    jobs: HashMap<ractor::ActorId, StageJob>,
    /// Reports of crashed jobs being sent; they end with this actor.
    reports: tokio::task::JoinSet<()>,
}

impl Actor for StageWorker {
    type Msg = WorkerMsg;
    type State = StageWorkerState;
    type Arguments = (Arc<Services>, String);

    async fn pre_start(
        &self,
        myself: ActorRef<WorkerMsg>,
        (services, node): Self::Arguments,
    ) -> Result<StageWorkerState, ActorProcessingErr> {
        ractor::pg::join(WORKERS.to_string(), vec![myself.get_cell()]);
        ractor::pg::join(worker_group(&node), vec![myself.get_cell()]);
        let slots = services.settings.workers.max(1);
        Ok(StageWorkerState {
            services,
            node,
            slots: Arc::new(tokio::sync::Semaphore::new(slots)),
            running: Arc::default(),
            jobs: HashMap::new(),
            reports: tokio::task::JoinSet::new(),
        })
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<WorkerMsg>,
        evt: ractor::SupervisionEvent,
        st: &mut StageWorkerState,
    ) -> Result<(), ActorProcessingErr> {
        while st.reports.try_join_next().is_some() {}
        match evt {
            ractor::SupervisionEvent::ActorFailed(cell, err) => {
                if let Some(job) = st.jobs.remove(&cell.get_id()) {
                    tracing::warn!(job = %job.job, stage = %job.stage, error = %err, "worker: stage crashed");
                    let report = super::stage_job::crashed(&st.services, &st.running, job);
                    st.reports.spawn(report);
                }
            }
            ractor::SupervisionEvent::ActorTerminated(cell, ..) => {
                st.jobs.remove(&cell.get_id());
            }
            _ => {}
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<WorkerMsg>,
        msg: WorkerMsg,
        st: &mut StageWorkerState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            WorkerMsg::Run(Wire(Some(carried))) => {
                // A stored job that cannot be read is not accepted: the
                // project's `RemoteStage` sends it elsewhere.
                let job = match stage_wire::open(&*st.services.objects, carried, false).await {
                    Ok(job) => job,
                    Err(e) => {
                        tracing::warn!(error = %e, "worker: stage job unreadable");
                        return Ok(());
                    }
                };
                let cancel = CancellationToken::new();
                st.running
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(job.job.clone(), cancel.clone());
                let (services, node) = (st.services.clone(), st.node.clone());
                let (slots, running) = (st.slots.clone(), st.running.clone());
                services.stage_jobs.fetch_add(1, Ordering::AcqRel);
                if let Some(c) = services.cluster.get() {
                    c.load_changed();
                }
                tracing::info!(job = %job.job, stage = %job.stage, project_id = %job.project.id, "worker: stage accepted");
                report(
                    &job.run,
                    StageReport::Accepted {
                        job: job.job.clone(),
                        node,
                    },
                );
                // The stage runs inside a job actor linked to this worker:
                // a panic reaches `handle_supervisor_evt`, which reports the
                // failure, so the project retries instead of waiting forever.
                let args = super::stage_job::JobArgs {
                    services,
                    job: job.clone(),
                    cancel,
                    slots,
                    running,
                };
                let (actor, _) =
                    Actor::spawn_linked(None, super::stage_job::JobActor, args, myself.get_cell())
                        .await?;
                st.jobs.insert(actor.get_id(), job);
            }
            WorkerMsg::Run(Wire(None)) => {}
            WorkerMsg::Cancel(job) => {
                let token = st
                    .running
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&job);
                if let Some(t) = token {
                    tracing::info!(%job, "worker: stage cancelled");
                    t.cancel();
                }
            }
        }
        Ok(())
    }
}

/// Casts `r` to the run's reply group; false when nobody is in it (yet).
pub(super) fn report(run: &str, r: StageReport) -> bool {
    let members = ractor::pg::get_members(&reply_group(run));
    for m in &members {
        let to: ActorRef<RemoteStageMsg> = m.clone().into();
        let _ = to.cast(RemoteStageMsg::Report(Wire(Some(r.clone()))));
    }
    !members.is_empty()
}

/// The result must arrive: the reply group may still be propagating (the
/// job can overtake the group update), so it is retried for a while.
pub(super) async fn report_done(
    services: &Services,
    job: &StageJob,
    result: Result<Option<CaptionResult>, StageError>,
) {
    let limit = services.cluster.get().map(|c| c.max_inline());
    let key = stage_wire::payload_key(&work_prefix(&job.project.id), &job.job, "result");
    let result = match stage_wire::carry(
        &*services.objects,
        &key,
        result,
        limit.unwrap_or(stage_wire::DEFAULT_MAX_INLINE),
    )
    .await
    {
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

fn scratch_dir(services: &Services, job: &str) -> PathBuf {
    let safe: String = job
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    services.settings.data_dir.join("stagework").join(safe)
}

pub(super) async fn run_job(
    services: &Arc<Services>,
    job: &StageJob,
    cancel: CancellationToken,
) -> Result<Option<CaptionResult>, StageError> {
    let dir = scratch_dir(services, &job.job);
    let result = async {
        fetch_inputs(services, &job.project.id, job.stage, &dir).await?;
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
            services.clone(),
            job.project.clone(),
            job.stage,
            &dir,
            cancel,
            progress,
        )
        .await?;
        store_outputs(services, &job.project.id, job.stage, &dir).await?;
        Ok(out)
    }
    .await;
    let _ = tokio::fs::remove_dir_all(&dir).await;
    result
}

/// The object-storage folder of a project's work files.
pub fn work_prefix(project_id: &str) -> String {
    format!("work/{project_id}/")
}

async fn fetch_inputs(
    services: &Services,
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
    let listed = services
        .objects
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
        services
            .objects
            .get_to_file(key, &dir.join(file))
            .await
            .map_err(|e| StageError::Io(format!("fetching {file}: {e}")))?;
    }
    Ok(())
}

async fn store_outputs(
    services: &Services,
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
            if let Ok(old) = services
                .objects
                .list_prefix(&format!("{prefix}source."))
                .await
            {
                for (k, _) in old {
                    let _ = services.objects.delete(&k).await;
                }
            }
        }
        let ctype = if file.ends_with(".json") {
            "application/json"
        } else {
            "application/octet-stream"
        };
        services
            .objects
            .put_file(&format!("{prefix}{file}"), &path, ctype)
            .await
            .map_err(|e| StageError::Io(format!("storing {file}: {e}")))?;
    }
    Ok(())
}
