//! The timer wheel of scheduled posts: `(scheduledAt, post id)` in order,
//! one task that sleeps until the earliest and fires it. The durable copy is
//! the `posts_due` tree; [`Timers::arm_all`] re-arms from it at start, and a
//! post whose time passed while the node was down fires at once.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

use crate::accounts::now_ms;

#[derive(Default)]
pub struct Timers {
    set: Mutex<BTreeSet<(i64, String)>>,
    wake: Notify,
}

impl Timers {
    fn set(&self) -> std::sync::MutexGuard<'_, BTreeSet<(i64, String)>> {
        self.set.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn arm(&self, due: i64, id: &str) {
        let earliest = {
            let mut s = self.set();
            s.insert((due, id.to_string()));
            s.first().map(|f| f.0 == due).unwrap_or(false)
        };
        if earliest {
            self.wake.notify_one();
        }
    }

    pub fn arm_all(&self, entries: Vec<(i64, String)>) {
        self.set().extend(entries);
        self.wake.notify_one();
    }

    pub fn disarm(&self, due: i64, id: &str) {
        self.set().remove(&(due, id.to_string()));
    }

    pub fn len(&self) -> usize {
        self.set().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Fires every timer when it is due, forever.
    pub async fn run(self: Arc<Self>, fire: impl Fn(String, i64) + Send + 'static) {
        loop {
            let next = self.set().first().map(|(t, _)| *t);
            match next {
                None => self.wake.notified().await,
                Some(due) => {
                    let now = now_ms();
                    if due <= now {
                        let ready: Vec<(i64, String)> = {
                            let mut s = self.set();
                            let mut out = Vec::new();
                            while s.first().is_some_and(|(t, _)| *t <= now) {
                                out.extend(s.pop_first());
                            }
                            out
                        };
                        for (t, id) in ready {
                            fire(id, t);
                        }
                        continue;
                    }
                    let wait = Duration::from_millis((due - now) as u64);
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = self.wake.notified() => {}
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn fires_in_order_and_overdue_at_once() {
        let t = Arc::new(Timers::default());
        let now = now_ms();
        t.arm_all(vec![
            (now - 60_000, "overdue".into()),
            (now + 150, "b".into()),
        ]);
        t.arm(now + 50, "a");
        t.arm(now + 100, "gone");
        t.disarm(now + 100, "gone");
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(t.clone().run(move |id, _| {
            let _ = tx.send(id);
        }));
        let mut got = Vec::new();
        for _ in 0..3 {
            got.push(
                tokio::time::timeout(Duration::from_secs(5), rx.recv())
                    .await
                    .unwrap()
                    .unwrap(),
            );
        }
        assert_eq!(got, ["overdue", "a", "b"]);
        assert!(t.is_empty());
    }
}
