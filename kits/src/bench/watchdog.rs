//! Bounding the bench's blocking waits.
//!
//! The client blocks in `read`, so a subject that stops answering would
//! hang the bench. A [`Watchdog`] watches the reader's progress counter
//! during each phase; when it has not moved for the timeout, it ends the
//! subject's side of the stream (SIGKILL, or `shutdown` for a socket), and
//! the phase fails with [`ClientError::Timeout`] instead of hanging.

use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use harness::client::ClientError;
use harness::error::HarnessError;

/// Longest sleep between two checks of the progress counter.
const MAX_TICK: Duration = Duration::from_millis(100);

/// How a watchdog stops a stuck subject.
#[derive(Debug)]
pub enum Abort {
    /// SIGKILL this child process. The caller keeps the child unreaped (in
    /// its [`ChildGuard`](devkit::process::ChildGuard)) while the watchdog runs, so
    /// the pid cannot have been reused.
    Kill(u32),
    /// Shut down both directions of this socket (a clone of the client's).
    Shutdown(UnixStream),
}

impl Abort {
    fn fire(&self) {
        match self {
            Self::Kill(pid) => {
                if let Ok(raw) = i32::try_from(*pid) {
                    let _ = kill(Pid::from_raw(raw), Signal::SIGKILL);
                }
            }
            Self::Shutdown(stream) => {
                let _ = stream.shutdown(Shutdown::Both);
            }
        }
    }
}

/// Stops a subject whose stream shows no progress for `timeout`.
#[derive(Debug)]
pub struct Watchdog {
    progress: Arc<AtomicU64>,
    timeout: Duration,
    abort: Abort,
}

impl Watchdog {
    /// A watchdog over `progress` (see
    /// [`ResponseReader::progress`](super::transport::ResponseReader::progress)).
    pub fn new(progress: Arc<AtomicU64>, timeout: Duration, abort: Abort) -> Self {
        Self {
            progress,
            timeout,
            abort,
        }
    }

    /// Runs `body` while watching. If the watchdog fired, the body's result
    /// (whatever error the cut stream caused) is replaced by
    /// [`ClientError::Timeout`] naming `what`.
    pub fn guard<T>(
        &self,
        what: &str,
        body: impl FnOnce() -> Result<T, HarnessError>,
    ) -> Result<T, HarnessError> {
        let tick = (self.timeout / 4).clamp(Duration::from_millis(1), MAX_TICK);
        let (result, fired) = thread::scope(|scope| {
            let (stop, stopped) = mpsc::channel::<()>();
            // Returns whether it fired.
            let watcher = thread::Builder::new()
                .name("bench-watchdog".to_owned())
                .spawn_scoped(scope, move || {
                    let mut seen = self.progress.load(Ordering::Relaxed);
                    let mut since = Instant::now();
                    // Until `stop` is sent or dropped.
                    while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(tick) {
                        let now = self.progress.load(Ordering::Relaxed);
                        if now != seen {
                            (seen, since) = (now, Instant::now());
                        } else if since.elapsed() >= self.timeout {
                            self.abort.fire();
                            return true;
                        }
                    }
                    false
                })
                .map_err(|e| HarnessError::io("starting the bench watchdog thread", e))?;
            let result = body();
            drop(stop);
            Ok::<_, HarnessError>((result, watcher.join().unwrap_or(false)))
        })?;
        if fired {
            return Err(ClientError::Timeout {
                waiting_for: format!("progress during {what} (the subject was stopped)"),
                after: self.timeout,
            }
            .into());
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn fires_on_a_silent_socket_and_not_on_a_quick_body() {
        let (ours, _theirs) = UnixStream::pair().unwrap();
        let progress = Arc::new(AtomicU64::new(0));
        let dog = Watchdog::new(
            Arc::clone(&progress),
            Duration::from_millis(50),
            Abort::Shutdown(ours.try_clone().unwrap()),
        );
        assert_eq!(dog.guard("nothing", || Ok(5)).unwrap(), 5);
        let mut reader = &ours;
        let error = dog
            .guard("a read", || {
                let read = reader.read(&mut [0u8; 1]);
                read.map_err(|e| HarnessError::io("read", e))
            })
            .unwrap_err();
        assert!(
            matches!(error, HarnessError::Client(ClientError::Timeout { .. })),
            "{error:?}"
        );
    }
}
