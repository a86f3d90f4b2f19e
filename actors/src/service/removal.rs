//! Removing what a project leaves: its records, events, clips (and the
//! storage quota their edited versions took), media, work files and, when
//! no other project uses it, its upload.

use super::{records, work, workers, Services};
use crate::accounts::actor::AccountMsg;
use crate::projects::records::{ClipRecord, ProjectRecord};
use crate::storage::kv::{self, KvOp};

impl Services {
    /// Deletes a project's records, events, clips and media, and its upload
    /// when no other project uses it (see [`uploads`]).
    pub async fn remove_project(&self, project: &ProjectRecord) -> super::EngineResult<()> {
        let (user, pid) = (project.user_id.clone(), project.id.clone());
        let order = records::order_key(project);
        let counted = self
            .blocking(move |kv| {
                let mut ops = vec![
                    KvOp::Delete {
                        tree: records::PROJECTS.into(),
                        key: records::project_key(&user, &pid),
                    },
                    KvOp::Delete {
                        tree: records::PROJECT_OWNER.into(),
                        key: pid.as_bytes().to_vec(),
                    },
                    KvOp::Delete {
                        tree: records::PROJECT_ORDER.into(),
                        key: order,
                    },
                ];
                // Edited versions' bytes were counted against the quota.
                let mut counted = 0u64;
                for (k, v) in kv.scan_prefix(records::CLIPS, format!("{pid}/").as_bytes())? {
                    counted += kv::decode::<ClipRecord>(&v).map_or(0, |c| c.counted_bytes());
                    ops.push(KvOp::Delete {
                        tree: records::CLIPS.into(),
                        key: k,
                    });
                }
                for (k, _) in kv.scan_prefix(records::EVENTS, format!("{pid}/").as_bytes())? {
                    ops.push(KvOp::Delete {
                        tree: records::EVENTS.into(),
                        key: k,
                    });
                }
                kv.apply(ops)?;
                Ok(counted)
            })
            .await?;
        if counted > 0 {
            self.call_account(&project.user_id, |reply| AccountMsg::RemoveStorage {
                bytes: counted,
                with: Vec::new(),
                reply,
            })
            .await?;
        }
        self.projects_changed(&project.user_id);
        self.objects
            .delete_prefix(&format!("projects/{}/", project.id))
            .await?;
        self.remove_work(&project.id).await;
        self.release_upload(project).await?;
        Ok(())
    }

    /// Removes a project's work files: the local folder, and in a cluster
    /// the copies the stage workers share through object storage.
    pub(super) async fn remove_work(&self, project_id: &str) {
        let _ = std::fs::remove_dir_all(work::work_dir(self, project_id));
        if self.cluster.get().is_some() {
            let prefix = workers::work_prefix(project_id);
            if let Err(e) = self.objects.delete_prefix(&prefix).await {
                tracing::warn!(project_id, error = %e, "cannot remove the shared work files");
            }
        }
    }
}
