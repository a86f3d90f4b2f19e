//! TikTok Content Posting API, direct post with `FILE_UPLOAD`:
//! `POST /v2/post/publish/creator_info/query/` (privacy levels the creator
//! allows), `POST /v2/post/publish/video/init/` (answers `publish_id` and
//! `upload_url`, persisted at once), chunked `PUT <upload_url>` with
//! `Content-Range`, then `POST /v2/post/publish/status/fetch/` until
//! `PUBLISH_COMPLETE`. Nothing is posted before the upload completes, and
//! the status of the stored `publish_id` says where a crashed attempt got
//! to (`uploaded_bytes`, `PUBLISH_COMPLETE`, `FAILED`).

use std::sync::Arc;

use serde_json::{json, Value};

use super::engine::Publishing;
use super::http::{send_json, send_ok, PubError, PubResult};
use super::post::{PostRecord, Progress};
use crate::projects::records::ClipRecord;

fn api(p: &Publishing, path: &str) -> String {
    format!("{}{path}", p.settings.tiktok.api_url.trim_end_matches('/'))
}

/// TikTok answers `{"data": …, "error": {"code": "ok", …}}`.
fn data(what: &str, v: Value) -> PubResult<Value> {
    let code = v["error"]["code"].as_str().unwrap_or("ok");
    if code != "ok" {
        let msg = format!(
            "{what}: {code} {}",
            v["error"]["message"].as_str().unwrap_or("")
        );
        return Err(match code {
            "access_token_invalid" => PubError::Unauthorized(msg),
            "rate_limit_exceeded" | "internal_error" => PubError::transient(msg),
            _ => PubError::Permanent(msg),
        });
    }
    Ok(v["data"].clone())
}

/// Chunks as TikTok wants them: one when smaller than the chunk size,
/// otherwise `floor(size / chunk)` chunks, the last one taking the rest.
pub fn chunks(total: u64, chunk: u64) -> Vec<(u64, u64)> {
    let chunk = chunk.max(1);
    if total <= chunk {
        return vec![(0, total)];
    }
    let n = total / chunk;
    (0..n)
        .map(|i| {
            let start = i * chunk;
            let end = if i + 1 == n { total } else { start + chunk };
            (start, end)
        })
        .collect()
}

pub async fn publish(
    p: &Arc<Publishing>,
    post: &mut PostRecord,
    token: &str,
    clip: &ClipRecord,
) -> PubResult<String> {
    let bytes = p.video_bytes(clip).await?;
    let total = bytes.len() as u64;
    let chunk = if total <= p.settings.tiktok_chunk_bytes {
        total.max(1)
    } else {
        p.settings.tiktok_chunk_bytes
    };
    if let Progress::TikTok {
        publish_id,
        upload_url,
    } = post.progress.clone()
    {
        let st = status(p, token, &publish_id).await?;
        match st["status"].as_str().unwrap_or("") {
            "PUBLISH_COMPLETE" | "SEND_TO_USER_INBOX" => {
                tracing::info!(post_id = %post.id, "reconciled: TikTok had published it");
                return Ok(post_id_of(&st, &publish_id));
            }
            "FAILED" => {
                tracing::info!(post_id = %post.id, reason = st["fail_reason"].as_str().unwrap_or(""), "earlier TikTok upload failed; starting again");
            }
            _ => {
                let have = st["uploaded_bytes"].as_u64().unwrap_or(0);
                if have < total {
                    put_chunks(p, &upload_url, &bytes, chunk, have).await?;
                }
                return wait(p, token, &publish_id).await;
            }
        }
    }
    let creator = data(
        "tiktok creator info",
        send_json(
            "tiktok creator info",
            p.http
                .post(api(p, "/v2/post/publish/creator_info/query/"))
                .bearer_auth(token)
                .json(&json!({})),
        )
        .await?,
    )?;
    let options: Vec<&str> = creator["privacy_level_options"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let privacy = ["PUBLIC_TO_EVERYONE", "SELF_ONLY"]
        .into_iter()
        .find(|o| options.contains(o))
        .or(options.first().copied())
        .unwrap_or("SELF_ONLY");
    if let Some(max) = creator["max_video_post_duration_sec"].as_f64() {
        if clip.end - clip.start > max {
            return Err(PubError::Permanent(format!(
                "the clip is longer than the {max} s this TikTok account may post"
            )));
        }
    }
    let parts = chunks(total, chunk);
    let init = data(
        "tiktok init",
        send_json(
            "tiktok init",
            p.http.post(api(p, "/v2/post/publish/video/init/")).bearer_auth(token).json(&json!({
                "post_info": { "title": post.title, "privacy_level": privacy, "disable_comment": false, "disable_duet": false, "disable_stitch": false },
                "source_info": { "source": "FILE_UPLOAD", "video_size": total, "chunk_size": chunk, "total_chunk_count": parts.len() },
            })),
        )
        .await?,
    )?;
    let publish_id = init["publish_id"].as_str().unwrap_or("").to_string();
    let upload_url = init["upload_url"].as_str().unwrap_or("").to_string();
    if publish_id.is_empty() || upload_url.is_empty() {
        return Err(PubError::transient(
            "tiktok init: no publish_id or upload_url",
        ));
    }
    p.save_progress(
        post,
        Progress::TikTok {
            publish_id: publish_id.clone(),
            upload_url: upload_url.clone(),
        },
    )
    .await?;
    put_chunks(p, &upload_url, &bytes, chunk, 0).await?;
    wait(p, token, &publish_id).await
}

async fn put_chunks(
    p: &Publishing,
    url: &str,
    bytes: &[u8],
    chunk: u64,
    from: u64,
) -> PubResult<()> {
    let total = bytes.len() as u64;
    for (start, end) in chunks(total, chunk).into_iter().filter(|(_, e)| *e > from) {
        send_ok(
            "tiktok chunk upload",
            p.http
                .put(url)
                .header("content-type", "video/mp4")
                .header(
                    "content-range",
                    format!("bytes {start}-{}/{total}", end - 1),
                )
                .body(bytes[start as usize..end as usize].to_vec()),
            &[],
        )
        .await?;
    }
    Ok(())
}

async fn status(p: &Publishing, token: &str, publish_id: &str) -> PubResult<Value> {
    data(
        "tiktok status",
        send_json(
            "tiktok status",
            p.http
                .post(api(p, "/v2/post/publish/status/fetch/"))
                .bearer_auth(token)
                .json(&json!({ "publish_id": publish_id })),
        )
        .await?,
    )
}

fn post_id_of(st: &Value, publish_id: &str) -> String {
    // The field is spelled this way in TikTok's API.
    st["publicaly_available_post_id"][0]
        .as_u64()
        .map(|n| n.to_string())
        .or_else(|| {
            st["publicaly_available_post_id"][0]
                .as_str()
                .map(str::to_string)
        })
        .unwrap_or_else(|| publish_id.to_string())
}

async fn wait(p: &Publishing, token: &str, publish_id: &str) -> PubResult<String> {
    for _ in 0..p.settings.poll_limit.max(1) {
        let st = status(p, token, publish_id).await?;
        match st["status"].as_str().unwrap_or("") {
            "PUBLISH_COMPLETE" | "SEND_TO_USER_INBOX" => return Ok(post_id_of(&st, publish_id)),
            "FAILED" => {
                let reason = st["fail_reason"].as_str().unwrap_or("unknown");
                return Err(PubError::Permanent(format!(
                    "TikTok could not publish the video: {reason}"
                )));
            }
            _ => tokio::time::sleep(p.settings.poll_interval).await,
        }
    }
    Err(PubError::transient("tiktok: still processing"))
}

#[cfg(test)]
mod tests {
    use super::chunks;

    #[test]
    fn chunking_follows_the_platform_rules() {
        assert_eq!(chunks(100, 1000), vec![(0, 100)]);
        assert_eq!(chunks(2500, 1000), vec![(0, 1000), (1000, 2500)]);
        assert_eq!(
            chunks(3000, 1000),
            vec![(0, 1000), (1000, 2000), (2000, 3000)]
        );
    }
}
