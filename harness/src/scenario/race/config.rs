//! What a race run is told: its settings, its fixed bounds, and the
//! protocol revision and tool every call uses.

use std::time::Duration;

use clap::Args;

use crate::scenario::settings;
use crate::scenario::setup::Setup;

/// The protocol revision the seed test initializes with.
pub const PROTOCOL_VERSION: &str = "2025-03-26";

/// The tool every call of the scenario uses (read-only, no arguments).
pub const TOOL: &str = "topology";

/// Parameters of one race run: its settings (the `race` command's timing
/// flags) and its fixed bounds; `Default` is every value declared here.
#[derive(Debug, Clone, Args)]
pub struct RaceConfig {
    /// Reconnect delay given to the wrapper (IAI_MCP_RECONNECT_TEST_DELAY_MS):
    /// the width of the race window.
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    pub delay_ms: u64,
    /// Time between the daemon dropping the connection and the racing call.
    // Measured from the daemon's `DROPPED`.
    #[arg(long, default_value_t = 50, value_name = "MS")]
    pub offset_ms: u64,
    /// Bound on every tool call (the seed allows the racing call 20 s).
    #[arg(skip = Duration::from_secs(20))]
    pub call_timeout: Duration,
    /// Wait past `delay_ms` after the drop before counting connections.
    #[arg(skip = Duration::from_millis(250))]
    pub settle: Duration,
    /// How long past `delay_ms` after the drop recovery may take.
    #[arg(skip = Duration::from_secs(10))]
    pub recovery_timeout: Duration,
    /// Drop and race again after recovering (the second-drop property).
    #[arg(skip)]
    pub second_drop: bool,
    /// The wrapper's bridge mode and the fake daemon.
    #[arg(skip)]
    pub setup: Setup,
}

impl Default for RaceConfig {
    fn default() -> Self {
        settings::defaults()
    }
}

/// How long a wrapper may take to exit once its stdin closed before the
/// run records that it did not.
pub const EOF_EXIT_BOUND: Duration = Duration::from_secs(3);
