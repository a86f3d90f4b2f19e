//! How a clip render ends (issue 29): the new version made current in one
//! conditional write with its notification and webhook deliveries, or the
//! failure recorded on the clip (an added clip that never rendered is
//! removed); the project's `render`, `clip` and `completed` events; the
//! renders a restart interrupted. The render itself: `clip_render.rs`.

use super::clip_render::{render_event, stale, RenderError, RenderJob};
use super::domain::Projects;
use crate::accounts::{AccountError, NotificationKind, Said};
use crate::projects::clip_history::{ClipVersion, RenderState};
use crate::projects::events::{ProjectEvent, ProjectEventBody};
use crate::projects::records::{self, ClipRecord, ProjectRecord};
use crate::storage::kv::{self, KvOp};
use crate::webhooks::Subject;

impl Projects {
    /// Records how a render ended: the new version current (its bytes
    /// counted against the owner's storage quota), or the failure on the
    /// clip with its files removed; then the events.
    pub(super) async fn finish_render(
        &self,
        project: &ProjectRecord,
        clip: &ClipRecord,
        job: &RenderJob,
        outcome: Result<ClipVersion, RenderError>,
    ) {
        let outcome = match outcome {
            Ok(v) => self.count_storage(project, v).await,
            Err(e) => Err(e),
        };
        let version = outcome.as_ref().ok().cloned();
        let error = outcome.as_ref().err().map(RenderError::to_string);
        let announce = version.as_ref().map(|v| {
            Said::new(
                "Clip rendered",
                format!("Version {} of \"{}\" is ready.", v.version, v.title),
            )
            .with("version", v.version)
            .with("clipTitle", &v.title)
        });
        let saved = self
            .settle(
                project,
                clip,
                job.version,
                announce,
                move |c| match &version {
                    Some(v) => {
                        c.make_current(v.clone());
                        c.render = None;
                    }
                    None => {
                        if let Some(r) = &mut c.render {
                            r.state = RenderState::Failed;
                            r.error = error.clone();
                        }
                    }
                },
            )
            .await;
        match (&outcome, saved) {
            (Ok(_), Some(c)) => {
                tracing::info!(project_id = %project.id, clip_id = %clip.id, version = job.version, "clip rendered");
                self.append_event(
                    project,
                    render_event(&c, job.version, "rendered", 100, None),
                )
                .await;
                self.append_event(project, ProjectEventBody::clip(&project.id, &c))
                    .await;
            }
            (Ok(v), None) => {
                // The clip or its project went meanwhile.
                self.drop_version_files(project, v).await;
            }
            (Err(e), _) => {
                tracing::warn!(project_id = %project.id, clip_id = %clip.id, error = %e, "clip render failed");
                if clip.version == 0 {
                    // An added clip that never rendered goes again.
                    self.discard_added_clip(project, clip).await;
                }
                let base = format!(
                    "projects/{}/clip-{}-v{}.",
                    project.id, clip.index, job.version
                );
                let _ = self.objects.delete_prefix(&base).await;
                self.append_event(
                    project,
                    render_event(clip, job.version, "failed", 0, Some(e.to_string())),
                )
                .await;
            }
        }
        self.projects_changed(&project.user_id);
        if !self.project_renders(&project.id).await {
            self.append_event(project, ProjectEventBody::completed(project))
                .await;
        }
    }

    /// Removes an added clip whose first render failed, and takes it off
    /// the project's clip count (one write, retried when the project moved).
    async fn discard_added_clip(&self, project: &ProjectRecord, clip: &ClipRecord) {
        let key = records::project_key(&project.user_id, &project.id);
        let ckey = records::clip_key(&project.id, clip.index);
        for _ in 0..5 {
            match self.discard_once(&key, &ckey, &clip.id).await {
                Ok(()) => return,
                Err(kv::StorageError::Conflict(_)) => continue,
                Err(e) => {
                    tracing::error!(clip_id = %clip.id, error = %e, "cannot remove a clip that failed to render");
                    return;
                }
            }
        }
    }

    /// One try of [`Self::discard_added_clip`]: the clip deleted and the
    /// project's count lowered, both conditional on the records as read.
    async fn discard_once(&self, key: &[u8], ckey: &[u8], cid: &str) -> kv::Result<()> {
        let kv = &*self.kv;
        let (Some(stored), Some(cstored)) = (
            kv.get_async(records::PROJECTS, key).await?,
            kv.get_async(records::CLIPS, ckey).await?,
        ) else {
            return Ok(());
        };
        let c: ClipRecord = kv::decode(&cstored)?;
        if c.id != cid || c.version != 0 {
            return Ok(());
        }
        let mut p = records::decode_project(&stored)?;
        p.clip_count = p.clip_count.saturating_sub(1);
        kv.apply_async(vec![
            KvOp::Expect {
                tree: records::PROJECTS.into(),
                key: key.to_vec(),
                value: Some(stored),
            },
            KvOp::Expect {
                tree: records::CLIPS.into(),
                key: ckey.to_vec(),
                value: Some(cstored),
            },
            records::put_project_op(&p)?,
            KvOp::Delete {
                tree: records::CLIPS.into(),
                key: ckey.to_vec(),
            },
        ])
        .await
    }

    /// Counts the version's bytes against the owner's quota (or fails the
    /// render, removing its files, when they do not fit).
    async fn count_storage(
        &self,
        project: &ProjectRecord,
        v: ClipVersion,
    ) -> Result<ClipVersion, RenderError> {
        let counted = self.accounts.add_storage(&project.user_id, v.bytes).await;
        match counted {
            Ok(_) => Ok(v),
            Err(e) => {
                self.drop_files(project, &v).await;
                Err(e.into())
            }
        }
    }

    async fn drop_files(&self, project: &ProjectRecord, v: &ClipVersion) {
        if let Some(base) = v.video_key.strip_suffix("mp4") {
            let _ = self.objects.delete_prefix(base).await;
        }
        let _ = project;
    }

    /// A version nobody will play: its files and counted bytes go.
    async fn drop_version_files(&self, project: &ProjectRecord, v: &ClipVersion) {
        self.drop_files(project, v).await;
        let _ = self
            .accounts
            .remove_storage(&project.user_id, v.bytes, Vec::new())
            .await;
    }

    /// Applies `change` to the stored clip while its render is `version`
    /// (retried when the record moved); `None` when the clip is gone or
    /// another render took over. With `announce`, a
    /// `clip_rendered` notification and its `clip.rendered` webhook
    /// deliveries are written in the same atomic write.
    async fn settle(
        &self,
        project: &ProjectRecord,
        clip: &ClipRecord,
        version: u32,
        announce: Option<Said>,
        change: impl Fn(&mut ClipRecord) + Send + Sync,
    ) -> Option<ClipRecord> {
        let key = records::clip_key(&project.id, clip.index);
        for _ in 0..5 {
            let once = self.settle_once(
                &key,
                clip,
                &project.user_id,
                version,
                announce.as_ref(),
                &change,
            );
            match once.await {
                Ok(found) => return found,
                Err(kv::StorageError::Conflict(_)) => continue,
                Err(e) => {
                    tracing::error!(clip_id = %clip.id, error = %e, "cannot record a render's end");
                    return None;
                }
            }
        }
        None
    }

    /// One try of [`Self::settle`], conditional on the clip as read.
    async fn settle_once(
        &self,
        key: &[u8],
        clip: &ClipRecord,
        user: &str,
        version: u32,
        announce: Option<&Said>,
        change: &(dyn Fn(&mut ClipRecord) + Send + Sync),
    ) -> kv::Result<Option<ClipRecord>> {
        let Some(stored) = self.kv.get_async(records::CLIPS, key).await? else {
            return Ok(None);
        };
        let mut c: ClipRecord = kv::decode(&stored)?;
        if c.id != clip.id || c.render.as_ref().map(|r| r.version) != Some(version) {
            return Ok(None);
        }
        change(&mut c);
        let ops = vec![
            KvOp::Expect {
                tree: records::CLIPS.into(),
                key: key.to_vec(),
                value: Some(stored),
            },
            KvOp::Put {
                tree: records::CLIPS.into(),
                key: key.to_vec(),
                value: kv::encode(&c)?,
            },
        ];
        let Some(said) = announce else {
            self.kv.apply_async(ops).await?;
            return Ok(Some(c));
        };
        let subject = Subject::Clip(kv::encode(&c)?);
        let kind = NotificationKind::ClipRendered;
        self.accounts
            .notify_with(user, kind, said, ops, Some(&subject))
            .await
            .map_err(|e| match e {
                AccountError::Storage(e) => e,
                e => kv::StorageError::Backend(format!("notification: {e}")),
            })?;
        Ok(Some(c))
    }

    /// True while a clip of the project is rendering.
    async fn project_renders(&self, project_id: &str) -> bool {
        records::load_clips_async(&*self.kv, project_id)
            .await
            .map(|clips| {
                clips.iter().any(|c| {
                    c.render
                        .as_ref()
                        .is_some_and(|r| r.state == RenderState::Rendering && !stale(r))
                })
            })
            .unwrap_or(false)
    }

    /// Stores an event after the project's last one (a write conditional on
    /// the project as read, retried) and sends it to live subscribers.
    pub(crate) async fn append_event(&self, project: &ProjectRecord, body: ProjectEventBody) {
        let key = records::project_key(&project.user_id, &project.id);
        for _ in 0..5 {
            match self.append_event_once(&key, body.clone()).await {
                Ok(Some(event)) => {
                    self.hub.publish(&project.id, event);
                    return;
                }
                Ok(None) => return,
                Err(kv::StorageError::Conflict(_)) => continue,
                Err(e) => {
                    tracing::error!(project_id = %project.id, error = %e, "cannot store a project event");
                    return;
                }
            }
        }
    }

    /// One try of [`Self::append_event`], conditional on the project as
    /// read; `None` when the project is gone.
    async fn append_event_once(
        &self,
        key: &[u8],
        body: ProjectEventBody,
    ) -> kv::Result<Option<ProjectEvent>> {
        let Some(stored) = self.kv.get_async(records::PROJECTS, key).await? else {
            return Ok(None);
        };
        let mut p = records::decode_project(&stored)?;
        p.last_event += 1;
        let event = ProjectEvent {
            id: p.last_event,
            body,
        };
        let write = vec![
            KvOp::Expect {
                tree: records::PROJECTS.into(),
                key: key.to_vec(),
                value: Some(stored),
            },
            KvOp::Put {
                tree: records::PROJECTS.into(),
                key: key.to_vec(),
                value: kv::encode(&p)?,
            },
            crate::projects::events::event_op(&p.id, &event)?,
        ];
        self.kv.apply_async(write).await?;
        Ok(Some(event))
    }

    /// After a restart: this node's renders that were running are failed
    /// (their clips keep the previous version), and their work folders go.
    pub async fn fail_interrupted_renders(&self) -> super::error::RunResult<usize> {
        if let Ok(entries) = std::fs::read_dir(self.settings.data_dir.join("work")) {
            for e in entries.flatten() {
                if e.file_name().to_string_lossy().starts_with("edit-") {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        let node = self.node_label();
        let mut clips = Vec::new();
        for (_, v) in self.kv.scan_prefix_async(records::CLIPS, b"").await? {
            let c: ClipRecord = kv::decode(&v)?;
            if c.render
                .as_ref()
                .is_some_and(|r| r.state == RenderState::Rendering && r.node == node)
            {
                clips.push(c);
            }
        }
        let n = clips.len();
        for c in clips {
            let version = c.render.as_ref().map_or(0, |r| r.version);
            let kv = &*self.kv;
            let Some(owner) = records::owner_of_async(kv, &c.project_id).await? else {
                continue;
            };
            let Some(project) = records::load_project_async(kv, &owner, &c.project_id).await?
            else {
                continue;
            };
            let job = RenderJob {
                version,
                title: c.title.clone(),
                start: c.start,
                end: c.end,
                edits: c.edits.clone(),
                reframe: None,
            };
            let why = RenderError::Restarted;
            self.finish_render(&project, &c, &job, Err(why)).await;
        }
        Ok(n)
    }
}
