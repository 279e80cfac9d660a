//! How the bridge waits for and reconnects to the daemon.

use super::error::ConfigError;
use super::values::{EmptyIsDefault, Millis, Switch};
use crate::bridge::{Backoff, BridgeMode, Policy, PolicyError, Timings, WatchSettings, policy};
use crate::endpoint_watch;

/// The bridge's mode and timings.
#[derive(Debug, Clone, clap::Args)]
pub struct BridgeArgs {
    /// Reconnect behaviour. `prefix` reproduces the pre-fix V3-05 race (a
    /// call made during a reconnect fails with daemon_unreachable) and exists
    /// only to demonstrate and test it; never use it in production. It turns
    /// degraded mode off.
    #[arg(long, env = "IAI_MCP_BRIDGE_MODE", value_name = "MODE",
        default_value_t = BridgeMode::default(), value_parser = EmptyIsDefault::<BridgeMode>::new())]
    pub bridge_mode: BridgeMode,

    /// Sleep before reconnecting after a lost connection, in ms. Widens the
    /// race window for tests; leave at 0 in production.
    #[arg(long, env = "IAI_MCP_RECONNECT_TEST_DELAY_MS", value_name = "MS",
        default_value_t = Millis(policy::RECONNECT_DELAY), value_parser = EmptyIsDefault::<Millis>::new())]
    pub reconnect_test_delay_ms: Millis,

    /// How long a call waits for a daemon connection before failing with
    /// daemon_unreachable, in ms (covers a daemon cold start of 7-8 s).
    #[arg(long, env = "IAI_MCP_CONNECT_WAIT_MS", value_name = "MS",
        default_value_t = Millis(policy::CONNECT_WAIT), value_parser = EmptyIsDefault::<Millis>::new())]
    pub connect_wait_ms: Millis,

    /// How long a memory call that the CLI can answer waits for a daemon
    /// that is down before the CLI answers it, in ms (a daemon lost less
    /// than --connect-wait-ms ago is presumed restarting and waited for).
    #[arg(long, env = "IAI_MCP_FALLBACK_WAIT_MS", value_name = "MS",
        default_value_t = Millis(policy::FALLBACK_WAIT), value_parser = EmptyIsDefault::<Millis>::new())]
    pub fallback_wait_ms: Millis,

    /// How long a call waits for the daemon's response, in ms (generous:
    /// consolidation can take tens of seconds).
    #[arg(long, env = "IAI_MCP_CALL_TIMEOUT_MS", value_name = "MS",
        default_value_t = Millis(policy::CALL_TIMEOUT), value_parser = EmptyIsDefault::<Millis>::new())]
    pub call_timeout_ms: Millis,

    /// First delay between failed connect attempts, in ms; doubles with
    /// jitter up to --backoff-max-ms while the daemon stays down.
    #[arg(long, env = "IAI_MCP_BACKOFF_INITIAL_MS", value_name = "MS",
        default_value_t = Millis(policy::BACKOFF_INITIAL), value_parser = EmptyIsDefault::<Millis>::new())]
    pub backoff_initial_ms: Millis,

    /// Longest delay between failed connect attempts, in ms.
    #[arg(long, env = "IAI_MCP_BACKOFF_MAX_MS", value_name = "MS",
        default_value_t = Millis(policy::BACKOFF_MAX), value_parser = EmptyIsDefault::<Millis>::new())]
    pub backoff_max_ms: Millis,

    /// Watch the daemon's endpoint (the socket's directory, or the port
    /// and token files') while the daemon is away, and dial when it
    /// appears (`on`/`off`; off: dial on the backoff).
    #[arg(long, env = "IAI_MCP_ENDPOINT_WATCH", value_name = "on|off",
        default_value_t = Switch(true), value_parser = EmptyIsDefault::<Switch>::new())]
    pub endpoint_watch: Switch,

    /// While the endpoint is watched, look at it at least this often, in
    /// ms, in case the file system's notice of its return was missed.
    #[arg(long, env = "IAI_MCP_ENDPOINT_FLOOR_MS", value_name = "MS",
        default_value_t = Millis(endpoint_watch::DEFAULT_FLOOR), value_parser = EmptyIsDefault::<Millis>::new())]
    pub endpoint_floor_ms: Millis,
}

/// What [`BridgeArgs`] resolve to: the bridge's part of the
/// [`super::Config`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BridgeSettings {
    /// The bridge's mode and timings.
    pub policy: Policy,
    /// How the endpoint is watched while the daemon is away.
    pub watch: WatchSettings,
}

impl BridgeArgs {
    /// The policy and the watch; a zero floor is refused.
    pub(super) fn resolve(self) -> Result<BridgeSettings, ConfigError> {
        if self.endpoint_floor_ms.0.is_zero() {
            return Err(ConfigError::Zero("endpoint-floor-ms"));
        }
        let watch = WatchSettings {
            enabled: self.endpoint_watch.0,
            floor: self.endpoint_floor_ms.0,
        };
        Ok(BridgeSettings {
            policy: self.policy()?,
            watch,
        })
    }

    /// The bridge's policy, its timings checked.
    pub(super) fn policy(self) -> Result<Policy, PolicyError> {
        let timings = Timings {
            reconnect_delay: self.reconnect_test_delay_ms.0,
            connect_wait: self.connect_wait_ms.0,
            fallback_wait: self.fallback_wait_ms.0,
            call_timeout: self.call_timeout_ms.0,
            backoff: Backoff::new(self.backoff_initial_ms.0, self.backoff_max_ms.0)?,
        };
        Policy::new(self.bridge_mode, timings)
    }
}
