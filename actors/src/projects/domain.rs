//! The project domain on one node: the project actors (one per project
//! being processed, `actor.rs`), the clip editor's operations (`clip_*`),
//! the listing cache, hand-off and removal. It uses the accounts domain
//! for credits ([`Accounting`]), the node's leases ([`NodeLeases`]) and,
//! once the node joined one, the cluster through [`Clustered`]; it does not
//! import the engine that wires the domains together, nor the cluster.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::Semaphore;

use super::accounting::Accounting;
use super::clustered::Clustered;
use super::error::RunResult;
use super::events::{event_op, EventHub, ProjectEvent, ProjectEventBody};
use super::export::stored::{ExportError, ExportFile, ExportFrom, ExportRequest};
use super::messages::ProjectMsg;
use super::records::{self, ClipRecord, ProjectRecord, ProjectState};
use super::renders::Renders;
use super::work::{StageHost, StageKnobs};
use crate::accounts::actor::Notice;
use crate::accounts::{NotificationKind, Said};
use crate::mailbox::Tracked;
use crate::media::whisper::ModelOptions;
use crate::metrics::Metrics;
use crate::storage::kv::{self, KvOp, KvStore};
use crate::storage::leases::Fence;
use crate::storage::node_leases::NodeLeases;
use crate::storage::objects::ObjectStore;
use crate::supervisor::Tree;
use crate::webhooks::Subject;

/// Knobs of the project domain (from the server's config).
#[derive(Clone, Debug)]
pub struct Settings {
    pub data_dir: PathBuf,
    pub model_dir: PathBuf,
    pub model: ModelOptions,
    pub batch_size: usize,
    pub x264_preset: String,
    pub stage_retries: u32,
    pub workers: usize,
    pub max_clips: usize,
    /// Clip renders per account at once on this node (`clip_render`).
    pub renders_per_account: usize,
    /// How long an idle account actor stays in memory.
    pub idle: Duration,
    /// The optional LLM re-ranker of clip candidates (off when `None`).
    pub rerank: Option<super::stages::rerank::RerankConfig>,
}

/// What the project domain is built from: the node's stores, the accounts
/// domain, the node's leases, metrics and supervision tree.
pub struct ProjectsParts {
    pub kv: Arc<dyn KvStore>,
    pub objects: Arc<dyn ObjectStore>,
    pub accounts: Arc<dyn Accounting>,
    pub leases: NodeLeases,
    pub metrics: Arc<Metrics>,
    pub tree: Arc<Tree>,
    pub settings: Settings,
}

pub struct Projects {
    pub(super) kv: Arc<dyn KvStore>,
    pub(super) objects: Arc<dyn ObjectStore>,
    pub(super) hub: EventHub,
    /// The owners' accounts: credits, storage quota, caption styles.
    pub(super) accounts: Arc<dyn Accounting>,
    /// Projects processed at once on this node (`pipeline.workers`).
    pub(super) pool: Arc<Semaphore>,
    pub(super) settings: Settings,
    pub(super) metrics: Arc<Metrics>,
    /// Set when this node is part of a cluster: stages then run on the
    /// cluster's workers.
    pub(super) cluster: OnceLock<Arc<dyn Clustered>>,
    /// Leases of what this node runs (when clustered) and fenced writes.
    pub(super) leases: NodeLeases,
    /// What the stages this node runs use of it (`projects::work`).
    pub(super) stages: StageHost,
    /// The node's supervision tree (its `projects` branch).
    pub(super) tree: Arc<Tree>,
    /// Clip renders per account on this node (`clip_render`).
    pub(super) renders: Renders,
    pub(super) projects: Mutex<HashMap<String, Tracked<ProjectMsg>>>,
    /// Per user: the project count (counting keys is O(n)) and rendered
    /// listing pages; dropped whenever one of the user's projects changes.
    pub(super) listings: Mutex<HashMap<String, Listing>>,
    /// Bumped on every change, so nothing read meanwhile is cached.
    pub(super) listings_gen: std::sync::atomic::AtomicU64,
}

/// A user's cached listing: total and rendered pages by (skip, take).
pub(super) struct Listing {
    pub(super) total: usize,
    pub(super) pages: HashMap<(usize, usize), bytes::Bytes>,
}

impl Projects {
    pub fn new(parts: ProjectsParts) -> Arc<Self> {
        let ProjectsParts {
            kv,
            objects,
            accounts,
            leases,
            metrics,
            tree,
            settings,
        } = parts;
        let knobs = StageKnobs {
            data_dir: settings.data_dir.clone(),
            model_dir: settings.model_dir.clone(),
            model: settings.model.clone(),
            batch_size: settings.batch_size,
            x264_preset: settings.x264_preset.clone(),
            max_clips: settings.max_clips,
            rerank: settings.rerank.clone(),
        };
        Arc::new(Self {
            stages: StageHost::new(objects.clone(), knobs),
            accounts,
            leases,
            cluster: OnceLock::new(),
            kv,
            objects,
            hub: EventHub::new(),
            pool: Arc::new(Semaphore::new(settings.workers.max(1))),
            settings,
            metrics,
            tree,
            renders: Default::default(),
            projects: Mutex::new(HashMap::new()),
            listings: Mutex::new(HashMap::new()),
            listings_gen: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// This node joined a cluster: stages marked remote run on its
    /// workers from now on. Once.
    pub fn join_cluster(&self, cluster: Arc<dyn Clustered>) {
        let _ = self.cluster.set(cluster);
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// What the stages this node runs use of it.
    pub fn stages(&self) -> &StageHost {
        &self.stages
    }

    /// Projects holding one of the node's `pipeline.workers` slots.
    pub fn busy(&self) -> usize {
        self.settings
            .workers
            .saturating_sub(self.pool.available_permits())
    }

    /// Projects with SSE subscribers on this node.
    pub fn sse_channels(&self) -> usize {
        self.hub.channels()
    }

    /// Forgets the project's actor if it is still `actor` (a failed one).
    pub(crate) fn forget_project_actor(&self, id: &str, actor: ractor::ActorId) {
        let mut live = self.projects.lock().unwrap_or_else(|e| e.into_inner());
        if live.get(id).is_some_and(|t| t.actor.get_id() == actor) {
            live.remove(id);
        }
    }

    pub(crate) fn forget_all_projects(&self) {
        self.projects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// Resumes every project a previous run left unfinished (on a cluster:
    /// those of the accounts this node owns).
    pub async fn resume_all(self: &Arc<Self>) -> RunResult<usize> {
        let indexed = records::ensure_order_index(&*self.kv).await?;
        if indexed > 0 {
            tracing::info!(indexed, "built the project listing index");
        }
        let unfinished = records::unfinished_projects(&*self.kv).await?;
        let unfinished: Vec<_> = unfinished
            .into_iter()
            .filter(|p| self.owns_account(&p.user_id))
            .collect();
        let n = unfinished.len();
        for p in unfinished {
            tracing::info!(project_id = %p.id, state = p.state.as_str(), "resuming project");
            self.start_project(p).await?;
        }
        let renders = self.fail_interrupted_renders().await?;
        if renders > 0 {
            tracing::warn!(
                renders,
                "clip renders interrupted by the restart were failed"
            );
        }
        Ok(n)
    }

    pub(crate) fn forget_project(&self, id: &str) {
        self.projects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
    }

    pub fn project_actor(&self, id: &str) -> Option<Tracked<ProjectMsg>> {
        self.projects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned()
    }

    pub fn live_projects(&self) -> Vec<(String, Tracked<ProjectMsg>)> {
        self.projects
            .lock()
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default()
    }

    /// Persists `project` (and an event, if given) in one durable write, then
    /// publishes the event to SSE subscribers.
    pub async fn save_project(
        &self,
        project: &mut ProjectRecord,
        event: Option<ProjectEventBody>,
    ) -> kv::Result<()> {
        self.save_project_under(None, project, event).await
    }

    /// [`Self::save_project`] under the project's lease (fenced: refused
    /// once the lease is lost).
    pub(crate) async fn save_project_under(
        &self,
        fence: Option<&Fence>,
        project: &mut ProjectRecord,
        event: Option<ProjectEventBody>,
    ) -> kv::Result<()> {
        let event = event.map(|body| {
            project.last_event += 1;
            ProjectEvent {
                id: project.last_event,
                body,
            }
        });
        let mut ops = vec![records::put_project_op(project)?];
        if let Some(e) = &event {
            ops.push(event_op(&project.id, e)?);
        }
        self.leases.apply_under(fence, ops).await?;
        self.projects_changed(&project.user_id);
        if let Some(e) = event {
            self.hub.publish(&project.id, e);
        }
        Ok(())
    }

    /// Stores the rendered clips and announces each one.
    pub(crate) async fn store_clips(
        &self,
        fence: Option<&Fence>,
        project: &mut ProjectRecord,
        clips: Vec<ClipRecord>,
    ) {
        project.clip_count = clips.len() as u32;
        let mut ops = Vec::new();
        for c in &clips {
            match kv::encode(c) {
                Ok(v) => ops.push(KvOp::Put {
                    tree: records::CLIPS.into(),
                    key: records::clip_key(&project.id, c.index),
                    value: v,
                }),
                Err(e) => tracing::error!(error = %e, "cannot encode a clip"),
            }
        }
        if let Err(e) = self.leases.apply_under(fence, ops).await {
            tracing::error!(project_id = %project.id, error = %e, "cannot store clips");
        }
        for c in &clips {
            let event = ProjectEventBody::clip(&project.id, c);
            if let Err(e) = self.save_project_under(fence, project, Some(event)).await {
                tracing::error!(error = %e, "cannot persist a clip event");
            }
        }
    }

    pub(crate) async fn complete_project(
        &self,
        fence: Option<&Fence>,
        project: &mut ProjectRecord,
        took: Duration,
    ) {
        if let Some(f) = fence {
            // A node that lost the project must not charge for it.
            if !self.leases.renew(f).await {
                tracing::warn!(project_id = %project.id, "lease lost before completion");
                return;
            }
        }
        let minutes = (project.duration_sec / 60.0).ceil().max(1.0) as u64;
        let title = &project.title;
        let clips = project.clip_count;
        // Webhooks get the project as it is once this completes it.
        let subject = {
            let mut done = project.clone();
            done.state = ProjectState::Completed;
            done.step_progress = [100; 4];
            kv::encode(&done).map(Subject::Project)
        };
        let msg = format!(
            "\"{title}\" is ready: {clips} clip{} generated.",
            if clips == 1 { "" } else { "s" }
        );
        let notice = Notice {
            kind: NotificationKind::ProjectCompleted,
            said: Said::new("Project completed", msg)
                .with("projectTitle", title)
                .with("clips", clips),
            subject: subject.ok(),
        };
        let project_id = project.id.clone();
        let charged = self
            .accounts
            .charge(&project.user_id, project_id, minutes, notice)
            .await;
        if let Err(e) = charged {
            tracing::error!(project_id = %project.id, error = %e, "cannot charge or notify");
        }
        project.state = ProjectState::Completed;
        project.step_progress = [100; 4];
        let event = ProjectEventBody::completed(project);
        if let Err(e) = self.save_project_under(fence, project, Some(event)).await {
            tracing::error!(project_id = %project.id, error = %e, "cannot persist completion");
        }
        self.metrics
            .project_finished("completed", took.as_secs_f64());
        self.remove_work(&project.id).await;
    }

    pub(crate) async fn fail_project(
        &self,
        fence: Option<&Fence>,
        project: &mut ProjectRecord,
        reason: &str,
    ) {
        if let Some(f) = fence {
            if !self.leases.renew(f).await {
                tracing::warn!(project_id = %project.id, "lease lost before failing the project");
                return;
            }
        }
        let (title, why) = (&project.title, reason.to_string());
        let subject = {
            let mut failed = project.clone();
            failed.state = ProjectState::Failed;
            failed.error = Some(reason.to_string());
            kv::encode(&failed).map(Subject::Project)
        };
        let notice = Notice {
            kind: NotificationKind::ProjectFailed,
            said: Said::new(
                "Project failed",
                format!("\"{title}\" could not be processed: {why}"),
            )
            .with("projectTitle", title)
            .with("error", &why),
            subject: subject.ok(),
        };
        let project_id = project.id.clone();
        let released = self
            .accounts
            .release(&project.user_id, project_id, Some(notice))
            .await;
        if let Err(e) = released {
            tracing::error!(project_id = %project.id, error = %e, "cannot release credits or notify");
        }
        project.state = ProjectState::Failed;
        project.error = Some(reason.to_string());
        let event = ProjectEventBody::failed(project, reason);
        if let Err(e) = self.save_project_under(fence, project, Some(event)).await {
            tracing::error!(project_id = %project.id, error = %e, "cannot persist failure");
        }
        self.metrics.project_finished("failed", 0.0);
        self.remove_work(&project.id).await;
    }

    /// Cancel: release the reservation, announce `cancelled`, then remove the
    /// project, its clips, its media and its work folder.
    pub async fn cancel_project(&self, project: &mut ProjectRecord) {
        let project_id = project.id.clone();
        let released = self
            .accounts
            .release(&project.user_id, project_id, None)
            .await;
        if let Err(e) = released {
            tracing::error!(project_id = %project.id, error = %e, "cannot release credits");
        }
        project.state = ProjectState::Cancelled;
        let event = ProjectEvent {
            id: project.last_event + 1,
            body: ProjectEventBody::cancelled(project),
        };
        self.hub.publish(&project.id, event);
        if let Err(e) = self.remove_project(project).await {
            tracing::error!(project_id = %project.id, error = %e, "cannot remove the cancelled project");
        }
        self.metrics.project_finished("cancelled", 0.0);
    }

    /// A finished project's export (`projects::export::stored`).
    pub async fn export_project(
        &self,
        p: &ProjectRecord,
        what: ExportRequest,
    ) -> Result<ExportFile, ExportError> {
        let tmp_root = self.settings.data_dir.join("tmp");
        let from = ExportFrom {
            kv: &self.kv,
            objects: self.objects.as_ref(),
            tmp_root: &tmp_root,
        };
        from.export(p, what).await
    }
}

#[cfg(test)]
#[path = "domain_tests.rs"]
mod tests;
