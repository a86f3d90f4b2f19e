//! Video preparation (contract 4.2): metadata of a URL and file uploads.

use poem::web::Data;
use poem_openapi::payload::Json;
use poem_openapi::types::multipart::Upload;
use poem_openapi::{Multipart, Object, OpenApi, Tags};
use tokio_util::sync::CancellationToken;

use super::formats::{Text, Uri};
use super::{account, ApiError, ApiResult, Auth, State};
use clipforge_actors::accounts::actor::AccountMsg;
use clipforge_actors::accounts::AccountError;
use clipforge_actors::media::download::{self, MetaError, VideoMeta};
use clipforge_actors::media::{ffprobe, frame};
use clipforge_actors::projects::stages::StageError;
use clipforge_actors::projects::uploads::{frame_key, UploadRecord, UPLOADS};
use clipforge_actors::storage::kv;

#[derive(Tags)]
enum Tag {
    /// Preparing a video: URL metadata and uploads.
    Media,
}

pub struct MediaApi;

#[derive(Object)]
struct MetaRequest {
    /// A YouTube or Vimeo video page (another host answers 400
    /// `unsupported_platform`).
    #[oai(validator(max_length = 2048))]
    url: Uri,
}

#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct MetaResponse {
    title: Text,
    /// Seconds.
    duration_sec: f64,
    /// URL of the platform's thumbnail (empty when it has none).
    thumbnail: Text,
    /// Language code of the video (e.g. `en`), empty when unknown.
    language: Text,
}

#[derive(Multipart)]
struct UploadForm {
    /// The video (MP4, MOV, AVI, MKV or WebM).
    file: Upload,
}

#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct UploadResponse {
    /// `uploads/<uuid>/<filename>`: send it as `fileKey` to create a project.
    file_key: Text,
    /// Seconds.
    duration_sec: f64,
}

/// A file name safe for an object key: ASCII letters, digits, `.-_`.
pub fn sanitize_filename(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or("");
    let mut out: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    out = out.trim_matches(['.', '_']).to_string();
    if out.is_empty() {
        out = "video".into();
    }
    out.chars().take(100).collect()
}

/// Accepted containers, by ffprobe's format names.
fn accepted_format(format: &str) -> bool {
    format.split(',').any(|f| {
        matches!(
            f,
            "mov" | "mp4" | "m4a" | "3gp" | "avi" | "matroska" | "webm"
        )
    })
}

/// 400 for a video that cannot be used, 502 when the platform could not be
/// reached, 503 when it (or yt-dlp) did not answer in time.
pub fn meta_error(e: MetaError) -> ApiError {
    let message = e.to_string();
    match e {
        MetaError::Refused(_) => ApiError::bad_request("video_unavailable", message),
        MetaError::Unreachable(_) => ApiError::bad_gateway("source_unreachable", message),
        MetaError::TimedOut(_) => ApiError::unavailable_because("source_timeout", message),
        MetaError::Failed(cause) => {
            tracing::warn!(error = %cause, "yt-dlp metadata failed");
            ApiError::unavailable_because(
                "source_unavailable",
                "the video metadata could not be read; try again later",
            )
        }
    }
}

/// How long `POST /meta` and project creation wait for yt-dlp.
pub fn meta_timeout(state: &State) -> std::time::Duration {
    std::time::Duration::from_secs(state.config.sources.meta_timeout_secs.max(1))
}

#[OpenApi(tag = "Tag::Media")]
impl MediaApi {
    /// Title, duration, thumbnail and language of a YouTube or Vimeo video.
    /// Private, age-restricted, missing and unsupported-platform videos
    /// answer 400; when the platform cannot be reached (network, DNS, its
    /// errors) 502 `source_unreachable`, when it does not answer in time
    /// (`sources.meta_timeout_secs`) 503 `source_timeout`.
    #[oai(path = "/meta", method = "post", operation_id = "videoMeta")]
    async fn meta(
        &self,
        state: Data<&State>,
        _auth: Auth,
        body: Json<MetaRequest>,
    ) -> ApiResult<Json<MetaResponse>> {
        let url = body.0.url.trim().to_string();
        if !download::is_supported_url(&url, &state.config.sources.extra_hosts) {
            return Err(ApiError::bad_request(
                "unsupported_platform",
                "the URL is not from a supported platform (YouTube or Vimeo)",
            ));
        }
        let VideoMeta {
            title,
            duration_sec,
            thumbnail,
            language,
        } = download::metadata(&url, meta_timeout(&state), &CancellationToken::new())
            .await
            .map_err(meta_error)?;
        Ok(Json(MetaResponse {
            title: title.into(),
            duration_sec,
            thumbnail: thumbnail.into(),
            language: language.into(),
        }))
    }

    /// Upload a video to object storage; its `fileKey` is used to create a project.
    #[oai(path = "/upload", method = "post", operation_id = "upload")]
    async fn upload(
        &self,
        state: Data<&State>,
        auth: Auth,
        form: UploadForm,
    ) -> ApiResult<Json<UploadResponse>> {
        let user = auth.user().account.clone();
        let limits = state.engine.accounts().plan_limits(user.plan).clone();
        // The body was counted while it streamed in (crate::middleware):
        // one over the limit never gets here; this checks the file itself.
        let size = form.file.size() as u64;
        if size > limits.upload_max_bytes {
            return Err(ApiError::too_large(format!(
                "the file is larger than your plan's upload limit of {} MB",
                limits.upload_max_bytes / (1024 * 1024)
            )));
        }
        if size == 0 {
            return Err(ApiError::bad_request(
                "empty_file",
                "the uploaded file is empty",
            ));
        }
        // A read of the shared records: on a cluster this node need not be
        // the account's owner (the owner counts the bytes at the end).
        let accounts = state.engine.accounts();
        let used = accounts.stored_storage_used(&user.id).await?;
        if used + size > limits.storage_bytes {
            return Err(ApiError::too_large(
                "your plan's storage quota is full: delete projects or upgrade",
            ));
        }
        let name = sanitize_filename(form.file.file_name().unwrap_or("video"));
        // Spool to a named file (the multipart body is already on disk, never in memory).
        let tmp_dir = state.config.node.data_dir.join("tmp");
        std::fs::create_dir_all(&tmp_dir).map_err(|e| ApiError::internal("temp dir", e))?;
        let tmp = tempfile::Builder::new()
            .prefix("upload-")
            .tempfile_in(&tmp_dir)
            .map_err(|e| ApiError::internal("temp file", e))?;
        {
            let mut src = form.file.into_file();
            let mut dst = tokio::fs::File::create(tmp.path())
                .await
                .map_err(|e| ApiError::internal("temp file", e))?;
            tokio::io::copy(&mut src, &mut dst)
                .await
                .map_err(|e| ApiError::internal("spooling upload", e))?;
        }
        let info = ffprobe::probe(tmp.path(), &CancellationToken::new())
            .await
            .map_err(|e| match e {
                StageError::InvalidInput(_) => ApiError::unsupported(
                    "the file is not a video (use MP4, MOV, AVI, MKV or WebM)",
                ),
                other => ApiError::internal("ffprobe", other),
            })?;
        if !accepted_format(&info.format) || info.video.is_none() {
            return Err(ApiError::unsupported(
                "unsupported format: upload MP4, MOV, AVI, MKV or WebM",
            ));
        }
        ffprobe::require_video_with_audio(&name, &info)
            .map_err(|e| ApiError::bad_request("invalid_video", e.to_string()))?;
        // A frame of it: the thumbnail of projects made from it.
        let frame = tempfile::Builder::new()
            .prefix("upload-frame-")
            .suffix(".jpg")
            .tempfile_in(&tmp_dir)
            .map_err(|e| ApiError::internal("temp file", e))?;
        let at = (info.duration * 0.1).min(5.0);
        frame::grab(
            tmp.path(),
            at,
            frame.path(),
            Some(640),
            "a frame of the upload",
            &CancellationToken::new(),
        )
        .await
        .map_err(|e| ApiError::bad_request("invalid_video", e.to_string()))?;
        let folder = format!("uploads/{}/", uuid::Uuid::new_v4());
        let key = format!("{folder}{name}");
        let stored = async {
            state
                .objects
                .put_file(&key, tmp.path(), "video/mp4")
                .await?;
            state
                .objects
                .put_file(&frame_key(&key), frame.path(), "image/jpeg")
                .await
        };
        if let Err(e) = stored.await {
            let _ = state.objects.delete_prefix(&folder).await;
            return Err(ApiError::internal("storing upload", e));
        }
        let commit = UploadCommit {
            user_id: user.id.clone(),
            key: key.clone(),
            size,
            duration_sec: info.duration,
        };
        if let Err(e) = commit_upload(&state, commit).await {
            // Leave nothing behind.
            let _ = state.objects.delete_prefix(&folder).await;
            return Err(e);
        }
        Ok(Json(UploadResponse {
            file_key: key.into(),
            duration_sec: (info.duration * 1000.0).round() / 1000.0,
        }))
    }
}

/// Where an upload's record is written: the path of the small request a
/// node that stored an upload for an account it does not host sends to
/// the account's owner (over the cluster relay, never from a client).
pub const COMMIT_PATH: &str = "/internal/uploads/commit";

/// An upload stored in object storage, to count against its account's
/// quota and record (`uploads` tree). A few hundred bytes: this, not the
/// file, is what travels between nodes.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UploadCommit {
    pub user_id: String,
    pub key: String,
    pub size: u64,
    pub duration_sec: f64,
}

/// Records the upload at the account's owner: here when this node hosts
/// the account (or runs alone), else by sending the commit to the owner.
/// The file itself was streamed to object storage by this node, whichever
/// node owns the account.
async fn commit_upload(state: &State, commit: UploadCommit) -> ApiResult<()> {
    let Some(cluster) = state.cluster.as_ref() else {
        return record_upload(state, commit).await;
    };
    let owner = cluster
        .owner_of(&commit.user_id, clipforge_actors::cluster::Role::Api)
        .ok_or_else(|| {
            ApiError::unavailable_because(
                "node_unavailable",
                "no node can serve this account right now; try again shortly",
            )
        })?;
    if owner == cluster.node_name() {
        return record_upload(state, commit).await;
    }
    let req = clipforge_actors::cluster::relay::WireRequest {
        id: String::new(),
        method: "POST".into(),
        uri: COMMIT_PATH.into(),
        headers: vec![("content-type".into(), "application/json".into())],
        from: String::new(),
    };
    let body = serde_json::to_vec(&commit).map_err(|e| ApiError::internal("upload commit", e))?;
    let unavailable = |why: String| {
        tracing::warn!(%owner, error = %why, "cannot record an upload at its owner");
        ApiError::unavailable_because(
            "node_unavailable",
            "no node can serve this account right now; try again shortly",
        )
    };
    let (head, body) = cluster
        .forward(&owner, req, body)
        .await
        .map_err(|e| unavailable(e.to_string()))?;
    let answer = body.collect().await;
    if head.status == 200 {
        return Ok(());
    }
    let message = serde_json::from_slice::<serde_json::Value>(&answer)
        .ok()
        .and_then(|v| v["message"].as_str().map(str::to_string))
        .unwrap_or_default();
    Err(match head.status {
        413 => ApiError::too_large(message),
        s => unavailable(format!("the owner answered {s}: {message}")),
    })
}

/// Counts the upload against the account's quota and writes its record,
/// on the node hosting the account; nothing is kept when either fails.
pub async fn record_upload(state: &State, commit: UploadCommit) -> ApiResult<()> {
    let UploadCommit {
        user_id,
        key,
        size,
        duration_sec,
    } = commit;
    let record = UploadRecord {
        user_id: user_id.clone(),
        size,
        duration_sec,
    };
    let value = account(kv::encode(&record).map_err(AccountError::Storage))?;
    let put = kv::KvOp::Put {
        tree: UPLOADS.to_string(),
        key: key.as_bytes().to_vec(),
        value,
    };
    // The upload's record and its quota in one write.
    let stored = state
        .engine
        .call_account(&user_id, |reply| AccountMsg::AddStorage {
            bytes: size,
            with: vec![put],
            reply,
        })
        .await;
    account(stored.map(drop))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filenames_are_sanitized() {
        assert_eq!(
            sanitize_filename("../../etc/My Talk (final).mp4"),
            "My_Talk__final_.mp4"
        );
        assert_eq!(sanitize_filename("..."), "video");
        assert_eq!(sanitize_filename("C:\\videos\\clip.MOV"), "clip.MOV");
    }

    #[test]
    fn formats() {
        assert!(accepted_format("mov,mp4,m4a,3gp,3g2,mj2"));
        assert!(accepted_format("matroska,webm"));
        assert!(accepted_format("avi"));
        assert!(!accepted_format("tty"));
        assert!(!accepted_format("gif"));
    }
}
