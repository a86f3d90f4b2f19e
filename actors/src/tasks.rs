//! Tasks tied to their owner's life.

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
