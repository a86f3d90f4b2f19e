//! `clipforge mcp`: the MCP server on stdin/stdout, for agents that start
//! it as a subprocess (Claude Desktop, Cursor…). Its tools call a Clipforge
//! server's REST API (`--url`, `CLIPFORGE_URL`) with the API key in
//! `CLIPFORGE_API_KEY`; stdout carries only the protocol, logs go to stderr.

use std::process::ExitCode;
use std::time::Duration;

use clipforge_actors::accounts::is_api_key;
use rmcp::ServiceExt;

use crate::mcp::{Backend, Clipforge};

#[derive(clap::Args, Debug)]
pub struct McpArgs {
    /// The Clipforge server the tools call.
    #[arg(long, env = "CLIPFORGE_URL", default_value = "http://127.0.0.1:8080")]
    pub url: String,
}

pub async fn run(args: McpArgs) -> ExitCode {
    let key = std::env::var("CLIPFORGE_API_KEY").unwrap_or_default();
    if !is_api_key(&key) {
        eprintln!(
            "error: set CLIPFORGE_API_KEY to an API key (cf_…; create one on the console's Developers page)"
        );
        return ExitCode::FAILURE;
    }
    let client = match reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: HTTP client: {e}");
            return ExitCode::FAILURE;
        }
    };
    crate::mcp::tools::init(&crate::api::openapi::finish(
        &crate::app::api_service().spec(),
    ));
    let handler = Clipforge::new(Backend::Remote {
        base: args.url.trim_end_matches('/').to_string(),
        key,
        client,
    });
    match handler.serve(rmcp::transport::stdio()).await {
        Ok(running) => match running.waiting().await {
            Ok(_) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        },
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
