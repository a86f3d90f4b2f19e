//! At most `limits.connections_per_ip` open connections per client address
//! (trusted proxies are not limited: they carry many clients), and at most
//! `limits.max_connections` in all (below the process's open-file limit).
//! A connection over a limit is answered `503` with the uniform error body
//! and closed at once, on its own task (the accept loop does not wait for it).

use std::collections::HashMap;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use poem::http::uri::Scheme;
use poem::listener::Acceptor;
use poem::web::{LocalAddr, RemoteAddr};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};

type Counts = Arc<Mutex<HashMap<IpAddr, usize>>>;

pub struct ConnLimit<A> {
    inner: A,
    max: usize,
    exempt: Arc<dyn Fn(IpAddr) -> bool + Send + Sync>,
    open: Counts,
    max_total: usize,
    total: Arc<AtomicUsize>,
}

impl<A: Acceptor> ConnLimit<A> {
    /// `max` (per address) 0 turns that limit off.
    pub fn new(
        inner: A,
        max: usize,
        max_total: usize,
        exempt: Arc<dyn Fn(IpAddr) -> bool + Send + Sync>,
    ) -> Self {
        Self {
            inner,
            max,
            exempt,
            open: Arc::default(),
            max_total,
            total: Arc::default(),
        }
    }
}

/// The default bound on open connections: three quarters of the soft
/// open-file limit (the rest is for storage, media files and child
/// processes), at least 64.
pub fn default_max_connections() -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct it is given.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0;
    let soft = if ok { lim.rlim_cur as usize } else { 1024 };
    (soft / 4 * 3).max(64)
}

/// Takes a slot of the global bound, or `None` at it.
fn take_total(total: &Arc<AtomicUsize>, max: usize) -> Option<Arc<AtomicUsize>> {
    total
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < max).then_some(n + 1)
        })
        .ok()
        .map(|_| total.clone())
}

const REFUSAL: &str = r#"{"error":"too_many_connections","message":"too many open connections from your address; close some and retry"}"#;
const BUSY: &str = r#"{"error":"too_many_connections","message":"the server has too many open connections; retry in a moment"}"#;

/// Refused connections being answered at once; beyond this one is closed
/// without an answer, so a flood of them cannot pile up tasks.
static REFUSING: clipforge_actors::tasks::Bounded = clipforge_actors::tasks::Bounded::new(1024);

/// Answers 503 with `body` and closes, on its own task (at most 2 s).
fn refuse<T: AsyncWrite + Unpin + Send + 'static>(mut io: T, body: &'static str) {
    REFUSING.spawn(async move {
        let resp = format!(
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json; charset=utf-8\r\nretry-after: 1\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), async {
            let _ = io.write_all(resp.as_bytes()).await;
            let _ = io.shutdown().await;
        })
        .await;
    });
}

impl<A: Acceptor> Acceptor for ConnLimit<A> {
    type Io = Counted<A::Io>;

    fn local_addr(&self) -> Vec<LocalAddr> {
        self.inner.local_addr()
    }

    async fn accept(&mut self) -> std::io::Result<(Self::Io, LocalAddr, RemoteAddr, Scheme)> {
        loop {
            let (io, local, remote, scheme) = self.inner.accept().await?;
            let Some(total) = take_total(&self.total, self.max_total) else {
                tracing::warn!("connection refused: too many open connections");
                refuse(io, BUSY);
                continue;
            };
            let total = Some(total);
            let ip = remote.as_socket_addr().map(|a| a.ip());
            let Some(ip) = ip.filter(|ip| self.max > 0 && !(self.exempt)(*ip)) else {
                let io = Counted {
                    io,
                    slot: None,
                    total,
                };
                return Ok((io, local, remote, scheme));
            };
            let admitted = {
                let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
                let n = open.entry(ip).or_default();
                if *n < self.max {
                    *n += 1;
                    true
                } else {
                    false
                }
            };
            if admitted {
                let slot = Some((ip, self.open.clone()));
                return Ok((Counted { io, slot, total }, local, remote, scheme));
            }
            tracing::warn!(%ip, "connection refused: too many from this address");
            refuse(
                Counted {
                    io,
                    slot: None,
                    total,
                },
                REFUSAL,
            );
        }
    }
}

/// A connection that gives its slots back when closed.
pub struct Counted<T> {
    io: T,
    slot: Option<(IpAddr, Counts)>,
    total: Option<Arc<AtomicUsize>>,
}

impl<T> Drop for Counted<T> {
    fn drop(&mut self) {
        if let Some(total) = self.total.take() {
            total.fetch_sub(1, Ordering::AcqRel);
        }
        if let Some((ip, open)) = self.slot.take() {
            let mut open = open.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(n) = open.get_mut(&ip) {
                *n -= 1;
                if *n == 0 {
                    open.remove(&ip);
                }
            }
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Counted<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Counted<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}
