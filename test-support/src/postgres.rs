//! A throw-away PostgreSQL server for tests: `initdb` in a temporary
//! directory, `pg_ctl start` on a free 127.0.0.1 port (socket in the same
//! directory), stopped and removed when dropped. Uses Debian's `postgresql`
//! package (`/usr/lib/postgresql/<version>/bin`; `scripts/setup.sh --test`
//! installs it) or the directory in `CLIPFORGE_PG_BIN`. PostgreSQL refuses
//! to run as root, so under root the server runs as the `postgres` user on
//! a directory that user owns.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::free_port;

pub struct TestPostgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    as_postgres: bool,
    pub port: u16,
}

/// The newest `/usr/lib/postgresql/<version>/bin` with `initdb`, or
/// `CLIPFORGE_PG_BIN`.
fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CLIPFORGE_PG_BIN") {
        return PathBuf::from(dir);
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    found.sort();
    match found.pop() {
        Some((_, bin)) => bin,
        None => panic!(
            "PostgreSQL is not installed (no /usr/lib/postgresql/<version>/bin/initdb): \
             this test needs Debian's `postgresql` package (`scripts/setup.sh --test` \
             installs it), or CLIPFORGE_PG_BIN naming a directory with initdb and pg_ctl"
        ),
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

impl TestPostgres {
    /// Initialises a cluster and starts the server; panics with the
    /// server's log when it cannot.
    pub fn start() -> TestPostgres {
        let bin = bin_dir();
        let dir = tempfile::Builder::new()
            .prefix("clipforge-pg-")
            .tempdir()
            .expect("a temporary directory");
        let as_postgres = is_root();
        let pg = TestPostgres {
            dir,
            bin,
            as_postgres,
            port: 0,
        };
        if as_postgres {
            pg.check(
                Command::new("chown")
                    .args(["postgres:postgres"])
                    .arg(pg.dir.path()),
                "chown the data directory to postgres",
            );
        }
        let data = pg.data_dir();
        let initdb = pg.bin.join("initdb");
        pg.check(
            pg.command(&initdb)
                .arg("-D")
                .arg(&data)
                .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
                .args(["--no-instructions"]),
            "initdb",
        );
        let mut pg = pg;
        pg.start_server();
        pg
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn log_file(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    /// The program, run as `postgres` when we are root.
    fn command(&self, program: &Path) -> Command {
        if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        }
    }

    fn check(&self, cmd: &mut Command, what: &str) -> Output {
        let out = cmd
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("{what}: cannot run: {e}"));
        assert!(
            out.status.success(),
            "{what} failed ({}):\n{}{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(self.log_file()).unwrap_or_default()
        );
        out
    }

    fn pg_ctl(&self, port: u16, action: &str) -> Output {
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.dir.path().display()
        );
        self.command(&self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(self.data_dir())
            .arg("-l")
            .arg(self.log_file())
            .args(["-w", "-t", "60", "-o", &options, action])
            .stdin(Stdio::null())
            .output()
            .expect("run pg_ctl")
    }

    /// Starts on a free port (another one when it was taken meanwhile).
    fn start_server(&mut self) {
        let mut last = None;
        for _ in 0..3 {
            let port = if self.port != 0 {
                self.port
            } else {
                free_port()
            };
            let out = self.pg_ctl(port, "start");
            if out.status.success() {
                self.port = port;
                return;
            }
            last = Some(out);
        }
        let out = last.expect("tried");
        panic!(
            "pg_ctl start failed:\n{}{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(self.log_file()).unwrap_or_default()
        );
    }

    /// `postgres://postgres@127.0.0.1:<port>/postgres`.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Stops the server the way a crash would (`-m immediate`: no
    /// checkpoint; the next start recovers from the WAL).
    pub fn stop(&self) {
        self.check(
            self.command(&self.bin.join("pg_ctl"))
                .arg("-D")
                .arg(self.data_dir())
                .args(["-w", "-t", "60", "-m", "immediate", "stop"]),
            "pg_ctl stop",
        );
    }

    /// Starts the stopped server again on the same port.
    pub fn restart(&mut self) {
        self.start_server();
    }

    /// Runs one SQL command with `psql` and returns its unaligned output.
    pub fn psql(&self, sql: &str) -> String {
        let out = self.check(
            self.command(&self.bin.join("psql"))
                .args(["-X", "-A", "-t", "-h", "127.0.0.1", "-U", "postgres"])
                .args(["-p", &self.port.to_string(), "-d", "postgres", "-c", sql]),
            "psql",
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

impl Drop for TestPostgres {
    fn drop(&mut self) {
        let _ = self
            .command(&self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(self.data_dir())
            .args(["-w", "-t", "60", "-m", "immediate", "stop"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}
