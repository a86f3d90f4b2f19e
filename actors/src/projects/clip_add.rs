//! Clips added to a finished project (issue 29): one the user picks by
//! range (`addClip`), or the next best ones the kept transcript and
//! signals offer (`findMoreClips`). Each is stored at once as version 0
//! (no files yet, `rendering`) with the project's clip count in the same
//! write, then rendered like an edit (`clip_render`); one that fails to
//! render is removed again.

use std::sync::Arc;

use super::api::ProjectError;
use super::clip_edit::{check_title, RENDER_RETRY_AFTER_SECS};
use super::clip_render::{self, RenderJob, RenderSlot};
use super::domain::Projects;
use crate::projects::clip_history::{ClipEdits, ClipRender, RenderState};
use crate::projects::edit;
use crate::projects::edit_kit;
use crate::projects::more_clips;
use crate::projects::records::{self, now_ms, ClipRecord, ProjectRecord, ProjectState};
use crate::projects::stages::caption::quality_label;
use crate::projects::stages::cut::ClipPlan;
use crate::projects::stages::score::preset_range;
use crate::storage::kv::{self, KvOp};

/// Most clips one `findMoreClips` call adds.
pub const MAX_MORE_CLIPS: usize = 5;
/// Most clips a project may have.
pub const MAX_CLIPS_PER_PROJECT: usize = 50;

fn conflict(code: &'static str, message: impl Into<String>) -> ProjectError {
    ProjectError::Conflict {
        code,
        message: message.into(),
    }
}

impl Projects {
    /// The user's completed project (409 while it runs).
    async fn completed_project(
        &self,
        user_id: &str,
        project_id: &str,
    ) -> Result<ProjectRecord, ProjectError> {
        let p = self.project(user_id, project_id).await?;
        match p.state {
            ProjectState::Completed => Ok(p),
            s if !s.is_terminal() => Err(ProjectError::Processing(s)),
            _ => Err(conflict(
                "project_failed",
                "the project did not complete: it has no transcript to make clips from",
            )),
        }
    }

    /// Adds the clip `[start, end)` (snapped to whole words, as long as an
    /// edit may make it) to the user's completed project and renders it.
    pub async fn add_clip(
        self: &Arc<Self>,
        user_id: &str,
        project_id: &str,
        start: f64,
        end: f64,
        title: Option<String>,
    ) -> Result<ClipRecord, ProjectError> {
        let title = title.map(|t| check_title(&t)).transpose()?;
        let project = self.completed_project(user_id, project_id).await?;
        let kit = edit_kit::load(self.objects.as_ref(), &project.id)
            .await
            .map_err(super::clip_edit::kit_error)?;
        let span = (0.0, project.duration_sec.min(kit.media.duration).max(0.0));
        let (start, end) = edit::checked_range(&kit.transcript, span, &project.preset, start, end)
            .map_err(|e| ProjectError::Invalid {
                field: e.field,
                message: e.message,
            })?;
        let (loudness, scenes) = edit_kit::signals(self.objects.as_ref(), &project.id)
            .await
            .map_err(super::clip_edit::kit_error)?;
        let signals = more_clips::signals(loudness, scenes);
        let mut plan = more_clips::user_clip(
            &kit.transcript,
            &signals,
            start,
            end,
            project.prompt.as_deref(),
        );
        if let Some(t) = title {
            plan.title = t;
        }
        Ok(self.add_clips(project, vec![plan]).await?.remove(0))
    }

    /// Adds up to `count` (1 to [`MAX_MORE_CLIPS`]) of the next best clips
    /// of the kept transcript, none overlapping a clip the project has;
    /// 409 `no_more_clips` when there is none.
    pub async fn find_more_clips(
        self: &Arc<Self>,
        user_id: &str,
        project_id: &str,
        count: usize,
    ) -> Result<Vec<ClipRecord>, ProjectError> {
        if !(1..=MAX_MORE_CLIPS).contains(&count) {
            return Err(ProjectError::Invalid {
                field: "count",
                message: format!("must be 1 to {MAX_MORE_CLIPS}"),
            });
        }
        let project = self.completed_project(user_id, project_id).await?;
        let kit = edit_kit::load(self.objects.as_ref(), &project.id)
            .await
            .map_err(super::clip_edit::kit_error)?;
        let (loudness, scenes) = edit_kit::signals(self.objects.as_ref(), &project.id)
            .await
            .map_err(super::clip_edit::kit_error)?;
        let existing: Vec<(f64, f64)> = records::load_clips_async(&*self.kv, &project.id)
            .await
            .map_err(|e| ProjectError::internal("loading clips", e))?
            .iter()
            .map(|c| (c.start, c.end))
            .collect();
        let range = preset_range(&project.preset).unwrap_or((20.0, 60.0));
        let plans = more_clips::more_clips(
            &kit.transcript,
            &more_clips::signals(loudness, scenes),
            range,
            &existing,
            count,
            project.prompt.as_deref(),
        );
        if plans.is_empty() {
            return Err(conflict(
                "no_more_clips",
                "every part of the video that makes a clip of this length is in a clip already",
            ));
        }
        self.add_clips(project, plans).await
    }

    /// Stores `plans` as new clips (version 0, rendering) with the
    /// project's clip count in one write, then renders them one after the
    /// other in one of the account's render slots.
    async fn add_clips(
        self: &Arc<Self>,
        project: ProjectRecord,
        plans: Vec<ClipPlan>,
    ) -> Result<Vec<ClipRecord>, ProjectError> {
        let Some(slot) = RenderSlot::take(self, &project.user_id) else {
            return Err(ProjectError::Busy {
                retry_after_secs: RENDER_RETRY_AFTER_SECS,
                message: "this account's clips are rendering already; try again when one is done"
                    .into(),
            });
        };
        let (uid, pid) = (project.user_id.clone(), project.id.clone());
        let now = now_ms();
        let node = self.node_label();
        let quality = {
            let (w, h) = project.aspect_ratio.size();
            quality_label(w, h)
        };
        let layout = project.layout.as_str().to_string();
        let added = async {
            let kv = &*self.kv;
            let key = records::project_key(&uid, &pid);
            let Some(stored) = kv.get_async(records::PROJECTS, &key).await? else {
                return Ok(Err(ProjectError::NotFound("project")));
            };
            let mut p = records::decode_project(&stored)?;
            let clips = records::load_clips_async(kv, &pid).await?;
            if clips.len() + plans.len() > MAX_CLIPS_PER_PROJECT {
                return Ok(Err(conflict(
                    "too_many_clips",
                    format!("a project has at most {MAX_CLIPS_PER_PROJECT} clips"),
                )));
            }
            let mut index = clips.iter().map(|c| c.index).max().unwrap_or(0);
            let mut ops = vec![KvOp::Expect {
                tree: records::PROJECTS.into(),
                key: key.clone(),
                value: Some(stored),
            }];
            let mut added = Vec::new();
            for plan in &plans {
                index += 1;
                let base = format!("projects/{pid}/clip-{index}-v1");
                let clip = ClipRecord {
                    id: uuid::Uuid::new_v4().to_string(),
                    project_id: pid.clone(),
                    index,
                    title: plan.title.clone(),
                    score: plan.score,
                    start: plan.start,
                    end: plan.end,
                    quality: quality.clone(),
                    video_key: format!("{base}.mp4"),
                    subtitle_key: format!("{base}.srt"),
                    vtt_key: format!("{base}.vtt"),
                    thumbnail_key: format!("{base}.jpg"),
                    segments: Vec::new(),
                    created_at: now,
                    layout: layout.clone(),
                    reason: plan.reason.clone(),
                    scores: plan.scores.clone(),
                    cuts: Vec::new(),
                    version: 0,
                    edits: ClipEdits::default(),
                    history: Vec::new(),
                    render: Some(ClipRender {
                        version: 1,
                        state: RenderState::Rendering,
                        error: None,
                        node: node.clone(),
                        started_at: now,
                    }),
                    current_bytes: 0,
                    version_at: now,
                };
                ops.push(KvOp::Put {
                    tree: records::CLIPS.into(),
                    key: records::clip_key(&pid, index),
                    value: kv::encode(&clip)?,
                });
                added.push(clip);
            }
            p.clip_count += plans.len() as u32;
            ops.push(records::put_project_op(&p)?);
            kv.apply_async(ops).await?;
            Ok::<_, kv::StorageError>(Ok(added))
        }
        .await
        .map_err(|e| match e {
            kv::StorageError::Conflict(_) => conflict(
                "project_changed",
                "the project changed meanwhile; try again",
            ),
            e => ProjectError::internal("adding clips", e),
        })??;
        self.projects_changed(&project.user_id);
        let jobs = added
            .iter()
            .map(|c| {
                (
                    c.clone(),
                    RenderJob {
                        version: 1,
                        title: c.title.clone(),
                        start: c.start,
                        end: c.end,
                        edits: ClipEdits::default(),
                        reframe: None,
                    },
                )
            })
            .collect();
        clip_render::spawn(self.clone(), project, jobs, slot).await;
        Ok(added)
    }
}
