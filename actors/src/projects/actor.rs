//! `ProjectActor`: one per project being processed. It waits for a worker
//! slot (`queued`), then runs the stages download → transcribe → cut →
//! caption one by one, each in a `StageActor` spawned linked to it, persists
//! the project after every step, publishes every change as an SSE event,
//! retries a failed stage with backoff, and handles cancel. On a cluster it
//! first takes the project's lease (`project:<id>`, `storage/node_leases.rs`),
//! renews it on a timer, writes only under it, and stops when it is lost.

use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use tokio_util::sync::CancellationToken;

use super::clustered::StageParent;
use super::domain::Projects;
use super::events::ProjectEventBody;
pub use super::messages::ProjectMsg;
use super::records::{now_ms, ProjectRecord, ProjectState};
use super::stages::{Progress, Stage, StageError};
use super::work::{self, CaptionResult};
use crate::mailbox::{ActorMeta, Tracked};

impl Projects {
    /// Starts (or resumes) processing of a stored project, supervised by
    /// the tree's `projects` branch.
    /// Starting a project that already runs here (a hand-off racing its
    /// creation) does nothing.
    pub async fn start_project(
        self: &Arc<Self>,
        project: ProjectRecord,
    ) -> Result<(), crate::supervisor::SupervisionError> {
        let id = project.id.clone();
        if self.project_actor(&id).is_some() {
            return Ok(());
        }
        let meta = ActorMeta::new();
        let name = Some(format!("project:{id}"));
        let args = (self.clone(), project, meta.clone());
        let sup = self.tree.projects.supervisor().await?;
        let (actor, _) = match Actor::spawn_linked(name, ProjectActor, args, sup).await {
            Ok(spawned) => spawned,
            Err(ractor::SpawnErr::ActorAlreadyRegistered(_)) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        self.projects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, Tracked::new(actor, meta));
        Ok(())
    }
}

pub struct ProjectActor;

pub struct ProjectActorState {
    projects: Arc<Projects>,
    project: ProjectRecord,
    cancel: CancellationToken,
    permit: Option<tokio::sync::OwnedSemaphorePermit>,
    /// The wait for a worker slot; ends with this actor (also by a panic).
    waiting: Option<crate::tasks::AbortOnDrop<()>>,
    attempts: u32,
    current: Option<Stage>,
    started: std::time::Instant,
    /// This actor's reference with counted sends (mailbox length).
    me: Tracked<ProjectMsg>,
    /// The project's lease while held (clustered nodes only).
    fence: Option<crate::storage::leases::Fence>,
    renewing: Option<ractor::concurrency::JoinHandle<()>>,
}

impl ProjectActorState {
    fn next_stage(&self) -> Option<Stage> {
        Stage::ALL
            .into_iter()
            .find(|s| !self.project.finished.contains(s))
    }

    async fn save(&mut self, event: Option<ProjectEventBody>) {
        self.project.updated_at = now_ms();
        let fence = self.fence.clone();
        match self
            .projects
            .save_project_under(fence.as_ref(), &mut self.project, event)
            .await
        {
            Ok(()) => {}
            Err(crate::storage::kv::StorageError::Fenced { .. }) => self.lost(),
            Err(e) => {
                tracing::error!(project_id = %self.project.id, error = %e, "cannot persist the project")
            }
        }
    }

    /// The lease is gone: another node runs the project now. Stop without
    /// writing anything more.
    fn lost(&mut self) {
        tracing::warn!(project_id = %self.project.id, "project lease lost; stopping here");
        self.fence = None;
        self.cancel.cancel();
        self.me.actor.stop(Some("lease lost".into()));
    }

    /// Sends `msg` to this actor after `delay`, counted in its mailbox.
    fn later(&self, delay: Duration, msg: impl FnOnce() -> ProjectMsg + Send + 'static) {
        let meta = self.me.meta.clone();
        self.me.actor.send_after(delay, move || {
            meta.sent();
            msg()
        });
    }

    fn progress_event(&self, stage: Option<Stage>) -> ProjectEventBody {
        ProjectEventBody::progress(&self.project, stage)
    }
}

/// Runs one stage and reports to its project. Spawned linked to the
/// `ProjectActor`; the stage runs inside this actor's handler (never in a
/// detached task), so a panic anywhere in it fails this actor and reaches
/// the project as a supervision event.
pub struct StageActor;

pub struct StageArgs {
    projects: Arc<Projects>,
    project: ProjectRecord,
    stage: Stage,
    cancel: CancellationToken,
    parent: Tracked<ProjectMsg>,
}

pub enum StageMsg {
    Run,
}

// Local only: with ractor's `cluster` feature, messages opt in explicitly.
impl ractor::Message for StageMsg {}

impl Actor for StageActor {
    type Msg = StageMsg;
    type State = Option<StageArgs>;
    type Arguments = StageArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<StageMsg>,
        args: StageArgs,
    ) -> Result<Option<StageArgs>, ActorProcessingErr> {
        myself.send_message(StageMsg::Run)?;
        Ok(Some(args))
    }

    #[tracing::instrument(skip_all, fields(actor = %myself.get_name().unwrap_or_default()))]
    async fn handle(
        &self,
        myself: ActorRef<StageMsg>,
        _msg: StageMsg,
        state: &mut Option<StageArgs>,
    ) -> Result<(), ActorProcessingErr> {
        let Some(StageArgs {
            projects,
            project,
            stage,
            cancel,
            parent,
        }) = state.take()
        else {
            return Ok(());
        };
        // The stage's own token: cancelled with the project, and when this
        // handler is dropped (the actor killed), so no work outlives it.
        let cancel = cancel.child_token();
        let _guard = cancel.clone().drop_guard();
        let progress = {
            let parent = parent.clone();
            Progress::new(move |p| {
                let _ = parent.send(ProjectMsg::Progress(stage, p));
            })
        };
        crate::faults::check(crate::faults::Point::Stage(stage.spec().fault));
        let started = std::time::Instant::now();
        let result = work::run_stage(&projects.stages, project, stage, cancel, progress).await;
        projects
            .metrics
            .observe_stage(stage.name(), started.elapsed().as_secs_f64());
        let _ = parent.send(ProjectMsg::StageDone(stage, result));
        myself.stop(None);
        Ok(())
    }
}

impl Actor for ProjectActor {
    type Msg = ProjectMsg;
    type State = ProjectActorState;
    type Arguments = (Arc<Projects>, ProjectRecord, Arc<ActorMeta>);

    async fn pre_start(
        &self,
        myself: ActorRef<ProjectMsg>,
        (projects, project, meta): Self::Arguments,
    ) -> Result<ProjectActorState, ActorProcessingErr> {
        let me = Tracked::new(myself, meta);
        me.send(ProjectMsg::Acquire)?;
        Ok(ProjectActorState {
            projects,
            project,
            cancel: CancellationToken::new(),
            permit: None,
            waiting: None,
            attempts: 0,
            current: None,
            started: std::time::Instant::now(),
            me,
            fence: None,
            renewing: None,
        })
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<ProjectMsg>,
        state: &mut ProjectActorState,
    ) -> Result<(), ActorProcessingErr> {
        state.cancel.cancel();
        if let Some(r) = state.renewing.take() {
            r.abort();
        }
        if let Some(f) = state.fence.take() {
            state.projects.leases.release(&f).await;
        }
        state.projects.forget_project(&state.project.id);
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<ProjectMsg>,
        msg: ProjectMsg,
        state: &mut ProjectActorState,
    ) -> Result<(), ActorProcessingErr> {
        state.me.meta.received();
        match msg {
            ProjectMsg::Acquire => self.acquire(&myself, state).await?,
            ProjectMsg::Renew => {
                if let Some(f) = state.fence.clone() {
                    if !state.projects.leases.renew(&f).await {
                        state.lost();
                    }
                }
            }
            ProjectMsg::Start => {
                state.project.state = ProjectState::Queued;
                let event = state.progress_event(None);
                state.save(Some(event)).await;
                let pool = state.projects.pool.clone();
                let me = state.me.clone();
                let cancel = state.cancel.clone();
                state.waiting = Some(crate::tasks::AbortOnDrop(tokio::spawn(async move {
                    tokio::select! {
                        permit = pool.acquire_owned() => {
                            if let Ok(p) = permit { let _ = me.send(ProjectMsg::SlotGranted(p)); }
                        }
                        _ = cancel.cancelled() => {}
                    }
                })));
            }
            ProjectMsg::SlotGranted(permit) => {
                state.waiting = None;
                state.permit = Some(permit);
                state.started = std::time::Instant::now();
                self.run_next(&myself, state).await?;
            }
            ProjectMsg::Progress(stage, pct) => {
                if state.current == Some(stage) && !state.cancel.is_cancelled() {
                    let i = stage as usize;
                    if pct > state.project.step_progress[i] {
                        state.project.step_progress[i] = pct;
                        let event = state.progress_event(Some(stage));
                        state.save(Some(event)).await;
                    }
                }
            }
            ProjectMsg::StageDone(stage, result) => {
                if state.current != Some(stage) {
                    return Ok(());
                }
                state.current = None;
                self.stage_finished(&myself, state, stage, result).await?;
            }
            ProjectMsg::Retry(stage) => {
                if !state.cancel.is_cancelled() && state.current.is_none() {
                    self.spawn_stage(&myself, state, stage).await?;
                }
            }
            ProjectMsg::Cancel(reply) => {
                state.cancel.cancel();
                for child in myself.get_children() {
                    child.stop(Some("cancelled".into()));
                }
                state.projects.cancel_project(&mut state.project).await;
                let _ = reply.send(());
                myself.stop(Some("cancelled".into()));
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<ProjectMsg>,
        evt: SupervisionEvent,
        state: &mut ProjectActorState,
    ) -> Result<(), ActorProcessingErr> {
        if let SupervisionEvent::ActorFailed(_, err) = evt {
            if let Some(stage) = state.current.take() {
                tracing::warn!(project_id = %state.project.id, %stage, error = %err, "stage actor crashed");
                let failure = Err(StageError::Io(format!("the {stage} stage crashed")));
                self.stage_finished(&myself, state, stage, failure).await?;
            }
        }
        Ok(())
    }
}

/// A remote stage reports to the project's actor as a local one does.
impl StageParent for Tracked<ProjectMsg> {
    fn progress(&self, stage: Stage, pct: u8) {
        let _ = self.send(ProjectMsg::Progress(stage, pct));
    }

    fn done(&self, stage: Stage, result: Result<Option<CaptionResult>, StageError>) {
        let _ = self.send(ProjectMsg::StageDone(stage, result));
    }
}

impl ProjectActor {
    /// Takes the project's lease when the node leases (else starts at
    /// once): with it, reloads the record (a previous holder may have
    /// written since it was read) and starts; while another node holds it,
    /// tries again a third of a lease later.
    async fn acquire(
        &self,
        myself: &ActorRef<ProjectMsg>,
        state: &mut ProjectActorState,
    ) -> Result<(), ActorProcessingErr> {
        let Some((_, ttl)) = state.projects.leases.leasing() else {
            state.me.send(ProjectMsg::Start)?;
            return Ok(());
        };
        let key = format!("project:{}", state.project.id);
        match state.projects.leases.acquire(&key).await {
            Ok(Some(fence)) => {
                state.fence = Some(fence);
                let meta = state.me.meta.clone();
                state.renewing = Some(myself.send_interval(ttl / 3, move || {
                    meta.sent();
                    ProjectMsg::Renew
                }));
                let (user, id) = (&state.project.user_id, &state.project.id);
                let kv = &*state.projects.kv;
                let stored = crate::projects::records::load_project_async(kv, user, id).await;
                match stored {
                    Ok(Some(p)) if !p.state.is_terminal() => {
                        state.project = p;
                        state.me.send(ProjectMsg::Start)?;
                    }
                    Ok(_) => myself.stop(Some("finished elsewhere".into())),
                    Err(e) => return Err(e.into()),
                }
            }
            Ok(None) => {
                tracing::info!(project_id = %state.project.id, "project leased by another node; waiting");
                state.later(ttl / 3, || ProjectMsg::Acquire);
            }
            Err(e) => {
                tracing::warn!(project_id = %state.project.id, error = %e, "cannot take the project lease; retrying");
                state.later(ttl / 3, || ProjectMsg::Acquire);
            }
        }
        Ok(())
    }

    async fn run_next(
        &self,
        myself: &ActorRef<ProjectMsg>,
        state: &mut ProjectActorState,
    ) -> Result<(), ActorProcessingErr> {
        match state.next_stage() {
            Some(stage) => {
                state.attempts = 0;
                self.spawn_stage(myself, state, stage).await
            }
            None => {
                let fence = state.fence.clone();
                state
                    .projects
                    .complete_project(fence.as_ref(), &mut state.project, state.started.elapsed())
                    .await;
                myself.stop(None);
                Ok(())
            }
        }
    }

    async fn spawn_stage(
        &self,
        myself: &ActorRef<ProjectMsg>,
        state: &mut ProjectActorState,
        stage: Stage,
    ) -> Result<(), ActorProcessingErr> {
        crate::faults::check(crate::faults::Point::Project);
        state.current = Some(stage);
        state.project.state = ProjectState::running(stage);
        state.project.step_progress[stage as usize] = 0;
        let event = state.progress_event(Some(stage));
        state.save(Some(event)).await;
        let remote = state.projects.cluster.get().filter(|_| stage.spec().remote);
        if let Some(cluster) = remote {
            let name = format!("stage:{}:{}", state.project.id, stage.name());
            let parent = Arc::new(state.me.clone());
            let (project, link) = (state.project.clone(), myself.get_cell());
            cluster
                .spawn_stage(name, link, project, stage, parent)
                .await?;
            return Ok(());
        }
        let args = StageArgs {
            projects: state.projects.clone(),
            project: state.project.clone(),
            stage,
            cancel: state.cancel.clone(),
            parent: state.me.clone(),
        };
        let name = format!("stage:{}:{}", state.project.id, stage.name());
        myself.spawn_linked(Some(name), StageActor, args).await?;
        Ok(())
    }

    async fn stage_finished(
        &self,
        myself: &ActorRef<ProjectMsg>,
        state: &mut ProjectActorState,
        stage: Stage,
        result: Result<Option<CaptionResult>, StageError>,
    ) -> Result<(), ActorProcessingErr> {
        if state.cancel.is_cancelled() {
            return Ok(());
        }
        match result {
            Ok(output) => {
                if let Some(CaptionResult {
                    clips,
                    language,
                    language_probability,
                }) = output
                {
                    state.project.language = Some(language);
                    state.project.language_probability = language_probability;
                    let fence = state.fence.clone();
                    state
                        .projects
                        .store_clips(fence.as_ref(), &mut state.project, clips)
                        .await;
                }
                state.project.finished.push(stage);
                state.project.step_progress[stage as usize] = 100;
                let event = state.progress_event(Some(stage));
                state.save(Some(event)).await;
                self.run_next(myself, state).await
            }
            Err(e)
                if e.is_retryable() && state.attempts < state.projects.settings.stage_retries =>
            {
                state.attempts += 1;
                let delay = Duration::from_millis(500 * 2u64.pow(state.attempts));
                tracing::warn!(project_id = %state.project.id, %stage, attempt = state.attempts, error = %e, "stage failed; retrying");
                state.later(delay, move || ProjectMsg::Retry(stage));
                Ok(())
            }
            Err(e) => {
                tracing::warn!(project_id = %state.project.id, %stage, error = %e, "project failed");
                let fence = state.fence.clone();
                state
                    .projects
                    .fail_project(fence.as_ref(), &mut state.project, &e.to_string())
                    .await;
                myself.stop(None);
                Ok(())
            }
        }
    }
}
