//! How the `accounts` and `projects` branches of the supervision tree
//! (`crate::supervisor`) restart their children.

use std::sync::{Arc, Weak};

use ractor::ActorCell;

use super::clip_render::RENDER_PREFIX;
use super::Services;
use crate::projects::records::{self, ProjectRecord};
use crate::supervisor::{policy, Children, SupervisionError};

/// Starts the node supervisor with the `accounts` and `projects` branches.
pub async fn start(services: &Arc<Services>) -> Result<(), SupervisionError> {
    let tree = services.tree.clone();
    tree.start().await?;
    let weak = Arc::downgrade(services);
    tree.start_branch(
        &tree.accounts,
        policy::ACCOUNT,
        policy::ACCOUNTS,
        Arc::new(AccountChildren(weak.clone())),
    )
    .await?;
    tree.start_branch(
        &tree.projects,
        policy::PROJECT,
        policy::PROJECTS,
        Arc::new(ProjectChildren(weak)),
    )
    .await
}

/// Account actors: restarted at once (the new actor answers the next
/// command for the account).
struct AccountChildren(Weak<Services>);

#[async_trait::async_trait]
impl Children for AccountChildren {
    fn identify(&self, cell: &ActorCell) -> Option<String> {
        self.0.upgrade()?.users.user_of(cell.get_id())
    }

    async fn restart(
        &self,
        id: &str,
        failed: &ActorCell,
        sup: ActorCell,
    ) -> Result<(), SupervisionError> {
        let services = self.0.upgrade().ok_or(SupervisionError::Stopping)?;
        Ok(services
            .users
            .replace(&services.accounts, id, failed.get_id(), sup)
            .await?)
    }

    async fn give_up(&self, id: &str, failed: &ActorCell, _reason: &str) {
        // Dropped: the next request for the account activates a new actor.
        if let Some(s) = self.0.upgrade() {
            s.users.forget(id, failed.get_id());
        }
    }

    async fn started(&self, _sup: ActorCell, generation: u32) {
        // After a branch restart every account actor is gone: forget them
        // all (each comes back on its next request).
        if generation > 1 {
            if let Some(s) = self.0.upgrade() {
                s.users.clear();
            }
        }
    }
}

/// Project actors: restarted from the stored record; after too many
/// failures the project fails (credits released, user notified).
struct ProjectChildren(Weak<Services>);

impl ProjectChildren {
    async fn stored(services: &Services, id: &str) -> Option<ProjectRecord> {
        let id = id.to_string();
        services
            .blocking(move |kv| match records::owner_of(kv, &id)? {
                Some(user) => records::load_project(kv, &user, &id),
                None => Ok(None),
            })
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
        let services = self.0.upgrade().ok_or(SupervisionError::Stopping)?;
        services.forget_project_actor(id, failed.get_id());
        match Self::stored(&services, id).await {
            Some(project) => services.start_project(project).await,
            None => Ok(()),
        }
    }

    async fn give_up(&self, id: &str, failed: &ActorCell, reason: &str) {
        let Some(services) = self.0.upgrade() else {
            return;
        };
        if id.starts_with(RENDER_PREFIX) {
            services.renders_stopped(id, reason).await;
            return;
        }
        services.forget_project_actor(id, failed.get_id());
        if let Some(mut project) = Self::stored(&services, id).await {
            let why = format!("processing kept crashing ({reason})");
            services.fail_project(None, &mut project, &why).await;
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
