//! Instagram Graph API Reels (Instagram Login, `graph.instagram.com`):
//! `POST /<ver>/<ig-user-id>/media` with `media_type=REELS` and `video_url`
//! (a signed public URL of the clip) creates a container, persisted at once;
//! `GET /<ver>/<container>?fields=status_code` is polled until `FINISHED`;
//! `POST /<ver>/<ig-user-id>/media_publish?creation_id=<container>`
//! publishes. A container's `status_code` turns `PUBLISHED` once published,
//! so a restart asks it before publishing again.

use std::sync::Arc;

use serde_json::Value;

use super::engine::Publishing;
use super::http::{send_json, PubError, PubResult};
use super::post::{PostRecord, Progress};
use crate::projects::records::ClipRecord;

fn url(p: &Publishing, path: &str) -> String {
    format!(
        "{}/{}/{path}",
        p.settings.instagram.api_url.trim_end_matches('/'),
        p.settings.instagram_api_version
    )
}

async fn container_status(p: &Publishing, token: &str, container: &str) -> PubResult<Value> {
    send_json(
        "instagram container status",
        p.http
            .get(url(p, container))
            .query(&[("fields", "status_code,status"), ("access_token", token)]),
    )
    .await
}

pub async fn publish(
    p: &Arc<Publishing>,
    post: &mut PostRecord,
    token: &str,
    ig_user: &str,
    clip: &ClipRecord,
) -> PubResult<String> {
    if ig_user.is_empty() {
        return Err(PubError::Permanent(
            "the Instagram account id is unknown; reconnect the account".into(),
        ));
    }
    let mut container = None;
    if let Progress::Instagram { container_id } = post.progress.clone() {
        let st = container_status(p, token, &container_id).await?;
        match st["status_code"].as_str().unwrap_or("") {
            "PUBLISHED" => {
                tracing::info!(post_id = %post.id, "reconciled: Instagram had published it");
                return Ok(st["id"].as_str().unwrap_or(&container_id).to_string());
            }
            "ERROR" | "EXPIRED" => {
                tracing::info!(post_id = %post.id, "earlier container unusable; creating a new one");
            }
            _ => container = Some(container_id),
        }
    }
    let container = match container {
        Some(c) => c,
        None => {
            let video_url = p
                .host
                .objects
                .url(&clip.video_key, p.settings.media_url_ttl)
                .await
                .map_err(|e| PubError::transient(format!("signing the clip URL: {e}")))?;
            let v = send_json(
                "instagram create container",
                p.http.post(url(p, &format!("{ig_user}/media"))).form(&[
                    ("media_type", "REELS"),
                    ("video_url", video_url.as_str()),
                    ("caption", post.title.as_str()),
                    ("share_to_feed", "true"),
                    ("access_token", token),
                ]),
            )
            .await?;
            let id = v["id"]
                .as_str()
                .map(str::to_string)
                .ok_or_else(|| PubError::transient("instagram: no container id"))?;
            p.save_progress(
                post,
                Progress::Instagram {
                    container_id: id.clone(),
                },
            )
            .await?;
            id
        }
    };
    let mut ready = false;
    for _ in 0..p.settings.poll_limit.max(1) {
        let st = container_status(p, token, &container).await?;
        match st["status_code"].as_str().unwrap_or("") {
            "FINISHED" => {
                ready = true;
                break;
            }
            "PUBLISHED" => return Ok(container),
            "ERROR" => {
                p.save_progress(post, Progress::None).await?;
                let why = st["status"].as_str().unwrap_or("processing error");
                return Err(PubError::Permanent(format!(
                    "Instagram could not process the video: {why}"
                )));
            }
            "EXPIRED" => {
                p.save_progress(post, Progress::None).await?;
                return Err(PubError::transient(
                    "instagram: the container expired before publishing",
                ));
            }
            _ => tokio::time::sleep(p.settings.poll_interval).await,
        }
    }
    if !ready {
        return Err(PubError::transient(
            "instagram: the video is still processing",
        ));
    }
    let v = send_json(
        "instagram publish",
        p.http
            .post(url(p, &format!("{ig_user}/media_publish")))
            .form(&[("creation_id", container.as_str()), ("access_token", token)]),
    )
    .await?;
    Ok(v["id"].as_str().unwrap_or(&container).to_string())
}
