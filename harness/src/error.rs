//! The library's error type.
//!
//! Every fallible harness operation returns [`HarnessError`], so callers (the
//! harness binary, `cargo xtask`, the wrapper's integration tests) can tell a
//! broken setup (a binary that cannot be built, a daemon that never binds)
//! from an outcome the scenario measures, which is data, not an error.

use std::io;
use std::time::Duration;

use devkit::error::DevkitError;

use crate::client::ClientError;

/// Everything that can go wrong while setting up or driving a scenario.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HarnessError {
    /// Finding or building a binary, a process or a command, a file: the
    /// dev kit's error, as it says it.
    #[error(transparent)]
    Devkit(#[from] DevkitError),
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
    /// A scenario's settings could not be read from its command's matches.
    #[error("invalid settings for {0}")]
    Settings(String),
    /// A report could not be written as JSON.
    #[error("cannot write the report as JSON: {0}")]
    ReportJson(#[source] serde_json::Error),
}

impl HarnessError {
    /// Wraps an [`io::Error`] with a description of what was being done.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        DevkitError::io(context, source).into()
    }
}
