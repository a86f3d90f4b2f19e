//! What a previous run of this node left behind when it was killed: its
//! temporary files (`scratch_in`) and the tools it had started
//! (`stop_orphans`). Both run at start, once the store is open.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

use anyhow::Context as _;
use clipforge_actors::media::spare_cpu;
use std::time::{Duration, Instant};

/// Makes `dir` this process's directory for temporary files (every
/// `tempfile` made without a directory: decoded audio, scene lists, stage
/// scratch folders) and empties it first. A process killed mid-stage leaves
/// its temporary files behind; in `/tmp` nothing would ever remove them,
/// here the node's next start does. Called once the store is open, so no
/// other node runs on this data directory.
pub fn scratch_in(dir: &Path) -> anyhow::Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut left = 0usize;
    for entry in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        let removed = match path.is_dir() && !path.is_symlink() {
            true => fs::remove_dir_all(&path),
            false => fs::remove_file(&path),
        };
        match removed {
            Ok(()) => left += 1,
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot remove a leftover temporary file")
            }
        }
    }
    if left > 0 {
        tracing::info!(count = left, dir = %dir.display(), "removed temporary files a previous run left");
    }
    if let Err(already) = tempfile::env::override_temp_dir(dir) {
        anyhow::ensure!(
            already == dir,
            "temporary files already go to {}",
            already.display()
        );
    }
    Ok(())
}

/// Programs the node starts as child processes.
const TOOLS: [&str; 3] = ["ffmpeg", "ffprobe", "yt-dlp"];

/// Stops (SIGKILL, with its process group) every ffmpeg, ffprobe or yt-dlp
/// working on files under `data_dir`: children of a previous run of this
/// node, which outlive it when it is killed (they run in their own process
/// groups, and `PR_SET_PDEATHSIG` would need `fork`, see
/// `media::process`). An encode left running would keep a core busy while
/// this run does the same work again. A process counts when one of its
/// arguments is a path under `data_dir` (or contains one, as a filter's
/// file does), as written or, for a relative data directory, from the same
/// working directory. Returns how many were stopped.
pub fn stop_orphans(data_dir: &Path) -> usize {
    let own_cwd = std::env::current_dir().ok();
    let mut needles: Vec<(Vec<u8>, bool)> = Vec::new();
    if let Ok(full) = data_dir.canonicalize() {
        needles.push((with_slash(&full), false));
    }
    if data_dir.is_relative() {
        needles.push((with_slash(data_dir), true));
    }
    let me = std::process::id() as i32;
    let mut stopped = Vec::new();
    for entry in fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(cmdline) = fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let mut args = cmdline.split(|&b| b == 0).filter(|a| !a.is_empty());
        let tool = args
            .next()
            .and_then(|p| Path::new(OsStr::from_bytes(p)).file_name())
            .and_then(OsStr::to_str);
        if !tool.is_some_and(|t| TOOLS.contains(&t)) {
            continue;
        }
        let same_cwd = || fs::read_link(entry.path().join("cwd")).ok() == own_cwd;
        let ours = args.any(|arg| {
            needles
                .iter()
                .any(|(n, relative)| contains(arg, n) && (!relative || same_cwd()))
        });
        if !ours {
            continue;
        }
        // Possibly left at idle priority (work done ahead): put back, so
        // it gets the CPU to die on.
        spare_cpu::put_back(pid as u32);
        // SAFETY: plain syscalls on a pid read from /proc.
        unsafe {
            if libc::getpgid(pid) == pid {
                libc::kill(-pid, libc::SIGKILL);
            } else {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        stopped.push((pid, cmdline.clone()));
        tracing::warn!(
            pid,
            tool = tool.unwrap_or_default(),
            "stopped a tool a previous run of this node left running"
        );
    }
    // Gone before the node goes on (2 s at most): a dying process still
    // holds its files and its share of the CPU.
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline
        && stopped.iter().any(|(pid, cmdline)| {
            fs::read(format!("/proc/{pid}/cmdline")).ok().as_ref() == Some(cmdline)
        })
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    stopped.len()
}

fn with_slash(path: &Path) -> Vec<u8> {
    let mut bytes = path.as_os_str().as_bytes().to_vec();
    if bytes.last() != Some(&b'/') {
        bytes.push(b'/');
    }
    bytes
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
    use std::process::{Command, Stdio};

    fn ffmpeg_writing(out: &Path) -> std::process::Child {
        Command::new("ffmpeg")
            .args(["-nostdin", "-v", "error", "-re", "-f", "lavfi", "-i"])
            .args(["anullsrc=r=8000:cl=mono", "-t", "120", "-y"])
            .arg(out)
            .process_group(0)
            .stdin(Stdio::null())
            .spawn()
            .expect("start ffmpeg")
    }

    #[test]
    fn tools_on_this_data_directory_are_stopped_others_not() {
        let ours = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let mut left = ffmpeg_writing(&ours.path().join("tmp-out.wav"));
        let mut elsewhere = ffmpeg_writing(&other.path().join("out.wav"));
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert_eq!(stop_orphans(ours.path()), 1);
        let status = left.wait().unwrap();
        assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
        assert!(
            elsewhere.try_wait().unwrap().is_none(),
            "the other one runs on"
        );
        let _ = elsewhere.kill();
        let _ = elsewhere.wait();
    }
}
