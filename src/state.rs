//! The application state handed to every handler and middleware: the
//! engine, the project domain, media links, config, billing, publishing,
//! cluster and the request guard. A leaf of the HTTP side: it imports no HTTP module
//! that imports it back.

use std::sync::Arc;

use clipforge_actors::engine::Engine;
use clipforge_actors::projects::domain::Projects;
use clipforge_actors::storage::objects::ObjectStore;

use crate::config::Config;

/// Everything a handler needs.
pub struct AppState {
    pub engine: Arc<Engine>,
    /// The project domain (`engine.projects()`).
    pub projects: Arc<Projects>,
    pub objects: Arc<dyn ObjectStore>,
    /// Set when media is stored locally and served by `/media/...`.
    pub local: Option<Arc<clipforge_actors::storage::objects::LocalStore>>,
    /// Stable media links (`/media/<key>?sig=`) in project and clip JSON.
    pub links: Arc<clipforge_actors::storage::links::StableLinks>,
    pub config: Config,
    /// Stripe billing; `None` when not configured (billing routes answer 503).
    pub billing: Option<Arc<clipforge_actors::billing::Billing>>,
    /// Scheduling and publishing to the platforms.
    pub publishing: Arc<clipforge_actors::posts::Publishing>,
    /// Cluster membership; `None` for a single node (no `[cluster]`).
    pub cluster: Option<Arc<clipforge_actors::cluster::Cluster>>,
    /// Rate limits, client address, browser safety (`crate::security`).
    pub guard: Arc<crate::security::Guard>,
}

pub type State = Arc<AppState>;
