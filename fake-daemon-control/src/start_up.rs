//! How the daemon comes up: the order in which it binds, listens and
//! publishes its endpoint ([`StartupOrder`]), and the steps it reports on
//! stderr as it takes them ([`StartupStep`]), so that a test can look at
//! the endpoint between two steps.
//!
//! An order applies at process start (`--start-up ORDER`, every start) and
//! at each `UP` (`UP ORDER`: that start only).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use thiserror::Error;

/// The command-line option that sets the order of every start.
pub const START_UP_OPTION: &str = "--start-up";

/// Largest pause of a start-up order: one day, in milliseconds.
pub const MAX_PAUSE_MS: u64 = 86_400_000;

/// The order in which the daemon binds, listens and publishes its endpoint.
///
/// Written as `at-once`, `listen-after=<ms>` or `token-then-port=<ms>`, on
/// the command line and after `UP`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StartupOrder {
    /// Bind and listen in one step; on TCP then the token file and the port
    /// file, each written whole (to a temporary file renamed over it), so a
    /// client never reads half of either.
    #[default]
    AtOnce,
    /// Bind (on TCP: and write the token and port files, each whole), wait
    /// `gap`, then listen: a dial in the gap is refused (`ECONNREFUSED`), as
    /// a daemon between its `bind` and its `listen` refuses it.
    ListenAfter {
        /// Between the bind and the listen.
        gap: Duration,
    },
    /// iai-mcp 3.3.0's own order on TCP: the token file written empty,
    /// then the token written into it, then bind and listen, then the port
    /// file emptied, then the port written into it, with `pause` between
    /// each step and the next. TCP only: on a Unix socket 3.3.0 binds and
    /// listens in one call.
    TokenThenPort {
        /// Between each step and the next.
        pause: Duration,
    },
}

/// Why a start-up order was not understood.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum StartupOrderError {
    /// Not one of the orders.
    #[error("unknown start-up order '{0}' (at-once, listen-after=<ms> or token-then-port=<ms>)")]
    Unknown(String),
    /// The order's pause is not a whole number of milliseconds in range.
    #[error("{order} needs a whole number of milliseconds from 0 to {MAX_PAUSE_MS}, not '{value}'")]
    InvalidPause {
        /// The order's name.
        order: &'static str,
        /// The pause as given.
        value: String,
    },
}

impl StartupOrder {
    /// The word that names the order, before its `=<ms>`.
    pub fn name(&self) -> &'static str {
        match self {
            StartupOrder::AtOnce => "at-once",
            StartupOrder::ListenAfter { .. } => "listen-after",
            StartupOrder::TokenThenPort { .. } => "token-then-port",
        }
    }

    /// Whether the order exists only on TCP.
    pub fn tcp_only(&self) -> bool {
        matches!(self, StartupOrder::TokenThenPort { .. })
    }

    /// The pause the order takes, if any.
    pub fn pause(&self) -> Option<Duration> {
        match self {
            StartupOrder::AtOnce => None,
            StartupOrder::ListenAfter { gap } => Some(*gap),
            StartupOrder::TokenThenPort { pause } => Some(*pause),
        }
    }
}

impl fmt::Display for StartupOrder {
    /// The wire form: `at-once`, `listen-after=<ms>`, `token-then-port=<ms>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.pause() {
            None => f.write_str(self.name()),
            Some(pause) => write!(f, "{}={}", self.name(), pause.as_millis()),
        }
    }
}

impl FromStr for StartupOrder {
    type Err = StartupOrderError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (name, value) = match text.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (text, None),
        };
        let pause = |order: &'static str| {
            value
                .and_then(|v| v.parse::<u64>().ok())
                .filter(|ms| *ms <= MAX_PAUSE_MS)
                .map(Duration::from_millis)
                .ok_or_else(|| StartupOrderError::InvalidPause {
                    order,
                    value: value.unwrap_or_default().to_owned(),
                })
        };
        match name {
            "at-once" if value.is_none() => Ok(StartupOrder::AtOnce),
            "listen-after" => Ok(StartupOrder::ListenAfter {
                gap: pause("listen-after")?,
            }),
            "token-then-port" => Ok(StartupOrder::TokenThenPort {
                pause: pause("token-then-port")?,
            }),
            _ => Err(StartupOrderError::Unknown(text.to_owned())),
        }
    }
}

/// A step of a start-up the daemon reports on stderr as
/// `fake-daemon: start-up: <step>` once it is taken (before the pause that
/// follows it). `at-once` reports none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartupStep {
    /// Bound and not listening (`listen-after`; on TCP with the port and
    /// token files written): a dial now is refused.
    Bound,
    /// The token file exists and is empty (`token-then-port`).
    TokenFileEmpty,
    /// The token is written into its file (`token-then-port`).
    TokenWritten,
    /// Listening: a dial now is accepted.
    Listening,
    /// The port file exists and is empty (`token-then-port`).
    PortFileEmpty,
    /// The port is written into its file (`token-then-port`).
    PortWritten,
}

impl StartupStep {
    /// Every step, in no particular order.
    pub const ALL: [StartupStep; 6] = [
        StartupStep::Bound,
        StartupStep::TokenFileEmpty,
        StartupStep::TokenWritten,
        StartupStep::Listening,
        StartupStep::PortFileEmpty,
        StartupStep::PortWritten,
    ];

    /// The words after `start-up: `.
    pub fn words(&self) -> &'static str {
        match self {
            StartupStep::Bound => "bound, not listening",
            StartupStep::TokenFileEmpty => "token file empty",
            StartupStep::TokenWritten => "token written",
            StartupStep::Listening => "listening",
            StartupStep::PortFileEmpty => "port file empty",
            StartupStep::PortWritten => "port written",
        }
    }

    /// The step a stderr line of the daemon reports, if it reports one.
    pub fn from_log_line(line: &str) -> Option<StartupStep> {
        let words = line.trim_end().strip_prefix("fake-daemon: start-up: ")?;
        Self::ALL.into_iter().find(|step| step.words() == words)
    }
}

impl fmt::Display for StartupStep {
    /// `start-up: <step>`, as the daemon logs it after `fake-daemon: `.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "start-up: {}", self.words())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_read_as_they_are_written() {
        for order in [
            StartupOrder::AtOnce,
            StartupOrder::ListenAfter {
                gap: Duration::from_millis(50),
            },
            StartupOrder::TokenThenPort {
                pause: Duration::from_millis(0),
            },
        ] {
            assert_eq!(order.to_string().parse(), Ok(order), "{order}");
        }
        assert_eq!(
            "listen-after=50".parse(),
            Ok(StartupOrder::ListenAfter {
                gap: Duration::from_millis(50)
            })
        );
    }

    #[test]
    fn refusals_say_why() {
        let reason = |text: &str| text.parse::<StartupOrder>().unwrap_err().to_string();
        assert_eq!(
            reason("sideways"),
            "unknown start-up order 'sideways' (at-once, listen-after=<ms> or token-then-port=<ms>)"
        );
        assert_eq!(
            reason("at-once=5"),
            "unknown start-up order 'at-once=5' (at-once, listen-after=<ms> or token-then-port=<ms>)"
        );
        assert_eq!(
            reason("listen-after"),
            "listen-after needs a whole number of milliseconds from 0 to 86400000, not ''"
        );
        assert_eq!(
            reason("token-then-port=-1"),
            "token-then-port needs a whole number of milliseconds from 0 to 86400000, not '-1'"
        );
    }

    #[test]
    fn steps_are_read_back_from_the_log() {
        for step in StartupStep::ALL {
            let line = format!("fake-daemon: {step}\n");
            assert_eq!(StartupStep::from_log_line(&line), Some(step), "{line}");
        }
        assert_eq!(
            StartupStep::from_log_line("fake-daemon: accept failed"),
            None
        );
    }
}
