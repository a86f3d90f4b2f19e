//! [`Publishing`]: the node's scheduling engine. It owns the live
//! `ScheduleActor`s (one per unfinished post, each holding its timer), the
//! upload slots, and the operations the API calls (schedule, bulk schedule,
//! list, change, cancel).

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ractor::ActorRef;
use tokio::sync::Semaphore;

use super::crypto::TokenCipher;
use super::error::{PublishError, Result};
use super::host::PostHost;
use super::post::{self, PostRecord, PostStatus, Progress};
use super::provider::Provider;
use super::schedule_actor::ScheduleMsg;
use super::schedules::Live;
use super::settings::PublishSettings;
use crate::accounts::now_ms;
use crate::projects::records::{self as records, ClipRecord};
use crate::storage::kv;
use crate::webhooks::Subject;

#[path = "engine_checks.rs"]
mod checks;

const STRIPES: usize = 64;
/// The token refresh's name in the tree (and in `housekeeping-panic:`).
pub const TOKEN_REFRESH: &str = "token-refresh";
/// Posts are scheduled within the next 365 days.
const MAX_AHEAD_MS: i64 = 365 * 24 * 3600 * 1000;
const MAX_INTERVAL_HOURS: f64 = 24.0 * 90.0;

pub struct Publishing {
    pub host: PostHost,
    pub settings: PublishSettings,
    pub(crate) http: reqwest::Client,
    pub(crate) cipher: TokenCipher,
    pub(crate) slots: Semaphore,
    pub(crate) live: Live,
    post_locks: Box<[tokio::sync::Mutex<()>]>,
    token_locks: Box<[tokio::sync::Mutex<()>]>,
    /// The leases of the posts this node is publishing now (clustered):
    /// every write to such a post is fenced by its lease (`run.rs`).
    pub(crate) fences: Mutex<std::collections::HashMap<String, crate::storage::leases::Fence>>,
}

fn stripe(key: &str) -> usize {
    let mut h = DefaultHasher::new();
    key.hash(&mut h);
    (h.finish() % STRIPES as u64) as usize
}

/// Fields of a new post, as the API received them.
pub struct NewPost<'a> {
    pub provider: Option<&'a str>,
    pub title: Option<&'a str>,
    pub scheduled_at: Option<&'a str>,
}

/// Fields of a bulk schedule.
pub struct BulkRequest<'a> {
    pub scheduled_at: Option<&'a str>,
    pub interval_hours: Option<f64>,
    pub providers: Option<&'a [String]>,
    pub caption: Option<&'a str>,
}

impl Publishing {
    /// The engine, before its `scheduler` branch runs
    /// ([`Publishing::start`] in `supervision.rs` starts it).
    pub(super) fn new(
        host: PostHost,
        settings: PublishSettings,
        cipher: TokenCipher,
    ) -> Result<Arc<Self>> {
        let http = reqwest::Client::builder()
            .timeout(settings.request_timeout)
            .connect_timeout(Duration::from_secs(20))
            .user_agent(concat!("clipforge/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| PublishError::Upstream(format!("http client: {e}")))?;
        let this = Arc::new(Self {
            host,
            slots: Semaphore::new(settings.concurrency.max(1)),
            settings,
            http,
            cipher,
            live: Live::default(),
            post_locks: (0..STRIPES).map(|_| tokio::sync::Mutex::new(())).collect(),
            token_locks: (0..STRIPES).map(|_| tokio::sync::Mutex::new(())).collect(),
            fences: Mutex::default(),
        });
        Ok(this)
    }

    /// Arms the post's timer for `at` (ms): re-arms its actor, or starts
    /// one under the `scheduler` branch.
    pub async fn arm(self: &Arc<Self>, id: &str, at: i64) {
        let sup = self.host.tree.scheduler.supervisor().await;
        self.live.arm(self.clone(), sup, id, at).await;
    }

    /// Starts an actor for every unfinished post in the `posts_due` index.
    /// On a cluster the hand-off does it instead, once the node has heard
    /// from its peers (`handoff.rs`): only the owner arms a post.
    pub(crate) async fn rearm_all(self: &Arc<Self>) -> Result<()> {
        if self.host.cluster().is_some() {
            return Ok(());
        }
        let entries = post::due_entries(self.host.kv()).await?;
        for (at, id) in &entries {
            self.arm(id, *at).await;
        }
        tracing::info!(posts = entries.len(), "scheduled posts re-armed");
        Ok(())
    }

    /// The post whose live actor is `actor`.
    pub(crate) fn post_of(&self, actor: ractor::ActorId) -> Option<String> {
        self.live.post_of(actor)
    }

    /// Forgets the post's actor if it is still `actor` (a failed one).
    pub(crate) fn forget_actor(&self, id: &str, actor: ractor::ActorId) {
        self.live.forget(id, actor);
    }

    /// Every live schedule actor (post id, actor), for the admin view.
    pub fn live_posts(&self) -> Vec<(String, ActorRef<ScheduleMsg>)> {
        self.live.list()
    }

    pub fn live_actors(&self) -> usize {
        self.live.len()
    }

    pub(crate) async fn token_lock(
        &self,
        user: &str,
        p: Provider,
    ) -> tokio::sync::MutexGuard<'_, ()> {
        self.token_locks[stripe(&format!("{user}/{}", p.as_str()))]
            .lock()
            .await
    }

    /// Reads, changes and (when changed) durably writes one post, serialised
    /// with every other change to it. `None` when the post does not exist.
    /// While this node publishes the post, the write is fenced by its lease.
    pub async fn update_post<T: Send + 'static>(
        self: &Arc<Self>,
        id: &str,
        f: impl FnOnce(&mut PostRecord) -> T + Send + 'static,
    ) -> Result<Option<(PostRecord, T)>> {
        let fence = self
            .fences
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned();
        let _g = self.post_locks[stripe(id)].lock().await;
        let Some(old) = post::load_async(self.host.kv(), id).await? else {
            return Ok(None);
        };
        let mut new = old.clone();
        let t = f(&mut new);
        if new == old {
            return Ok(Some((new, t)));
        }
        new.updated_at = now_ms();
        let ops = post::update_ops(&old, &new)?;
        // A post reaching `published` or `failed` gets its notification in
        // the same atomic write: whoever sees the outcome also sees it, and
        // a crash cannot keep one only.
        match post::outcome_notification(&old, &new) {
            Some((kind, said)) => {
                let subject = Subject::Post(kv::encode(&new)?);
                let accounts = &self.host.desk.accounts;
                let user = &new.user_id;
                accounts
                    .notify_with(user, kind, &said, ops, Some(&subject), fence.as_ref())
                    .await
                    .map_err(|e| kv::StorageError::Backend(format!("notification: {e}")))?;
                // Written outside the account's actor (versioned): the
                // memory it holds here is stale now.
                self.host.desk.unload(&new.user_id);
            }
            None => self.host.leases.apply_under(fence.as_ref(), ops).await?,
        }
        Ok(Some((new, t)))
    }

    /// Persists the platform handle of a publication in progress.
    pub(crate) async fn save_progress(
        self: &Arc<Self>,
        post: &mut PostRecord,
        progress: Progress,
    ) -> super::http::PubResult<()> {
        post.progress = progress.clone();
        self.update_post(&post.id, move |p| p.progress = progress)
            .await
            .map(drop)
            .map_err(|e| super::http::PubError::transient(format!("saving progress: {e}")))
    }

    async fn require_integrations(&self, user_id: &str, providers: &[Provider]) -> Result<()> {
        for p in providers {
            match self.integration(user_id, *p).await? {
                Some(i) if i.active(now_ms()) => {}
                _ => return Err(PublishError::IntegrationRequired(*p)),
            }
        }
        Ok(())
    }

    /// The caller's clip, or `NotFound` (also for another user's clip).
    pub async fn owned_clip(&self, user_id: &str, clip_id: &str) -> Result<ClipRecord> {
        records::find_clip(self.host.kv(), user_id, clip_id)
            .await?
            .filter(ClipRecord::playable)
            .ok_or(PublishError::NotFound("clip"))
    }

    /// Stores new posts in one atomic write, then starts their actors.
    pub async fn insert_posts(self: &Arc<Self>, records: Vec<PostRecord>) -> Result<()> {
        let mut ops = Vec::new();
        for r in &records {
            ops.extend(post::insert_ops(r)?);
        }
        self.host.kv().apply_async(ops).await?;
        for r in records.iter().filter(|r| self.owns_posts_of(&r.user_id)) {
            self.arm(&r.id, r.scheduled_at).await;
        }
        Ok(())
    }

    /// `POST /clips/:clipId/schedule`.
    pub async fn schedule(
        self: &Arc<Self>,
        user_id: &str,
        clip_id: &str,
        req: NewPost<'_>,
    ) -> Result<PostRecord> {
        // Another user's or an unknown clip is 404 whatever the body says.
        let clip = self.owned_clip(user_id, clip_id).await?;
        let provider = Self::parse_provider("provider", req.provider)?;
        let title = Self::check_title(
            "title",
            req.title
                .ok_or_else(|| PublishError::invalid("title", "is required"))?,
            provider,
        )?;
        let at = self.parse_time("scheduledAt", req.scheduled_at)?;
        self.require_integrations(user_id, &[provider]).await?;
        let rec = PostRecord::pending(
            user_id,
            &clip.id,
            &clip.project_id,
            provider,
            title,
            at,
            now_ms(),
        );
        self.insert_posts(vec![rec.clone()]).await?;
        Ok(rec)
    }

    /// `POST /projects/:id/bulk-schedule`: every clip, best score first, clip
    /// i at `scheduledAt + i × intervalHours`, one post per provider; all or
    /// nothing.
    pub async fn bulk_schedule(
        self: &Arc<Self>,
        user_id: &str,
        project_id: &str,
        req: BulkRequest<'_>,
    ) -> Result<Vec<PostRecord>> {
        // Another user's or an unknown project is 404 whatever the body says.
        let kv = self.host.kv();
        if records::load_project_async(kv, user_id, project_id)
            .await?
            .is_none()
        {
            return Err(PublishError::NotFound("project"));
        }
        let clips: Vec<_> = records::load_clips_async(kv, project_id)
            .await?
            .into_iter()
            .filter(ClipRecord::playable)
            .collect();
        let start = self.parse_time("scheduledAt", req.scheduled_at)?;
        let hours = req
            .interval_hours
            .ok_or_else(|| PublishError::invalid("intervalHours", "is required"))?;
        if !hours.is_finite() || !(0.0..=MAX_INTERVAL_HOURS).contains(&hours) {
            return Err(PublishError::invalid(
                "intervalHours",
                format!("must be between 0 and {MAX_INTERVAL_HOURS}"),
            ));
        }
        let names = req
            .providers
            .ok_or_else(|| PublishError::invalid("providers", "is required"))?;
        if names.is_empty() {
            return Err(PublishError::invalid(
                "providers",
                "name at least one of tiktok, instagram, youtube",
            ));
        }
        let mut providers = Vec::new();
        for n in names {
            let p = Self::parse_provider("providers", Some(n))?;
            if !providers.contains(&p) {
                providers.push(p);
            }
        }
        let caption = match req.caption.map(str::trim).filter(|c| !c.is_empty()) {
            Some(c) => {
                for p in &providers {
                    Self::check_title("caption", c, *p)?;
                }
                Some(c.to_string())
            }
            None => None,
        };
        if clips.is_empty() {
            return Err(PublishError::Conflict {
                code: "no_clips",
                message: "the project has no clips to schedule yet".into(),
            });
        }
        self.require_integrations(user_id, &providers).await?;
        let mut clips = clips;
        clips.sort_by(|a, b| b.score.cmp(&a.score).then(a.index.cmp(&b.index)));
        let step = (hours * 3_600_000.0).round() as i64;
        let now = now_ms();
        if start + (clips.len() as i64 - 1) * step > now + MAX_AHEAD_MS {
            return Err(PublishError::invalid(
                "intervalHours",
                format!(
                    "the last of {} clips would be more than 365 days ahead",
                    clips.len()
                ),
            ));
        }
        let mut out = Vec::new();
        for (i, clip) in clips.iter().enumerate() {
            let at = start + i as i64 * step;
            for p in &providers {
                let title = match &caption {
                    Some(c) => c.clone(),
                    None => truncate(&clip.title.replace(['<', '>'], ""), p.max_title_chars()),
                };
                let title = if title.trim().is_empty() {
                    format!("Clip {}", i + 1)
                } else {
                    title
                };
                out.push(PostRecord::pending(
                    user_id,
                    &clip.id,
                    &clip.project_id,
                    *p,
                    title,
                    at,
                    now,
                ));
            }
        }
        self.insert_posts(out.clone()).await?;
        Ok(out)
    }

    /// One page of the caller's posts by `scheduledAt`, and the total.
    pub async fn list(
        &self,
        user_id: &str,
        page: usize,
        limit: usize,
    ) -> Result<(Vec<PostRecord>, usize)> {
        Ok(post::list_user(self.host.kv(), user_id, page, limit).await?)
    }

    pub async fn get(&self, user_id: &str, id: &str) -> Result<PostRecord> {
        post::load_async(self.host.kv(), id)
            .await?
            .filter(|p| p.user_id == user_id)
            .ok_or(PublishError::NotFound("scheduled post"))
    }

    /// `PATCH /clips/scheduled/:id`: a new time and/or title while the post
    /// is pending; a failed post given a new time is tried again (pending,
    /// its failure and platform progress cleared).
    pub async fn change(
        self: &Arc<Self>,
        user_id: &str,
        id: &str,
        title: Option<&str>,
        scheduled_at: Option<&str>,
    ) -> Result<PostRecord> {
        let current = self.get(user_id, id).await?;
        if title.is_none() && scheduled_at.is_none() {
            return Err(PublishError::invalid(
                "scheduledAt",
                "send scheduledAt and/or title",
            ));
        }
        let title = title
            .map(|t| Self::check_title("title", t, current.provider))
            .transpose()?;
        let at = scheduled_at
            .map(|s| self.parse_time("scheduledAt", Some(s)))
            .transpose()?;
        if current.status == PostStatus::Failed {
            if at.is_none() {
                return Err(PublishError::Conflict {
                    code: "not_pending",
                    message: "the post failed: send a new scheduledAt to try it again".into(),
                });
            }
            // Tried again only on an account that is still connected.
            self.require_integrations(user_id, &[current.provider])
                .await?;
        }
        let (updated, (old_at, retried)) = self
            .update_post(id, move |p| {
                let retried = match p.status {
                    PostStatus::Pending => false,
                    PostStatus::Failed if at.is_some() => {
                        p.retry();
                        true
                    }
                    other => return Err(other),
                };
                let old = p.scheduled_at;
                if let Some(t) = title {
                    p.title = t;
                }
                if let Some(a) = at {
                    p.scheduled_at = a;
                }
                Ok((old, retried))
            })
            .await?
            .ok_or(PublishError::NotFound("scheduled post"))
            .and_then(|(rec, r)| r.map(|old| (rec, old)).map_err(not_pending))?;
        if (retried || updated.scheduled_at != old_at) && self.owns_posts_of(&updated.user_id) {
            self.arm(id, updated.scheduled_at).await;
        }
        Ok(updated)
    }

    /// `DELETE /clips/scheduled/:id`: cancels a pending post, or removes a
    /// failed one.
    pub async fn cancel(self: &Arc<Self>, user_id: &str, id: &str) -> Result<()> {
        self.get(user_id, id).await?;
        self.remove_if(id, |s| {
            matches!(s, PostStatus::Pending | PostStatus::Failed)
        })
        .await?
        .ok_or(PublishError::NotFound("scheduled post"))?
        .map_err(not_pending)
    }

    /// [`Self::remove_if`] for pending posts only.
    pub(crate) async fn remove_if_pending(
        self: &Arc<Self>,
        id: &str,
    ) -> Result<Option<std::result::Result<(), PostStatus>>> {
        self.remove_if(id, |s| s == PostStatus::Pending).await
    }

    /// Removes the post and its timer if its status is one `removable`
    /// allows (checked under its lock, so it cannot start publishing
    /// meanwhile); `None` if it does not exist, `Err(status)` if not.
    pub(crate) async fn remove_if(
        self: &Arc<Self>,
        id: &str,
        removable: fn(PostStatus) -> bool,
    ) -> Result<Option<std::result::Result<(), PostStatus>>> {
        let removed = {
            let _g = self.post_locks[stripe(id)].lock().await;
            let kv = self.host.kv();
            match post::load_async(kv, id).await? {
                None => None,
                Some(p) if !removable(p.status) => Some(Err(p.status)),
                Some(p) => {
                    kv.apply_async(post::delete_ops(&p)).await?;
                    Some(Ok(p))
                }
            }
        };
        Ok(removed.map(|r| {
            r.map(|p| {
                self.live.stop(&p.id);
            })
        }))
    }

    /// Cancels every pending post of the user's project `project_id` (the
    /// project is being deleted); returns how many. Posts already
    /// publishing or finished are left as they are.
    pub async fn cancel_project_posts(
        self: &Arc<Self>,
        user_id: &str,
        project_id: &str,
    ) -> Result<usize> {
        let all = post::all_of_user(self.host.kv(), user_id).await?;
        let mut cancelled = 0;
        for post in all.iter().filter(|p| p.project_id == project_id) {
            if let Some(Ok(())) = self.remove_if_pending(&post.id).await? {
                cancelled += 1;
            }
        }
        Ok(cancelled)
    }

    /// Fails a pending post with `reason` (e.g. its account was disconnected).
    pub(crate) async fn fail_if_pending(self: &Arc<Self>, id: &str, reason: &str) -> Result<bool> {
        let why = reason.to_string();
        let r = self
            .update_post(id, move |p| {
                if p.status != PostStatus::Pending {
                    return false;
                }
                p.status = PostStatus::Failed;
                p.error = Some(why);
                p.finished_at = Some(now_ms());
                true
            })
            .await?;
        match r {
            Some((rec, true)) => {
                self.live.stop(&rec.id);
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

fn not_pending(s: PostStatus) -> PublishError {
    PublishError::Conflict {
        code: "not_pending",
        message: format!("the post is {} and can no longer be changed", s.as_str()),
    }
}

fn truncate(s: &str, max: usize) -> String {
    s.trim().chars().take(max).collect()
}
