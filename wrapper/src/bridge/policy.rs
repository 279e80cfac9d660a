//! How the bridge behaves around connection loss: the fixed policy and the
//! pre-fix (V3-05) policy are two values of the same type, read by one state
//! machine.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use thiserror::Error;

/// Which reconnect behaviour the bridge follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum BridgeMode {
    /// Calls made while a reconnect is under way wait for it; any number of
    /// drops is survived; read-only calls in flight are re-sent after each
    /// lost connection while their deadline allows.
    #[default]
    Fixed,
    /// Reproduces the original wrapper's V3-05 race, for demonstrations and
    /// regression tests only: a call made while disconnected fails at once
    /// with `daemon_unreachable: bridge not connected`, and at most one
    /// reconnect happens per process lifetime.
    Prefix,
}

impl BridgeMode {
    /// The spelling used on the command line and in `IAI_MCP_BRIDGE_MODE`.
    pub fn as_str(self) -> &'static str {
        match self {
            BridgeMode::Fixed => "fixed",
            BridgeMode::Prefix => "prefix",
        }
    }
}

impl fmt::Display for BridgeMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A bridge mode string that is neither `fixed` nor `prefix`.
#[derive(Debug, Error)]
#[error("unknown bridge mode {0:?} (expected \"fixed\" or \"prefix\")")]
pub struct UnknownMode(String);

impl FromStr for BridgeMode {
    type Err = UnknownMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "fixed" => Ok(BridgeMode::Fixed),
            "prefix" => Ok(BridgeMode::Prefix),
            other => Err(UnknownMode(other.to_owned())),
        }
    }
}

/// Timing parameters that make no sense together.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum PolicyError {
    /// The first backoff step must be positive, or a dead daemon would be
    /// dialled in a busy loop.
    #[error("backoff initial delay must be greater than zero")]
    ZeroBackoff,
    /// The backoff cap must not be below its first step.
    #[error("backoff maximum ({max:?}) is below its initial delay ({initial:?})")]
    BackoffCapBelowInitial {
        /// The configured first step.
        initial: Duration,
        /// The configured cap.
        max: Duration,
    },
    /// A call must be allowed some time to wait for a connection.
    #[error("connect wait must be greater than zero")]
    ZeroConnectWait,
    /// A call must be allowed some time for its response.
    #[error("call timeout must be greater than zero")]
    ZeroCallTimeout,
}

/// Capped, jittered exponential backoff between failed connect attempts.
///
/// Validated at construction so that a misconfiguration is reported at start
/// up rather than turning into a busy loop against a dead daemon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
}

impl Backoff {
    /// A backoff starting at `initial` and doubling up to `max`.
    pub fn new(initial: Duration, max: Duration) -> Result<Self, PolicyError> {
        if initial.is_zero() {
            return Err(PolicyError::ZeroBackoff);
        }
        if max < initial {
            return Err(PolicyError::BackoffCapBelowInitial { initial, max });
        }
        Ok(Backoff { initial, max })
    }

    /// The first step.
    pub fn initial(&self) -> Duration {
        self.initial
    }

    /// The cap.
    pub fn max(&self) -> Duration {
        self.max
    }

    /// Delay before connect attempt number `failures + 1`, after `failures`
    /// consecutive failures (`failures >= 1`). `jitter` in `[0, 1)` spreads
    /// the wrappers of many sessions so that they do not dial a restarting
    /// daemon in lockstep: the delay is drawn from `[step / 2, 3 step / 2)`,
    /// which keeps the mean at the step and spreads a herd that lost its
    /// daemon at one instant over a whole step. Near the cap the draw stops
    /// at it (`[step / 2, cap)`: a mean of three quarters of the cap at
    /// most, a spread of half a step), so no pause is longer than the cap.
    pub fn delay(&self, failures: u32, jitter: f64) -> Duration {
        let exp = failures.saturating_sub(1).min(31);
        let step = self
            .initial
            .saturating_mul(1u32 << exp.min(20))
            .min(self.max);
        let low = step / 2;
        let high = (step + low).min(self.max);
        (low + (high - low).mul_f64(jitter.clamp(0.0, 1.0))).max(Duration::from_millis(1))
    }
}

/// Default of [`Timings::reconnect_delay`]: none. Only tests set one
/// (`IAI_MCP_RECONNECT_TEST_DELAY_MS`), to widen the race window.
pub const RECONNECT_DELAY: Duration = Duration::ZERO;

/// Default of [`Timings::connect_wait`]: 10 s. The real daemon needs 7-8 s
/// from a cold start (embedder load and store open), so a call made while
/// it restarts should ride that out rather than fail.
pub const CONNECT_WAIT: Duration = Duration::from_secs(10);

/// Default of [`Timings::fallback_wait`]: 1 s. A user whose daemon is down
/// gets the degraded answer about a second (plus the CLI's own run time)
/// after asking, while a daemon that is reachable answers in well under
/// that.
pub const FALLBACK_WAIT: Duration = Duration::from_secs(1);

/// Default of [`Timings::call_timeout`]: 120 s. Consolidation and
/// structural recall over a large store can legitimately take tens of
/// seconds; the deadline is there to end waits on a hung daemon, not to cut
/// slow work short.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// Default first backoff step: 50 ms, because a restart usually rebinds at
/// once and the first retry should be quick.
pub const BACKOFF_INITIAL: Duration = Duration::from_millis(50);

/// Default backoff cap: 2 s, so a long outage costs one dial every 1-3 s
/// (jittered around the step); while a call waits the step stops at
/// 200 ms, so the caller hears of a returning daemon quickly.
pub const BACKOFF_MAX: Duration = Duration::from_secs(2);

/// Every timing the bridge uses; the defaults, and the reasons for them,
/// are the constants of this module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timings {
    /// Sleep before the first reconnect attempt after a connection closes
    /// (later attempts follow the backoff). Only tests set it: it widens
    /// the race window so that a call can deterministically land inside
    /// it.
    pub reconnect_delay: Duration,
    /// How long a call may wait for a connection before it fails with
    /// `daemon_unreachable`.
    pub connect_wait: Duration,
    /// How long a call that can be answered another way (degraded mode)
    /// waits for a daemon that is down before it is handed on; a daemon
    /// that was connected less than `connect_wait` ago is presumed to be
    /// restarting and is waited for in full.
    pub fallback_wait: Duration,
    /// How long a call may wait for the daemon's response once sent.
    pub call_timeout: Duration,
    /// Spacing of connect attempts while the daemon stays down.
    pub backoff: Backoff,
}

impl Default for Timings {
    fn default() -> Self {
        Timings {
            reconnect_delay: RECONNECT_DELAY,
            connect_wait: CONNECT_WAIT,
            fallback_wait: FALLBACK_WAIT,
            call_timeout: CALL_TIMEOUT,
            backoff: Backoff {
                initial: BACKOFF_INITIAL,
                max: BACKOFF_MAX,
            },
        }
    }
}

impl Timings {
    /// Check the values that must be positive.
    pub fn validate(&self) -> Result<(), PolicyError> {
        if self.connect_wait.is_zero() {
            return Err(PolicyError::ZeroConnectWait);
        }
        if self.call_timeout.is_zero() {
            return Err(PolicyError::ZeroCallTimeout);
        }
        Ok(())
    }
}

/// The complete behaviour of the bridge: timings plus the mode's rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    mode: BridgeMode,
    timings: Timings,
}

impl Policy {
    /// A validated policy.
    pub fn new(mode: BridgeMode, timings: Timings) -> Result<Self, PolicyError> {
        timings.validate()?;
        Ok(Policy { mode, timings })
    }

    /// The mode this policy implements.
    pub fn mode(&self) -> BridgeMode {
        self.mode
    }

    /// The timings.
    pub fn timings(&self) -> &Timings {
        &self.timings
    }

    /// Whether a call made while a reconnect is under way waits for it (the
    /// V3-05 fix) instead of failing at once.
    pub(crate) fn calls_wait_for_reconnect(&self) -> bool {
        self.mode == BridgeMode::Fixed
    }

    /// How many reconnects after a lost connection the bridge may make in
    /// its lifetime (`None`: unlimited).
    pub(crate) fn reconnect_budget(&self) -> Option<u32> {
        match self.mode {
            BridgeMode::Fixed => None,
            BridgeMode::Prefix => Some(1),
        }
    }

    /// Whether replay-safe calls in flight on a lost connection are re-sent
    /// on the next one.
    pub(crate) fn replays(&self) -> bool {
        self.mode == BridgeMode::Fixed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_rejects_zero_and_inverted_caps() {
        assert_eq!(
            Backoff::new(Duration::ZERO, Duration::from_secs(1)),
            Err(PolicyError::ZeroBackoff)
        );
        assert!(matches!(
            Backoff::new(Duration::from_secs(2), Duration::from_secs(1)),
            Err(PolicyError::BackoffCapBelowInitial { .. })
        ));
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_with_jitter_around_the_step() {
        let b =
            Backoff::new(Duration::from_millis(100), Duration::from_millis(1000)).expect("valid");
        assert_eq!(b.delay(1, 0.0), Duration::from_millis(50));
        assert_eq!(b.delay(2, 0.0), Duration::from_millis(100));
        assert_eq!(b.delay(3, 0.0), Duration::from_millis(200));
        assert_eq!(b.delay(10, 0.0), Duration::from_millis(500));
        assert_eq!(b.delay(2, 0.5), Duration::from_millis(200));
        assert_eq!(b.delay(3, 0.5), Duration::from_millis(400));
        // Near the cap the draw stops at it: [400, 1000) at step 800.
        assert_eq!(b.delay(4, 0.5), Duration::from_millis(700));
        assert!(b.delay(100, 0.999) < Duration::from_millis(1000));
        assert!(b.delay(100, 0.999) >= Duration::from_millis(998));
    }

    #[test]
    fn modes_parse_and_print() {
        assert_eq!("fixed".parse::<BridgeMode>().ok(), Some(BridgeMode::Fixed));
        assert_eq!(
            "prefix".parse::<BridgeMode>().ok(),
            Some(BridgeMode::Prefix)
        );
        assert!("Fixed".parse::<BridgeMode>().is_err());
        assert_eq!(BridgeMode::Prefix.to_string(), "prefix");
    }

    #[test]
    fn zero_waits_are_rejected() {
        let t = Timings {
            connect_wait: Duration::ZERO,
            ..Timings::default()
        };
        assert_eq!(
            Policy::new(BridgeMode::Fixed, t),
            Err(PolicyError::ZeroConnectWait)
        );
        let t = Timings {
            call_timeout: Duration::ZERO,
            ..Timings::default()
        };
        assert_eq!(
            Policy::new(BridgeMode::Fixed, t),
            Err(PolicyError::ZeroCallTimeout)
        );
    }
}
