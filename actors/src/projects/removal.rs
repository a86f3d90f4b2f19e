//! Removing what a project leaves: its records, events, clips (and the
//! storage quota their edited versions took), media, work files and, when
//! no other project uses it, its upload (its record, objects and quota).

use super::domain::Projects;
use super::records;
use crate::projects::records::{ClipRecord, ProjectRecord, Source};
use crate::projects::uploads::{folder_of, UploadRecord, UPLOADS};
use crate::projects::work::work_prefix;
use crate::storage::kv::{self, KvOp};

impl Projects {
    /// Deletes a project's records, events, clips and media, and its upload
    /// when no other project uses it (see [`uploads`]).
    pub async fn remove_project(&self, project: &ProjectRecord) -> super::error::RunResult<()> {
        let (user, pid) = (project.user_id.clone(), project.id.clone());
        let order = records::order_key(project);
        let kv = &*self.kv;
        let counted = async {
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
            let prefix = format!("{pid}/");
            for (k, v) in kv
                .scan_prefix_async(records::CLIPS, prefix.as_bytes())
                .await?
            {
                counted += kv::decode::<ClipRecord>(&v).map_or(0, |c| c.counted_bytes());
                ops.push(KvOp::Delete {
                    tree: records::CLIPS.into(),
                    key: k,
                });
            }
            for (k, _) in kv
                .scan_prefix_async(records::EVENTS, prefix.as_bytes())
                .await?
            {
                ops.push(KvOp::Delete {
                    tree: records::EVENTS.into(),
                    key: k,
                });
            }
            kv.apply_async(ops).await?;
            Ok::<_, kv::StorageError>(counted)
        }
        .await?;
        if counted > 0 {
            self.accounts
                .remove_storage(&project.user_id, counted, Vec::new())
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
        let _ = std::fs::remove_dir_all(self.stages.work_dir(project_id));
        if self.cluster.get().is_some() {
            let prefix = work_prefix(project_id);
            if let Err(e) = self.objects.delete_prefix(&prefix).await {
                tracing::warn!(project_id, error = %e, "cannot remove the shared work files");
            }
        }
    }

    /// After `project` was removed: when it was made from an upload that no
    /// other project of its owner uses, deletes the upload's record and
    /// objects and gives its bytes back to the owner's storage quota.
    /// Returns the bytes given back.
    pub(crate) async fn release_upload(
        &self,
        project: &ProjectRecord,
    ) -> super::error::RunResult<u64> {
        let Source::Upload(key) = &project.source else {
            return Ok(0);
        };
        let kv = &*self.kv;
        let in_use = records::list_projects_async(kv, &project.user_id)
            .await?
            .iter()
            .any(|p| p.source == project.source);
        if in_use {
            return Ok(0);
        }
        let record = kv::get_value_async::<UploadRecord>(kv, UPLOADS, key.as_bytes()).await?;
        let Some(record) = record.filter(|r| r.user_id == project.user_id) else {
            return Ok(0);
        };
        let size = record.size;
        // The record's deletion and the quota in one write.
        let delete = KvOp::Delete {
            tree: UPLOADS.to_string(),
            key: key.as_bytes().to_vec(),
        };
        self.accounts
            .remove_storage(&project.user_id, size, vec![delete])
            .await?;
        match folder_of(key) {
            Some(folder) => self.objects.delete_prefix(&folder).await,
            None => self.objects.delete(key).await.map(|_| 1),
        }?;
        Ok(size)
    }
}
