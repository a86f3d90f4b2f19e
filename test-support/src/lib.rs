//! Test support shared by the workspace's tests (a dev-dependency of the
//! engine `clipforge-actors` and of the `clipforge` binary): a throw-away
//! PostgreSQL server ([`postgres`]), the real server started on port 0 on
//! its own data directory and called over HTTP ([`server`]), and free
//! ports. It depends on neither crate it tests.

pub mod postgres;
pub mod server;

/// A port on 127.0.0.1 nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port on 127.0.0.1")
        .port()
}
