//! What the scenarios read in a wrapper's log: the structured events a
//! wrapper writes when asked for them (this workspace's wrapper, with
//! [`JSON_EVENTS`] set, writes one JSON object per event on stderr, with
//! stable event names). Down-up counts the failed connect attempts; the
//! herd times them.
//!
//! Nothing here reads prose. Lines that are not JSON objects (another
//! wrapper's own log) are skipped, so a wrapper that logs no such events
//! leaves these figures "not measurable".

use std::time::SystemTime;

use serde::Deserialize;
use serde_json::Value;

/// The setting that makes this workspace's wrapper write its log as JSON
/// events (other wrappers ignore it).
pub const JSON_EVENTS: (&str, &str) = ("IAI_MCP_LOG_FORMAT", "json");

/// The setting that makes this workspace's wrapper also log each look its
/// endpoint watch takes ([`ENDPOINT_LOOKED`], at debug level), beside its
/// other events (other wrappers ignore it).
pub const LOOKS_LOGGED: (&str, &str) =
    ("IAI_MCP_LOG", "info,iai_mcp_wrapper::logging::bridge=debug");

/// The event a wrapper logs each time its endpoint watch looks at the
/// endpoint while the daemon is away (after a change in a watched
/// directory, or at the floor): a wake-up of its own.
pub const ENDPOINT_LOOKED: &str = "endpoint_looked";

/// The event a wrapper logs as each connect attempt begins.
pub const CONNECT_ATTEMPT: &str = "connect_attempt";

/// The event a wrapper logs for each failed connect attempt.
pub const CONNECT_FAILED: &str = "connect_failed";

/// The event a wrapper logs when its daemon connection closes.
pub const CONNECTION_LOST: &str = "connection_lost";

/// The event a wrapper logs when `iai-mcp doctor` runs.
pub const DOCTOR_RUN: &str = "doctor_run";

/// The event a wrapper logs when it has learnt the daemon's release.
pub const DAEMON_RELEASE: &str = "daemon_release";

/// The event a wrapper logs when it asked a daemon that is down to start:
/// `how` (`wake_signal`, `launchctl`) and `outcome`.
pub const WAKE_REQUESTED: &str = "wake_requested";

/// The members of a log event the harness reads.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct LogEvent {
    /// The event's name.
    #[serde(default)]
    pub event: Option<String>,
    /// When it was logged (RFC 3339, UTC), by the wrapper's clock.
    #[serde(default)]
    pub timestamp: Option<String>,
    /// For a failed connect attempt: consecutive failures so far.
    #[serde(default)]
    pub failures: Option<u64>,
    /// For a doctor run: `probe` or `heal`.
    #[serde(default)]
    pub mode: Option<String>,
    /// For a doctor run: how it went (`healthy`, `problem`, ...); for a
    /// wake-up request: `written`, `sent`, `skipped` or `failed`.
    #[serde(default)]
    pub outcome: Option<String>,
    /// For a wake-up request: how the daemon was asked (`wake_signal`,
    /// `launchctl`).
    #[serde(default)]
    pub how: Option<String>,
    /// The event's level (`INFO`, `WARN`, ...).
    #[serde(default)]
    pub level: Option<String>,
    /// For the daemon's release: the release the daemon reported.
    #[serde(default)]
    pub daemon: Option<String>,
}

/// The events named `name` in a wrapper's stderr, in order: lines that are
/// JSON objects (serde's derive alone would read an array too).
pub fn events_named<'a>(stderr: &'a str, name: &'a str) -> impl Iterator<Item = LogEvent> + 'a {
    stderr
        .lines()
        .filter_map(|line| match serde_json::from_str::<Value>(line) {
            Ok(object @ Value::Object(_)) => serde_json::from_value::<LogEvent>(object).ok(),
            _ => None,
        })
        .filter(move |event| event.event.as_deref() == Some(name))
}

/// How many failed connect attempts the wrapper's `stderr` reports.
pub(crate) fn connect_failures(stderr: &str) -> u64 {
    events_named(stderr, CONNECT_FAILED).count() as u64
}

/// Whether a wrapper's `stderr` holds its structured events at all: every
/// wrapper that writes them logs a `connect_attempt` at boot, so a log
/// without one is another wrapper's, whose dials cannot be counted.
pub fn logs_events(stderr: &str) -> bool {
    events_named(stderr, CONNECT_ATTEMPT).next().is_some()
}

/// When each event named `name` in a wrapper's `stderr` was logged, by
/// the wrapper's own clock; events without a readable timestamp are left
/// out.
pub fn event_times<'a>(stderr: &'a str, name: &'a str) -> impl Iterator<Item = SystemTime> + 'a {
    events_named(stderr, name)
        .filter_map(|event| humantime::parse_rfc3339(event.timestamp.as_deref()?).ok())
}

/// One failed connect attempt in a wrapper's log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dial {
    /// When it failed, by the wrapper's own clock.
    pub(crate) at: SystemTime,
    /// Whether it was the first attempt after the connection was lost
    /// (`failures` is 1).
    pub(crate) first_after_loss: bool,
}

/// The failed connect attempts a wrapper logged, in its log's order.
pub(crate) fn dial_times(stderr: &str) -> impl Iterator<Item = Dial> + '_ {
    events_named(stderr, CONNECT_FAILED).filter_map(|event| {
        let at = humantime::parse_rfc3339(event.timestamp.as_deref()?).ok()?;
        Some(Dial {
            at,
            first_after_loss: event.failures == Some(1),
        })
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn dials_are_read_from_the_wrappers_events_with_their_own_timestamps() {
        let log = r#"{"timestamp":"2026-12-01T04:39:24.684048Z","level":"INFO","message":"daemon connect failed","event":"connect_failed","endpoint":"/s","error":"x","failures":1,"retry_in_ms":47}
{"timestamp":"2026-12-01T04:39:24.684433Z","level":"INFO","event":"wake_requested","how":"wake_signal"}
a line of another wrapper's own log: daemon connect failed
{"timestamp":"2026-12-01T04:39:24.734965Z","level":"INFO","event":"connect_failed","failures":2,"retry_in_ms":83}
"#;
        let dials: Vec<Dial> = dial_times(log).collect();
        assert_eq!(dials.len(), 2);
        assert!(dials[0].first_after_loss && !dials[1].first_after_loss);
        let apart = dials[1].at.duration_since(dials[0].at).unwrap();
        assert_eq!(apart, Duration::from_micros(50_917));
        assert_eq!(connect_failures(log), 2);
        assert_eq!(event_times(log, CONNECT_FAILED).count(), 2);
        assert!(!logs_events(log), "no connect_attempt in this log");
        let attempt =
            r#"{"timestamp":"2026-12-01T04:39:24.6Z","event":"connect_attempt","attempt":1}"#;
        assert!(logs_events(attempt));
        assert_eq!(
            connect_failures("daemon connect failed\n"),
            0,
            "prose is not read"
        );
        assert_eq!(connect_failures("[\"connect_failed\"]\n"), 0, "nor arrays");
    }
}
