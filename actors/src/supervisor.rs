//! The node's supervision tree, in one place:
//!
//! ```text
//! node            NodeSupervisor: one-for-one over the branch supervisors,
//!  │              at most 3 restarts in 60 s, then it fails and the process
//!  │              exits with an error (`clipforge serve` watches it)
//!  ├─ accounts    Supervisor: one-for-one over AccountActors. A failed
//!  │              account actor is restarted at once (it reloads from the
//!  │              store on its next command), at most 5 times per account
//!  │              in 60 s, then it is dropped until the next request;
//!  │              more than 100 failures in 10 s escalate to `node`
//!  ├─ projects    Supervisor: one-for-one over ProjectActors. A failed
//!  │              project actor is restarted from its stored record (it
//!  │              resumes at the first unfinished stage), at most 3 times
//!  │              per project in 300 s, then the project fails (credits
//!  │              released, `project_failed` notification); more than 50
//!  │              failures in 10 s escalate. Each ProjectActor supervises
//!  │              its StageActor itself: a failed stage is retried
//!  │              `stage_retries` times with backoff, then the project fails
//!  ├─ scheduler   Supervisor: one-for-one over ScheduleActors, one per
//!  │              unfinished post, each holding its timer. A failed
//!  │              schedule actor is restarted and fired again (a post that
//!  │              started publishing first asks the platform about its
//!  │              handle, so nothing is published twice), at most 3 times
//!  │              per post in 300 s, then the post fails; more than 50
//!  │              failures in 10 s escalate
//!  ├─ webhooks    Supervisor: the webhook DeliveryActor (one per node),
//!  │              restarted with its arguments, at most 5 times in 60 s,
//!  │              then the branch fails and `node` restarts it; more than
//!  │              10 failures in 60 s escalate. Deliveries live in the
//!  │              store: a restarted actor finds every due one
//!  └─ cluster     Supervisor (clustered nodes only): one-for-one over the
//!                 node's cluster actors (ractor_cluster's node server, which
//!                 supervises its own sessions; membership, seed dialer,
//!                 HTTP relay, reply router, stage worker), each restarted
//!                 with the arguments it was started with, at most 5 times
//!                 per actor in 60 s, then the branch fails and `node`
//!                 restarts it with all of them; more than 10 failures in
//!                 60 s escalate.
//! ```
//!
//! A branch supervisor that is restarted by `node` starts with no children:
//! its [`Children::started`] brings back what must run (unfinished projects
//! are resumed from the store, unfinished posts re-armed; account actors come back
//! on their next request). Entity actors are spawned linked to their
//! branch's current supervisor ([`Branch::supervisor`], which waits out a
//! restart of the branch) by the registries that own them; nothing is
//! spawned unlinked.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use ractor::{Actor, ActorCell, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};

/// The policies of the tree (see the module docs).
#[path = "supervisor_policy.rs"]
pub mod policy;
pub use policy::RestartPolicy;

#[path = "supervisor_fixed.rs"]
mod fixed;
pub use fixed::{spawner, FixedChildren, Spawn};

#[path = "supervisor_error.rs"]
mod error;
pub use error::SupervisionError;

#[path = "supervisor_children.rs"]
mod children;
pub use children::Children;

/// How long a new child waits for its branch's supervisor to be restarted.
pub const RESTART_WAIT: Duration = Duration::from_secs(5);

/// A branch as the rest of the node sees it: its current supervisor cell
/// and the restart counts of its children.
pub struct Branch {
    pub name: &'static str,
    cell: RwLock<Option<ActorCell>>,
    generation: AtomicU32,
    restarts: Mutex<HashMap<String, u32>>,
    /// Every failure of a child this branch saw, restarted or not.
    failures: AtomicU32,
    /// When the branch's current supervisor started.
    started: Mutex<Instant>,
}

impl Branch {
    fn new(name: &'static str) -> Self {
        Self {
            name,
            cell: RwLock::new(None),
            generation: AtomicU32::new(0),
            restarts: Mutex::new(HashMap::new()),
            failures: AtomicU32::new(0),
            started: Mutex::new(Instant::now()),
        }
    }

    /// The supervisor to link new children to (None before the tree runs,
    /// or while the branch is being restarted).
    pub fn cell(&self) -> Option<ActorCell> {
        self.cell
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .filter(|c| c.get_status() <= ractor::ActorStatus::Running)
    }

    /// The supervisor to link a new child to, waiting out a restart of
    /// the branch (at most [`RESTART_WAIT`]): nothing is spawned unlinked,
    /// so a branch that never started, or does not come back, is an error.
    pub async fn supervisor(&self) -> Result<ActorCell, SupervisionError> {
        let deadline = Instant::now() + RESTART_WAIT;
        loop {
            if let Some(cell) = self.cell() {
                return Ok(cell);
            }
            let started = self.generation.load(Ordering::Acquire) > 0;
            if !started || Instant::now() >= deadline {
                return Err(SupervisionError::BranchNotRunning(self.name));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// How often the child `id` was restarted since the node started.
    pub fn restarts_of(&self, id: &str) -> u32 {
        self.restarts
            .lock()
            .map(|r| r.get(id).copied().unwrap_or(0))
            .unwrap_or(0)
    }

    /// How often this branch's supervisor was restarted.
    pub fn own_restarts(&self) -> u32 {
        self.generation.load(Ordering::Acquire).saturating_sub(1)
    }

    /// Age of the branch's current supervisor.
    pub fn uptime(&self) -> Duration {
        self.started.lock().map(|t| t.elapsed()).unwrap_or_default()
    }

    /// How many failures of its children this branch saw since the node
    /// started (restarted or given up on).
    pub fn child_failures(&self) -> u32 {
        self.failures.load(Ordering::Acquire)
    }

    fn count_restart(&self, id: &str) {
        let mut r = self.restarts.lock().unwrap_or_else(|e| e.into_inner());
        if r.len() >= 100_000 {
            r.clear();
        }
        *r.entry(id.to_string()).or_default() += 1;
    }
}

/// The node's tree: the node supervisor and its branches.
pub struct Tree {
    pub accounts: Arc<Branch>,
    pub projects: Arc<Branch>,
    pub scheduler: Arc<Branch>,
    /// The cluster's own actors (only on a clustered node).
    pub cluster: Arc<Branch>,
    cluster_actors: Arc<FixedChildren>,
    /// The webhook delivery actor.
    pub webhooks: Arc<Branch>,
    webhook_actors: Arc<FixedChildren>,
    /// The node's periodic work (`housekeeping.rs`).
    pub housekeeping: Arc<Branch>,
    housekeeping_actors: Arc<FixedChildren>,
    node: RwLock<Option<ActorRef<NodeMsg>>>,
    node_restarts: AtomicU32,
    down: tokio::sync::watch::Sender<bool>,
    started: Instant,
}

impl Default for Tree {
    fn default() -> Self {
        Self {
            accounts: Arc::new(Branch::new("accounts")),
            projects: Arc::new(Branch::new("projects")),
            scheduler: Arc::new(Branch::new("scheduler")),
            cluster: Arc::new(Branch::new("cluster")),
            cluster_actors: Arc::default(),
            webhooks: Arc::new(Branch::new("webhooks")),
            webhook_actors: Arc::default(),
            housekeeping: Arc::new(Branch::new("housekeeping")),
            housekeeping_actors: Arc::default(),
            node: RwLock::new(None),
            node_restarts: AtomicU32::new(0),
            down: tokio::sync::watch::channel(false).0,
            started: Instant::now(),
        }
    }
}

impl Tree {
    /// Starts the node supervisor (no branches yet; see [`Tree::start_branch`]).
    pub async fn start(self: &Arc<Self>) -> Result<(), SupervisionError> {
        // The root has no supervisor: its state's [`Down`] tells the
        // process when it ends, however it ends.
        let (node, _) = Actor::spawn(None, NodeSupervisor, self.clone()).await?;
        *self.node.write().unwrap_or_else(|e| e.into_inner()) = Some(node);
        Ok(())
    }

    /// Starts a branch supervisor under the node supervisor.
    pub async fn start_branch(
        &self,
        branch: &Arc<Branch>,
        child: RestartPolicy,
        own: RestartPolicy,
        children: Arc<dyn Children>,
    ) -> Result<(), SupervisionError> {
        let node = self
            .node
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .ok_or(SupervisionError::TreeNotRunning)?;
        let spec = BranchSpec {
            branch: branch.clone(),
            child,
            own,
            children,
        };
        ractor::call!(node, NodeMsg::Start, spec)
            .map_err(|e| SupervisionError::NoAnswer(e.to_string()))?
    }

    /// Resolves when the node supervisor has given up (escalation reached
    /// the top): the process should exit.
    pub async fn down(&self) {
        let mut rx = self.down.subscribe();
        let _ = rx.wait_for(|d| *d).await;
    }

    /// The branches that have started, for views.
    pub fn branches(&self) -> Vec<&Arc<Branch>> {
        [
            &self.accounts,
            &self.projects,
            &self.scheduler,
            &self.webhooks,
            &self.housekeeping,
            &self.cluster,
        ]
        .into_iter()
        .filter(|b| b.generation.load(Ordering::Acquire) > 0)
        .collect()
    }

    /// Starts the `cluster` branch (a clustered node, before it joins).
    pub async fn start_cluster(&self) -> Result<(), SupervisionError> {
        self.start_branch(
            &self.cluster,
            policy::CLUSTER_ACTOR,
            policy::CLUSTER,
            self.cluster_actors.clone(),
        )
        .await
    }

    /// Starts the cluster actor `name` under the `cluster` branch, and again
    /// with `spawn` whenever it fails.
    pub async fn supervise_cluster_actor(
        &self,
        name: &str,
        spawn: Spawn,
    ) -> Result<(), SupervisionError> {
        let sup = self
            .cluster
            .cell()
            .ok_or(SupervisionError::BranchNotRunning(self.cluster.name))?;
        // Known before it runs, so a failure at once is restarted too.
        self.cluster_actors.insert(name, spawn.clone());
        spawn(sup).await.map(|_| ())
    }

    /// Starts the `webhooks` branch with the actor `name` under it, started
    /// again with `spawn` whenever it fails.
    pub async fn start_webhooks(&self, name: &str, spawn: Spawn) -> Result<(), SupervisionError> {
        let (branch, actors) = (&self.webhooks, &self.webhook_actors);
        let policies = (policy::WEBHOOK_ACTOR, policy::WEBHOOKS);
        self.start_fixed(branch, actors, policies, vec![(name, spawn)])
            .await
    }

    /// Starts the `housekeeping` branch with `children` (name, spawner)
    /// under it, each started again with its spawner whenever it fails.
    pub async fn start_housekeeping(
        &self,
        children: Vec<(&str, Spawn)>,
    ) -> Result<(), SupervisionError> {
        let (branch, actors) = (&self.housekeeping, &self.housekeeping_actors);
        let policies = (policy::HOUSEKEEPING_ACTOR, policy::HOUSEKEEPING);
        self.start_fixed(branch, actors, policies, children).await
    }

    /// Starts a branch of fixed children (each policy: per child, the
    /// branch's own) and the children under it.
    async fn start_fixed(
        &self,
        branch: &Arc<Branch>,
        actors: &Arc<FixedChildren>,
        (child, own): (RestartPolicy, RestartPolicy),
        children: Vec<(&str, Spawn)>,
    ) -> Result<(), SupervisionError> {
        // Known before they run, so a failure at once is restarted too.
        for (name, spawn) in &children {
            actors.insert(name, spawn.clone());
        }
        self.start_branch(branch, child, own, actors.clone())
            .await?;
        let sup = branch
            .cell()
            .ok_or(SupervisionError::BranchNotRunning(branch.name))?;
        for (_, spawn) in children {
            spawn(sup.clone()).await?;
        }
        Ok(())
    }

    /// Age of the node supervisor.
    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    pub fn node_restarts(&self) -> u32 {
        self.node_restarts.load(Ordering::Acquire)
    }

    /// The node supervisor's cell, for views.
    pub fn node_cell(&self) -> Option<ActorCell> {
        self.node
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|n| n.get_cell())
    }
}

/// What the node supervisor needs to (re)start a branch.
#[derive(Clone)]
pub struct BranchSpec {
    branch: Arc<Branch>,
    child: RestartPolicy,
    own: RestartPolicy,
    children: Arc<dyn Children>,
}

pub enum NodeMsg {
    Start(
        BranchSpec,
        ractor::RpcReplyPort<Result<(), SupervisionError>>,
    ),
}

// Local only: with ractor's `cluster` feature, messages opt in explicitly.
impl ractor::Message for NodeMsg {}

pub struct NodeSupervisor;

pub struct NodeState {
    tree: Arc<Tree>,
    branches: HashMap<ActorId, BranchSpec>,
    failures: VecDeque<Instant>,
    _down: Down,
}

/// Dropped with the node supervisor's state, when it stops (it gave up,
/// or panicked): [`Tree::down`] resolves, and `clipforge serve` exits.
struct Down(Arc<Tree>);

impl Drop for Down {
    fn drop(&mut self) {
        tracing::error!("the node supervisor stopped: the node gives up");
        self.0.down.send_replace(true);
    }
}

impl NodeSupervisor {
    async fn spawn_branch(
        myself: &ActorRef<NodeMsg>,
        state: &mut NodeState,
        spec: BranchSpec,
    ) -> Result<(), SupervisionError> {
        let (actor, _) =
            Actor::spawn_linked(None, Supervisor, spec.clone(), myself.get_cell()).await?;
        state.branches.insert(actor.get_id(), spec);
        Ok(())
    }
}

impl Actor for NodeSupervisor {
    type Msg = NodeMsg;
    type State = NodeState;
    type Arguments = Arc<Tree>;

    async fn pre_start(
        &self,
        _myself: ActorRef<NodeMsg>,
        tree: Arc<Tree>,
    ) -> Result<NodeState, ActorProcessingErr> {
        Ok(NodeState {
            _down: Down(tree.clone()),
            tree,
            branches: HashMap::new(),
            failures: VecDeque::new(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<NodeMsg>,
        msg: NodeMsg,
        state: &mut NodeState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            NodeMsg::Start(spec, reply) => {
                let r = Self::spawn_branch(&myself, state, spec).await;
                let _ = reply.send(r);
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<NodeMsg>,
        evt: SupervisionEvent,
        state: &mut NodeState,
    ) -> Result<(), ActorProcessingErr> {
        let (cell, why) = match evt {
            SupervisionEvent::ActorFailed(cell, err) => (cell, err.to_string()),
            SupervisionEvent::ActorTerminated(cell, _, reason) => {
                (cell, reason.unwrap_or_else(|| "stopped".into()))
            }
            _ => return Ok(()),
        };
        let Some(spec) = state.branches.remove(&cell.get_id()) else {
            return Ok(());
        };
        *spec.branch.cell.write().unwrap_or_else(|e| e.into_inner()) = None;
        if !policy::NODE.allow(&mut state.failures, Instant::now()) {
            tracing::error!(branch = spec.branch.name, reason = %why, "branch supervisors keep failing: escalating");
            return Err(format!(
                "more than {} branch restarts in {:?}",
                policy::NODE.max_restarts,
                policy::NODE.within
            )
            .into());
        }
        tracing::error!(branch = spec.branch.name, reason = %why, "branch supervisor failed: restarting it");
        state.tree.node_restarts.fetch_add(1, Ordering::AcqRel);
        Self::spawn_branch(&myself, state, spec)
            .await
            .map_err(ActorProcessingErr::from)
    }
}

/// A branch supervisor (accounts, projects, scheduler).
pub struct Supervisor;

pub struct SupervisorState {
    spec: BranchSpec,
    /// Failures per child id, within the child policy's window.
    history: HashMap<String, VecDeque<Instant>>,
    /// All children's failures, within the branch policy's window.
    failures: VecDeque<Instant>,
}

impl Actor for Supervisor {
    type Msg = ();
    type State = SupervisorState;
    type Arguments = BranchSpec;

    async fn pre_start(
        &self,
        myself: ActorRef<()>,
        spec: BranchSpec,
    ) -> Result<SupervisorState, ActorProcessingErr> {
        // Set before `spawn` returns, so the next child is linked here.
        *spec.branch.cell.write().unwrap_or_else(|e| e.into_inner()) = Some(myself.get_cell());
        *spec
            .branch
            .started
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Instant::now();
        Ok(SupervisorState {
            spec,
            history: HashMap::new(),
            failures: VecDeque::new(),
        })
    }

    async fn post_start(
        &self,
        myself: ActorRef<()>,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        let branch = &state.spec.branch;
        let generation = branch.generation.fetch_add(1, Ordering::AcqRel) + 1;
        state
            .spec
            .children
            .started(myself.get_cell(), generation)
            .await;
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<()>,
        evt: SupervisionEvent,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        let SupervisionEvent::ActorFailed(cell, err) = evt else {
            return Ok(());
        };
        let spec = state.spec.clone();
        let Some(id) = spec.children.identify(&cell) else {
            return Ok(());
        };
        let now = Instant::now();
        let name = spec.branch.name;
        spec.branch.failures.fetch_add(1, Ordering::AcqRel);
        if !spec.own.allow(&mut state.failures, now) {
            tracing::error!(branch = name, "children keep failing: escalating");
            return Err(format!(
                "{name}: more than {} child failures in {:?}",
                spec.own.max_restarts, spec.own.within
            )
            .into());
        }
        state.history.retain(|_, h| {
            h.back()
                .is_some_and(|t| now.duration_since(*t) <= spec.child.within)
        });
        let allowed = spec
            .child
            .allow(state.history.entry(id.clone()).or_default(), now);
        let reason = err.to_string();
        if !spec.children.restarts(&id) {
            tracing::error!(branch = name, id = %id, error = %reason, "one-shot child failed");
            spec.children.give_up(&id, &cell, &reason).await;
        } else if allowed {
            spec.branch.count_restart(&id);
            tracing::warn!(branch = name, id = %id, error = %reason, "child failed: restarting it");
            if let Err(e) = spec.children.restart(&id, &cell, myself.get_cell()).await {
                tracing::error!(branch = name, id = %id, error = %e, "cannot restart: giving up");
                spec.children.give_up(&id, &cell, &reason).await;
            }
        } else {
            tracing::error!(branch = name, id = %id, error = %reason, "child failed too often: giving up");
            state.history.remove(&id);
            spec.children.give_up(&id, &cell, &reason).await;
            if spec.children.escalates_on_give_up() {
                return Err(format!("{name}: {id} failed too often: {reason}").into());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "supervisor_tests.rs"]
mod tests;
