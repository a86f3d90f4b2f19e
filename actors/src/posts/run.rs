//! One step of a post's publication, run by its `ScheduleActor`:
//! `pending → publishing` (idempotency key persisted first), reconcile or
//! upload, then `published | failed`, or a retry after a backoff.

use std::sync::Arc;
use std::time::Duration;

use super::engine::Publishing;
use super::http::{backoff, PubError, PubResult};
use super::post::{PostRecord, PostStatus};
use super::provider::Provider;
use super::schedule_actor::{Step, Steps};
use super::{instagram, tiktok, youtube};
use crate::accounts::now_ms;
use crate::projects::records::ClipRecord;
use crate::tasks::AbortOnDrop;

#[async_trait::async_trait]
impl Steps for Publishing {
    async fn fire(self: Arc<Self>, post_id: &str) -> Step {
        self.leased_step(post_id).await
    }

    fn stopped(&self, post_id: &str, actor: ractor::ActorId) {
        self.live.forget(post_id, actor);
    }
}

/// Why a publication failed for good (kept as the post's `error`).
#[derive(Debug, thiserror::Error)]
enum Failure {
    /// The platform refused it, or it cannot be made (clip deleted,
    /// account disconnected, authorization refused after a refresh).
    #[error("{0}")]
    Permanent(String),
    /// Transient errors until the attempts ran out; the last one's message.
    #[error("gave up after {attempts} attempts: {last}")]
    GaveUp { attempts: u32, last: String },
}

enum Begin {
    Run,
    NotDue(i64),
    Finished,
}

impl Publishing {
    /// One step under the post's lease (`post:<id>`) on a clustered node:
    /// while another node holds it, try again a third of a lease later;
    /// every write of the step is fenced by it (`update_post`); it is
    /// renewed every third of a lease while the step runs and checked again
    /// right before the platform call.
    pub async fn leased_step(self: &Arc<Self>, id: &str) -> Step {
        let Some((_, ttl)) = self.host.leases.leasing() else {
            return self.step(id).await;
        };
        let fence = match self.host.leases.acquire(&format!("post:{id}")).await {
            Ok(Some(f)) => f,
            Ok(None) => {
                tracing::info!(post_id = id, "post leased by another node; waiting");
                return Step::RetryIn(ttl / 3);
            }
            Err(e) => {
                tracing::warn!(post_id = id, error = %e, "cannot take the post lease");
                return Step::RetryIn(self.settings.backoff_base);
            }
        };
        self.fences_mut().insert(id.to_string(), fence.clone());
        // Renewed every third of a lease while the step runs: a platform
        // upload can last longer than the lease. Stopped with the step,
        // also when the step panics (the lease then runs out).
        let keeper = {
            let (leases, fence, every) = (self.host.leases.clone(), fence.clone(), ttl / 3);
            AbortOnDrop(tokio::spawn(async move {
                let mut tick = tokio::time::interval(every);
                tick.tick().await;
                loop {
                    tick.tick().await;
                    if !leases.renew(&fence).await {
                        break;
                    }
                }
            }))
        };
        let step = self.step(id).await;
        drop(keeper);
        self.fences_mut().remove(id);
        self.host.leases.release(&fence).await;
        step
    }

    fn fences_mut(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, crate::storage::leases::Fence>>
    {
        self.fences
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether this node may still call the platform for the post: always
    /// unclustered; clustered, while its lease renews.
    async fn still_leased(&self, id: &str) -> bool {
        let fence = self.fences_mut().get(id).cloned();
        match fence {
            Some(f) => self.host.leases.renew(&f).await,
            None => self.host.leases.leasing().is_none(),
        }
    }

    pub(crate) async fn step(self: &Arc<Self>, id: &str) -> Step {
        let now = now_ms();
        let begun = self
            .update_post(id, move |p| match p.status {
                PostStatus::Pending if p.scheduled_at > now + 5 => Begin::NotDue(p.scheduled_at),
                PostStatus::Pending => {
                    p.status = PostStatus::Publishing;
                    p.started_at = Some(now);
                    p.idempotency_key = Some(uuid::Uuid::new_v4().to_string());
                    Begin::Run
                }
                PostStatus::Publishing => Begin::Run,
                PostStatus::Published | PostStatus::Failed => Begin::Finished,
            })
            .await;
        let mut post = match begun {
            Ok(Some((p, Begin::Run))) => p,
            Ok(Some((_, Begin::NotDue(at)))) => return Step::NotBefore(at),
            Ok(Some((_, Begin::Finished))) | Ok(None) => return Step::Done,
            Err(e) => {
                tracing::error!(post_id = id, error = %e, "cannot start a publication");
                return Step::RetryIn(self.settings.backoff_base);
            }
        };
        let _slot = self.slots.acquire().await;
        if !self.still_leased(id).await {
            tracing::warn!(
                post_id = id,
                "post lease lost before publishing; leaving it to its owner"
            );
            return Step::RetryIn(self.settings.backoff_base);
        }
        let mut forced = false;
        let outcome = loop {
            match self.attempt(&mut post, forced).await {
                Err(PubError::Unauthorized(m)) if !forced => {
                    tracing::info!(post_id = id, reason = %m, "token refused; refreshing once");
                    forced = true;
                }
                Err(PubError::Unauthorized(m)) => {
                    break Err(PubError::Permanent(format!(
                        "{} refused the authorization after a refresh; reconnect the account ({m})",
                        post.provider.display()
                    )))
                }
                other => break other,
            }
        };
        match outcome {
            Ok(remote_id) => self.finish(id, Ok(remote_id)).await,
            Err(PubError::Permanent(m)) => self.finish(id, Err(Failure::Permanent(m))).await,
            Err(PubError::Transient {
                message,
                retry_after,
            }) => self.retry(id, message, retry_after).await,
            Err(PubError::Unauthorized(_)) => unreachable!("handled in the loop"),
        }
    }

    async fn attempt(
        self: &Arc<Self>,
        post: &mut PostRecord,
        force_refresh: bool,
    ) -> PubResult<String> {
        let (token, account) = self
            .access_token(&post.user_id, post.provider, force_refresh)
            .await?;
        let clip = self.clip_of(post).await?;
        tracing::info!(post_id = %post.id, provider = post.provider.as_str(), attempt = post.attempts + 1, "publishing");
        match post.provider {
            Provider::YouTube => youtube::publish(self, post, &token, &clip).await,
            Provider::TikTok => tiktok::publish(self, post, &token, &clip).await,
            Provider::Instagram => instagram::publish(self, post, &token, &account, &clip).await,
        }
    }

    async fn clip_of(&self, post: &PostRecord) -> PubResult<ClipRecord> {
        let kv = self.host.kv();
        match crate::projects::records::find_clip(kv, &post.user_id, &post.clip_id).await {
            Ok(Some(c)) => Ok(c),
            Ok(None) => Err(PubError::Permanent("the clip was deleted".into())),
            Err(e) => Err(PubError::transient(format!("loading the clip: {e}"))),
        }
    }

    /// The clip's video bytes (YouTube and TikTok upload them).
    pub(crate) async fn video_bytes(&self, clip: &ClipRecord) -> PubResult<Vec<u8>> {
        match self.host.objects.get_bytes(&clip.video_key).await {
            Ok(b) => Ok(b),
            Err(crate::storage::kv::StorageError::NotFound(_)) => {
                Err(PubError::Permanent("the clip's video is gone".into()))
            }
            Err(e) => Err(PubError::transient(format!("reading the clip: {e}"))),
        }
    }

    async fn retry(
        self: &Arc<Self>,
        id: &str,
        message: String,
        retry_after: Option<Duration>,
    ) -> Step {
        let max = self.settings.max_attempts.max(1);
        let m = message.clone();
        let r = self
            .update_post(id, move |p| {
                p.attempts += 1;
                p.error = Some(m);
                p.attempts
            })
            .await;
        let attempts = match r {
            Ok(Some((_, n))) => n,
            _ => return Step::RetryIn(self.settings.backoff_base),
        };
        if attempts >= max {
            return self
                .finish(
                    id,
                    Err(Failure::GaveUp {
                        attempts,
                        last: message,
                    }),
                )
                .await;
        }
        let delay = match retry_after {
            Some(d) => d.min(self.settings.backoff_max),
            None => backoff(
                attempts,
                self.settings.backoff_base,
                self.settings.backoff_max,
            ),
        };
        tracing::warn!(post_id = id, attempts, delay_ms = delay.as_millis() as u64, reason = %message, "publication will be retried");
        Step::RetryIn(delay)
    }

    async fn finish(self: &Arc<Self>, id: &str, result: Result<String, Failure>) -> Step {
        let ok = result.is_ok();
        let r = self
            .update_post(id, move |p| {
                if p.status != PostStatus::Publishing {
                    return false;
                }
                match result {
                    Ok(remote) => {
                        p.status = PostStatus::Published;
                        p.remote_id = Some(remote);
                        p.error = None;
                    }
                    Err(reason) => {
                        p.status = PostStatus::Failed;
                        p.error = Some(reason.to_string());
                    }
                }
                p.finished_at = Some(now_ms());
                true
            })
            .await;
        match r {
            Ok(Some((rec, true))) => {
                if ok {
                    tracing::info!(post_id = id, provider = rec.provider.as_str(), "published");
                } else {
                    tracing::warn!(
                        post_id = id,
                        provider = rec.provider.as_str(),
                        reason = rec.error.as_deref().unwrap_or(""),
                        "publication failed"
                    );
                }
                Step::Done
            }
            Ok(_) => Step::Done,
            Err(e) => {
                tracing::error!(post_id = id, error = %e, "cannot record the outcome; will reconcile");
                Step::RetryIn(self.settings.backoff_base)
            }
        }
    }
}
