//! How the `accounts` branch of the supervision tree
//! (`crate::supervisor`) restarts its children, the account actors.

use std::sync::{Arc, Weak};

use ractor::ActorCell;

use super::domain::Accounts;
use super::registry::UserRegistry;
use crate::supervisor::{Children, SupervisionError};

/// Account actors: restarted at once (the new actor answers the next
/// command for the account).
pub struct AccountChildren {
    users: Weak<UserRegistry>,
    accounts: Arc<Accounts>,
}

impl AccountChildren {
    pub fn new(users: &Arc<UserRegistry>, accounts: Arc<Accounts>) -> Self {
        Self {
            users: Arc::downgrade(users),
            accounts,
        }
    }
}

#[async_trait::async_trait]
impl Children for AccountChildren {
    fn identify(&self, cell: &ActorCell) -> Option<String> {
        self.users.upgrade()?.user_of(cell.get_id())
    }

    async fn restart(
        &self,
        id: &str,
        failed: &ActorCell,
        sup: ActorCell,
    ) -> Result<(), SupervisionError> {
        let users = self.users.upgrade().ok_or(SupervisionError::Stopping)?;
        Ok(users
            .replace(&self.accounts, id, failed.get_id(), sup)
            .await?)
    }

    async fn give_up(&self, id: &str, failed: &ActorCell, _reason: &str) {
        // Dropped: the next request for the account activates a new actor.
        if let Some(users) = self.users.upgrade() {
            users.forget(id, failed.get_id());
        }
    }

    async fn started(&self, _sup: ActorCell, generation: u32) {
        // After a branch restart every account actor is gone: forget them
        // all (each comes back on its next request).
        if generation > 1 {
            if let Some(users) = self.users.upgrade() {
                users.clear();
            }
        }
    }
}
