//! The project side of a stage run on the cluster: a [`RemoteStage`] actor
//! per stage, linked to its project's actor, sends the stage to a worker
//! (held here while every worker's slots are taken), relays its progress
//! and result to the project ([`StageParent`]), and sends it elsewhere when
//! the worker is lost. The worker side is `worker.rs`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ractor::{Actor, ActorCell, ActorProcessingErr, ActorRef, SpawnErr};

use super::stage_msgs::{reply_group, RemoteStageMsg, StageJob, StageReport, WorkerMsg};
use super::stage_wire::{self, Carried};
use super::wire::{worker_group, Wire};
use super::{Cluster, Pick};
use crate::projects::clustered::{Clustered, StageParent};
use crate::projects::records::ProjectRecord;
use crate::projects::stages::{Stage, StageError};
use crate::projects::work::work_prefix;
use crate::storage::objects::ObjectStore;

/// Runs one stage of a project on a worker somewhere in the cluster and
/// reports to the project like a local stage actor does.
pub struct RemoteStage;

/// The cluster as the project domain runs stages on it
/// ([`Clustered`]): a [`RemoteStage`] per stage.
pub struct ClusterStages {
    pub cluster: Arc<Cluster>,
    /// Where jobs and results too large for a cluster message travel.
    pub objects: Arc<dyn ObjectStore>,
}

#[async_trait::async_trait]
impl Clustered for ClusterStages {
    fn node_name(&self) -> &str {
        self.cluster.node_name()
    }

    async fn spawn_stage(
        &self,
        name: String,
        supervisor: ActorCell,
        project: ProjectRecord,
        stage: Stage,
        parent: Arc<dyn StageParent>,
    ) -> Result<(), SpawnErr> {
        let args = RemoteStageArgs {
            cluster: self.cluster.clone(),
            objects: self.objects.clone(),
            project,
            stage,
            parent,
        };
        Actor::spawn_linked(Some(name), RemoteStage, args, supervisor).await?;
        Ok(())
    }
}

pub struct RemoteStageArgs {
    pub cluster: Arc<Cluster>,
    /// Where jobs and results too large for a cluster message travel.
    pub objects: Arc<dyn ObjectStore>,
    pub project: ProjectRecord,
    pub stage: Stage,
    pub parent: Arc<dyn StageParent>,
}

pub struct RemoteStageState {
    args: RemoteStageArgs,
    run: String,
    dispatches: u32,
    /// The job and worker node now responsible, and when it was sent.
    current: Option<(String, String, Instant)>,
    accepted: bool,
    done: bool,
    warned_idle: bool,
    /// Keys of the jobs sent through object storage.
    stored: Vec<String>,
    /// A `Retry` is on its way (the stage is held for a free slot).
    polling: bool,
    /// Dispatches in a row that an up worker never accepted.
    unaccepted: u32,
}

impl Actor for RemoteStage {
    type Msg = RemoteStageMsg;
    type State = RemoteStageState;
    type Arguments = RemoteStageArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<RemoteStageMsg>,
        args: RemoteStageArgs,
    ) -> Result<RemoteStageState, ActorProcessingErr> {
        let run = format!(
            "{}-{}-{}",
            args.project.id,
            args.stage,
            uuid::Uuid::new_v4().simple()
        );
        ractor::pg::join(reply_group(&run), vec![myself.get_cell()]);
        myself.send_interval(args.cluster.heartbeat_every(), || RemoteStageMsg::Tick);
        let mut st = RemoteStageState {
            args,
            run,
            dispatches: 0,
            current: None,
            accepted: false,
            done: false,
            warned_idle: false,
            stored: Vec::new(),
            polling: false,
            unaccepted: 0,
        };
        dispatch(&myself, &mut st, None).await;
        Ok(st)
    }

    async fn post_stop(
        &self,
        myself: ActorRef<RemoteStageMsg>,
        st: &mut RemoteStageState,
    ) -> Result<(), ActorProcessingErr> {
        if !st.done {
            if let Some((job, node, _)) = &st.current {
                for m in ractor::pg::get_members(&worker_group(node)) {
                    let w: ActorRef<WorkerMsg> = m.into();
                    let _ = w.cast(WorkerMsg::Cancel(job.clone()));
                }
            }
        }
        ractor::pg::leave(reply_group(&st.run), vec![myself.get_cell()]);
        // Jobs sent through object storage.
        for key in st.stored.drain(..) {
            let _ = st.args.objects.delete(&key).await;
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<RemoteStageMsg>,
        msg: RemoteStageMsg,
        st: &mut RemoteStageState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            RemoteStageMsg::Report(Wire(Some(r))) => {
                let current = st.current.as_ref().map(|c| c.0.as_str());
                if st.done || current != Some(r.job()) {
                    return Ok(());
                }
                let stage = st.args.stage;
                match r {
                    StageReport::Accepted { .. } => {
                        st.accepted = true;
                        st.unaccepted = 0;
                    }
                    StageReport::Progress { pct, .. } => {
                        st.accepted = true;
                        st.args.parent.progress(stage, pct);
                    }
                    StageReport::Done { result, .. } => {
                        let objects = st.args.objects.clone();
                        let result = stage_wire::open(&*objects, result, true)
                            .await
                            .and_then(|r| r);
                        st.done = true;
                        st.args.parent.done(stage, result);
                        myself.stop(None);
                    }
                }
            }
            RemoteStageMsg::Report(Wire(None)) => {}
            RemoteStageMsg::Retry => {
                st.polling = false;
                if st.current.is_none() && !st.done {
                    dispatch(&myself, st, None).await;
                }
            }
            RemoteStageMsg::Tick => {
                let timeout = st.args.cluster.heartbeat_timeout();
                match st.current.clone() {
                    None => dispatch(&myself, st, None).await,
                    Some((job, node, sent)) => {
                        let alive = st.args.cluster.is_up(&node)
                            && !ractor::pg::get_members(&worker_group(&node)).is_empty();
                        let stuck = !st.accepted && sent.elapsed() > timeout;
                        if alive && stuck {
                            st.unaccepted += 1;
                        }
                        if st.unaccepted >= MAX_UNACCEPTED {
                            // Up workers keep refusing it (e.g. its stored
                            // job cannot be read): a stage failure, retried
                            // or failing the project like any other.
                            tracing::warn!(%job, stage = %st.args.stage,
                                project_id = %st.args.project.id,
                                "no worker accepted the stage; failing it");
                            st.done = true;
                            let err = StageError::Io(format!(
                                "no worker accepted the {} stage ({MAX_UNACCEPTED} tries)",
                                st.args.stage
                            ));
                            st.args.parent.done(st.args.stage, Err(err));
                            myself.stop(None);
                            return Ok(());
                        }
                        if !alive || stuck {
                            tracing::warn!(%job, worker = %node, stage = %st.args.stage,
                                project_id = %st.args.project.id,
                                reason = if alive { "not accepted" } else { "worker down" },
                                "stage lost; running it elsewhere");
                            dispatch(&myself, st, Some(&node)).await;
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// Dispatches in a row that up workers did not accept before the stage
/// counts as failed.
const MAX_UNACCEPTED: u32 = 10;

/// How often a stage held for a free worker slot asks again.
const HOLD_POLL: Duration = Duration::from_millis(100);

/// Sends the stage to a worker with a free slot, the least loaded (another
/// one than `avoid` when there is a choice); while every slot is taken it
/// is held here; with no worker up, it waits for the next tick.
async fn dispatch(
    myself: &ActorRef<RemoteStageMsg>,
    st: &mut RemoteStageState,
    avoid: Option<&str>,
) {
    let (node, worker) = match st.args.cluster.pick_worker(&st.run, avoid) {
        Pick::Worker(node, worker) => (node, worker),
        Pick::AllBusy => {
            // Held here until a worker has a free slot: ask again soon
            // (workers announce a finished stage at once).
            st.current = None;
            if !st.polling {
                st.polling = true;
                myself.send_after(HOLD_POLL, || RemoteStageMsg::Retry);
            }
            return;
        }
        Pick::NoWorker => {
            st.current = None;
            if !st.warned_idle {
                st.warned_idle = true;
                tracing::warn!(project_id = %st.args.project.id, stage = %st.args.stage,
                    "no stage worker is up; waiting for one");
            }
            return;
        }
    };
    st.dispatches += 1;
    let job = format!("{}#{}", st.run, st.dispatches);
    let msg = StageJob {
        job: job.clone(),
        run: st.run.clone(),
        stage: st.args.stage,
        project: st.args.project.clone(),
    };
    tracing::info!(%job, worker = %node, stage = %st.args.stage, "stage sent to a worker");
    let key = stage_wire::payload_key(&work_prefix(&st.args.project.id), &job, "job");
    let limit = st.args.cluster.max_inline();
    let msg = match stage_wire::carry(&*st.args.objects, &key, msg, limit).await {
        Ok(m) => {
            if let Carried::Stored { key, .. } = &m {
                st.stored.push(key.clone());
            }
            m
        }
        Err(e) => {
            // Tried again on the next tick.
            tracing::warn!(%job, error = %e, "stage job not sent");
            st.current = None;
            return;
        }
    };
    let worker: ActorRef<WorkerMsg> = worker.into();
    let _ = worker.cast(WorkerMsg::Run(Wire(Some(msg))));
    st.current = Some((job, node, Instant::now()));
    st.accepted = false;
    st.warned_idle = false;
}
