//! Mailbox length and uptime of entity actors, for the admin view.
//!
//! ractor does not expose how many messages wait in a mailbox, so every
//! message to a tracked actor goes through [`Tracked::send`] (or
//! [`Tracked::sent`] right before an RPC), which counts it, and the actor
//! calls [`ActorMeta::received`] as it takes each one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ractor::{ActorRef, Message, MessagingErr};

/// What the admin view shows of an actor besides ractor's own status.
#[derive(Debug)]
pub struct ActorMeta {
    started: Instant,
    queued: AtomicUsize,
}

impl ActorMeta {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            started: Instant::now(),
            queued: AtomicUsize::new(0),
        })
    }

    /// Messages sent and not yet taken.
    pub fn mailbox(&self) -> usize {
        self.queued.load(Ordering::Relaxed)
    }

    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    /// Counts a message as sent.
    pub fn sent(&self) {
        self.queued.fetch_add(1, Ordering::Relaxed);
    }

    /// Called by the actor as it takes a message from its mailbox.
    pub fn received(&self) {
        let _ = self
            .queued
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                Some(n.saturating_sub(1))
            });
    }
}

/// An actor reference whose sends are counted in its [`ActorMeta`].
pub struct Tracked<M: Message> {
    pub actor: ActorRef<M>,
    pub meta: Arc<ActorMeta>,
}

impl<M: Message> Clone for Tracked<M> {
    fn clone(&self) -> Self {
        Self {
            actor: self.actor.clone(),
            meta: self.meta.clone(),
        }
    }
}

impl<M: Message> Tracked<M> {
    pub fn new(actor: ActorRef<M>, meta: Arc<ActorMeta>) -> Self {
        Self { actor, meta }
    }

    pub fn send(&self, msg: M) -> Result<(), MessagingErr<M>> {
        self.meta.sent();
        let sent = self.actor.send_message(msg);
        if sent.is_err() {
            self.meta.received();
        }
        sent
    }

    /// Counts a message about to be sent some other way (an RPC).
    pub fn sent(&self) -> &ActorRef<M> {
        self.meta.sent();
        &self.actor
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_never_go_below_zero() {
        let m = ActorMeta::new();
        m.sent();
        m.sent();
        assert_eq!(m.mailbox(), 2);
        m.received();
        m.received();
        m.received();
        assert_eq!(m.mailbox(), 0);
    }
}
