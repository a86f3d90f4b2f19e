//! Tasks tied to their owner's life, and the engine's one way off the
//! async threads ([`blocking`]).

/// Runs blocking work (a storage call, file I/O, CPU-bound media work) on
/// tokio's blocking pool and waits for it. A panic in `work` is resumed in
/// the task that awaits it: it fails that task's actor, whose supervisor
/// sees it as it sees any panic of the actor, instead of becoming an error
/// value a caller might log and drop.
pub async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(work).await {
        Ok(out) => out,
        Err(e) => match e.try_into_panic() {
            Ok(payload) => std::panic::resume_unwind(payload),
            // Blocking work is never aborted: it is cancelled only when the
            // runtime shuts down, which drops the awaiting future as well.
            Err(e) => panic!("blocking work cancelled by the runtime's shutdown: {e}"),
        },
    }
}

/// Runs `fut` in the caller's task, answering its panic as `Err` (the
/// payload) instead of unwinding: for work whose failure has an answer
/// (a forwarded request's 500) without a task of its own.
pub async fn catch_panic<T>(
    fut: impl std::future::Future<Output = T>,
) -> Result<T, Box<dyn std::any::Any + Send>> {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(move |cx| {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
            Ok(std::task::Poll::Ready(out)) => std::task::Poll::Ready(Ok(out)),
            Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
            Err(payload) => std::task::Poll::Ready(Err(payload)),
        }
    })
    .await
}

/// Work that panicked, with the panic's message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Panicked(pub String);

/// [`blocking`] for work whose panic has an answer of its own (an HTTP
/// 500, a command's failure): the panic as `Err`.
pub async fn blocking_caught<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Panicked> {
    catch_panic(blocking(work))
        .await
        .map_err(|payload| Panicked(panic_text(&*payload)))
}

/// A panic's message (its payload when that is text).
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string())
}

/// Short tasks nobody waits for (answering a refused connection, draining
/// a refused body), at most `max` at once: beyond that [`Self::spawn`]
/// declines, so a flood cannot pile them up. Each must end by itself (a
/// timeout of its own).
pub struct Bounded {
    running: std::sync::atomic::AtomicUsize,
    max: usize,
}

impl Bounded {
    pub const fn new(max: usize) -> Self {
        Self {
            running: std::sync::atomic::AtomicUsize::new(0),
            max,
        }
    }

    /// Spawns `work` unless `max` such tasks run; false when declined (the
    /// caller then drops what the task would have used).
    pub fn spawn(
        &'static self,
        work: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> bool {
        use std::sync::atomic::Ordering;
        let taken = self
            .running
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            });
        if taken.is_err() {
            return false;
        }
        struct Release(&'static Bounded);
        impl Drop for Release {
            fn drop(&mut self) {
                self.0.running.fetch_sub(1, Ordering::AcqRel);
            }
        }
        let release = Release(self);
        tokio::spawn(async move {
            let _release = release;
            work.await;
        });
        true
    }

    /// How many run now.
    pub fn running(&self) -> usize {
        self.running.load(std::sync::atomic::Ordering::Acquire)
    }
}

/// Aborts its task when dropped: the owner's end — also by a panic —
/// stops the task, which would otherwise run on unobserved.
pub struct AbortOnDrop<T>(pub tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    /// Blocking work answers its value; its panic is the awaiting task's,
    /// with the same message.
    #[tokio::test]
    async fn blocking_work_answers_or_panics_in_its_caller() {
        assert_eq!(blocking(|| 6 * 7).await, 42);
        let failed = tokio::spawn(blocking(|| -> u8 { panic!("the disk is on fire") }))
            .await
            .expect_err("the panic reaches the caller");
        assert!(failed.is_panic());
        let payload = failed.into_panic();
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned());
        assert_eq!(message.as_deref(), Some("the disk is on fire"));
    }

    /// A caught panic is the caller's `Err` with its message; the caller's
    /// task goes on. Work that yields first is polled to its end.
    #[tokio::test]
    async fn caught_panics_are_answered_in_the_same_task() {
        let ok = catch_panic(async {
            tokio::task::yield_now().await;
            7
        });
        assert_eq!(ok.await.ok(), Some(7));
        let failed = catch_panic(async {
            tokio::task::yield_now().await;
            panic!("the relay is on fire")
        });
        let payload = failed.await.expect_err("the panic is answered");
        assert_eq!(panic_text(&*payload), "the relay is on fire");
        // Blocking work's panic likewise, with a formatted message.
        assert_eq!(blocking_caught(|| 6 * 7).await, Ok(42));
        let hashed = blocking_caught(|| -> u8 { panic!("no {} left", "entropy") });
        assert_eq!(hashed.await, Err(Panicked("no entropy left".to_string())));
    }

    /// Beyond its bound a task is declined; a finished one (also by a
    /// panic) frees its place.
    #[tokio::test]
    async fn bounded_tasks_decline_beyond_their_bound() {
        static TWO: Bounded = Bounded::new(2);
        let (open, gate) = tokio::sync::watch::channel(false);
        for _ in 0..2 {
            let mut gate = gate.clone();
            assert!(TWO.spawn(async move {
                let _ = gate.wait_for(|open| *open).await;
            }));
        }
        assert!(!TWO.spawn(async {}), "a third is declined");
        assert_eq!(TWO.running(), 2);
        open.send(true).unwrap();
        settled(&TWO).await;
        assert!(TWO.spawn(async { panic!("a task that fails") }));
        settled(&TWO).await;
        assert!(TWO.spawn(async {}));
    }

    /// Waits until no task of `b` runs (a bound on the wait, not a timing
    /// check: they end at once here).
    async fn settled(b: &Bounded) {
        let done = async {
            while b.running() > 0 {
                tokio::task::yield_now().await;
            }
        };
        tokio::time::timeout(Duration::from_secs(30), done)
            .await
            .expect("the tasks ended and gave back their places");
    }

    /// A task held by a future that panics is aborted with it.
    #[tokio::test]
    async fn the_task_ends_with_its_owner_even_by_a_panic() {
        let stopped = Arc::new(AtomicBool::new(false));
        struct Flag(Arc<AtomicBool>);
        impl Drop for Flag {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Release);
            }
        }
        let flag = Flag(stopped.clone());
        let owner = tokio::spawn(async move {
            let _keeper = AbortOnDrop(tokio::spawn(async move {
                let _flag = flag;
                std::future::pending::<()>().await;
            }));
            tokio::task::yield_now().await;
            panic!("the owner's step fails");
        });
        assert!(owner.await.is_err_and(|e| e.is_panic()));
        for _ in 0..100 {
            if stopped.load(Ordering::Acquire) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the held task still runs after its owner panicked");
    }
}
