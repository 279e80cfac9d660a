//! The dev kit's error type.
//!
//! Every fallible operation of the kit returns [`DevkitError`]: a binary
//! that cannot be found or built, a process that cannot be started,
//! signalled or waited for, a file or a command that failed. The harness's
//! error wraps it whole, so a caller tells a broken setup from an outcome
//! it measures, which is data, not an error.

use std::io;
use std::time::Duration;

/// Everything that can go wrong while finding binaries, running processes
/// and commands, or handling files.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DevkitError {
    /// An I/O operation failed; `context` says which one.
    #[error("{context}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A child process could not be started.
    #[error("cannot start `{program}`")]
    Spawn {
        /// The program that was to be started.
        program: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A binary under test could not be located.
    #[error("binary `{bin}` not found: {detail}")]
    BinaryNotFound {
        /// The binary's name.
        bin: String,
        /// Where the kit looked and why that failed.
        detail: String,
    },
    /// `cargo build` of a package failed or did not report the binary.
    #[error("building `{package}` with cargo failed: {detail}")]
    Build {
        /// The package (or packages) being built.
        package: String,
        /// Cargo's diagnostics, or what was missing from its report.
        detail: String,
    },
    /// Sending a signal failed.
    #[cfg(unix)]
    #[error("cannot send {signal} to pid {pid}")]
    Signal {
        /// The target process.
        pid: u32,
        /// The signal's name.
        signal: String,
        /// The underlying error.
        #[source]
        source: nix::Error,
    },
    /// The process was already reaped, so its pid may belong to someone else
    /// now; the kit refuses to signal it.
    #[error("process {pid} has already exited ({status}); not signalling a possibly reused pid")]
    AlreadyExited {
        /// The former pid.
        pid: u32,
        /// How it exited.
        status: std::process::ExitStatus,
    },
    /// A process did not exit within the allotted time.
    #[error("process {pid} did not exit within {timeout:?}")]
    ExitTimeout {
        /// The process.
        pid: u32,
        /// How long the kit waited.
        timeout: Duration,
    },
    /// A command did not finish within its time limit and was killed with
    /// everything it started; `what` says which command.
    #[error("{what} did not finish within {} s (killed){}", limit.as_secs(), tail_after(tail))]
    TimedOut {
        /// The command, as its caller names it.
        what: String,
        /// Its time limit.
        limit: Duration,
        /// The end of its standard error, possibly empty.
        tail: String,
    },
    /// A step that what follows depends on failed (a command, a Python
    /// environment, an install), so nothing measured after it would mean
    /// anything; the text says which step and why.
    #[error("scenario precondition failed: {0}")]
    Precondition(String),
}

/// `; its stderr ends:` and `tail` on lines of its own, or nothing.
fn tail_after(tail: &str) -> String {
    if tail.trim().is_empty() {
        String::new()
    } else {
        format!("; its stderr ends:\n{tail}")
    }
}

impl DevkitError {
    /// Wraps an [`io::Error`] with a description of what was being done.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }
}
