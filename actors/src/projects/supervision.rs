//! How the `projects` branch of the supervision tree
//! (`crate::supervisor`) restarts its children: project actors and clip
//! render batches.

use std::sync::{Arc, Weak};

use ractor::ActorCell;

use super::clip_render::RENDER_PREFIX;
use super::domain::Projects;
use super::records::{self, ProjectRecord};
use crate::supervisor::{Children, SupervisionError};

/// Project actors: restarted from the stored record; after too many
/// failures the project fails (credits released, user notified).
pub struct ProjectChildren(Weak<Projects>);

impl ProjectChildren {
    pub fn new(projects: &Arc<Projects>) -> Self {
        Self(Arc::downgrade(projects))
    }
}

impl ProjectChildren {
    async fn stored(projects: &Projects, id: &str) -> Option<ProjectRecord> {
        let kv = &*projects.kv;
        let user = records::owner_of_async(kv, id).await.ok().flatten()?;
        records::load_project_async(kv, &user, id)
            .await
            .ok()
            .flatten()
            .filter(|p| !p.state.is_terminal())
    }
}

#[async_trait::async_trait]
impl Children for ProjectChildren {
    /// A project's id, or a render batch's whole name (`render:…`).
    fn identify(&self, cell: &ActorCell) -> Option<String> {
        let name = cell.get_name()?;
        if name.starts_with(RENDER_PREFIX) {
            return Some(name);
        }
        name.strip_prefix("project:").map(str::to_string)
    }

    fn restarts(&self, id: &str) -> bool {
        !id.starts_with(RENDER_PREFIX)
    }

    async fn restart(
        &self,
        id: &str,
        failed: &ActorCell,
        _sup: ActorCell,
    ) -> Result<(), SupervisionError> {
        let projects = self.0.upgrade().ok_or(SupervisionError::Stopping)?;
        projects.forget_project_actor(id, failed.get_id());
        match Self::stored(&projects, id).await {
            Some(project) => projects.start_project(project).await,
            None => Ok(()),
        }
    }

    async fn give_up(&self, id: &str, failed: &ActorCell, reason: &str) {
        let Some(projects) = self.0.upgrade() else {
            return;
        };
        if id.starts_with(RENDER_PREFIX) {
            projects.renders_stopped(id, reason).await;
            return;
        }
        projects.forget_project_actor(id, failed.get_id());
        if let Some(mut project) = Self::stored(&projects, id).await {
            let why = format!("processing kept crashing ({reason})");
            projects.fail_project(None, &mut project, &why).await;
        }
    }

    async fn started(&self, _sup: ActorCell, generation: u32) {
        // The node's first start resumes projects itself (after joining a
        // cluster); a restarted branch brings back every unfinished one.
        if generation > 1 {
            if let Some(s) = self.0.upgrade() {
                s.forget_all_projects();
                if let Err(e) = s.resume_all().await {
                    tracing::error!(error = %e, "cannot resume projects after a restart");
                }
            }
        }
    }
}
