//! `clipforge bench-schedule`: the scheduler's numbers, each beside a
//! baseline measured in the same run.
//!
//! 1. N pending posts (default 100,000) are written to a fresh sled
//!    database; a child process opens it as a restarted node would and
//!    re-arms them all (one supervised `ScheduleActor` per post, each
//!    holding its timer). Reported: re-arm time (target < 5 s) against the
//!    bare scan of the `posts_due` index, and RSS before and after.
//! 2. M posts (default 1,000) fall due within the same minute and fire
//!    (`pending → publishing` recorded in `started_at`; there is no
//!    platform account, so each then fails and notifies). Reported: firing
//!    lateness p50/p99 (target p99 < 1 s) against plain tokio timers set
//!    for the same instants in the same process.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clipforge_actors::accounts::{now_ms, Accounts, PlanTable};
use clipforge_actors::engine::{Engine, Settings};
use clipforge_actors::media::whisper::ModelOptions;
use clipforge_actors::posts::crypto::TokenCipher;
use clipforge_actors::posts::post::{self, PostRecord};
use clipforge_actors::posts::{Provider, PublishSettings, Publishing};
use clipforge_actors::storage::kv::{KvStore, SledStore};
use clipforge_actors::storage::objects::LocalStore;

#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Pending posts for the re-arm measure.
    #[arg(long, default_value_t = 100_000)]
    pub posts: usize,
    /// Posts due in the same minute for the lateness measure.
    #[arg(long, default_value_t = 1_000)]
    pub burst: usize,
    /// Seconds over which the burst falls due.
    #[arg(long, default_value_t = 20)]
    pub window_secs: u64,
    /// Internal: re-arm the database in this directory and print figures.
    #[arg(long, hide = true)]
    pub rearm: Option<PathBuf>,
}

fn rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

/// The engine as `serve` runs it, supervision tree included.
async fn engine(dir: &Path) -> anyhow::Result<Arc<Engine>> {
    let kv: Arc<dyn KvStore> = Arc::new(SledStore::open(&dir.join("db"))?);
    let objects = Arc::new(LocalStore::new(
        dir.join("media"),
        "http://127.0.0.1:1",
        b"bench-secret-bench-secret-bench!".to_vec(),
    )?);
    let accounts = Arc::new(Accounts::new(kv.clone(), PlanTable::default()));
    let settings = Settings {
        data_dir: dir.to_path_buf(),
        model_dir: dir.join("model"),
        model: ModelOptions {
            threads: 1,
            compute_type: "int8".into(),
            beam_size: 1,
        },
        batch_size: 1,
        x264_preset: "ultrafast".into(),
        stage_retries: 0,
        workers: 1,
        max_clips: 1,
        renders_per_account: 1,
        idle: Duration::from_secs(300),
        rerank: None,
    };
    let s = Engine::new(kv, objects, accounts, settings);
    s.start_supervision()
        .await
        .map_err(|e| anyhow::anyhow!(e))?;
    Ok(s)
}

fn record(user: &str, at: i64, i: usize) -> PostRecord {
    PostRecord::pending(
        user,
        &format!("clip-{i}"),
        "bench",
        Provider::ALL[i % 3],
        format!("Bench post {i}"),
        at,
        now_ms(),
    )
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn key() -> TokenCipher {
    TokenCipher::new(&[42; 32])
}

/// The child: open, scan the index (baseline), re-arm (the measure).
async fn rearm(dir: &Path) -> anyhow::Result<()> {
    let rss_open = rss_mb();
    let s = engine(dir).await?;
    // Warm the page cache so the baseline and the measure read alike.
    let host = s.post_host();
    post::due_entries(host.kv()).await?;
    let t = Instant::now();
    let n = post::due_entries(host.kv()).await?.len();
    let scan = t.elapsed().as_secs_f64();
    let rss_before = rss_mb();
    let t = Instant::now();
    let p = Publishing::start(s.post_host(), PublishSettings::default(), key())
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let rearm = t.elapsed().as_secs_f64();
    println!(
        "{n} {scan:.4} {rearm:.4} {rss_open:.1} {rss_before:.1} {:.1} {}",
        rss_mb(),
        p.live_actors()
    );
    Ok(())
}

pub async fn run(args: BenchArgs) -> ExitCode {
    let result = match &args.rearm {
        Some(dir) => rearm(dir).await,
        None => bench(&args).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn bench(args: &BenchArgs) -> anyhow::Result<()> {
    let work = tempfile::tempdir()?;
    // 1. Re-arm after a restart.
    {
        let dir = work.path().join("rearm");
        std::fs::create_dir_all(&dir)?;
        let s = engine(&dir).await?;
        let day = now_ms() + 86_400_000;
        let t = Instant::now();
        for chunk in (0..args.posts).collect::<Vec<_>>().chunks(5_000) {
            let mut ops = Vec::new();
            for &i in chunk {
                ops.extend(post::insert_ops(&record(
                    "bench-user",
                    day + (i as i64 % 3_600_000),
                    i,
                ))?);
            }
            s.kv().apply_async(ops).await?;
        }
        println!(
            "== {} pending posts written in {:.1} s",
            args.posts,
            t.elapsed().as_secs_f64()
        );
    }
    let out = std::process::Command::new(std::env::current_exe()?)
        .arg("bench-schedule")
        .arg("--rearm")
        .arg(work.path().join("rearm"))
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "re-arm child failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8_lossy(&out.stdout);
    let f: Vec<f64> = line
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    anyhow::ensure!(f.len() == 7, "unexpected child output {line:?}");
    println!("== restart with {} pending posts", f[0]);
    println!(
        "   baseline: scan of the posts_due index       {:8.3} s",
        f[1]
    );
    println!(
        "   re-arm (scan + one ScheduleActor per post)  {:8.3} s   ratio {:.2}x   target < 5 s: {}",
        f[2],
        f[2] / f[1].max(1e-9),
        if f[2] < 5.0 { "met" } else { "MISSED" }
    );
    println!("   RSS: process start {:.1} MB, storage open and index read {:.1} MB, all {} schedule actors armed {:.1} MB (+{:.1} MB, {:.0} bytes/post)", f[3], f[4], f[6], f[5], f[5] - f[4], (f[5] - f[4]) * 1_048_576.0 / f[0].max(1.0));

    // 2. Firing lateness of a burst.
    let dir = work.path().join("burst");
    std::fs::create_dir_all(&dir)?;
    let s = engine(&dir).await?;
    let (user, _) = s
        .accounts()
        .sign_up("bench@example.com", "correct horse battery", "Bench")
        .await?;
    let p = Publishing::start(s.post_host(), PublishSettings::default(), key())
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let start = now_ms() + 3_000;
    let window = (args.window_secs * 1000).max(1) as i64;
    let dues: Vec<i64> = (0..args.burst)
        .map(|i| start + (i as i64 * window) / args.burst.max(1) as i64)
        .collect();
    let records: Vec<PostRecord> = dues
        .iter()
        .enumerate()
        .map(|(i, at)| record(&user.id, *at, i))
        .collect();
    let ids: Vec<String> = records.iter().map(|r| r.id.clone()).collect();
    p.insert_posts(records)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    // Baseline: plain tokio timers for the same instants.
    let base = tokio::spawn({
        let dues = dues.clone();
        async move {
            let mut tasks = Vec::new();
            for due in dues {
                tasks.push(tokio::spawn(async move {
                    let wait = (due - now_ms()).max(0) as u64;
                    tokio::time::sleep(Duration::from_millis(wait)).await;
                    (now_ms() - due) as f64
                }));
            }
            let mut out = Vec::new();
            for t in tasks {
                out.push(t.await.unwrap_or(0.0));
            }
            out
        }
    });
    let deadline = Instant::now() + Duration::from_secs(args.window_secs + 120);
    let late = loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut recs = Vec::with_capacity(ids.len());
        for id in &ids {
            recs.push(post::load_async(&**s.kv(), id).await?);
        }
        if recs
            .iter()
            .all(|r| r.as_ref().is_some_and(|r| r.status.is_terminal()))
        {
            break recs
                .into_iter()
                .flatten()
                .map(|r| (r.started_at.unwrap_or(0) - r.scheduled_at) as f64)
                .collect::<Vec<_>>();
        }
        anyhow::ensure!(Instant::now() < deadline, "the burst did not finish");
    };
    let mut late = late;
    let mut base = base.await?;
    late.sort_by(f64::total_cmp);
    base.sort_by(f64::total_cmp);
    let (l50, l99, b50, b99) = (
        percentile(&late, 0.5),
        percentile(&late, 0.99),
        percentile(&base, 0.5),
        percentile(&base, 0.99),
    );
    println!("== {} posts due within {} s", args.burst, args.window_secs);
    println!("   baseline: tokio timers       lateness p50 {b50:6.1} ms  p99 {b99:6.1} ms");
    println!(
        "   scheduler → publishing       lateness p50 {l50:6.1} ms  p99 {l99:6.1} ms   ratio p50 {:.2}x p99 {:.2}x   target p99 < 1 s: {}",
        l50 / b50.max(1.0),
        l99 / b99.max(1.0),
        if l99 < 1000.0 { "met" } else { "MISSED" }
    );
    println!(
        "   max {:.1} ms; RSS now {:.1} MB",
        late.last().copied().unwrap_or(0.0),
        rss_mb()
    );
    Ok(())
}
