//! Degraded mode's settings: whether it is on, its programs, its limit,
//! and their defaults.

use std::ffi::OsString;
use std::time::Duration;

/// Whether degraded mode is on unless configured off.
pub const DEFAULT_ON: bool = true;

/// Whether a failed `iai recall` is followed by `iai-mcp bank-recall`
/// unless configured off (3.3.0 does the same).
pub const DEFAULT_BANK_FALLBACK: bool = true;

/// The `iai` CLI's default name.
pub const DEFAULT_CLI: &str = "iai";

/// The `iai-mcp` CLI's default name.
pub const DEFAULT_ADMIN_CLI: &str = "iai-mcp";

/// Default longest run of one CLI command: 10 s, twice 3.3.0's 5 s, because
/// a cold `iai recall` loads the embedder before it can answer.
pub const DEFAULT_LIMIT: Duration = Duration::from_secs(10);

/// Settings of degraded mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DegradedConfig {
    /// Whether degraded mode is on.
    pub enabled: bool,
    /// The `iai` program: a path, or a name to look for.
    pub cli: OsString,
    /// The `iai-mcp` program (bank-recall): a path, or a name to look for.
    pub admin_cli: OsString,
    /// Whether recall may use `iai-mcp bank-recall` after `iai recall`.
    pub bank_fallback: bool,
    /// Longest run of one command.
    pub limit: Duration,
    /// Variables set for every command (store and socket, when configured).
    pub env: Vec<(OsString, OsString)>,
}

impl Default for DegradedConfig {
    fn default() -> Self {
        DegradedConfig {
            enabled: DEFAULT_ON,
            cli: DEFAULT_CLI.into(),
            admin_cli: DEFAULT_ADMIN_CLI.into(),
            bank_fallback: DEFAULT_BANK_FALLBACK,
            limit: DEFAULT_LIMIT,
            env: Vec::new(),
        }
    }
}
