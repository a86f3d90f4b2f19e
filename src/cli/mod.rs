//! Command-line arguments and dispatch.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench_schedule;
mod bench_seed;
mod clip;
mod serve;

#[derive(Parser, Debug)]
#[command(
    name = "clipforge",
    version,
    about = "Turn long videos into captioned vertical clips"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Where the Whisper model lives and how it runs (shared by every command).
#[derive(clap::Args, Debug, Clone)]
pub struct ModelArgs {
    /// CTranslate2 Whisper model directory (model.bin, config.json, tokenizer.json).
    #[arg(long = "model", env = "CLIPFORGE_MODEL_DIR")]
    pub model_dir: Option<PathBuf>,
    /// CPU threads for speech recognition (0 = all cores).
    #[arg(long, env = "CLIPFORGE_THREADS", default_value_t = 0)]
    pub threads: usize,
    /// int8, int8_float32, float32 or default.
    #[arg(long, env = "CLIPFORGE_COMPUTE_TYPE", default_value = "int8")]
    pub compute_type: String,
    /// Beam size for decoding.
    #[arg(long, env = "CLIPFORGE_BEAM_SIZE", default_value_t = 5)]
    pub beam_size: usize,
    /// 30 s windows decoded together.
    #[arg(long, env = "CLIPFORGE_BATCH_SIZE", default_value_t = 8)]
    pub batch_size: usize,
}

impl ModelArgs {
    pub fn dir(&self) -> PathBuf {
        self.model_dir.clone().unwrap_or_else(default_model_dir)
    }
}

/// `$CLIPFORGE_CACHE_DIR/models/whisper-base`, where `make setup` installs it.
pub fn default_model_dir() -> PathBuf {
    let cache = std::env::var_os("CLIPFORGE_CACHE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("."));
            home.join(".cache").join("clipforge")
        });
    cache.join("models").join("whisper-base")
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Cut a video file or URL into captioned vertical clips.
    Clip(clip::ClipArgs),
    /// Run the HTTP service.
    Serve(serve::ServeArgs),
    /// Fill a data directory with accounts and projects for `make bench-api`.
    BenchSeed(bench_seed::BenchSeedArgs),
    /// Measure the scheduler: re-arm after restart, firing lateness.
    BenchSchedule(bench_schedule::BenchArgs),
    /// Write the OpenAPI document (default: openapi/openapi.json).
    Openapi {
        #[arg(default_value = "openapi/openapi.json")]
        out: PathBuf,
    },
}

pub async fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Clip(args) => {
            // The command's own output is its progress lines; engine logs
            // (JSON on stderr) only when asked for with RUST_LOG.
            if std::env::var_os("RUST_LOG").is_some() {
                crate::telemetry::init("auto");
            }
            clip::run(args).await
        }
        Command::Serve(args) => serve::run(args).await,
        Command::BenchSeed(args) => tokio::task::spawn_blocking(move || bench_seed::run(args))
            .await
            .unwrap_or(ExitCode::FAILURE),
        Command::BenchSchedule(args) => bench_schedule::run(args).await,
        Command::Openapi { out } => {
            let spec = crate::api::openapi::finish(&crate::app::api_service().spec());
            if let Some(dir) = out.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            match std::fs::write(&out, spec) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: writing {}: {e}", out.display());
                    ExitCode::FAILURE
                }
            }
        }
    }
}
