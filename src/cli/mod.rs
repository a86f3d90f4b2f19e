//! Command-line arguments and dispatch.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use figment::value::Value;

use crate::config::{Config, PipelineConfig};

mod bench_schedule;
mod bench_seed;
mod clip;
mod cluster_certs;
mod mcp;
mod serve;
mod transcribe;

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

/// Where the Whisper model lives and how it runs: the `[pipeline]`
/// settings, layered like the server's (defaults → the config file →
/// `CLIPFORGE_PIPELINE_*` → these flags; `crate::config`).
#[derive(clap::Args, Debug, Clone)]
pub struct ModelArgs {
    /// Config file read for `[pipeline]` (missing file = defaults).
    #[arg(long, env = "CLIPFORGE_CONFIG", default_value = "cluster.toml")]
    pub config: PathBuf,
    /// CTranslate2 Whisper model directory (model.bin, config.json,
    /// tokenizer.json) [env: CLIPFORGE_PIPELINE_MODEL_DIR].
    #[arg(long = "model")]
    pub model_dir: Option<PathBuf>,
    /// CPU threads for speech recognition, 0 = all cores
    /// [env: CLIPFORGE_PIPELINE_THREADS; default 0].
    #[arg(long)]
    pub threads: Option<usize>,
    /// int8, int8_float32, float32 or default
    /// [env: CLIPFORGE_PIPELINE_COMPUTE_TYPE; default int8].
    #[arg(long)]
    pub compute_type: Option<String>,
    /// Beam size for decoding [env: CLIPFORGE_PIPELINE_BEAM_SIZE; default 5].
    #[arg(long)]
    pub beam_size: Option<usize>,
    /// 30 s windows decoded together [env: CLIPFORGE_PIPELINE_BATCH_SIZE; default 8].
    #[arg(long)]
    pub batch_size: Option<usize>,
    /// libx264 preset for the clips [env: CLIPFORGE_PIPELINE_X264_PRESET; default veryfast].
    #[arg(long)]
    pub x264_preset: Option<String>,
}

impl ModelArgs {
    /// The `[pipeline]` settings with these flags on top.
    pub fn pipeline(&self) -> Result<PipelineConfig, String> {
        let mut flags: Vec<(&str, Value)> = Vec::new();
        if let Some(d) = &self.model_dir {
            flags.push(("pipeline.model_dir", d.display().to_string().into()));
        }
        if let Some(v) = self.threads {
            flags.push(("pipeline.threads", v.into()));
        }
        if let Some(v) = &self.compute_type {
            flags.push(("pipeline.compute_type", v.clone().into()));
        }
        if let Some(v) = self.beam_size {
            flags.push(("pipeline.beam_size", v.into()));
        }
        if let Some(v) = self.batch_size {
            flags.push(("pipeline.batch_size", v.into()));
        }
        if let Some(v) = &self.x264_preset {
            flags.push(("pipeline.x264_preset", v.clone().into()));
        }
        Config::load(Some(&self.config), &flags).map(|c| c.pipeline)
    }
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Cut a video file or URL into captioned vertical clips.
    Clip(clip::ClipArgs),
    /// Transcribe a local audio or video file: words, times and language
    /// as JSON on stdout.
    Transcribe(transcribe::TranscribeArgs),
    /// Run the HTTP service.
    Serve(serve::ServeArgs),
    /// Fill a data directory with accounts and projects for `make bench-api`.
    BenchSeed(bench_seed::BenchSeedArgs),
    /// Measure the scheduler: re-arm after restart, firing lateness.
    BenchSchedule(bench_schedule::BenchArgs),
    /// Cluster tools.
    #[command(subcommand)]
    Cluster(ClusterCommand),
    /// The MCP server on stdin/stdout: tools that call a Clipforge server
    /// (`--url`) with the API key in CLIPFORGE_API_KEY.
    Mcp(mcp::McpArgs),
    /// Write the OpenAPI document (default: openapi/openapi.json).
    Openapi {
        #[arg(default_value = "openapi/openapi.json")]
        out: PathBuf,
    },
}

#[derive(Subcommand, Debug)]
pub enum ClusterCommand {
    /// Make a CA and one certificate per node for mutual TLS between nodes.
    InitCerts(cluster_certs::InitCertsArgs),
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
        Command::Transcribe(args) => {
            if std::env::var_os("RUST_LOG").is_some() {
                crate::telemetry::init("auto");
            }
            transcribe::run(args).await
        }
        Command::Serve(args) => serve::run(args).await,
        Command::BenchSeed(args) => tokio::task::spawn_blocking(move || bench_seed::run(args))
            .await
            .unwrap_or(ExitCode::FAILURE),
        Command::BenchSchedule(args) => bench_schedule::run(args).await,
        Command::Cluster(ClusterCommand::InitCerts(args)) => cluster_certs::run(args),
        Command::Mcp(args) => mcp::run(args).await,
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
