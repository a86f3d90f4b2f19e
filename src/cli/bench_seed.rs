//! `clipforge bench-seed`: fills a data directory for `make bench-api`.
//!
//! Creates N accounts (one argon2id hash computed once and shared, since
//! hashing 100,000 passwords would take longer than the benchmark) with a
//! session each, and M finished projects on the first account, then flushes
//! once. Writes one session token per line to `--tokens`; the first line is
//! the account with the projects.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clipforge_actors::accounts::{hash_password, Accounts, PlanTable};
use clipforge_actors::captions::template::CaptionStyle;
use clipforge_actors::projects::records::{
    new_project_ops, now_ms, ProjectRecord, ProjectState, Source,
};
use clipforge_actors::storage::kv::{KvStore, SledStore};

#[derive(clap::Args, Debug)]
pub struct BenchSeedArgs {
    /// The server's data directory (its `db` is created inside).
    #[arg(long)]
    pub data_dir: PathBuf,
    #[arg(long, default_value_t = 100_000)]
    pub accounts: usize,
    /// Finished projects owned by the first account.
    #[arg(long, default_value_t = 1_000)]
    pub projects: usize,
    /// Where to write the session tokens, one per line.
    #[arg(long)]
    pub tokens: PathBuf,
}

pub async fn run(args: BenchSeedArgs) -> ExitCode {
    match seed(&args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn seed(args: &BenchSeedArgs) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.data_dir)?;
    let kv: Arc<dyn KvStore> = Arc::new(SledStore::open_for_import(&args.data_dir.join("db"))?);
    let accounts = Arc::new(Accounts::new(kv.clone(), PlanTable::default()));
    let hash = hash_password("bench password 1")?;
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    let per = args.accounts.div_ceil(threads);
    let mut seeding = tokio::task::JoinSet::new();
    for t in 0..threads {
        let accounts = accounts.clone();
        let hash = hash.clone();
        let range = (t * per)..((t + 1) * per).min(args.accounts);
        seeding.spawn(async move {
            let mut out = Vec::with_capacity(range.len());
            for i in range {
                let email = format!("bench{i}@example.com");
                let name = format!("Bench {i}");
                let (account, token) = accounts.sign_up_hashed(&email, name, hash.clone()).await?;
                out.push((account.id, token));
            }
            anyhow::Ok((t, out))
        });
    }
    let mut parts: Vec<(usize, Vec<(String, String)>)> = Vec::with_capacity(threads);
    for done in seeding.join_all().await {
        parts.push(done?);
    }
    // In account order: the first line is the account with the projects.
    parts.sort_by_key(|(t, _)| *t);
    let sessions: Vec<(String, String)> = parts.into_iter().flat_map(|(_, s)| s).collect();
    if let Some((owner, _)) = sessions.first() {
        let now = now_ms();
        let mut ops = Vec::new();
        for i in 0..args.projects {
            ops.extend(new_project_ops(&ProjectRecord {
                id: format!("bench-{i:05}"),
                user_id: owner.clone(),
                title: format!("Benchmark project {i}"),
                source: Source::Upload(format!("uploads/bench/{i}.mp4")),
                thumbnail: String::new(),
                duration_sec: 600.0,
                preset: "auto".into(),
                caption_template: "shorts".into(),
                style: CaptionStyle::default(),
                skip_cuts: false,
                state: ProjectState::Completed,
                step_progress: [100; 4],
                error: None,
                reserved_credits: 0,
                clip_count: 10,
                finished: Vec::new(),
                created_at: now - i as i64 * 1000,
                updated_at: now,
                last_event: 0,
                language: Some("en".into()),
                layout: Default::default(),
                aspect_ratio: Default::default(),
                prompt: None,
                remove_fillers: false,
                language_given: false,
                language_probability: Some(1.0),
            })?);
        }
        kv.apply(ops)?;
    }
    kv.flush()?;
    let mut out = std::io::BufWriter::new(std::fs::File::create(&args.tokens)?);
    for (_, token) in &sessions {
        writeln!(out, "{token}")?;
    }
    out.flush()?;
    println!(
        "seeded {} accounts and {} projects into {}",
        sessions.len(),
        args.projects,
        args.data_dir.display()
    );
    Ok(())
}
