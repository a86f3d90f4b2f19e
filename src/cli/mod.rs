//! Command-line arguments and dispatch.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench_schedule;
mod bench_seed;
mod bench_store;
mod clip;
mod cluster_certs;
mod mcp;
mod model_args;
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

#[derive(Subcommand, Debug)]
#[expect(clippy::large_enum_variant, reason = "parsed once per process")]
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
    /// Measure a request's read of PostgreSQL: the store's async side
    /// against the blocking pool.
    BenchStore(bench_store::BenchStoreArgs),
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
        Command::BenchSeed(args) => bench_seed::run(args).await,
        Command::BenchSchedule(args) => bench_schedule::run(args).await,
        Command::BenchStore(args) => bench_store::run(args).await,
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
