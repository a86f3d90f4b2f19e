//! `clipforge serve`: the HTTP service on one node.

use std::path::PathBuf;
use std::process::ExitCode;

use poem::listener::{Acceptor, Listener, TcpListener};

use crate::config::Config;

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Config file (missing file = defaults).
    #[arg(long, env = "CLIPFORGE_CONFIG", default_value = "cluster.toml")]
    pub config: PathBuf,
    /// HTTP port (0 picks a free port and prints it).
    #[arg(long)]
    pub port: Option<u16>,
    /// Data directory (sled database, local media, work folders).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
}

pub async fn run(args: ServeArgs) -> ExitCode {
    if let Err(e) = clipforge_actors::faults::install_from_env() {
        eprintln!("error: CLIPFORGE_FAULTS: {e}");
        return ExitCode::from(2);
    }
    let mut flags = Vec::new();
    if let Some(d) = &args.data_dir {
        flags.push(("node.data_dir", d.display().to_string().into()));
    }
    let mut config = match Config::load(Some(&args.config), &flags) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: configuration: {e}");
            return ExitCode::from(2);
        }
    };
    crate::telemetry::init(&config.node.log_format);
    if let Some(p) = args.port {
        let host = config
            .node
            .http_addr
            .rsplit_once(':')
            .map(|(h, _)| h.to_string())
            .unwrap_or_else(|| "0.0.0.0".into());
        config.node.http_addr = format!("{host}:{p}");
    }
    let acceptor = match TcpListener::bind(config.node.http_addr.clone())
        .into_acceptor()
        .await
    {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: cannot listen on {}: {e}", config.node.http_addr);
            return ExitCode::FAILURE;
        }
    };
    let local = acceptor
        .local_addr()
        .into_iter()
        .find_map(|a| a.as_socket_addr().copied())
        .map(|a| a.port())
        .unwrap_or(0);
    let public_url = config
        .node
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://127.0.0.1:{local}"));
    let state = match crate::app::build_state(config, public_url.clone()).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let tree = state.engine.tree().clone();
    let state_guard = state.guard.clone();
    let limits = state.config.limits.clone();
    let endpoint = match crate::cluster::endpoint(&state, crate::app::routes(state.clone())).await {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    if crate::console::embedded() {
        println!("Console: {public_url}/");
    } else {
        println!(
            "Console: {public_url}/ (not built into this binary: run `make console`, then rebuild)"
        );
    }
    println!("clipforge listening on port {local}");
    println!(
        "API: {public_url}/api   docs: {public_url}/docs   OpenAPI: {public_url}/api/openapi.json"
    );
    let guard = state_guard;
    let max_connections = match limits.max_connections {
        0 => crate::connlimit::default_max_connections(),
        n => n,
    };
    let acceptor = crate::connlimit::ConnLimit::new(
        acceptor,
        limits.connections_per_ip,
        max_connections,
        std::sync::Arc::new(move |ip: std::net::IpAddr| guard.trusted(ip)),
    );
    let acceptor = crate::deadlines::Deadlines::new(
        acceptor,
        std::time::Duration::from_secs(limits.header_read_timeout_secs.max(1)),
        std::time::Duration::from_secs(limits.idle_timeout_secs.max(1)),
    );
    let server = poem::Server::new_with_acceptor(acceptor);
    let leaving = state.clone();
    let shutdown = async move {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
        }
        // A clustered node hands its actors off before it stops serving.
        if let Some(c) = &leaving.cluster {
            crate::cluster::leave(c, &leaving.engine, &leaving.publishing).await;
        }
    };
    let served = server.run_with_graceful_shutdown(
        endpoint,
        shutdown,
        Some(std::time::Duration::from_secs(10)),
    );
    tokio::select! {
        r = served => match r {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        },
        // Escalation reached the top of the supervision tree.
        _ = tree.down() => {
            eprintln!("error: the node's supervisors gave up (see the log); exiting");
            ExitCode::FAILURE
        }
    }
}
