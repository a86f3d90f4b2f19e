//! Time limits on HTTP/1 connections, below hyper (poem does not expose
//! hyper's header timeout): a request's header block must arrive within
//! `limits.header_read_timeout_secs` of its first byte (of the accept, for
//! a connection's first request), and a kept-alive connection with no
//! traffic for `limits.idle_timeout_secs` after its last response began is
//! closed. A slow body or a long response (uploads, event streams) is not
//! limited here: only the header block and the quiet time between requests
//! are. A connection past a limit gets a read error, which closes it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use poem::http::uri::Scheme;
use poem::listener::Acceptor;
use poem::web::{LocalAddr, RemoteAddr};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

pub struct Deadlines<A> {
    inner: A,
    header: Duration,
    idle: Duration,
}

impl<A: Acceptor> Deadlines<A> {
    pub fn new(inner: A, header: Duration, idle: Duration) -> Self {
        Self {
            inner,
            header,
            idle,
        }
    }
}

impl<A: Acceptor> Acceptor for Deadlines<A> {
    type Io = Timed<A::Io>;

    fn local_addr(&self) -> Vec<LocalAddr> {
        self.inner.local_addr()
    }

    async fn accept(&mut self) -> std::io::Result<(Self::Io, LocalAddr, RemoteAddr, Scheme)> {
        let (io, local, remote, scheme) = self.inner.accept().await?;
        let timed = Timed {
            io,
            phase: Phase::Header,
            tail: 0,
            header: self.header,
            idle: self.idle,
            timer: Box::pin(tokio::time::sleep(self.header)),
        };
        Ok((timed, local, remote, scheme))
    }
}

/// Where a connection is in its request/response cycle, as seen from its
/// bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Reading a header block: the timer is the header deadline.
    Header,
    /// The header block is in; body and handler are not limited here.
    Request,
    /// A response began: the timer is the idle deadline, moved on by any
    /// traffic; the next byte read starts a header block.
    Idle,
}

pub struct Timed<T> {
    io: T,
    phase: Phase,
    /// How many bytes of `\r\n\r\n` the last read ended with.
    tail: usize,
    header: Duration,
    idle: Duration,
    timer: Pin<Box<Sleep>>,
}

impl<T> Timed<T> {
    /// Scans read bytes for the end of a header block.
    fn scan(&mut self, bytes: &[u8]) {
        const END: &[u8] = b"\r\n\r\n";
        for &b in bytes {
            if self.phase != Phase::Header {
                return;
            }
            self.tail = if b == END[self.tail] {
                self.tail + 1
            } else if b == b'\r' {
                1
            } else {
                0
            };
            if self.tail == END.len() {
                self.phase = Phase::Request;
                self.tail = 0;
            }
        }
    }

    fn restart(&mut self, after: Duration) {
        self.timer.as_mut().reset(Instant::now() + after);
    }
}

fn timed_out(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::TimedOut, what.to_string())
}

impl<T: AsyncRead + Unpin> AsyncRead for Timed<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        let before = buf.filled().len();
        let read = Pin::new(&mut this.io).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = read {
            let new = buf.filled()[before..].to_vec();
            if !new.is_empty() {
                if this.phase == Phase::Idle {
                    this.phase = Phase::Header;
                    this.tail = 0;
                    let header = this.header;
                    this.restart(header);
                }
                this.scan(&new);
            }
            return read;
        }
        if read.is_pending()
            && this.phase != Phase::Request
            && this.timer.as_mut().poll(cx).is_ready()
        {
            return Poll::Ready(Err(timed_out(match this.phase {
                Phase::Header => "request header not received in time",
                _ => "idle connection",
            })));
        }
        read
    }
}

impl<T: AsyncWrite + Unpin> Timed<T> {
    /// A response began (`first` is the start of what was written): the
    /// idle deadline runs from here. An interim `100 Continue` is not a
    /// response: the body is still to come.
    fn wrote(&mut self, cx: &mut Context<'_>, n: &Poll<std::io::Result<usize>>, first: &[u8]) {
        if first.starts_with(b"HTTP/1.1 100 ") {
            return;
        }
        if matches!(n, Poll::Ready(Ok(k)) if *k > 0) && self.phase != Phase::Header {
            self.phase = Phase::Idle;
            let idle = self.idle;
            self.restart(idle);
            // Registers the task with the timer now: the pending read that
            // will see it expire may have been polled before the response.
            let _ = self.timer.as_mut().poll(cx);
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Timed<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let n = Pin::new(&mut self.io).poll_write(cx, buf);
        self.wrote(cx, &n, buf);
        n
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
        let n = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        let first = bufs
            .iter()
            .find(|b| !b.is_empty())
            .map_or(&[][..], |b| &b[..]);
        self.wrote(cx, &n, first);
        n
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timed() -> Timed<tokio::io::Empty> {
        Timed {
            io: tokio::io::empty(),
            phase: Phase::Header,
            tail: 0,
            header: Duration::from_secs(10),
            idle: Duration::from_secs(60),
            timer: Box::pin(tokio::time::sleep(Duration::from_secs(10))),
        }
    }

    #[tokio::test]
    async fn finds_the_end_of_a_header_block_across_reads() {
        let mut t = timed();
        t.scan(b"GET / HTTP/1.1\r\nhost: x\r\n\r");
        assert_eq!(t.phase, Phase::Header);
        t.scan(b"\n");
        assert_eq!(t.phase, Phase::Request);
        let mut t = timed();
        t.scan(b"GET / HTTP/1.1\r\n\r\r\n\r\n");
        assert_eq!(t.phase, Phase::Request);
    }
}
