//! The project domain against a fake [`Accounting`]: what a project's end
//! asks of its owner's account, and what it leaves in the store, with no
//! account actor, engine or cluster.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::*;
use crate::accounts::actor::Reserved;
use crate::accounts::{NotificationKind, Said};
use crate::captions::template::CaptionStyle;
use crate::storage::kv::MemoryStore;
use crate::storage::objects::LocalStore;

/// What the domain asked of the account, in order.
#[derive(Debug, PartialEq)]
enum Asked {
    Charge(String, u64, NotificationKind),
    Release(String, Option<NotificationKind>),
}

#[derive(Default)]
struct FakeAccount(Mutex<Vec<Asked>>);

impl FakeAccount {
    fn asked(&self) -> Vec<Asked> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

#[async_trait::async_trait]
impl Accounting for FakeAccount {
    fn owns(&self, _user_id: &str) -> bool {
        true
    }
    async fn reserve(
        &self,
        _: &str,
        _: String,
        _: u64,
        _: String,
        _: Box<dyn Reserved>,
    ) -> crate::accounts::Result<CaptionStyle> {
        unreachable!("not created here")
    }
    async fn charge(
        &self,
        _: &str,
        project_id: String,
        minutes: u64,
        notice: Notice,
    ) -> crate::accounts::Result<()> {
        let asked = Asked::Charge(project_id, minutes, notice.kind);
        self.0.lock().unwrap().push(asked);
        Ok(())
    }
    async fn release(
        &self,
        _: &str,
        project_id: String,
        notice: Option<Notice>,
    ) -> crate::accounts::Result<()> {
        let asked = Asked::Release(project_id, notice.map(|n| n.kind));
        self.0.lock().unwrap().push(asked);
        Ok(())
    }
    async fn add_storage(&self, _: &str, _: u64) -> crate::accounts::Result<u64> {
        Ok(0)
    }
    async fn remove_storage(&self, _: &str, _: u64, _: Vec<KvOp>) -> crate::accounts::Result<u64> {
        Ok(0)
    }
    async fn resolve_style(&self, _: &str, _: String) -> crate::accounts::Result<CaptionStyle> {
        Ok(CaptionStyle::default())
    }
    async fn notify_with(
        &self,
        _: &str,
        _: NotificationKind,
        _: &Said,
        _: Vec<KvOp>,
        _: Option<&Subject>,
    ) -> crate::accounts::Result<()> {
        Ok(())
    }
}

fn domain(dir: &std::path::Path, account: Arc<FakeAccount>) -> Arc<Projects> {
    let kv: Arc<dyn KvStore> = Arc::new(MemoryStore::new());
    let objects = LocalStore::new(dir.join("media"), "http://127.0.0.1", "secret").unwrap();
    Projects::new(ProjectsParts {
        leases: NodeLeases::new(kv.clone()),
        kv,
        objects: Arc::new(objects),
        accounts: account,
        metrics: Arc::default(),
        tree: Arc::default(),
        settings: Settings {
            data_dir: dir.to_path_buf(),
            model_dir: dir.join("models"),
            model: ModelOptions::default(),
            batch_size: 1,
            x264_preset: "ultrafast".into(),
            stage_retries: 0,
            workers: 1,
            max_clips: 3,
            renders_per_account: 1,
            idle: Duration::from_secs(60),
            rerank: None,
        },
    })
}

fn project(duration_sec: f64) -> ProjectRecord {
    ProjectRecord {
        duration_sec,
        step_progress: [100, 100, 100, 50],
        reserved_credits: 3,
        clip_count: 2,
        ..records::test_project(ProjectState::Captioning)
    }
}

/// A domain in a temporary folder with `project(duration_sec)` saved in it.
struct Saved {
    _dir: tempfile::TempDir,
    account: Arc<FakeAccount>,
    projects: Arc<Projects>,
    p: ProjectRecord,
}

async fn saved(duration_sec: f64) -> Saved {
    let dir = tempfile::tempdir().unwrap();
    let account = Arc::new(FakeAccount::default());
    let projects = domain(dir.path(), account.clone());
    let mut p = project(duration_sec);
    projects.save_project(&mut p, None).await.unwrap();
    Saved {
        _dir: dir,
        account,
        projects,
        p,
    }
}

/// The project as stored now, if it still is.
async fn stored(projects: &Projects) -> Option<ProjectRecord> {
    records::load_project_async(&*projects.kv, "u1", "p1")
        .await
        .unwrap()
}

#[tokio::test]
async fn a_completed_project_charges_its_minutes_rounded_up() {
    let Saved {
        _dir,
        account,
        projects,
        mut p,
    } = saved(121.0).await;
    projects
        .complete_project(None, &mut p, Duration::from_secs(1))
        .await;
    let kind = NotificationKind::ProjectCompleted;
    assert_eq!(account.asked(), [Asked::Charge("p1".into(), 3, kind)]);
    let p = stored(&projects).await.expect("the project is stored");
    assert_eq!(p.state, ProjectState::Completed);
    assert_eq!(p.step_progress, [100; 4]);
}

#[tokio::test]
async fn a_failed_project_releases_its_credits_and_says_why() {
    let Saved {
        _dir,
        account,
        projects,
        mut p,
    } = saved(30.0).await;
    projects.fail_project(None, &mut p, "no speech").await;
    let kind = Some(NotificationKind::ProjectFailed);
    assert_eq!(account.asked(), [Asked::Release("p1".into(), kind)]);
    let p = stored(&projects).await.expect("the project is stored");
    assert_eq!(p.state, ProjectState::Failed);
    assert_eq!(p.error.as_deref(), Some("no speech"));
}

#[tokio::test]
async fn a_cancelled_project_releases_silently_and_is_removed() {
    let Saved {
        _dir,
        account,
        projects,
        mut p,
    } = saved(30.0).await;
    projects.cancel_project(&mut p).await;
    assert_eq!(account.asked(), [Asked::Release("p1".into(), None)]);
    assert!(stored(&projects).await.is_none());
}
