//! `clipforge`: the command line. `clipforge clip` runs the pipeline on a
//! file or URL without a server.

use std::process::ExitCode;

use clap::Parser;

mod admin;
mod allocator;
mod api;
mod app;
mod bodylimit;
mod cli;
mod cluster;
mod config;
mod connlimit;
mod console;
mod deadlines;
mod error_body;
mod leftovers;
mod mcp;
mod media;
mod middleware;
mod posts;
mod ratelimit;
mod security;
mod session;
mod state;
mod telemetry;
mod webhooks;

fn main() -> ExitCode {
    clipforge_actors::media::heap::configure();
    clipforge_actors::storage::objects::install_default_crypto_provider();
    let args = cli::Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(cli::run(args))
}
