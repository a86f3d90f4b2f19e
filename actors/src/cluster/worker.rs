//! Stage workers across the cluster. ractor_cluster cannot spawn an actor
//! on another node, so every `worker` node runs one [`StageWorker`] joined
//! to the process groups [`WORKERS`] and `clipforge.worker.<node>`; it runs
//! the stages it is sent, locally. A project's node runs each stage through
//! a `RemoteStage` actor (`remote_stage.rs`, linked to the project's actor)
//! that picks a worker with a free slot from the heartbeats, casts it the job, relays its
//! progress and result, and sends the job again elsewhere when that worker's
//! node goes down (heartbeat timeout or closed connection) or never accepts.
//!
//! Media moves through object storage: a worker fetches the stage's inputs
//! (the `reads` of its row in `projects/stages/table.rs`) from
//! `work/<project>/` into a scratch folder, runs the stage there, stores its
//! outputs (the row's `writes`) back and removes the folder, each job in its
//! own `JobActor` (`stage_job.rs`). Replies travel to the process group
//! `clipforge.stage.<run>` the `RemoteStage` joined (`stage_msgs.rs`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio_util::sync::CancellationToken;

use super::stage_job::WorkerHost;
use super::stage_msgs::{report, StageJob, StageReport, WorkerMsg};
use super::stage_wire;
use super::wire::{worker_group, Wire, WORKERS};

/// Starts this node's stage worker (role `worker`).
pub async fn start_worker(host: WorkerHost) -> anyhow::Result<()> {
    let name = "cluster.stage_worker";
    let cluster = host.cluster.clone();
    let node = cluster.node_name().to_string();
    let spawn = crate::supervisor::spawner(name, StageWorker, (host, node));
    cluster.supervise(name, spawn).await
}

/// Runs the stages sent to this node, at most `pipeline.workers` at once.
#[derive(Clone)]
pub struct StageWorker;

pub struct StageWorkerState {
    host: WorkerHost,
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
    type Arguments = (WorkerHost, String);

    async fn pre_start(
        &self,
        myself: ActorRef<WorkerMsg>,
        (host, node): Self::Arguments,
    ) -> Result<StageWorkerState, ActorProcessingErr> {
        ractor::pg::join(WORKERS.to_string(), vec![myself.get_cell()]);
        ractor::pg::join(worker_group(&node), vec![myself.get_cell()]);
        let slots = host.slots.max(1);
        Ok(StageWorkerState {
            host,
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
                    let report = super::stage_job::crashed(&st.host, &st.running, job);
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
                let job = match stage_wire::open(&*st.host.stages.objects, carried, false).await {
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
                let (host, node) = (st.host.clone(), st.node.clone());
                let (slots, running) = (st.slots.clone(), st.running.clone());
                host.count_job(true);
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
                    host,
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
