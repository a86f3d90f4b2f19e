//! Work that should use only the CPU nothing else wants: the threads and
//! child processes that join a [`SpareCpu`] run under Linux's `SCHED_IDLE`
//! policy (a core runs them only when nothing else wants it, and any other
//! thread that wakes takes the core back at once) until
//! [`SpareCpu::raise`] puts them back under the normal policy.
//!
//! `SCHED_IDLE` rather than nice 19: measured beside the Whisper model
//! (`projects/stages/ahead.rs`), nice-19 face analysis made the model
//! about 0.3 s slower on a minute of audio (its threads meet many times a
//! second, and a waking model thread waited for a nice-19 one to be
//! preempted); under `SCHED_IDLE` the model's time did not grow.
//!
//! The policy is per thread: a thread joins for itself
//! ([`SpareCpu::enter`]) and a child with every thread it has
//! ([`SpareCpu::adopt`]); threads started later inherit it. Going back to
//! the normal policy needs `CAP_SYS_NICE` or an `RLIMIT_NICE` that allows
//! it; a process without that right gets no `SpareCpu` ([`SpareCpu::new`]
//! is `None`), so work lowered here is never left starving behind other
//! work.

use std::sync::{Arc, Mutex, OnceLock};

/// A set of lowered threads and child processes (cheap to clone: shared).
#[derive(Clone, Debug)]
pub struct SpareCpu(Arc<Mutex<State>>);

#[derive(Debug, Default)]
struct State {
    raised: bool,
    /// Threads of this process inside.
    threads: Vec<libc::pid_t>,
    /// Children inside (with all their threads).
    children: Vec<libc::pid_t>,
}

/// Keeps the calling thread lowered until dropped (or raised).
pub struct Lowered {
    spare: SpareCpu,
    tid: libc::pid_t,
}

impl SpareCpu {
    /// `None` when this process may not put a lowered thread back.
    pub fn new() -> Option<Self> {
        static PERMITTED: OnceLock<bool> = OnceLock::new();
        let permitted = *PERMITTED.get_or_init(|| {
            // Tried on a thread of its own, so no working thread is touched.
            std::thread::spawn(|| {
                let tid = gettid();
                set_policy(tid, libc::SCHED_IDLE) && set_policy(tid, libc::SCHED_OTHER)
            })
            .join()
            .unwrap_or(false)
        });
        if !permitted {
            tracing::debug!("cannot put a lowered thread back: no work on spare CPU");
        }
        permitted.then(|| SpareCpu(Arc::default()))
    }

    /// Lowers the calling thread until the returned guard drops or
    /// [`raise`](Self::raise) is called. After the raise it puts the thread
    /// under the normal policy instead: a thread started by a lowered one
    /// was born lowered.
    pub fn enter(&self) -> Lowered {
        let tid = gettid();
        let mut state = self.lock();
        if state.raised {
            set_policy(tid, libc::SCHED_OTHER);
        } else if set_policy(tid, libc::SCHED_IDLE) {
            state.threads.push(tid);
        }
        Lowered {
            spare: self.clone(),
            tid,
        }
    }

    /// Lowers the child `pid` (just started) with every thread it has; the
    /// threads it starts later inherit the policy. After the raise it puts
    /// the child under the normal policy (started by a lowered thread, it
    /// was born lowered).
    pub fn adopt(&self, pid: u32) {
        let pid = pid as libc::pid_t;
        let mut state = self.lock();
        if state.raised {
            set_process_policy(pid, libc::SCHED_OTHER);
        } else if set_process_policy(pid, libc::SCHED_IDLE) {
            state.children.push(pid);
        }
    }

    /// Puts everything inside back under the normal policy; what joins
    /// later is not lowered.
    pub fn raise(&self) {
        let mut state = self.lock();
        state.raised = true;
        for tid in state.threads.drain(..) {
            set_policy(tid, libc::SCHED_OTHER);
        }
        for pid in state.children.drain(..) {
            // A child that has ended is simply not found.
            set_process_policy(pid, libc::SCHED_OTHER);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Lowered {
    fn drop(&mut self) {
        // The thread may go on with other work (a pool's thread does).
        let mut state = self.spare.lock();
        if let Some(i) = state.threads.iter().position(|t| *t == self.tid) {
            state.threads.swap_remove(i);
            set_policy(self.tid, libc::SCHED_OTHER);
        }
    }
}

fn gettid() -> libc::pid_t {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// Sets one thread's scheduling policy (`SCHED_IDLE` or `SCHED_OTHER`,
/// both at static priority 0; its nice value is kept).
fn set_policy(tid: libc::pid_t, policy: libc::c_int) -> bool {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: sched_setscheduler reads `param` and changes only `tid`.
    unsafe { libc::sched_setscheduler(tid, policy, &param) == 0 }
}

/// Puts process `pid` and every thread it has back under the normal policy
/// (one left lowered by a run that was killed: even to die on SIGKILL it
/// must first be given the CPU, which a busy machine gives an idle-policy
/// process rarely). Without the right to raise, nothing was lowered.
pub fn put_back(pid: u32) {
    set_process_policy(pid as libc::pid_t, libc::SCHED_OTHER);
}

/// Sets the policy of a child and of every thread it has: the main thread
/// first, so a thread it starts while the others are listed inherits it.
fn set_process_policy(pid: libc::pid_t, policy: libc::c_int) -> bool {
    if !set_policy(pid, policy) {
        return false;
    }
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for tid in tasks
            .flatten()
            .filter_map(|t| t.file_name().to_str()?.parse().ok())
        {
            if tid != pid {
                set_policy(tid, policy);
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy_of(tid: libc::pid_t) -> libc::c_int {
        // SAFETY: sched_getscheduler only reads.
        unsafe { libc::sched_getscheduler(tid) }
    }

    #[test]
    fn lowered_threads_and_children_are_put_back() {
        let Some(spare) = SpareCpu::new() else {
            eprintln!("skipped: this process may not put a lowered thread back");
            return;
        };
        let (idle, normal) = (libc::SCHED_IDLE, libc::SCHED_OTHER);
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id() as libc::pid_t;
        let inside = {
            let spare = spare.clone();
            std::thread::spawn(move || {
                let lowered = spare.enter();
                let inside = policy_of(0);
                // Leaving puts the thread back on its own.
                drop(lowered);
                (inside, policy_of(0))
            })
            .join()
            .unwrap()
        };
        assert_eq!(inside, (idle, normal));
        spare.adopt(child.id());
        assert_eq!(policy_of(pid), idle);

        // A thread still inside when the work is raised, and one it started.
        let (tx, rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let waiting = {
            let spare = spare.clone();
            std::thread::spawn(move || {
                let _lowered = spare.enter();
                let started = std::thread::spawn(policy_of_self_later);
                tx.send(policy_of(0)).unwrap();
                go_rx.recv().unwrap();
                (policy_of(0), started.join().unwrap())
            })
        };
        assert_eq!(rx.recv().unwrap(), idle);
        spare.raise();
        go_tx.send(()).unwrap();
        let (after, started) = waiting.join().unwrap();
        assert_eq!(after, normal);
        // A thread started inside inherits the policy and is not raised
        // unless it joined (so every thread of the work joins).
        assert_eq!(started, idle);
        assert_eq!(policy_of(pid), normal);
        // After the raise nothing is lowered any more, not even a thread
        // born lowered (started by a lowered thread) that enters late.
        let late = std::thread::spawn(move || {
            let param = libc::sched_param { sched_priority: 0 };
            // SAFETY: changes only this thread's policy.
            unsafe { libc::sched_setscheduler(0, idle, &param) };
            let _lowered = spare.enter();
            policy_of(0)
        });
        assert_eq!(late.join().unwrap(), normal);
        let _ = child.kill();
        let _ = child.wait();
    }

    fn policy_of_self_later() -> libc::c_int {
        policy_of(0)
    }
}
