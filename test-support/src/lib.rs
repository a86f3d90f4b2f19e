//! Test support shared by the workspace's tests (a dev-dependency of the
//! engine `clipforge-actors` and of the `clipforge` binary): a throw-away
//! PostgreSQL server ([`postgres`]), the real server started on port 0 on
//! its own data directory and called over HTTP ([`server`]), and free
//! ports. It depends on neither crate it tests.

pub mod postgres;
pub mod server;

/// Seconds of the media file at `path`, as `ffprobe` reads its container.
pub fn media_seconds(path: &std::path::Path) -> f64 {
    let out = std::process::Command::new("ffprobe")
        .args(["-v", "error", "-show_entries", "format=duration"])
        .args(["-of", "default=nw=1:nk=1"])
        .arg(path)
        .output()
        .expect("ffprobe runs");
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim()
        .parse()
        .unwrap_or_else(|_| panic!("no duration for {}: {text}", path.display()))
}

/// A port on 127.0.0.1 nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port on 127.0.0.1")
        .port()
}
