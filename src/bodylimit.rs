//! Request body limits, enforced while the body is read: every body is
//! counted as it streams in (with or without `Content-Length`, chunked too),
//! and the moment it passes its route's limit reading stops with an error;
//! the middleware then answers 413 with the uniform error body. What the
//! client still sends is read and dropped for a short while on its own task
//! (no memory kept), so the client sees the 413 rather than a reset.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::stream::{BoxStream, Stream, StreamExt};
use poem::http::{Method, StatusCode};
use poem::{Body, Request, Response};

/// Multipart framing around a file (boundaries, part headers).
pub const MULTIPART_SLACK: u64 = 64 * 1024;
/// Largest avatar file (see `api::auth`).
pub const AVATAR_MAX: u64 = 5 * 1024 * 1024;
/// How long the rest of a refused body is read and dropped.
const DRAIN_FOR: Duration = Duration::from_secs(5);

/// The body limit of a route: uploads by the plan, avatars 5 MiB, the
/// Stripe webhook 1 MiB, everything else `json_limit`.
pub fn limit_for(method: &Method, path: &str, json_limit: u64, upload_limit: Option<u64>) -> u64 {
    match (method, path.trim_end_matches('/')) {
        (&Method::POST, "/api/upload") => upload_limit.unwrap_or(json_limit) + MULTIPART_SLACK,
        (&Method::PUT, "/api/auth/avatar") => AVATAR_MAX + MULTIPART_SLACK,
        (&Method::POST, "/api/stripe/webhook") => {
            clipforge_actors::billing::MAX_WEBHOOK_BYTES as u64
        }
        _ => json_limit,
    }
}

/// Set when a request's body went over its limit.
#[derive(Clone, Default)]
pub struct Tripped(Arc<AtomicBool>);

impl Tripped {
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

type Inner = BoxStream<'static, Result<Bytes, std::io::Error>>;

struct Limited {
    inner: Option<Inner>,
    seen: u64,
    limit: u64,
    tripped: Tripped,
    finished: bool,
}

/// A body the handler answered without reading to the end is drained too.
impl Drop for Limited {
    fn drop(&mut self) {
        if let Some(rest) = self.inner.take().filter(|_| !self.finished) {
            if tokio::runtime::Handle::try_current().is_ok() {
                drain(rest);
            }
        }
    }
}

impl Stream for Limited {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(None);
        };
        match inner.poll_next_unpin(cx) {
            Poll::Ready(Some(Ok(chunk))) => {
                this.seen += chunk.len() as u64;
                if this.seen > this.limit {
                    this.tripped.0.store(true, Ordering::Release);
                    if let Some(rest) = this.inner.take() {
                        drain(rest);
                    }
                    return Poll::Ready(Some(Err(std::io::Error::other(format!(
                        "the request body is larger than {} bytes",
                        this.limit
                    )))));
                }
                Poll::Ready(Some(Ok(chunk)))
            }
            Poll::Ready(None) => {
                this.finished = true;
                Poll::Ready(None)
            }
            other => other,
        }
    }
}

/// Refused bodies being drained at once; beyond this one is dropped at
/// once (the client may then see a reset instead of the answer).
static DRAINING: clipforge_actors::tasks::Bounded = clipforge_actors::tasks::Bounded::new(1024);

/// Reads and drops the rest of a refused body for a while, then lets go.
fn drain(mut rest: Inner) {
    DRAINING.spawn(async move {
        let _ = tokio::time::timeout(DRAIN_FOR, async {
            while let Some(Ok(_)) = rest.next().await {}
        })
        .await;
    });
}

fn has_body(req: &Request) -> bool {
    req.header("transfer-encoding").is_some()
        || req
            .header("content-length")
            .is_some_and(|v| v.trim() != "0")
}

/// Reads and drops, on its own task, the body of a request that is answered
/// without it (so the client sees the answer rather than a reset).
pub fn discard(req: &mut Request) {
    if has_body(req) {
        drain(req.take_body().into_bytes_stream().boxed());
    }
}

/// Puts the body of `req` behind the counter; returns the flag to check
/// after the handler ran. A body left unread by the handler is drained
/// when dropped.
pub fn limit(req: &mut Request, limit: u64) -> Tripped {
    let tripped = Tripped::default();
    if !has_body(req) {
        return tripped;
    }
    let inner: Inner = req.take_body().into_bytes_stream().boxed();
    req.set_body(Body::from_bytes_stream(Limited {
        inner: Some(inner),
        seen: 0,
        limit,
        tripped: tripped.clone(),
        finished: false,
    }));
    tripped
}

/// A body declared larger than the limit is refused before it is read; the
/// declared bytes are dropped for a while on their own task.
pub fn declared_over(req: &mut Request, limit: u64) -> bool {
    let declared: Option<u64> = req
        .header("content-length")
        .and_then(|v| v.trim().parse().ok());
    if declared.is_some_and(|d| d > limit) {
        drain(req.take_body().into_bytes_stream().boxed());
        return true;
    }
    false
}

/// The 413 answer (the connection is closed after it).
pub fn too_large(limit: u64) -> Response {
    let text = if limit >= 1024 * 1024 {
        format!("{} MB", limit / (1024 * 1024))
    } else {
        format!("{} KB", limit.div_ceil(1024))
    };
    let mut resp = crate::error_body::error_response(
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
        &format!("the request body is larger than this route accepts ({text})"),
    );
    resp.headers_mut()
        .insert("connection", poem::http::HeaderValue::from_static("close"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bodies_stop_at_the_limit() {
        let chunks = futures_util::stream::iter(
            (0..100).map(|_| Ok::<_, std::io::Error>(Bytes::from(vec![0u8; 1000]))),
        );
        let mut req = Request::builder()
            .header("transfer-encoding", "chunked")
            .body(Body::from_bytes_stream(chunks));
        let tripped = limit(&mut req, 10_500);
        let err = req.take_body().into_vec().await.unwrap_err();
        assert!(tripped.is_set(), "{err}");

        let mut req = Request::builder()
            .header("content-length", "10500")
            .body(Body::from(vec![0u8; 10_500]));
        let tripped = limit(&mut req, 10_500);
        assert_eq!(req.take_body().into_vec().await.unwrap().len(), 10_500);
        assert!(!tripped.is_set());
    }

    #[test]
    fn route_limits() {
        let kb64 = 64 * 1024;
        assert_eq!(
            limit_for(&Method::POST, "/api/auth/sign-in/email", kb64, None),
            kb64
        );
        assert_eq!(
            limit_for(&Method::POST, "/api/upload", kb64, Some(1 << 30)),
            (1 << 30) + MULTIPART_SLACK
        );
        assert_eq!(
            limit_for(&Method::PUT, "/api/auth/avatar", kb64, None),
            AVATAR_MAX + MULTIPART_SLACK
        );
    }
}
