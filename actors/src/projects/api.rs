//! The narrow engine API for projects: `create`, `get`, `list`, `cancel`,
//! `delete` and `subscribe`. Callers outside the engine (the HTTP handlers,
//! the admin routes) use only these: they never touch the KV store or send
//! ractor messages themselves. Results are typed ([`ProjectError`]); the
//! caller maps them to its own wire format and language.

use std::sync::Arc;

use tokio::sync::broadcast;

use super::actor::ProjectMsg;
use super::domain::Projects;
use crate::accounts::actor::Reserved;
use crate::accounts::{text, AccountError};
use crate::captions::template::CaptionStyle;
use crate::projects::events::{events_after, ProjectEvent, ProjectEventBody};
use crate::projects::records::{self, now_ms, ClipRecord, ProjectRecord, ProjectState, Source};
use crate::projects::reframe::{AspectRatio, Layout};
use crate::projects::uploads::{UploadRecord, UPLOADS};
use crate::storage::kv::{self, KvOp};

/// Longest clip title a user may give.
pub const CLIP_TITLE_MAX_CHARS: usize = 100;

/// How long a cancel waits for the project's actor to stop its stage.
const CANCEL_TIMEOUT_MS: u64 = 30_000;

/// Why a project operation was refused or failed.
#[derive(Debug)]
pub enum ProjectError {
    /// A field of the request is not usable.
    Invalid {
        field: &'static str,
        message: String,
    },
    /// No such project (or upload) for this user.
    NotFound(&'static str),
    /// The project has already ended (cancel of a finished project).
    NotRunning(ProjectState),
    /// The project is still being processed (its clips cannot be edited
    /// yet).
    Processing(ProjectState),
    /// The account refused (credits, plan, template…).
    Account(AccountError),
    /// The resource's state does not allow it (`code` names why).
    Conflict { code: &'static str, message: String },
    /// Too much of this at once: try again after `retry_after_secs`.
    Busy {
        retry_after_secs: u64,
        message: String,
    },
    /// Storage or actor failure; the text is for logs only.
    Internal(String),
}

impl ProjectError {
    pub(crate) fn internal(context: &str, e: impl std::fmt::Display) -> Self {
        ProjectError::Internal(format!("{context}: {e}"))
    }
}

/// Where a new project's video comes from.
pub enum NewSource {
    /// A platform link whose metadata the caller has already read.
    Url {
        url: String,
        duration_sec: f64,
        title: String,
        thumbnail: String,
        language: Option<String>,
    },
    /// A file the user uploaded (`fileKey`).
    Upload(String),
}

/// A project to create, already validated field by field by the caller.
pub struct NewProject {
    pub user_id: String,
    pub source: NewSource,
    pub title: Option<String>,
    pub thumbnail: Option<String>,
    /// Process only the first seconds of the video.
    pub duration_sec: Option<f64>,
    pub preset: String,
    /// A caption template's id or name; empty for the default.
    pub caption_template: String,
    pub skip_cuts: bool,
    pub layout: Layout,
    pub aspect_ratio: AspectRatio,
    pub prompt: Option<String>,
    /// Cut filler words (um, uh, "you know"…) out of the clips.
    pub remove_fillers: bool,
    /// The spoken language the user chose (an ISO code): transcription
    /// uses it instead of detecting one. `None`: detected, with the
    /// source's declared language as a prior.
    pub language: Option<String>,
}

/// The longest `thumbnail` URL a project keeps.
pub const THUMBNAIL_MAX_CHARS: usize = 2048;

/// The user's own text of a new project follows the stored-text rule
/// ([`text`]), and a `thumbnail` is an http(s) URL of at most
/// [`THUMBNAIL_MAX_CHARS`] characters.
fn check_user_text(new: &NewProject) -> Result<(), ProjectError> {
    let invalid = |field, message: &str| ProjectError::Invalid {
        field,
        message: message.into(),
    };
    if new.title.as_deref().is_some_and(|t| !text::line_ok(t)) {
        return Err(invalid(
            "title",
            "must not contain control or bidi override characters",
        ));
    }
    if new.prompt.as_deref().is_some_and(|p| !text::text_ok(p)) {
        return Err(invalid(
            "prompt",
            "must not contain control or bidi override characters",
        ));
    }
    if let Some(t) = new.thumbnail.as_deref().filter(|t| !t.is_empty()) {
        if t.chars().count() > THUMBNAIL_MAX_CHARS {
            return Err(invalid(
                "thumbnail",
                &format!("must be at most {THUMBNAIL_MAX_CHARS} characters"),
            ));
        }
        if !is_http_url(t) {
            return Err(invalid("thumbnail", "must be an http or https URL"));
        }
    }
    Ok(())
}

/// An absolute `http://` or `https://` URL with a host and nothing a
/// browser would read differently (spaces, control or bidi characters).
fn is_http_url(s: &str) -> bool {
    let lower = s.get(..8).unwrap_or(s).to_ascii_lowercase();
    let rest = if lower.starts_with("https://") {
        &s[8..]
    } else if lower.starts_with("http://") {
        &s[7..]
    } else {
        return false;
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    !host.is_empty()
        && !host.starts_with('@')
        && !s
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || text::is_bidi_control(c))
}

/// What a status subscriber gets: the stored events after its cursor, and
/// (unless the project has ended) a receiver for the live ones.
pub struct Subscription {
    pub backlog: Vec<ProjectEvent>,
    /// `None` once the backlog holds the terminal event.
    pub live: Option<broadcast::Receiver<ProjectEvent>>,
    /// The highest event id in the backlog (or the cursor).
    pub last: u64,
}

impl Projects {
    /// Creates a project: resolves the source, reserves the credits and
    /// stores the project in the account's actor (in that order, all or
    /// nothing), then starts processing.
    pub async fn create_project(
        self: &Arc<Self>,
        new: NewProject,
    ) -> Result<ProjectRecord, ProjectError> {
        check_user_text(&new)?;
        let (source, source_secs, meta_title, meta_thumb, language) = match new.source {
            NewSource::Url {
                url,
                duration_sec,
                title,
                thumbnail,
                language,
            } => (Source::Url(url), duration_sec, title, thumbnail, language),
            NewSource::Upload(key) => {
                let rec: Option<UploadRecord> =
                    kv::get_value_async(&*self.kv, UPLOADS, key.as_bytes())
                        .await
                        .map_err(|e| ProjectError::internal("loading an upload", e))?;
                match rec {
                    Some(r) if r.user_id == new.user_id => {
                        let name = key.rsplit('/').next().unwrap_or("upload").to_string();
                        (
                            Source::Upload(key),
                            r.duration_sec,
                            name,
                            String::new(),
                            None,
                        )
                    }
                    _ => return Err(ProjectError::NotFound("fileKey")),
                }
            }
        };
        if source_secs <= 0.0 {
            return Err(ProjectError::Invalid {
                field: "sourceUrl",
                message: "the video has no known duration".into(),
            });
        }
        let duration = new
            .duration_sec
            .map(|d| d.min(source_secs))
            .unwrap_or(source_secs);
        let now = now_ms();
        let spec = new.caption_template;
        let record = ProjectRecord {
            id: uuid::Uuid::new_v4().to_string(),
            user_id: new.user_id.clone(),
            title: new
                .title
                .filter(|t| !t.trim().is_empty())
                .unwrap_or_else(|| text::clean_line(&meta_title))
                .chars()
                .take(200)
                .collect(),
            source,
            thumbnail: new.thumbnail.unwrap_or(meta_thumb),
            duration_sec: (duration * 1000.0).round() / 1000.0,
            preset: new.preset,
            caption_template: if spec.is_empty() {
                "default".into()
            } else {
                spec.clone()
            },
            style: Default::default(),
            skip_cuts: new.skip_cuts,
            state: ProjectState::Queued,
            step_progress: [0; 4],
            error: None,
            reserved_credits: (duration / 60.0).ceil().max(1.0) as u64,
            clip_count: 0,
            finished: Vec::new(),
            created_at: now,
            updated_at: now,
            last_event: 0,
            language_given: new.language.is_some(),
            language: new.language.or(language),
            language_probability: None,
            layout: new.layout,
            aspect_ratio: new.aspect_ratio,
            prompt: new.prompt,
            remove_fillers: new.remove_fillers,
        };
        // In the account's actor: resolve the template (contract 4.5 rule
        // 4: the free plan's watermark is forced there), then reserve and
        // store the project in one write (again as a whole if the account
        // changed meanwhile).
        let mut stored = record.clone();
        stored.style = self
            .accounts
            .reserve(
                &new.user_id,
                record.id.clone(),
                record.reserved_credits,
                spec,
                Box::new(ProjectRecords(record)),
            )
            .await
            .map_err(ProjectError::Account)?;
        self.projects_changed(&stored.user_id);
        self.start_project(stored.clone())
            .await
            .map_err(|e| ProjectError::internal("starting a project", e))?;
        Ok(stored)
    }

    /// The user's project, or `NotFound` (also for another user's project).
    pub async fn project(&self, user_id: &str, id: &str) -> Result<ProjectRecord, ProjectError> {
        records::load_project_async(&*self.kv, user_id, id)
            .await
            .map_err(|e| ProjectError::internal("loading a project", e))?
            .ok_or(ProjectError::NotFound("project"))
    }

    /// The user's project and its clips, in order.
    pub async fn project_with_clips(
        &self,
        user_id: &str,
        id: &str,
    ) -> Result<(ProjectRecord, Vec<ClipRecord>), ProjectError> {
        let p = self.project(user_id, id).await?;
        let clips = records::load_clips_async(&*self.kv, &p.id)
            .await
            .map_err(|e| ProjectError::internal("loading clips", e))?;
        Ok((p, clips))
    }

    /// Cancels a running project: its stage stops (child processes
    /// killed), the reservation is released, the project is removed.
    pub async fn cancel_project_of(
        &self,
        user_id: &str,
        id: &str,
    ) -> Result<ProjectRecord, ProjectError> {
        let p = self.project(user_id, id).await?;
        if p.state.is_terminal() {
            return Err(ProjectError::NotRunning(p.state));
        }
        match self.project_actor(&p.id) {
            Some(actor) => {
                ractor::call_t!(actor.sent(), ProjectMsg::Cancel, CANCEL_TIMEOUT_MS)
                    .map_err(|e| ProjectError::internal("cancelling", e))?;
            }
            None => self.cancel_project(&mut p.clone()).await,
        }
        Ok(p)
    }

    /// Deletes the user's project (stopping it first if it runs), its clips,
    /// events and media, and its upload unless another project uses it.
    /// Its scheduled posts belong to publishing: the caller cancels them
    /// first.
    pub async fn delete_project_of(&self, project: &ProjectRecord) -> Result<(), ProjectError> {
        if let Some(actor) = self.project_actor(&project.id) {
            let _ = ractor::call_t!(actor.sent(), ProjectMsg::Cancel, CANCEL_TIMEOUT_MS);
        }
        self.remove_project(project)
            .await
            .map_err(|e| ProjectError::internal("deleting a project", e))
    }

    /// Subscribes to a project's events after `after` (0: from the start).
    /// Subscribes before reading the stored log, so nothing falls in
    /// between; a finished project whose log is gone answers with its
    /// terminal event.
    pub async fn subscribe_project(
        &self,
        user_id: &str,
        id: &str,
        after: u64,
    ) -> Result<Subscription, ProjectError> {
        let p = self.project(user_id, id).await?;
        let rx = self.hub.subscribe(&p.id);
        let stored = events_after(&*self.kv, &p.id, after)
            .await
            .map_err(|e| ProjectError::internal("reading events", e))?;
        let mut last = after;
        let mut ended = false;
        let mut backlog = Vec::with_capacity(stored.len());
        for e in stored {
            last = e.id;
            ended = e.is_terminal();
            backlog.push(e);
        }
        if let Some(body) = ProjectEventBody::terminal(&p).filter(|_| !ended && backlog.is_empty())
        {
            backlog.push(ProjectEvent {
                id: p.last_event,
                body,
            });
            ended = true;
        }
        Ok(Subscription {
            backlog,
            live: (!ended).then_some(rx),
            last,
        })
    }
}

/// A new project's records, written with its credit reservation.
struct ProjectRecords(ProjectRecord);

impl Reserved for ProjectRecords {
    fn ops(&self, style: &CaptionStyle) -> crate::accounts::Result<Vec<KvOp>> {
        let mut rec = self.0.clone();
        rec.style = style.clone();
        records::new_project_ops(&rec).map_err(AccountError::Storage)
    }
}
