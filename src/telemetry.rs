//! Logs on stderr (RUST_LOG filters, default info): readable text lines on
//! a terminal, JSON lines otherwise or when `node.log_format = "json"`.
//! Tokens and keys are never logged.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

static TEXT: AtomicBool = AtomicBool::new(false);

/// `format`: "auto", "text" or "json" (see `node.log_format`).
pub fn init(format: &str) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,sled=warn,aws=warn,hyper=warn"));
    let text = match format {
        "text" => true,
        "json" => false,
        _ => std::io::stderr().is_terminal(),
    };
    TEXT.store(text, Ordering::Relaxed);
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = if text {
        builder
            .with_target(false)
            .with_ansi(std::io::stderr().is_terminal())
            .compact()
            .try_init()
    } else {
        builder.json().try_init()
    };
}

/// One line per request: `GET /api/projects 200 3.1 ms` as text; the
/// fields `method`, `path`, `status`, `ms` in JSON.
pub fn request(request_id: &str, method: &str, path: &str, status: u16, ms: f64) {
    if TEXT.load(Ordering::Relaxed) {
        tracing::info!(request_id, "{method} {path} {status} {ms:.1} ms");
    } else {
        tracing::info!(request_id, method, path, status, ms, "request");
    }
}
