//! How every scenario starts the wrapper and the fake daemon.

use std::path::PathBuf;

use devkit::bins;

use crate::daemon::Transport;
use crate::error::HarnessError;
use crate::wrapper::BridgeMode;

/// How every scenario starts the wrapper and the fake daemon.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Setup {
    /// `IAI_MCP_BRIDGE_MODE` for the wrapper; `None` leaves it unset (the
    /// wrapper's default, or a foreign wrapper that knows no modes).
    pub mode: Option<BridgeMode>,
    /// The fake daemon binary; `None` finds it with
    /// [`bins::try_fake_daemon_bin`].
    pub fake_daemon_bin: Option<PathBuf>,
    /// How the fake daemon listens (and so how the wrapper dials it).
    pub transport: Transport,
}

impl Setup {
    /// The defaults, with the bridge mode set.
    pub fn mode(mode: BridgeMode) -> Self {
        Self {
            mode: Some(mode),
            ..Self::default()
        }
    }

    /// The fake daemon binary to start.
    pub fn daemon_bin(&self) -> Result<PathBuf, HarnessError> {
        self.fake_daemon_bin
            .clone()
            .map_or_else(|| Ok(bins::try_fake_daemon_bin()?), Ok)
    }
}
