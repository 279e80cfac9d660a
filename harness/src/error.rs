//! The library's error type.
//!
//! Every fallible harness operation returns [`HarnessError`], so callers (the
//! harness binary, `cargo xtask`, the wrapper's integration tests) can tell a
//! broken setup (a binary that cannot be built, a daemon that never binds)
//! from an outcome the scenario measures, which is data, not an error.

use std::io;
use std::time::Duration;

use crate::client::ClientError;

/// Everything that can go wrong while setting up or driving a scenario.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HarnessError {
    /// An I/O operation failed; `context` says which one.
    #[error("{context}")]
    Io {
        /// What the harness was doing.
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
        /// Where the harness looked and why that failed.
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
    /// The fake daemon exited (or closed its stdout) while the harness was
    /// waiting for it.
    #[error("fake daemon exited while the harness waited for {waiting_for}; its stderr: {stderr}")]
    DaemonExited {
        /// What the harness was waiting for (`BOUND`, an ack, ...).
        waiting_for: String,
        /// The daemon's captured stderr.
        stderr: String,
    },
    /// The fake daemon did not answer within the allotted time.
    #[error("fake daemon sent no {waiting_for} within {timeout:?}")]
    DaemonTimeout {
        /// What the harness was waiting for.
        waiting_for: String,
        /// How long it waited.
        timeout: Duration,
    },
    /// The fake daemon acknowledged a command with something unexpected
    /// (for example `ERR unknown command: ...`).
    #[error("fake daemon answered `{command}` with `{ack}`")]
    UnexpectedAck {
        /// The command that was sent.
        command: String,
        /// The line the daemon answered with.
        ack: String,
    },
    /// A command for the fake daemon was rejected before being sent (it
    /// contained a newline, which would have split it into two commands).
    #[error("invalid fake daemon command {0:?}: it must be a single line")]
    InvalidCommand(String),
    /// Talking MCP to the wrapper failed.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// Sending a signal failed.
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
    /// now; the harness refuses to signal it.
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
        /// How long the harness waited.
        timeout: Duration,
    },
    /// A wrapper command line could not be parsed.
    #[error("invalid wrapper command: {0}")]
    WrapperCommand(String),
    /// The fake daemon printed a line the harness could not parse.
    #[error("cannot parse fake daemon output for `{command}`: {line}")]
    DaemonOutput {
        /// The command whose answer was malformed.
        command: String,
        /// The line as received.
        line: String,
    },
    /// A scenario's precondition failed, so its measurement means nothing
    /// (for example the baseline call before the race did not succeed).
    #[error("scenario precondition failed: {0}")]
    Scenario(String),
}

impl HarnessError {
    /// Wraps an [`io::Error`] with a description of what was being done.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }
}
