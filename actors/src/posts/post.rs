//! Scheduled posts (contract 2.5, 3.1) as stored, and their indexes.
//!
//! | tree | key | value |
//! |---|---|---|
//! | `posts` | post id | [`PostRecord`] |
//! | `posts_by_user` | `user/<scheduledAt 16 hex>/id` | (empty): listing by time |
//! | `posts_due` | `<scheduledAt 16 hex>/id` | (empty): the durable timers of posts not yet finished |

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::provider::Provider;
use crate::accounts::{iso8601, NotificationKind, Said};
use crate::storage::kv::{self, KvOp, KvStore};

pub const POSTS: &str = "posts";
pub const POSTS_BY_USER: &str = "posts_by_user";
pub const POSTS_DUE: &str = "posts_due";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PostStatus {
    Pending,
    Publishing,
    Published,
    Failed,
}

impl PostStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            PostStatus::Pending => "pending",
            PostStatus::Publishing => "publishing",
            PostStatus::Published => "published",
            PostStatus::Failed => "failed",
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(self, PostStatus::Published | PostStatus::Failed)
    }
}

/// What the platform has of a publication in progress: persisted as soon as
/// the platform returns it, so a restart can ask the platform about it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Progress {
    None,
    /// A resumable upload session URI.
    YouTube {
        session_url: String,
    },
    /// A Content Posting API publish id and its upload URL.
    TikTok {
        publish_id: String,
        upload_url: String,
    },
    /// A Reels media container (its status says whether it was published).
    Instagram {
        container_id: String,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PostRecord {
    pub id: String,
    pub user_id: String,
    pub clip_id: String,
    pub project_id: String,
    pub provider: Provider,
    pub title: String,
    pub scheduled_at: i64,
    pub status: PostStatus,
    pub created_at: i64,
    pub updated_at: i64,
    /// Failed attempts so far (transient errors).
    pub attempts: u32,
    /// Set, and persisted, when publishing starts, before any upload.
    pub idempotency_key: Option<String>,
    pub progress: Progress,
    /// The platform's id of the published video or media.
    pub remote_id: Option<String>,
    pub error: Option<String>,
    /// When the post went `publishing` (lateness = started_at - scheduled_at).
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
}
crate::record!(PostRecord, "post", 1);

impl PostRecord {
    /// A new post of `clip_id` (of `project_id`), waiting for `scheduled_at`
    /// (epoch ms), created at `now`.
    pub fn pending(
        user_id: &str,
        clip_id: &str,
        project_id: &str,
        provider: Provider,
        title: String,
        scheduled_at: i64,
        now: i64,
    ) -> PostRecord {
        PostRecord {
            id: uuid::Uuid::new_v4().to_string(),
            user_id: user_id.to_string(),
            clip_id: clip_id.to_string(),
            project_id: project_id.to_string(),
            provider,
            title,
            scheduled_at,
            status: PostStatus::Pending,
            created_at: now,
            updated_at: now,
            attempts: 0,
            idempotency_key: None,
            progress: Progress::None,
            remote_id: None,
            error: None,
            started_at: None,
            finished_at: None,
        }
    }

    /// Back to pending after a failure (a reschedule): the failure, the
    /// attempts and what the platform had of the failed publication are
    /// cleared; publishing starts afresh with a new idempotency key.
    pub fn retry(&mut self) {
        self.status = PostStatus::Pending;
        self.attempts = 0;
        self.idempotency_key = None;
        self.progress = Progress::None;
        self.remote_id = None;
        self.error = None;
        self.started_at = None;
        self.finished_at = None;
    }

    /// The contract's ScheduledPost, plus `updatedAt`, `attempts`, `error`,
    /// `platformPostId` and `publishedAt`.
    pub fn view(&self) -> Value {
        json!({
            "id": self.id,
            "userId": self.user_id,
            "clipId": self.clip_id,
            "projectId": self.project_id,
            "provider": self.provider.as_str(),
            "title": self.title,
            "scheduledAt": iso8601(self.scheduled_at),
            "status": self.status.as_str(),
            "createdAt": iso8601(self.created_at),
            "updatedAt": iso8601(self.updated_at),
            "attempts": self.attempts,
            "error": self.error,
            "platformPostId": self.remote_id,
            "publishedAt": (self.status == PostStatus::Published).then(|| self.finished_at.map(iso8601)).flatten(),
        })
    }
}

fn by_user_key(p: &PostRecord) -> Vec<u8> {
    format!("{}/{:016x}/{}", p.user_id, p.scheduled_at.max(0), p.id).into_bytes()
}

pub fn due_key(scheduled_at: i64, id: &str) -> Vec<u8> {
    format!("{:016x}/{id}", scheduled_at.max(0)).into_bytes()
}

fn put(tree: &str, key: Vec<u8>, value: Vec<u8>) -> KvOp {
    KvOp::Put {
        tree: tree.into(),
        key,
        value,
    }
}

fn del(tree: &str, key: Vec<u8>) -> KvOp {
    KvOp::Delete {
        tree: tree.into(),
        key,
    }
}

/// The writes that store a new post.
pub fn insert_ops(p: &PostRecord) -> kv::Result<Vec<KvOp>> {
    let mut ops = vec![
        put(POSTS, p.id.as_bytes().to_vec(), kv::encode(p)?),
        put(POSTS_BY_USER, by_user_key(p), Vec::new()),
    ];
    if !p.status.is_terminal() {
        ops.push(put(POSTS_DUE, due_key(p.scheduled_at, &p.id), Vec::new()));
    }
    Ok(ops)
}

/// The writes that turn `old` into `new`, indexes included.
pub fn update_ops(old: &PostRecord, new: &PostRecord) -> kv::Result<Vec<KvOp>> {
    let mut ops = vec![put(POSTS, new.id.as_bytes().to_vec(), kv::encode(new)?)];
    if old.scheduled_at != new.scheduled_at {
        ops.push(del(POSTS_BY_USER, by_user_key(old)));
        ops.push(put(POSTS_BY_USER, by_user_key(new), Vec::new()));
    }
    if old.scheduled_at != new.scheduled_at || new.status.is_terminal() {
        ops.push(del(POSTS_DUE, due_key(old.scheduled_at, &old.id)));
    }
    if !new.status.is_terminal() {
        ops.push(put(
            POSTS_DUE,
            due_key(new.scheduled_at, &new.id),
            Vec::new(),
        ));
    }
    Ok(ops)
}

/// The writes that remove a post.
pub fn delete_ops(p: &PostRecord) -> Vec<KvOp> {
    vec![
        del(POSTS, p.id.as_bytes().to_vec()),
        del(POSTS_BY_USER, by_user_key(p)),
        del(POSTS_DUE, due_key(p.scheduled_at, &p.id)),
    ]
}

/// The post, if stored.
pub async fn load_async(kv: &dyn KvStore, id: &str) -> kv::Result<Option<PostRecord>> {
    kv::get_value_async(kv, POSTS, id.as_bytes()).await
}

/// One page of a user's posts by `scheduledAt` (then id), and the total
/// (a request's read: the store's async side).
pub async fn list_user(
    kv: &dyn KvStore,
    user_id: &str,
    page: usize,
    limit: usize,
) -> kv::Result<(Vec<PostRecord>, usize)> {
    let prefix = format!("{user_id}/");
    let keys = kv
        .scan_prefix_async(POSTS_BY_USER, prefix.as_bytes())
        .await?;
    let total = keys.len();
    let mut out = Vec::new();
    for (k, _) in keys
        .into_iter()
        .skip(page.saturating_sub(1) * limit)
        .take(limit)
    {
        let id = String::from_utf8_lossy(&k)
            .rsplit('/')
            .next()
            .unwrap_or("")
            .to_string();
        if let Some(p) = load_async(kv, &id).await? {
            out.push(p);
        }
    }
    Ok((out, total))
}

/// Every post of a user (by time).
pub async fn all_of_user(kv: &dyn KvStore, user_id: &str) -> kv::Result<Vec<PostRecord>> {
    Ok(list_user(kv, user_id, 1, usize::MAX).await?.0)
}

/// The durable timers: (scheduledAt, post id) of every unfinished post.
pub async fn due_entries(kv: &dyn KvStore) -> kv::Result<Vec<(i64, String)>> {
    let mut out = Vec::new();
    for (k, _) in kv.scan_prefix_async(POSTS_DUE, b"").await? {
        let s = String::from_utf8_lossy(&k);
        let Some((t, id)) = s.split_once('/') else {
            continue;
        };
        if let Ok(t) = i64::from_str_radix(t, 16) {
            out.push((t, id.to_string()));
        }
    }
    Ok(out)
}
/// The notification for a post that has just finished (`old` → `p`).
pub(crate) fn outcome_notification(
    old: &PostRecord,
    p: &PostRecord,
) -> Option<(NotificationKind, Said)> {
    if old.status == p.status {
        return None;
    }
    let platform = p.provider.display();
    match p.status {
        PostStatus::Published => Some((
            NotificationKind::PostPublished,
            Said::new(
                "Post published",
                format!("\"{}\" was published on {platform}.", p.title),
            )
            .with("postTitle", &p.title)
            .with("platform", platform),
        )),
        PostStatus::Failed => {
            let error = p.error.as_deref().unwrap_or("unknown error");
            Some((
                NotificationKind::PostFailed,
                Said::new(
                    "Post failed",
                    format!(
                        "\"{}\" could not be published on {platform}: {error}",
                        p.title
                    ),
                )
                .with("postTitle", &p.title)
                .with("platform", platform)
                .with("error", error),
            ))
        }
        _ => None,
    }
}
