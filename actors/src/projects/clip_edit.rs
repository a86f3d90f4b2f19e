//! Editing a finished project's clips (issue 29): a new title is saved as
//! it is; a new range, fixed words, another layout, frame shape or caption
//! template make a new version, rendered by `clip_render` from what the
//! project kept (`edit_kit`); earlier versions can be restored. Every
//! change of a clip record is a write conditional on the record as read.

use std::sync::Arc;

use super::api::ProjectError;
use super::clip_reframe::{self, ReframeRequest};
use super::clip_render::{self, RenderJob, RenderSlot};
use super::domain::Projects;
use crate::accounts::AccountError;
use crate::captions::template::CaptionStyle;
use crate::projects::clip_history::{ClipRender, RenderState};
use crate::projects::edit;
use crate::projects::edit_kit::{self, KitError};
use crate::projects::records::{self, now_ms, ClipRecord, ProjectRecord, ProjectState};
use crate::projects::reframe::{AspectRatio, Layout};
use crate::storage::kv::{self, KvOp};
use crate::transcript::Word;

/// Seconds per value of the kept loudness series.
pub const WAVEFORM_STEP: f64 = crate::media::audio::LOUDNESS_STEP;

/// What a 429 beyond that asks the client to wait.
pub const RENDER_RETRY_AFTER_SECS: u64 = 30;

/// What an edit asks to change; `None`/empty: unchanged.
#[derive(Clone, Debug, Default)]
pub struct ClipChange {
    pub start: Option<f64>,
    pub end: Option<f64>,
    pub title: Option<String>,
    /// (index among the clip's caption words, new text; empty: left out).
    pub words: Vec<(usize, String)>,
    pub layout: Option<Layout>,
    pub aspect_ratio: Option<AspectRatio>,
    /// A template id or preset name.
    pub caption_template: Option<String>,
    /// Spans framed by hand (`Some(empty)`: none any more).
    pub reframe: Option<Vec<ReframeRequest>>,
}

impl ClipChange {
    /// True when the change needs a new render (anything but the title).
    pub fn renders(&self) -> bool {
        self.start.is_some()
            || self.end.is_some()
            || !self.words.is_empty()
            || self.layout.is_some()
            || self.aspect_ratio.is_some()
            || self.caption_template.is_some()
            || self.reframe.is_some()
    }
}

/// What an edit did.
pub enum Edited {
    /// Saved without a render (the title).
    Saved(ClipRecord),
    /// A new version is being rendered (`render` says which).
    Rendering(ClipRecord),
}

fn conflict(code: &'static str, message: impl Into<String>) -> ProjectError {
    ProjectError::Conflict {
        code,
        message: message.into(),
    }
}

pub(crate) fn kit_error(e: KitError) -> ProjectError {
    match e {
        KitError::Missing => conflict("not_editable", e.to_string()),
        KitError::Storage(e) => ProjectError::internal("reading the kept project", e),
    }
}

impl Projects {
    /// The user's completed project and its stored clip `clip_id` (the
    /// record and its bytes as stored, for a conditional write).
    pub(crate) async fn editable_clip(
        &self,
        user_id: &str,
        project_id: &str,
        clip_id: &str,
    ) -> Result<(ProjectRecord, ClipRecord, Vec<u8>), ProjectError> {
        let p = self.project(user_id, project_id).await?;
        if !p.state.is_terminal() {
            return Err(ProjectError::Processing(p.state));
        }
        if p.state != ProjectState::Completed {
            return Err(ProjectError::NotFound("clip"));
        }
        let load = |e| ProjectError::internal("loading a clip", e);
        let prefix = format!("{}/", p.id);
        let mut found = None;
        for (_, bytes) in self
            .kv
            .scan_prefix_async(records::CLIPS, prefix.as_bytes())
            .await
            .map_err(load)?
        {
            let c: ClipRecord = kv::decode(&bytes).map_err(load)?;
            if c.id == clip_id {
                found = Some((c, bytes));
                break;
            }
        }
        let (clip, bytes) = found.ok_or(ProjectError::NotFound("clip"))?;
        Ok((p, clip, bytes))
    }

    /// Clip `clip_id` of the user's completed project.
    pub async fn clip(
        &self,
        user_id: &str,
        project_id: &str,
        clip_id: &str,
    ) -> Result<ClipRecord, ProjectError> {
        Ok(self.editable_clip(user_id, project_id, clip_id).await?.1)
    }

    /// Writes `new` over the clip stored as `old` (conflict: the clip
    /// changed or went meanwhile).
    pub(crate) async fn replace_clip(
        &self,
        old: Vec<u8>,
        new: &ClipRecord,
    ) -> Result<Vec<u8>, ProjectError> {
        let key = records::clip_key(&new.project_id, new.index);
        let value = kv::encode(new).map_err(|e| ProjectError::internal("encoding a clip", e))?;
        let stored = value.clone();
        let write = vec![
            KvOp::Expect {
                tree: records::CLIPS.into(),
                key: key.clone(),
                value: Some(old),
            },
            KvOp::Put {
                tree: records::CLIPS.into(),
                key,
                value,
            },
        ];
        self.kv.apply_async(write).await.map_err(|e| match e {
            kv::StorageError::Conflict(_) => conflict(
                "clip_changed",
                "the clip changed meanwhile; load it again and retry",
            ),
            e => ProjectError::internal("saving a clip", e),
        })?;
        Ok(stored)
    }

    /// Edits clip `clip_id` of the user's completed project. A title alone
    /// is saved at once; anything else starts rendering version n + 1 (the
    /// current version stays what the clip plays until it is done).
    pub async fn edit_clip(
        self: &Arc<Self>,
        user_id: &str,
        project_id: &str,
        clip_id: &str,
        change: ClipChange,
    ) -> Result<Edited, ProjectError> {
        let title = match &change.title {
            Some(t) => Some(check_title(t)?),
            None => None,
        };
        if !change.renders() {
            let Some(title) = title else {
                return Err(ProjectError::Invalid {
                    field: "title",
                    message: "give at least one field to change".into(),
                });
            };
            let (_, mut clip, bytes) = self.editable_clip(user_id, project_id, clip_id).await?;
            clip.title = title;
            self.replace_clip(bytes, &clip).await?;
            self.projects_changed(user_id);
            return Ok(Edited::Saved(clip));
        }
        let (project, clip, bytes) = self.editable_clip(user_id, project_id, clip_id).await?;
        self.check_not_rendering(&clip)?;
        let kit = edit_kit::load(self.objects.as_ref(), &project.id)
            .await
            .map_err(kit_error)?;
        let span = (0.0, project.duration_sec.min(kit.media.duration).max(0.0));
        // Word indices are those of the clip as it is now.
        let mut edits = clip.edits.clone();
        edit::merge_word_fixes(
            &kit.transcript.words,
            (clip.start, clip.end, &clip.cuts),
            &change.words,
            &mut edits,
        )
        .map_err(invalid)?;
        let (start, end) = match (change.start, change.end) {
            (None, None) => (clip.start, clip.end),
            (s, e) => edit::checked_range(
                &kit.transcript,
                span,
                &project.preset,
                s.unwrap_or(clip.start),
                e.unwrap_or(clip.end),
            )
            .map_err(invalid)?,
        };
        // Hand-set crops: checked on the clip as it will play, and a
        // layout that draws one; a layout without a crop drops them.
        let reframe = match &change.reframe {
            Some(asked) if !asked.is_empty() => {
                let layout = clip_reframe::layout_for_reframe(
                    change.layout,
                    edits.layout.unwrap_or(project.layout),
                )?;
                edits.layout = Some(layout);
                let plan = clip_render::job_plan(&kit, &project, &clip, &edits, start, end);
                let played = (start, plan.kept_duration(), &plan.cuts[..]);
                Some(self.reframe_spans(&kit, &clip, played, asked).await?)
            }
            Some(_) => Some(Vec::new()),
            None if matches!(
                change.layout,
                Some(Layout::Split | Layout::Screen | Layout::Fit)
            ) =>
            {
                Some(Vec::new())
            }
            None => None,
        };
        if let (Some(l), None) = (change.layout, &change.reframe) {
            edits.layout = Some(l);
        }
        if let Some(a) = change.aspect_ratio {
            edits.aspect_ratio = Some(a);
        }
        if let Some(spec) = change.caption_template {
            let style = self.resolve_style(user_id, &spec).await?;
            edits.caption_template = Some(spec);
            edits.style = Some(style);
        }
        let job = RenderJob {
            version: clip.latest_version() + 1,
            title: title.unwrap_or_else(|| clip.title.clone()),
            start,
            end,
            edits,
            reframe,
        };
        self.start_render(project, clip, bytes, job).await
    }

    /// A caption template (id or preset name) as the account's plan lets it
    /// be drawn (the free plan's watermark is forced).
    async fn resolve_style(&self, user_id: &str, spec: &str) -> Result<CaptionStyle, ProjectError> {
        let template = spec.to_string();
        self.accounts
            .resolve_style(user_id, template)
            .await
            .map_err(|e| match e {
                AccountError::NotFound(_) => ProjectError::Invalid {
                    field: "captionTemplate",
                    message: "no such caption template".into(),
                },
                e => ProjectError::Account(e),
            })
    }

    /// 409 while the clip's last edit is still rendering (a render left by
    /// a node that stopped long ago does not count).
    fn check_not_rendering(&self, clip: &ClipRecord) -> Result<(), ProjectError> {
        match &clip.render {
            Some(r) if r.state == RenderState::Rendering && !clip_render::stale(r) => {
                Err(conflict(
                    "clip_rendering",
                    format!(
                        "version {} of this clip is still rendering; wait for it to finish",
                        r.version
                    ),
                ))
            }
            _ => Ok(()),
        }
    }

    /// Marks the clip as rendering `job` and starts the render (queued on
    /// the worker pool); at most `renders_per_account` per account.
    async fn start_render(
        self: &Arc<Self>,
        project: ProjectRecord,
        mut clip: ClipRecord,
        bytes: Vec<u8>,
        job: RenderJob,
    ) -> Result<Edited, ProjectError> {
        let Some(slot) = RenderSlot::take(self, &project.user_id) else {
            return Err(ProjectError::Busy {
                retry_after_secs: RENDER_RETRY_AFTER_SECS,
                message: format!(
                    "{} clip(s) of this account are rendering already; try again when one is done",
                    self.settings.renders_per_account
                ),
            });
        };
        clip.render = Some(ClipRender {
            version: job.version,
            state: RenderState::Rendering,
            error: None,
            node: self.node_label(),
            started_at: now_ms(),
        });
        self.replace_clip(bytes, &clip).await?;
        self.projects_changed(&project.user_id);
        clip_render::spawn(self.clone(), project, vec![(clip.clone(), job)], slot).await;
        Ok(Edited::Rendering(clip))
    }

    /// Makes version `version` of the clip current again, as a new version
    /// sharing its files (no render).
    pub async fn restore_clip_version(
        &self,
        user_id: &str,
        project_id: &str,
        clip_id: &str,
        version: u32,
    ) -> Result<ClipRecord, ProjectError> {
        let (_, mut clip, bytes) = self.editable_clip(user_id, project_id, clip_id).await?;
        self.check_not_rendering(&clip)?;
        if version == clip.version {
            return Ok(clip);
        }
        let Some(old) = clip.history.iter().find(|v| v.version == version).cloned() else {
            return Err(ProjectError::NotFound("version"));
        };
        let next = clip.latest_version() + 1;
        clip.make_current(crate::projects::clip_history::ClipVersion {
            version: next,
            created_at: now_ms(),
            bytes: 0,
            ..old
        });
        clip.render = None;
        self.replace_clip(bytes, &clip).await?;
        self.projects_changed(user_id);
        Ok(clip)
    }

    /// The clip's caption words as its current version shows them (index
    /// = position; a word left out has empty text), on the clip's timeline.
    pub async fn clip_words(
        &self,
        user_id: &str,
        project_id: &str,
        clip_id: &str,
    ) -> Result<Vec<Word>, ProjectError> {
        let (project, clip, _) = self.editable_clip(user_id, project_id, clip_id).await?;
        let kit = edit_kit::load(self.objects.as_ref(), &project.id)
            .await
            .map_err(kit_error)?;
        Ok(edit::clip_words(
            &kit.transcript,
            clip.start,
            clip.end,
            &clip.cuts,
            &clip.edits,
        )
        .into_iter()
        .map(|(_, word)| word)
        .collect())
    }

    /// The sound's loudness (dB, one value per `WAVEFORM_STEP` s) over the
    /// stretch of the source the clip can reach in an edit (its end less
    /// the longest length allowed, to its start plus that length), for the
    /// editor's timeline: `(from, values)`, `from` in source seconds.
    pub async fn clip_waveform(
        &self,
        user_id: &str,
        project_id: &str,
        clip_id: &str,
    ) -> Result<(f64, Vec<f32>), ProjectError> {
        let (project, clip, _) = self.editable_clip(user_id, project_id, clip_id).await?;
        let (loudness, _) = edit_kit::signals(self.objects.as_ref(), &project.id)
            .await
            .map_err(kit_error)?;
        let (_, longest) = edit::length_bounds(&project.preset);
        let first = ((clip.end - longest).max(0.0) / WAVEFORM_STEP).floor() as usize;
        let last = (((clip.start + longest) / WAVEFORM_STEP).ceil() as usize).min(loudness.len());
        let values = loudness
            .get(first..last.max(first))
            .unwrap_or_default()
            .to_vec();
        Ok((first as f64 * WAVEFORM_STEP, values))
    }

    /// The name renders record as their node's.
    pub(crate) fn node_label(&self) -> String {
        self.cluster
            .get()
            .map(|c| c.node_name().to_string())
            .unwrap_or_else(|| "local".into())
    }
}

fn invalid(e: edit::EditInvalid) -> ProjectError {
    ProjectError::Invalid {
        field: e.field,
        message: e.message,
    }
}

/// A clip title: one line, 1 to 100 characters once trimmed.
pub(crate) fn check_title(title: &str) -> Result<String, ProjectError> {
    let title = title.trim().to_string();
    let chars = title.chars().count();
    if chars == 0
        || chars > super::api::CLIP_TITLE_MAX_CHARS
        || !crate::accounts::text::line_ok(&title)
    {
        return Err(ProjectError::Invalid {
            field: "title",
            message: format!(
                "must be 1 to {} characters on one line, without control characters",
                super::api::CLIP_TITLE_MAX_CHARS
            ),
        });
    }
    Ok(title)
}
