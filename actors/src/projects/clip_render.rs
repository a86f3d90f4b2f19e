//! Rendering one new version of an edited clip (issue 29): only the caption
//! stage, for that clip, from what the project kept (`edit_kit`: no new
//! transcription; the faces are analysed again only when the range grows
//! past what the current version's framing saw, or a new range needs to
//! know who talks). The render waits for a slot of the node's worker
//! pool; its progress, its end (`render` events, then `clip` and
//! `completed` again) go to the project's event stream. The new files get
//! their own keys (`clip-<n>-v<version>.*`) and the clip record switches
//! to them in one conditional write, so the clip always plays a complete
//! version: a failed, panicked or interrupted render leaves the previous
//! one current and says why on the clip.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use ractor::{Actor, ActorProcessingErr, ActorRef};

use super::domain::Projects;
use super::renders::Batch;
pub use super::renders::RenderJob;
use crate::accounts::AccountError;
use crate::projects::clip_history::{ClipEdits, ClipRender, ClipVersion};
use crate::projects::edit;
use crate::projects::edit_kit::{self, KitError};
use crate::projects::events::{ProjectEventBody, RenderEvent};
use crate::projects::records::{now_ms, ClipRecord, ProjectRecord};
use crate::projects::stages::caption::{self, CaptionOptions};
use crate::projects::stages::cut::ClipPlan;
use crate::projects::stages::{Progress, StageCtx, StageError};
use crate::projects::work::StoreClipError;
use crate::supervisor::SupervisionError;

/// A render still `rendering` after this long was left by a node that
/// stopped and did not come back: it no longer blocks edits.
const STALE_MS: i64 = 2 * 3600 * 1000;
/// Progress events are written at most every this many percent.
const PROGRESS_STEP: u8 = 10;

/// Why a render made no new version (kept on the clip as its render's
/// `error` and sent in the `failed` render event).
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// The worker pool closed: the node is stopping.
    #[error("the node is shutting down")]
    ShuttingDown,
    /// What the project kept for edits, or its source, cannot be read.
    #[error(transparent)]
    Kit(#[from] KitError),
    #[error("creating a work folder: {0}")]
    WorkFolder(#[source] std::io::Error),
    /// The caption stage failed, or drew nothing.
    #[error(transparent)]
    Stage(#[from] StageError),
    #[error("nothing was rendered")]
    NothingRendered,
    #[error("storing the clip: {0}")]
    Store(#[source] StoreClipError),
    /// The new files do not fit in the owner's storage quota (or the
    /// account's actor did not answer).
    #[error(transparent)]
    Account(#[from] AccountError),
    /// The render panicked, or its batch's actor stopped with it pending
    /// (`reason`), or the server restarted during it.
    #[error("the render stopped unexpectedly")]
    Panicked,
    #[error("the render stopped unexpectedly ({reason})")]
    Stopped { reason: String },
    #[error("the server restarted during the render; the previous version is current")]
    Restarted,
}

/// True when a `rendering` render is too old to be running.
pub fn stale(r: &ClipRender) -> bool {
    now_ms() - r.started_at > STALE_MS
}

/// One of an account's `renders_per_account` render slots, given back
/// when dropped.
pub struct RenderSlot {
    projects: Arc<Projects>,
    user_id: String,
}

impl RenderSlot {
    pub fn take(projects: &Arc<Projects>, user_id: &str) -> Option<Self> {
        let mut counts = projects
            .renders
            .counts
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let n = counts.entry(user_id.to_string()).or_insert(0);
        if *n >= projects.settings.renders_per_account {
            return None;
        }
        *n += 1;
        Some(Self {
            projects: projects.clone(),
            user_id: user_id.to_string(),
        })
    }
}

impl Drop for RenderSlot {
    fn drop(&mut self) {
        let mut counts = self
            .projects
            .renders
            .counts
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(n) = counts.get_mut(&self.user_id) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&self.user_id);
            }
        }
    }
}

/// Writes each render's first event (`rendering`, 0 %) before the caller
/// answers, so a status stream opened after the answer waits for the
/// render instead of ending on the project's earlier `completed`; then
/// runs the renders one after the other in a [`RenderActor`] under the
/// tree's `projects` branch, which always records how each ended (a panic
/// inside one render is caught and recorded as its failure; one outside
/// fails the actor, and the branch records the renders it left as failed).
pub async fn spawn(
    projects: Arc<Projects>,
    project: ProjectRecord,
    jobs: Vec<(ClipRecord, RenderJob)>,
    slot: RenderSlot,
) {
    for (clip, job) in &jobs {
        projects
            .append_event(
                &project,
                render_event(clip, job.version, "rendering", 0, None),
            )
            .await;
    }
    let n = projects.renders.named.fetch_add(1, Ordering::AcqRel);
    let name = format!("{RENDER_PREFIX}{}:{n}", project.id);
    let batch = Batch {
        project,
        pending: Arc::new(Mutex::new(jobs.into())),
    };
    projects
        .renders
        .batches
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(name.clone(), batch.clone());
    let args = RenderArgs {
        projects: projects.clone(),
        batch: batch.clone(),
        name: name.clone(),
        _slot: slot,
    };
    let spawned = match projects.tree.projects.supervisor().await {
        Ok(sup) => Actor::spawn_linked(Some(name.clone()), RenderActor, args, sup)
            .await
            .map_err(SupervisionError::from),
        Err(e) => Err(e),
    };
    if let Err(e) = spawned {
        tracing::error!(error = %e, "cannot start a render");
        projects
            .renders_stopped(&name, &format!("cannot start: {e}"))
            .await;
    }
}

/// The name of every render batch actor starts with this (then the
/// project id and a number).
pub(super) const RENDER_PREFIX: &str = "render:";

/// Runs one batch of renders, one after the other, then stops. Not
/// restarted when it fails (see [`spawn`]).
pub struct RenderActor;

pub struct RenderArgs {
    projects: Arc<Projects>,
    batch: Batch,
    name: String,
    /// Given back (to the account's renders) when the actor ends.
    _slot: RenderSlot,
}

impl Actor for RenderActor {
    type Msg = ();
    type State = RenderArgs;
    type Arguments = RenderArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<()>,
        args: RenderArgs,
    ) -> Result<RenderArgs, ActorProcessingErr> {
        myself.send_message(())?;
        Ok(args)
    }

    async fn handle(
        &self,
        myself: ActorRef<()>,
        (): (),
        state: &mut RenderArgs,
    ) -> Result<(), ActorProcessingErr> {
        let pending = state.batch.pending.clone();
        loop {
            let next = pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .front()
                .cloned();
            let Some((clip, job)) = next else { break };
            crate::faults::check(crate::faults::Point::RenderBatch);
            render_one(&state.projects, &state.batch.project, clip, job).await;
            pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .pop_front();
        }
        state.projects.forget_batch(&state.name);
        myself.stop(None);
        Ok(())
    }
}

impl Projects {
    fn forget_batch(&self, name: &str) -> Option<Batch> {
        self.renders
            .batches
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(name)
    }

    /// The batch actor `name` stopped without finishing (it failed, or
    /// could not start): each render it left is recorded as failed.
    pub(super) async fn renders_stopped(&self, name: &str, reason: &str) {
        let Some(batch) = self.forget_batch(name) else {
            return;
        };
        let left: Vec<_> = batch
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
            .collect();
        for (clip, job) in left {
            let why = RenderError::Stopped {
                reason: reason.to_string(),
            };
            self.finish_render(&batch.project, &clip, &job, Err(why))
                .await;
        }
    }
}

async fn render_one(
    projects: &Arc<Projects>,
    project: &ProjectRecord,
    clip: ClipRecord,
    job: RenderJob,
) {
    {
        let (tx, mut rx) = tokio::sync::watch::channel(0u8);
        // Its own task, so a panic in it reaches this one as a JoinError.
        let inner = {
            let (s, p, c, j) = (projects.clone(), project.clone(), clip.clone(), job.clone());
            tokio::spawn(async move { render(&s, &p, &c, &j, tx).await })
        };
        let rendering = async { inner.await.unwrap_or(Err(RenderError::Panicked)) };
        let reporting = async {
            let mut written = 0u8;
            while rx.changed().await.is_ok() {
                let pct = *rx.borrow_and_update();
                if pct >= written.saturating_add(PROGRESS_STEP) && pct < 100 {
                    written = pct;
                    let body = render_event(&clip, job.version, "rendering", pct, None);
                    projects.append_event(project, body).await;
                }
            }
        };
        let (outcome, ()) = tokio::join!(rendering, reporting);
        projects.finish_render(project, &clip, &job, outcome).await;
    }
}

pub(super) fn render_event(
    clip: &ClipRecord,
    version: u32,
    state: &str,
    percent: u8,
    message: Option<String>,
) -> ProjectEventBody {
    ProjectEventBody::Render(RenderEvent {
        project_id: clip.project_id.clone(),
        clip_id: clip.id.clone(),
        version,
        state: state.into(),
        percent,
        message,
    })
}

/// The files of the new version, stored, and their bytes.
async fn render(
    projects: &Arc<Projects>,
    project: &ProjectRecord,
    clip: &ClipRecord,
    job: &RenderJob,
    progress: tokio::sync::watch::Sender<u8>,
) -> Result<ClipVersion, RenderError> {
    let _permit = projects
        .pool
        .clone()
        .acquire_owned()
        .await
        .map_err(|_| RenderError::ShuttingDown)?;
    let kit = edit_kit::load(projects.objects.as_ref(), &project.id).await?;
    let work = projects.settings.data_dir.join("work");
    std::fs::create_dir_all(&work).map_err(RenderError::WorkFolder)?;
    let dir = tempfile::Builder::new()
        .prefix(&format!("edit-{}-", clip.id))
        .tempdir_in(&work)
        .map_err(RenderError::WorkFolder)?;
    let source = edit_kit::fetch_source(projects.objects.as_ref(), project, dir.path()).await?;
    let mut plan = job_plan(&kit, project, clip, &job.edits, job.start, job.end);
    let transcript = edit::fixed_transcript(&kit.transcript, &job.edits);
    plan.title = job.title.clone();

    let style = job
        .edits
        .style
        .clone()
        .unwrap_or_else(|| project.style.clone());
    let mut opts = CaptionOptions::new(dir.path().join("out"), style);
    opts.x264_preset = projects.settings.x264_preset.clone();
    (opts.width, opts.height) = job
        .edits
        .aspect_ratio
        .unwrap_or(project.aspect_ratio)
        .size();
    opts.layout = job.edits.layout.unwrap_or(project.layout);
    // The current version's framing, used when it fits (same range, frame
    // and layout asked for), and its spans framed by hand unless the edit
    // set others.
    let framed = super::clip_reframe::current_framing(projects, clip).await;
    opts.reframe = match &job.reframe {
        Some(spans) => spans.clone(),
        None => framed
            .as_ref()
            .map(|f| f.manual.clone())
            .unwrap_or_default(),
    };
    crate::faults::check(crate::faults::Point::Render);
    if crate::faults::hit(crate::faults::Point::RenderStall) {
        std::future::pending::<()>().await;
    }
    let ctx = StageCtx::new(
        tokio_util::sync::CancellationToken::new(),
        Progress::new(move |pct| {
            let _ = progress.send(pct.min(95));
        }),
    );
    let rendered = caption::run_stage(
        &source,
        &kit.media,
        &transcript,
        std::slice::from_ref(&plan),
        framed,
        &opts,
        &ctx,
    )
    .await?
    .pop()
    .ok_or(RenderError::NothingRendered)?;

    let base_key = format!(
        "projects/{}/clip-{}-v{}",
        project.id, clip.index, job.version
    );
    let (keys, bytes) =
        crate::projects::work::store_clip_files(projects.objects.as_ref(), &base_key, &rendered)
            .await
            .map_err(RenderError::Store)?;
    let segments = crate::projects::work::segments_of(&rendered.words);
    Ok(ClipVersion {
        version: job.version,
        title: job.title.clone(),
        start: plan.start,
        end: plan.end,
        cuts: plan.cuts.clone(),
        layout: rendered.layout.as_str().into(),
        quality: rendered.quality.clone(),
        video_key: keys[0].clone(),
        subtitle_key: keys[1].clone(),
        vtt_key: keys[2].clone(),
        thumbnail_key: keys[3].clone(),
        segments,
        edits: job.edits.clone(),
        created_at: now_ms(),
        bytes,
    })
}

/// The plan a render of `[start, end)` of `clip` with `edits` draws.
pub(super) fn job_plan(
    kit: &edit_kit::Kit,
    project: &ProjectRecord,
    clip: &ClipRecord,
    edits: &ClipEdits,
    start: f64,
    end: f64,
) -> ClipPlan {
    let transcript = edit::fixed_transcript(&kit.transcript, edits);
    let base = kit
        .plans
        .get((clip.index as usize).wrapping_sub(1))
        .cloned()
        .unwrap_or_else(|| plan_of(clip));
    edit::plan_for(&transcript, &base, start, end, project.remove_fillers)
}

/// A plan for a clip the kept plans do not have (added by the user).
fn plan_of(clip: &ClipRecord) -> ClipPlan {
    ClipPlan {
        start: clip.start,
        end: clip.end,
        score: clip.score,
        title: clip.title.clone(),
        first_word: 0,
        end_word: 0,
        reason: clip.reason.clone(),
        scores: clip.scores.clone(),
        cuts: clip.cuts.clone(),
    }
}
