//! Uploaded source videos (`POST /upload`): the record of each upload, the
//! objects it keeps (the video and a frame of it) and how its bytes leave
//! the owner's storage quota when the last project made from it is
//! deleted.

use serde::{Deserialize, Serialize};

use super::Services;
use crate::accounts::actor::AccountMsg;
use crate::projects::records::{self, ProjectRecord, Source};
use crate::storage::kv::{self, KvOp};

/// Tree of upload records, keyed by the upload's key (`fileKey`).
pub const UPLOADS: &str = "uploads";

/// What the service remembers of an upload (tree [`UPLOADS`], key = fileKey).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct UploadRecord {
    pub user_id: String,
    /// Bytes counted against the owner's storage quota.
    pub size: u64,
    pub duration_sec: f64,
}
crate::record!(UploadRecord, "upload", 1);

/// Key of the JPEG frame of the upload `key` (stored next to it).
pub fn frame_key(key: &str) -> String {
    format!("{key}.jpg")
}

/// The folder holding the upload `key` and its frame: `uploads/<uuid>/`.
fn folder_of(key: &str) -> Option<String> {
    let mut parts = key.splitn(3, '/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some("uploads"), Some(id), Some(_)) if !id.is_empty() => Some(format!("uploads/{id}/")),
        _ => None,
    }
}

impl Services {
    /// After `project` was removed: when it was made from an upload that no
    /// other project of its owner uses, deletes the upload's record and
    /// objects and gives its bytes back to the owner's storage quota.
    /// Returns the bytes given back.
    pub(crate) async fn release_upload(&self, project: &ProjectRecord) -> super::EngineResult<u64> {
        let Source::Upload(key) = &project.source else {
            return Ok(0);
        };
        let (uid, k) = (project.user_id.clone(), key.clone());
        let record = self
            .blocking(move |kv| {
                let in_use = records::list_projects(kv, &uid)?
                    .iter()
                    .any(|p| p.source == Source::Upload(k.clone()));
                if in_use {
                    return Ok(None);
                }
                kv::get_value::<UploadRecord>(kv, UPLOADS, k.as_bytes())
            })
            .await?;
        let Some(record) = record.filter(|r| r.user_id == project.user_id) else {
            return Ok(0);
        };
        let size = record.size;
        // The record's deletion and the quota in one write.
        let delete = KvOp::Delete {
            tree: UPLOADS.to_string(),
            key: key.as_bytes().to_vec(),
        };
        self.call_account(&project.user_id, |reply| AccountMsg::RemoveStorage {
            bytes: size,
            with: vec![delete],
            reply,
        })
        .await?;
        match folder_of(key) {
            Some(folder) => self.objects.delete_prefix(&folder).await,
            None => self.objects.delete(key).await.map(|_| 1),
        }?;
        Ok(size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upload_and_its_frame_share_a_folder() {
        let key = "uploads/3f2c9a1e/talk.mp4";
        assert_eq!(frame_key(key), "uploads/3f2c9a1e/talk.mp4.jpg");
        assert_eq!(folder_of(key).as_deref(), Some("uploads/3f2c9a1e/"));
        assert_eq!(folder_of("uploads//x"), None);
        assert_eq!(folder_of("projects/p/clip-0.mp4"), None);
    }
}
