//! Child processes that can be cancelled: each runs in its own process group
//! so that cancelling kills it and everything it started.

use std::os::unix::process::CommandExt as _;
use std::process::{ExitStatus, Stdio};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

use super::spare_cpu::SpareCpu;
use crate::stage::StageError;

/// Kills a child's whole process group.
pub fn kill_group(pid: u32) {
    // SAFETY: plain syscall; a negative pid addresses the process group that
    // `spawn` created for this child (it is the group leader).
    unsafe {
        libc::kill(-(pid as i32), libc::SIGKILL);
    }
}

/// A std `Command` that starts in a new process group (for blocking code).
pub fn std_command(program: &str) -> std::process::Command {
    let mut cmd = std::process::Command::new(program);
    cmd.process_group(0).stdin(Stdio::null());
    cmd
}

fn spawn(program: &str, args: &[String]) -> Result<Child, StageError> {
    // No `pre_exec` here (e.g. PR_SET_PDEATHSIG): it forces fork() instead of
    // posix_spawn, and fork() while the model's BLAS/OpenMP threads run can
    // deadlock (OpenBLAS's fork handler did, in an earlier backend).
    let mut cmd = Command::new(program);
    cmd.args(args)
        .process_group(0)
        .kill_on_drop(true)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.spawn()
        .map_err(|e| StageError::tool(program, format!("cannot start {program}: {e}")))
}

/// What a finished child printed.
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    /// The last 64 KiB of stderr.
    pub stderr: String,
}

const STDERR_KEEP: usize = 64 * 1024;

/// Runs `program` to completion, collecting its output. Cancelling kills its
/// process group and returns `StageError::Cancelled`.
pub async fn run(
    program: &str,
    args: &[String],
    cancel: &CancellationToken,
) -> Result<Finished, StageError> {
    run_with_lines(program, args, cancel, |_| {}).await
}

/// Like [`run`], calling `on_line` for every stdout line as it arrives (used
/// for ffmpeg's `-progress pipe:1`). stdout is then not collected.
pub async fn run_with_lines(
    program: &str,
    args: &[String],
    cancel: &CancellationToken,
    on_line: impl FnMut(&str) + Send,
) -> Result<Finished, StageError> {
    run_on(program, args, cancel, None, on_line).await
}

/// [`run_with_lines`], the child on `spare` CPU when given.
pub async fn run_on(
    program: &str,
    args: &[String],
    cancel: &CancellationToken,
    spare: Option<&SpareCpu>,
    mut on_line: impl FnMut(&str) + Send,
) -> Result<Finished, StageError> {
    let mut child = spawn(program, args)?;
    let pid = child.id();
    if let (Some(spare), Some(pid)) = (spare, pid) {
        spare.adopt(pid);
    }
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout is piped"));
    let mut stderr = child.stderr.take().expect("stderr is piped");

    let stderr_task = tokio::spawn(async move {
        let mut kept: Vec<u8> = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            match stderr.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    kept.extend_from_slice(&buf[..n]);
                    if kept.len() > 2 * STDERR_KEEP {
                        kept.drain(..kept.len() - STDERR_KEEP);
                    }
                }
            }
        }
        let start = kept.len().saturating_sub(STDERR_KEEP);
        String::from_utf8_lossy(&kept[start..]).into_owned()
    });

    let mut collected = Vec::new();
    let read_stdout = async {
        let mut line = String::new();
        loop {
            line.clear();
            match stdout.read_line(&mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    on_line(line.trim_end());
                    collected.extend_from_slice(line.as_bytes());
                }
            }
        }
    };
    tokio::select! {
        _ = read_stdout => {}
        _ = cancel.cancelled() => {
            if let Some(pid) = pid { kill_group(pid); }
            let _ = child.wait().await;
            stderr_task.abort();
            return Err(StageError::Cancelled);
        }
    }
    let status = tokio::select! {
        s = child.wait() => s.map_err(|e| StageError::tool(program, e.to_string()))?,
        _ = cancel.cancelled() => {
            if let Some(pid) = pid { kill_group(pid); }
            let _ = child.wait().await;
            stderr_task.abort();
            return Err(StageError::Cancelled);
        }
    };
    // Reap anything the child left behind in its group.
    if let Some(pid) = pid {
        kill_group(pid);
    }
    let stderr = stderr_task.await.unwrap_or_default();
    Ok(Finished {
        status,
        stdout: collected,
        stderr,
    })
}

/// The most useful line of an ffmpeg/ffprobe error output.
pub fn last_error_line(stderr: &str) -> String {
    stderr
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("Conversion failed"))
        .unwrap_or("no error output")
        .chars()
        .take(300)
        .collect()
}

/// Parses ffmpeg's `-progress` key `out_time_us=` (or `out_time_ms=`, which
/// ffmpeg also reports in microseconds) into seconds.
pub fn progress_seconds(line: &str) -> Option<f64> {
    let v = line
        .strip_prefix("out_time_us=")
        .or_else(|| line.strip_prefix("out_time_ms="))?;
    v.trim()
        .parse::<i64>()
        .ok()
        .filter(|us| *us >= 0)
        .map(|us| us as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn cancel_kills_the_process_group() {
        let cancel = CancellationToken::new();
        let c2 = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            c2.cancel();
        });
        let marker = format!("sleep {}", 40_000 + std::process::id() % 10_000);
        // The shell starts two children; the shell and both must die.
        let args = vec!["-c".to_string(), format!("{marker} & {marker}; wait")];
        let err = run("bash", &args, &cancel).await.err().expect("cancelled");
        assert!(matches!(err, StageError::Cancelled));
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let ps = std::process::Command::new("pgrep")
            .args(["-f", &marker])
            .output()
            .unwrap();
        assert!(
            ps.stdout.is_empty(),
            "process survived: {}",
            String::from_utf8_lossy(&ps.stdout)
        );
    }

    #[tokio::test]
    async fn output_and_status_are_collected() {
        let cancel = CancellationToken::new();
        let args = vec![
            "-c".to_string(),
            "echo out; echo err >&2; exit 3".to_string(),
        ];
        let f = run("bash", &args, &cancel).await.unwrap();
        assert_eq!(f.status.code(), Some(3));
        assert_eq!(String::from_utf8_lossy(&f.stdout), "out\n");
        assert_eq!(f.stderr.trim(), "err");
    }

    #[test]
    fn progress_lines_parse() {
        assert_eq!(progress_seconds("out_time_us=1500000"), Some(1.5));
        assert_eq!(progress_seconds("out_time_us=N/A"), None);
        assert_eq!(progress_seconds("frame=3"), None);
    }
}
