use std::sync::atomic::AtomicUsize;

use super::*;

/// A child that panics on every message.
#[derive(Clone)]
struct Fragile;

impl Actor for Fragile {
    type Msg = ();
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<()>, _: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }

    async fn handle(&self, _: ActorRef<()>, _: (), _: &mut ()) -> Result<(), ActorProcessingErr> {
        panic!("on purpose");
    }
}

#[derive(Default)]
struct Counts {
    restarted: AtomicUsize,
    gave_up: AtomicUsize,
    started: Mutex<Vec<u32>>,
    live: Mutex<Option<ActorRef<()>>>,
}

#[async_trait::async_trait]
impl Children for Counts {
    fn identify(&self, cell: &ActorCell) -> Option<String> {
        // Restarted children are unnamed: they stand for the first one.
        Some(cell.get_name().unwrap_or_else(|| "fragile-1".into()))
    }
    async fn restart(
        &self,
        _: &str,
        _: &ActorCell,
        sup: ActorCell,
    ) -> Result<(), SupervisionError> {
        self.restarted.fetch_add(1, Ordering::SeqCst);
        let (a, _) = Actor::spawn_linked(None, Fragile, (), sup).await?;
        *self.live.lock().unwrap() = Some(a);
        Ok(())
    }
    async fn give_up(&self, _: &str, _: &ActorCell, _: &str) {
        self.gave_up.fetch_add(1, Ordering::SeqCst);
    }
    async fn started(&self, _: ActorCell, generation: u32) {
        self.started.lock().unwrap().push(generation);
    }
}

async fn wait_until(mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < deadline, "condition not reached in time");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[test]
fn policy_counts_failures_in_its_window() {
    let p = RestartPolicy::new(2, 10);
    let mut h = VecDeque::new();
    let t0 = Instant::now();
    assert!(p.allow(&mut h, t0));
    assert!(p.allow(&mut h, t0 + Duration::from_secs(1)));
    assert!(!p.allow(&mut h, t0 + Duration::from_secs(2)));
    // The first two fall out of the window.
    assert!(p.allow(&mut h, t0 + Duration::from_secs(12)));
}

#[tokio::test]
async fn a_panicking_child_is_restarted_then_given_up() {
    let tree = Arc::new(Tree::default());
    tree.start().await.unwrap();
    let counts = Arc::new(Counts::default());
    tree.start_branch(
        &tree.projects,
        RestartPolicy::new(2, 60),
        RestartPolicy::new(100, 60),
        counts.clone(),
    )
    .await
    .unwrap();
    let sup = tree.projects.cell().expect("branch running");
    let (child, _) = Actor::spawn_linked(Some("fragile-1".into()), Fragile, (), sup)
        .await
        .unwrap();
    child.cast(()).unwrap();
    wait_until(|| counts.restarted.load(Ordering::SeqCst) == 1).await;
    // The restarted child fails too: the second restart is allowed, the
    // third failure is one too many.
    for n in 2..=3 {
        let live = counts.live.lock().unwrap().clone().unwrap();
        live.cast(()).unwrap();
        wait_until(|| {
            counts.restarted.load(Ordering::SeqCst) + counts.gave_up.load(Ordering::SeqCst) == n
        })
        .await;
    }
    assert_eq!(counts.restarted.load(Ordering::SeqCst), 2);
    assert_eq!(counts.gave_up.load(Ordering::SeqCst), 1);
    assert_eq!(tree.projects.restarts_of("fragile-1"), 2);
    assert_eq!(*counts.started.lock().unwrap(), vec![1]);
}

#[tokio::test]
async fn a_branch_over_its_intensity_is_restarted_by_the_node() {
    let tree = Arc::new(Tree::default());
    tree.start().await.unwrap();
    let counts = Arc::new(Counts::default());
    tree.start_branch(
        &tree.accounts,
        RestartPolicy::new(10, 60),
        RestartPolicy::new(1, 60),
        counts.clone(),
    )
    .await
    .unwrap();
    let first = tree.accounts.cell().unwrap();
    for i in 0..2 {
        let sup = tree.accounts.cell().unwrap();
        let (c, _) = Actor::spawn_linked(Some(format!("fragile-b{i}")), Fragile, (), sup)
            .await
            .unwrap();
        c.cast(()).unwrap();
        if i == 0 {
            wait_until(|| counts.restarted.load(Ordering::SeqCst) == 1).await;
        }
    }
    // The second failure escalates: the node starts a new branch supervisor.
    wait_until(|| counts.started.lock().unwrap().len() == 2).await;
    assert_eq!(*counts.started.lock().unwrap(), vec![1, 2]);
    let second = tree.accounts.cell().unwrap();
    assert_ne!(first.get_id(), second.get_id());
    assert_eq!(tree.accounts.own_restarts(), 1);
    assert_eq!(tree.node_restarts(), 1);
}

#[tokio::test]
async fn what_cannot_start_says_why_in_its_type() {
    let tree = Arc::new(Tree::default());
    let counts = Arc::new(Counts::default());
    let early = tree
        .start_branch(&tree.projects, policy::PROJECT, policy::PROJECTS, counts)
        .await;
    assert!(
        matches!(early, Err(SupervisionError::TreeNotRunning)),
        "{early:?}"
    );
    // Nothing is spawned unlinked: a child of a branch that never started
    // is refused at once.
    let unlinked = tree.projects.supervisor().await;
    assert!(
        matches!(
            unlinked,
            Err(SupervisionError::BranchNotRunning("projects"))
        ),
        "{unlinked:?}"
    );
    tree.start().await.unwrap();
    let spawn = spawner("fragile-2", Fragile, ());
    let no_branch = tree.supervise_cluster_actor("fragile-2", spawn).await;
    assert!(
        matches!(
            no_branch,
            Err(SupervisionError::BranchNotRunning("cluster"))
        ),
        "{no_branch:?}"
    );
    let fixed = FixedChildren::default();
    let cell = tree.node_cell().expect("the node supervisor runs");
    let unknown = fixed.restart("nobody", &cell, cell.clone()).await;
    assert!(
        matches!(&unknown, Err(SupervisionError::NotAChild(id)) if id == "nobody"),
        "{unknown:?}"
    );
}

/// Past the node's intensity the root gives up, and `Tree::down` resolves
/// (the drop guard of its state: nothing else watches the root).
#[tokio::test]
async fn the_node_giving_up_resolves_down() {
    let tree = Arc::new(Tree::default());
    tree.start().await.unwrap();
    let counts = Arc::new(Counts::default());
    let escalate_at_once = RestartPolicy::new(0, 60);
    tree.start_branch(&tree.accounts, policy::ACCOUNT, escalate_at_once, counts)
        .await
        .unwrap();
    for i in 0..=policy::NODE.max_restarts {
        let mut sup = None;
        wait_until(|| {
            sup = tree.accounts.cell();
            sup.is_some()
        })
        .await;
        let name = format!("fragile-n{i}");
        let (c, _) = Actor::spawn_linked(Some(name), Fragile, (), sup.unwrap())
            .await
            .unwrap();
        c.cast(()).unwrap();
        if i < policy::NODE.max_restarts {
            wait_until(|| tree.node_restarts() as usize == i + 1).await;
        }
    }
    tokio::time::timeout(Duration::from_secs(10), tree.down())
        .await
        .expect("the tree is down once the node supervisor gave up");
    assert!(tree
        .node_cell()
        .is_some_and(|c| c.get_status() == ractor::ActorStatus::Stopped));
}
