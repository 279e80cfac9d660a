//! The MCP session's own limits: the heartbeat, the exit grace, the line
//! cap.

use std::time::Duration;

use super::error::ConfigError;
use super::values::{EmptyIsDefault, Millis};
use crate::codec::DEFAULT_MAX_LINE_BYTES;
use crate::lifecycle::heartbeat;
use crate::mcp::server::DEFAULT_SHUTDOWN_GRACE;

/// The session's intervals and sizes.
#[derive(Debug, Clone, clap::Args)]
pub struct SessionArgs {
    /// How often the heartbeat file is refreshed, in ms.
    #[arg(long, env = "IAI_MCP_HEARTBEAT_INTERVAL_MS", value_name = "MS",
        default_value_t = Millis(heartbeat::DEFAULT_INTERVAL), value_parser = EmptyIsDefault::<Millis>::new())]
    pub heartbeat_interval_ms: Millis,

    /// On exit, how long calls in flight may still finish, in ms (kept well
    /// under the 2 s clients wait before SIGTERM).
    #[arg(long, env = "IAI_MCP_SHUTDOWN_GRACE_MS", value_name = "MS",
        default_value_t = Millis(DEFAULT_SHUTDOWN_GRACE), value_parser = EmptyIsDefault::<Millis>::new())]
    pub shutdown_grace_ms: Millis,

    /// Longest accepted line on stdin and from the daemon, in bytes.
    #[arg(long, env = "IAI_MCP_MAX_LINE_BYTES", value_name = "BYTES",
        default_value_t = DEFAULT_MAX_LINE_BYTES, value_parser = EmptyIsDefault::<usize>::new())]
    pub max_line_bytes: usize,
}

/// What [`SessionArgs`] resolve to: the session's part of the
/// [`super::Config`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionSettings {
    /// How often the heartbeat file is refreshed.
    pub heartbeat_interval: Duration,
    /// On exit, how long calls in flight may still finish.
    pub shutdown_grace: Duration,
    /// Longest accepted line on stdin and from the daemon, in bytes.
    pub max_line_bytes: usize,
}

impl SessionArgs {
    /// The limits; a zero line cap or heartbeat interval is refused.
    pub(super) fn resolve(self) -> Result<SessionSettings, ConfigError> {
        if self.max_line_bytes == 0 {
            return Err(ConfigError::Zero("max-line-bytes"));
        }
        if self.heartbeat_interval_ms.0.is_zero() {
            return Err(ConfigError::Zero("heartbeat-interval-ms"));
        }
        Ok(SessionSettings {
            heartbeat_interval: self.heartbeat_interval_ms.0,
            shutdown_grace: self.shutdown_grace_ms.0,
            max_line_bytes: self.max_line_bytes,
        })
    }
}
