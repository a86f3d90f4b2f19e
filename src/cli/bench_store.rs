//! `clipforge bench-store`: a request's read of PostgreSQL through the
//! store's async side (`KvStore::get_async`, awaited on the request's
//! task) against the baseline measured in the same run, the blocking
//! `KvStore::get` handed to the blocking pool (`tasks::blocking`: how every
//! request read went before the async side). `--concurrency` tasks read
//! random keys of a prepared tree until `--reads` reads are done, on the
//! runtime `serve` runs on; then one task alone (latency without queueing).
//! Reported: reads/s, p50 and p99 per read, and the ratios async ÷ blocking.
//! `make bench-cluster` runs it on the PostgreSQL it starts.

use clipforge_actors::tasks::blocking_caught;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clipforge_actors::storage::kv::{KvOp, KvStore};
use clipforge_actors::storage::kv_postgres::{PostgresOptions, PostgresStore};

#[derive(clap::Args, Debug)]
pub struct BenchStoreArgs {
    /// The PostgreSQL server (`postgres://user@host:port/db`).
    #[arg(long)]
    pub postgres_url: String,
    /// Reads per measure.
    #[arg(long, default_value_t = 20_000)]
    pub reads: usize,
    /// Reading tasks at once.
    #[arg(long, default_value_t = 32)]
    pub concurrency: usize,
}

const TREE: &str = "bench.store";
const KEYS: usize = 1_000;

/// Figures of one measure.
struct Measure {
    per_sec: f64,
    p50: Duration,
    p99: Duration,
}

fn key(i: usize) -> Vec<u8> {
    format!("key/{i:05}").into_bytes()
}

/// `reads` reads by `tasks` tasks, each timed; `read` does one.
async fn measure<F, Fut>(reads: usize, tasks: usize, read: F) -> anyhow::Result<Measure>
where
    F: Fn(Vec<u8>) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = anyhow::Result<()>> + Send,
{
    let read = Arc::new(read);
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..tasks {
        let (read, next) = (read.clone(), next.clone());
        set.spawn(async move {
            let mut times = Vec::new();
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= reads {
                    return anyhow::Ok(times);
                }
                let t = Instant::now();
                read(key(n.wrapping_mul(7_919) % KEYS)).await?;
                times.push(t.elapsed());
            }
        });
    }
    let mut times = Vec::with_capacity(reads);
    while let Some(done) = set.join_next().await {
        times.extend(done??);
    }
    let wall = start.elapsed();
    times.sort_unstable();
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    Ok(Measure {
        per_sec: reads as f64 / wall.as_secs_f64(),
        p50: at(0.5),
        p99: at(0.99),
    })
}

async fn bench(args: BenchStoreArgs) -> anyhow::Result<()> {
    let url = args.postgres_url.clone();
    let kv: Arc<dyn KvStore> = Arc::new(
        blocking_caught(move || PostgresStore::open(PostgresOptions::new(url, "bench-store")))
            .await
            .map_err(|e| anyhow::anyhow!("opening the store panicked: {e}"))??,
    );
    let ops = (0..KEYS)
        .map(|i| KvOp::Put {
            tree: TREE.into(),
            key: key(i),
            value: vec![b'v'; 200],
        })
        .collect();
    kv.apply_async(ops).await?;

    let async_read = |kv: Arc<dyn KvStore>| {
        move |k: Vec<u8>| {
            let kv = kv.clone();
            async move {
                kv.get_async(TREE, &k)
                    .await?
                    .ok_or_else(|| anyhow::anyhow!("missing"))?;
                Ok(())
            }
        }
    };
    let blocking_read = |kv: Arc<dyn KvStore>| {
        move |k: Vec<u8>| {
            let kv = kv.clone();
            async move {
                clipforge_actors::storage::kv::blocking(&kv, move |kv| kv.get(TREE, &k))
                    .await?
                    .ok_or_else(|| anyhow::anyhow!("missing"))?;
                Ok(())
            }
        }
    };
    // Warm both paths (connections, prepared statements, blocking threads).
    measure(2_000, args.concurrency, async_read(kv.clone())).await?;
    measure(2_000, args.concurrency, blocking_read(kv.clone())).await?;

    let c = args.concurrency;
    let base = measure(args.reads, c, blocking_read(kv.clone())).await?;
    let ours = measure(args.reads, c, async_read(kv.clone())).await?;
    let base1 = measure(args.reads / 4, 1, blocking_read(kv.clone())).await?;
    let ours1 = measure(args.reads / 4, 1, async_read(kv.clone())).await?;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for (what, m) in [
        (format!("blocking pool, {c} tasks"), &base),
        (format!("async side, {c} tasks"), &ours),
        ("blocking pool, 1 task".to_string(), &base1),
        ("async side, 1 task".to_string(), &ours1),
    ] {
        println!(
            "{what:<26} {:>9.0} reads/s   p50 {:.3} ms   p99 {:.3} ms",
            m.per_sec,
            ms(m.p50),
            ms(m.p99)
        );
    }
    println!(
        "async ÷ blocking: {c} tasks {:.2}x reads/s, p99 {:.2}; 1 task p50 {:.2}",
        ours.per_sec / base.per_sec,
        ms(ours.p99) / ms(base.p99),
        ms(ours1.p50) / ms(base1.p50)
    );
    let cleanup = (0..KEYS)
        .map(|i| KvOp::Delete {
            tree: TREE.into(),
            key: key(i),
        })
        .collect();
    kv.apply_async(cleanup).await?;
    Ok(())
}

pub async fn run(args: BenchStoreArgs) -> ExitCode {
    match bench(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench-store: {e:#}");
            ExitCode::FAILURE
        }
    }
}
