//! The engine on one node: it only wires the domains together. It builds
//! the accounts domain ([`AccountDesk`]), the project domain
//! ([`Projects`]), what publishing and the cluster's stage worker use of
//! the node, and starts the supervision tree. The HTTP layer (in the
//! `clipforge` binary) talks to the engine and the domains it hands out.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};

use crate::accounts::actor::{AccountMsg, Reply};
use crate::accounts::registry::{AccountDesk, Owner, UserRegistry};
use crate::accounts::supervision::AccountChildren;
use crate::accounts::Accounts;
use crate::cluster::remote_stage::ClusterStages;
use crate::cluster::stage_job::WorkerHost;
use crate::cluster::{Cluster, Load, Role};
use crate::metrics::Metrics;
use crate::posts::host::PostHost;
use crate::projects::domain::{Projects, ProjectsParts};
use crate::projects::error::RunResult;
use crate::projects::supervision::ProjectChildren;
use crate::storage::kv::KvStore;
use crate::storage::node_leases::{LeaseHolder, NodeLeases};
use crate::storage::objects::ObjectStore;
use crate::supervisor::{policy, SupervisionError, Tree};

pub use crate::projects::domain::Settings;

/// What one hand-off did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct HandOff {
    pub accounts_stopped: usize,
    pub projects_stopped: usize,
    pub projects_started: usize,
}

pub struct Engine {
    kv: Arc<dyn KvStore>,
    objects: Arc<dyn ObjectStore>,
    users: Arc<UserRegistry>,
    /// The accounts domain as the request path and other domains use it.
    desk: AccountDesk,
    projects: Arc<Projects>,
    metrics: Arc<Metrics>,
    /// Set when this node is part of a cluster.
    cluster: Arc<OnceLock<Arc<Cluster>>>,
    /// Leases of what this node runs (when clustered) and fenced writes.
    leases: NodeLeases,
    /// Stage jobs this node's cluster worker is running or has queued.
    stage_jobs: Arc<AtomicU32>,
    /// The node's supervision tree (`crate::supervisor`).
    tree: Arc<Tree>,
}

impl Engine {
    pub fn new(
        kv: Arc<dyn KvStore>,
        objects: Arc<dyn ObjectStore>,
        accounts: Arc<Accounts>,
        settings: Settings,
    ) -> Arc<Self> {
        let tree = Arc::new(Tree::default());
        let cluster: Arc<OnceLock<Arc<Cluster>>> = Arc::new(OnceLock::new());
        let users = Arc::new(UserRegistry::new(tree.accounts.clone()));
        let ring = cluster.clone();
        let owner: Owner =
            Arc::new(move |user_id: &str| ring.get().is_none_or(|c| c.owns(user_id, Role::Api)));
        let desk = AccountDesk::new(accounts, users.clone(), owner);
        let leases = NodeLeases::new(kv.clone());
        let metrics = Arc::new(Metrics::default());
        let projects = Projects::new(ProjectsParts {
            kv: kv.clone(),
            objects: objects.clone(),
            accounts: Arc::new(desk.clone()),
            leases: leases.clone(),
            metrics: metrics.clone(),
            tree: tree.clone(),
            settings,
        });
        Arc::new(Self {
            kv,
            objects,
            users,
            desk,
            projects,
            metrics,
            cluster,
            leases,
            stage_jobs: Arc::default(),
            tree,
        })
    }

    /// The project domain.
    pub fn projects(&self) -> &Arc<Projects> {
        &self.projects
    }

    /// What this node's stage worker uses of it, on a cluster whose node
    /// has the `worker` role (`cluster::worker`).
    pub fn worker_host(&self, cluster: Arc<Cluster>) -> WorkerHost {
        WorkerHost {
            stages: self.projects.stages().clone(),
            cluster,
            jobs: self.stage_jobs.clone(),
            metrics: self.metrics.clone(),
            slots: self.settings().workers,
        }
    }

    /// Sends `user_id`'s actor the message `build` makes and waits for
    /// its answer (messages are handled one at a time per account and
    /// handled again when their write met a newer version, see
    /// `accounts::actor`), e.g.
    /// `engine.call_account(id, AccountMsg::Balance)`.
    pub async fn call_account<T: Send + 'static>(
        &self,
        user_id: &str,
        build: impl FnOnce(Reply<T>) -> AccountMsg,
    ) -> crate::accounts::Result<T> {
        self.desk.call(user_id, build).await
    }

    /// What publishing uses of this node.
    pub fn post_host(&self) -> PostHost {
        PostHost {
            leases: self.leases.clone(),
            cluster: self.cluster.clone(),
            objects: self.objects.clone(),
            desk: self.desk.clone(),
            tree: self.tree.clone(),
        }
    }

    /// The accounts domain, for the domains that use it (billing) and the
    /// request path (credentials, account calls).
    pub fn desk(&self) -> &AccountDesk {
        &self.desk
    }

    /// The accounts' store (plans and limits, reads outside the actors).
    pub fn accounts(&self) -> &Arc<Accounts> {
        &self.desk.accounts
    }

    /// The node's record store.
    pub fn kv(&self) -> &Arc<dyn KvStore> {
        &self.kv
    }

    pub fn settings(&self) -> &Settings {
        self.projects.settings()
    }

    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The node's supervision tree.
    pub fn tree(&self) -> &Arc<Tree> {
        &self.tree
    }

    /// This node joined `cluster`: it leases what it runs, its projects'
    /// stages run on the cluster's workers, and the cluster's ring decides
    /// which accounts it hosts. Once.
    pub fn join_cluster(&self, cluster: Arc<Cluster>) {
        self.leases.hold_as(LeaseHolder {
            node: cluster.node_name().to_string(),
            ttl: cluster.lease_ttl(),
        });
        self.projects.join_cluster(Arc::new(ClusterStages {
            cluster: cluster.clone(),
            objects: self.objects.clone(),
        }));
        let _ = self.cluster.set(cluster);
    }

    /// The node's load as its heartbeats announce it: projects running of
    /// `pipeline.workers`, and its stage worker's jobs.
    pub fn load(&self) -> Load {
        let slots = self.settings().workers as u32;
        Load {
            busy: self.projects.busy() as u32,
            slots,
            stages: self.stage_jobs.load(Ordering::Acquire),
            stage_slots: slots,
        }
    }

    /// The account's state as its actor holds it in memory (activating the
    /// actor, which loads it, when it is not active or has not loaded it);
    /// `None` for an account that does not exist.
    pub async fn account_state(
        &self,
        user_id: &str,
    ) -> crate::accounts::Result<Option<Arc<crate::accounts::Held>>> {
        if let Some(held) = self.desk.held(user_id) {
            return Ok(Some(held));
        }
        self.call_account(user_id, AccountMsg::HeldState).await
    }

    /// Starts the node's supervision tree (accounts and projects branches;
    /// publishing adds the scheduler's). Call once, before serving.
    pub async fn start_supervision(&self) -> Result<(), SupervisionError> {
        let tree = &self.tree;
        tree.start().await?;
        let accounts = AccountChildren::new(&self.users, self.desk.accounts.clone());
        tree.start_branch(
            &tree.accounts,
            policy::ACCOUNT,
            policy::ACCOUNTS,
            Arc::new(accounts),
        )
        .await?;
        tree.start_branch(
            &tree.projects,
            policy::PROJECT,
            policy::PROJECTS,
            Arc::new(ProjectChildren::new(&self.projects)),
        )
        .await
    }

    /// Resumes every project a previous run left unfinished (on a cluster:
    /// those of the accounts this node owns).
    pub async fn resume_all(&self) -> RunResult<usize> {
        self.projects.resume_all().await
    }

    /// Brings the actors on this node in line with the ownership now (after
    /// the set of up nodes changed): stops the account and project actors
    /// it no longer owns and takes over the unfinished projects it now
    /// owns. Nothing to do on a single node. Scheduled posts hand off in
    /// `posts::handoff`.
    pub async fn hand_off(&self) -> RunResult<HandOff> {
        if self.cluster.get().is_none() {
            return Ok(HandOff::default());
        }
        let desk = &self.desk;
        let accounts_stopped = self.users.hand_off(|id| desk.owns(id));
        let (projects_stopped, projects_started) = self.projects.hand_off().await?;
        Ok(HandOff {
            accounts_stopped,
            projects_stopped,
            projects_started,
        })
    }

    /// Stops idle account actors; call periodically.
    pub fn passivate_idle(&self) -> usize {
        self.users.passivate(self.settings().idle)
    }
}
