//! Owning child processes so that none outlives its owner, and capturing
//! their output without ever blocking them.
//!
//! [`ChildGuard`] kills and reaps its child when dropped, on every path
//! including a panic, and refuses to signal a pid it has already reaped
//! (that pid may belong to an unrelated process by then).
//! [`GroupGuard`] does the same for a child that leads a process group of
//! its own, killing the whole group first.
//! [`CapturedOutput`] drains a pipe on a thread into a buffer, so a child that
//! logs a lot never stalls on a full stderr pipe.

use std::io::{self, Read, Write};
#[cfg(unix)]
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

#[cfg(unix)]
use nix::sys::signal::{kill, killpg};
#[cfg(unix)]
use nix::unistd::Pid;

use crate::error::DevkitError;
use crate::sync::lock;

/// Unix signals, re-exported so callers need not depend on `nix`. Windows
/// has no signals to send: there a child is only killed.
#[cfg(unix)]
pub use nix::sys::signal::Signal;

/// Upper bound of the back-off between two polls in [`ChildGuard::wait_timeout`].
const MAX_POLL_INTERVAL: Duration = Duration::from_millis(20);

/// A child process that is killed (SIGKILL) and reaped when the guard
/// drops, panics included.
#[derive(Debug)]
pub struct ChildGuard {
    child: Child,
}

impl ChildGuard {
    /// Takes ownership of an already started child.
    pub fn new(child: Child) -> Self {
        Self { child }
    }

    /// Starts `command` and guards the resulting child.
    pub fn spawn(command: &mut Command) -> Result<Self, DevkitError> {
        let program = command.get_program().to_string_lossy().into_owned();
        command
            .spawn()
            .map(Self::new)
            .map_err(|source| DevkitError::Spawn { program, source })
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Mutable access to the child, for taking its stdio handles.
    pub fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Returns the exit status if the child has exited (reaping it), without
    /// blocking.
    pub fn try_wait(&mut self) -> Result<Option<ExitStatus>, DevkitError> {
        self.child
            .try_wait()
            .map_err(|e| DevkitError::io(format!("waiting for pid {}", self.pid()), e))
    }

    /// Waits up to `timeout` for the child to exit; `Ok(None)` if it is still
    /// running then.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Result<Option<ExitStatus>, DevkitError> {
        let deadline = Instant::now() + timeout;
        let mut interval = Duration::from_millis(1);
        loop {
            if let Some(status) = self.try_wait()? {
                return Ok(Some(status));
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            thread::sleep(interval.min(deadline - now));
            interval = (interval * 2).min(MAX_POLL_INTERVAL);
        }
    }

    /// Like [`wait_timeout`](Self::wait_timeout), but a child still running
    /// at the deadline is a [`DevkitError::ExitTimeout`].
    pub fn wait_exit(&mut self, timeout: Duration) -> Result<ExitStatus, DevkitError> {
        self.wait_timeout(timeout)?.ok_or(DevkitError::ExitTimeout {
            pid: self.pid(),
            timeout,
        })
    }

    /// Sends `signal` to the child (Unix only: Windows has no signals).
    ///
    /// Fails with [`DevkitError::AlreadyExited`] when the child has already
    /// exited: its pid is then free for reuse and must not be signalled.
    #[cfg(unix)]
    pub fn signal(&mut self, signal: Signal) -> Result<(), DevkitError> {
        let pid = self.pid();
        if let Some(status) = self.try_wait()? {
            return Err(DevkitError::AlreadyExited { pid, status });
        }
        let raw = i32::try_from(pid).expect("pids fit in i32");
        kill(Pid::from_raw(raw), signal).map_err(|source| DevkitError::Signal {
            pid,
            signal: signal.as_str().to_owned(),
            source,
        })
    }

    /// Kills the child (SIGKILL) unless it already exited, and reaps it.
    pub fn kill(&mut self) -> Result<ExitStatus, DevkitError> {
        if let Some(status) = self.try_wait()? {
            return Ok(status);
        }
        // The child may exit between try_wait and kill; kill then reports an
        // error we can ignore, since wait below reaps it either way.
        let _ = self.child.kill();
        self.child
            .wait()
            .map_err(|e| DevkitError::io(format!("reaping pid {}", self.pid()), e))
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// A child started as the leader of a process group of its own: the whole
/// group is killed (SIGKILL; on Windows the leader's process tree) when
/// the guard drops, panics included, then the leader is reaped.
#[derive(Debug)]
pub struct GroupGuard {
    child: ChildGuard,
}

impl GroupGuard {
    /// Starts `command` as the leader of a new process group (on Windows,
    /// which has none of this kind, as a plain child whose process tree
    /// stands for the group).
    pub fn spawn(command: &mut Command) -> Result<Self, DevkitError> {
        #[cfg(unix)]
        command.process_group(0);
        Ok(GroupGuard {
            child: ChildGuard::spawn(command)?,
        })
    }

    /// The leader's pid (also the group's id).
    pub fn pid(&self) -> u32 {
        self.child.pid()
    }

    /// The guarded leader.
    pub fn leader(&mut self) -> &mut ChildGuard {
        &mut self.child
    }

    /// Kills every process of the group and reaps the leader.
    pub fn kill(&mut self) -> Result<ExitStatus, DevkitError> {
        self.kill_group();
        self.child.kill()
    }

    /// Sends `signal` to every process of the group, without waiting.
    /// While any process is in the group its id is not given to another
    /// process, so this reaches only what the leader started, even once
    /// the leader itself has been reaped.
    #[cfg(unix)]
    pub fn signal_group(&mut self, signal: Signal) {
        if let Ok(pgid) = i32::try_from(self.child.pid()) {
            let _ = killpg(Pid::from_raw(pgid), signal);
        }
    }

    /// Kills every process of the group (SIGKILL) without reaping the
    /// leader.
    #[cfg(unix)]
    pub fn kill_group(&mut self) {
        self.signal_group(Signal::SIGKILL);
    }

    /// Kills the leader's process tree, the nearest Windows has to a
    /// group ([`kill_tree`]), without reaping the leader. Once the leader
    /// has exited, `taskkill /T` no longer finds its tree from it (Windows
    /// keeps no parent to follow), so what it started is left.
    #[cfg(not(unix))]
    pub fn kill_group(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            kill_tree(self.child.pid());
        }
    }
}

/// How long `taskkill` may take in [`kill_tree`].
#[cfg(windows)]
const TASKKILL_LIMIT: Duration = Duration::from_secs(15);

/// Ends process `pid` and every process it started, with Windows' own
/// `taskkill /F /T`: waits for `taskkill` (at most [`TASKKILL_LIMIT`]),
/// not for the processes to be gone.
#[cfg(windows)]
pub fn kill_tree(pid: u32) {
    let mut taskkill = Command::new("taskkill");
    taskkill
        .args(["/F", "/T", "/PID"])
        .arg(pid.to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if let Ok(mut guard) = ChildGuard::spawn(&mut taskkill) {
        let _ = guard.wait_timeout(TASKKILL_LIMIT);
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill_group();
        let _ = self.child.kill();
    }
}

#[derive(Debug, Default)]
struct CaptureState {
    bytes: Vec<u8>,
    eof: bool,
}

/// The bytes read so far from a child's pipe (usually stderr) by a
/// background thread, which keeps reading until end of file so the child
/// never blocks on a full pipe.
#[derive(Debug, Clone)]
pub struct CapturedOutput {
    shared: Arc<(Mutex<CaptureState>, Condvar)>,
}

impl CapturedOutput {
    /// Starts draining `source` on a thread named after `label`; with
    /// `HARNESS_ECHO_STDERR` set (not to `0` or empty), every line is also
    /// copied to this process's stderr, prefixed by `label`, for debugging.
    pub fn spawn(source: impl Read + Send + 'static, label: &str) -> Self {
        let shared = Arc::new((Mutex::new(CaptureState::default()), Condvar::new()));
        let echo =
            std::env::var_os("HARNESS_ECHO_STDERR").is_some_and(|v| !v.is_empty() && v != "0");
        let thread_shared = Arc::clone(&shared);
        let thread_label = label.to_owned();
        let spawned = thread::Builder::new()
            .name(format!("capture-{label}"))
            .spawn(move || drain(source, &thread_shared, &thread_label, echo));
        if spawned.is_err() {
            // Without a thread nothing will ever read: report EOF at once so
            // waiters do not hang.
            lock(&shared.0).eof = true;
        }
        Self { shared }
    }

    /// Everything captured so far, decoded lossily as UTF-8.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&lock(&self.shared.0).bytes).into_owned()
    }

    /// At most the last `max_bytes` bytes captured, for error messages.
    pub fn tail(&self, max_bytes: usize) -> String {
        let state = lock(&self.shared.0);
        let start = state.bytes.len().saturating_sub(max_bytes);
        String::from_utf8_lossy(&state.bytes[start..]).into_owned()
    }

    /// Waits up to `timeout` for end of file; returns whether it was reached.
    ///
    /// Once a child has exited its pipe normally reaches EOF at once; it does
    /// not when a grandchild inherited the pipe, hence the bound.
    pub fn wait_eof(&self, timeout: Duration) -> bool {
        let (mutex, condvar) = &*self.shared;
        let guard = lock(mutex);
        let (guard, _) = condvar
            .wait_timeout_while(guard, timeout, |state| !state.eof)
            .unwrap_or_else(PoisonError::into_inner);
        guard.eof
    }
}

fn drain(mut source: impl Read, shared: &(Mutex<CaptureState>, Condvar), label: &str, echo: bool) {
    let mut chunk = [0u8; 8192];
    loop {
        match source.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                if echo {
                    let mut err = io::stderr().lock();
                    for line in String::from_utf8_lossy(&chunk[..n]).lines() {
                        let _ = writeln!(err, "[{label}] {line}");
                    }
                }
                lock(&shared.0).bytes.extend_from_slice(&chunk[..n]);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    lock(&shared.0).eof = true;
    shared.1.notify_all();
}
