//! YouTube Data API v3 `videos.insert` with the resumable upload protocol:
//! `POST /upload/youtube/v3/videos?uploadType=resumable&part=snippet,status`
//! (metadata) answers a session URI in `Location`, persisted at once; then
//! `PUT <session>` with the bytes. A video exists only once the upload
//! completes, and the session tells whether it did (`PUT` with
//! `Content-Range: bytes */<size>`: 200/201 complete, 308 incomplete), so a
//! restart asks the session before uploading again and resumes at its offset.

use std::sync::Arc;

use serde_json::json;

use super::engine::Publishing;
use super::http::{classify, send, send_ok, PubError, PubResult};
use super::post::{PostRecord, Progress};
use crate::projects::records::ClipRecord;

enum Session {
    Complete(String),
    /// Bytes the platform has.
    Incomplete(u64),
    Gone,
}

pub async fn publish(
    p: &Arc<Publishing>,
    post: &mut PostRecord,
    token: &str,
    clip: &ClipRecord,
) -> PubResult<String> {
    let bytes = p.video_bytes(clip).await?;
    if let Progress::YouTube { session_url } = post.progress.clone() {
        match query(p, &session_url, token, bytes.len() as u64).await? {
            Session::Complete(id) => {
                tracing::info!(post_id = %post.id, "reconciled: the upload had completed");
                return Ok(id);
            }
            Session::Incomplete(offset) => {
                return upload(p, &session_url, token, bytes, offset).await
            }
            Session::Gone => {
                tracing::info!(post_id = %post.id, "upload session expired; starting a new one")
            }
        }
    }
    let base = p.settings.youtube.upload_url.trim_end_matches('/');
    let meta = json!({
        "snippet": { "title": post.title, "description": post.title, "categoryId": "22" },
        "status": { "privacyStatus": p.settings.youtube_privacy, "selfDeclaredMadeForKids": false },
    });
    let resp = send_ok(
        "youtube upload init",
        p.http
            .post(format!("{base}/upload/youtube/v3/videos"))
            .query(&[("uploadType", "resumable"), ("part", "snippet,status")])
            .bearer_auth(token)
            .header("x-upload-content-length", bytes.len().to_string())
            .header("x-upload-content-type", "video/mp4")
            .json(&meta),
        &[],
    )
    .await?;
    let session_url = resp
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .ok_or_else(|| PubError::transient("youtube upload init: no session URI in Location"))?;
    p.save_progress(
        post,
        Progress::YouTube {
            session_url: session_url.clone(),
        },
    )
    .await?;
    upload(p, &session_url, token, bytes, 0).await
}

async fn query(p: &Publishing, session: &str, token: &str, total: u64) -> PubResult<Session> {
    let resp = send(
        "youtube upload status",
        p.http
            .put(session)
            .bearer_auth(token)
            .header("content-length", "0")
            .header("content-range", format!("bytes */{total}")),
    )
    .await?;
    match resp.status().as_u16() {
        200 | 201 => Ok(Session::Complete(video_id(resp).await?)),
        308 => {
            let have = resp
                .headers()
                .get("range")
                .and_then(|v| v.to_str().ok())
                .and_then(|r| r.rsplit('-').next()?.trim().parse::<u64>().ok())
                .map(|last| last + 1)
                .unwrap_or(0);
            Ok(Session::Incomplete(have))
        }
        404 | 410 => Ok(Session::Gone),
        _ => {
            let status = resp.status();
            let body = resp.text().await.unwrap_or_default();
            Err(classify("youtube upload status", status, None, &body))
        }
    }
}

async fn upload(
    p: &Publishing,
    session: &str,
    token: &str,
    bytes: Vec<u8>,
    offset: u64,
) -> PubResult<String> {
    let total = bytes.len() as u64;
    let offset = offset.min(total);
    let mut req = p
        .http
        .put(session)
        .bearer_auth(token)
        .header("content-type", "video/mp4");
    if offset > 0 {
        req = req.header(
            "content-range",
            format!("bytes {offset}-{}/{total}", total.saturating_sub(1)),
        );
    }
    let body = bytes[offset as usize..].to_vec();
    let resp = send_ok("youtube upload", req.body(body), &[308]).await?;
    if resp.status().as_u16() == 308 {
        return Err(PubError::transient(
            "youtube upload: the platform did not receive every byte",
        ));
    }
    video_id(resp).await
}

async fn video_id(resp: reqwest::Response) -> PubResult<String> {
    let v: serde_json::Value = resp.json().await.map_err(|e| {
        PubError::transient(format!("youtube upload: unreadable video resource: {e}"))
    })?;
    v["id"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| PubError::transient("youtube upload: no video id in the response"))
}
