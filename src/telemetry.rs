//! Logs: JSON lines on stderr (RUST_LOG filters, default info). Tokens and
//! keys are never logged.

pub fn init() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,sled=warn,aws=warn,hyper=warn"));
    let _ = tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
