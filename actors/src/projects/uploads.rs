//! Uploaded source videos (`POST /upload`): the record of each upload and
//! the objects it keeps (the video and a frame of it, in one folder). How
//! its bytes leave the owner's storage quota when the last project made
//! from it is deleted is the engine's (`service/removal.rs`).

use serde::{Deserialize, Serialize};

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
pub(crate) fn folder_of(key: &str) -> Option<String> {
    let mut parts = key.splitn(3, '/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some("uploads"), Some(id), Some(_)) if !id.is_empty() => Some(format!("uploads/{id}/")),
        _ => None,
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
