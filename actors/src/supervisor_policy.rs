//! Restart intensity ([`RestartPolicy`]), and the policies of the tree
//! (`supervisor.rs`'s module docs draw where each applies).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Restart intensity: at most `max_restarts` within `within`.
#[derive(Clone, Copy, Debug)]
pub struct RestartPolicy {
    pub max_restarts: usize,
    pub within: Duration,
}

impl RestartPolicy {
    pub const fn new(max_restarts: usize, within_secs: u64) -> Self {
        Self {
            max_restarts,
            within: Duration::from_secs(within_secs),
        }
    }

    /// Records a failure at `now`; true while the failures in the window
    /// stay within the intensity.
    pub fn allow(&self, history: &mut VecDeque<Instant>, now: Instant) -> bool {
        while history
            .front()
            .is_some_and(|t| now.duration_since(*t) > self.within)
        {
            history.pop_front();
        }
        history.push_back(now);
        history.len() <= self.max_restarts
    }
}

pub const NODE: RestartPolicy = RestartPolicy::new(3, 60);
pub const ACCOUNT: RestartPolicy = RestartPolicy::new(5, 60);
pub const ACCOUNTS: RestartPolicy = RestartPolicy::new(100, 10);
pub const PROJECT: RestartPolicy = RestartPolicy::new(3, 300);
pub const PROJECTS: RestartPolicy = RestartPolicy::new(50, 10);
pub const POST: RestartPolicy = RestartPolicy::new(3, 300);
pub const SCHEDULER: RestartPolicy = RestartPolicy::new(50, 10);
pub const WEBHOOK_ACTOR: RestartPolicy = RestartPolicy::new(5, 60);
pub const WEBHOOKS: RestartPolicy = RestartPolicy::new(10, 60);
pub const CLUSTER_ACTOR: RestartPolicy = RestartPolicy::new(5, 60);
pub const CLUSTER: RestartPolicy = RestartPolicy::new(10, 60);
pub const HOUSEKEEPING_ACTOR: RestartPolicy = RestartPolicy::new(5, 60);
pub const HOUSEKEEPING: RestartPolicy = RestartPolicy::new(10, 60);
