//! The wrapper's log on stderr: readable lines for people (the default),
//! or one JSON object per event for programs (`--log-format json`).
//!
//! Every event worth a program's attention carries an `event` field whose
//! value is one of the names in [`event`]; those names and the fields
//! beside them are stable (docs/CONTRACT.md, section 12, lists them), while the message
//! text is for people and may change. In the JSON form each line is an
//! object with `timestamp` (RFC 3339, UTC), `level`, `event` and the
//! event's fields, `message` and `target`.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use tracing_subscriber::EnvFilter;

/// The names of the events the wrapper logs, as the `event` field of
/// each.
pub mod event {
    /// A connect attempt begins: `conn`, `endpoint`, `attempt`,
    /// `timeout_ms`.
    pub const CONNECT_ATTEMPT: &str = "connect_attempt";
    /// A connection is up: `conn`, `endpoint`, `reconnect`.
    pub const CONNECTED: &str = "connected";
    /// A connect attempt failed: `conn`, `endpoint`, `error`, `failures`
    /// (consecutive), `retry_in_ms` (absent: no further attempt).
    pub const CONNECT_FAILED: &str = "connect_failed";
    /// The connection closed: `conn`, `endpoint`, `replayed` and `failed`
    /// (calls in flight re-sent later or failed), `reconnecting`.
    pub const CONNECTION_LOST: &str = "connection_lost";
    /// A read lost with its connection was sent again: `call`, `method`,
    /// `sends`.
    pub const CALL_REPLAYED: &str = "call_replayed";
    /// While the daemon is away its endpoint is watched: `endpoint`,
    /// `directories` (the socket's or port file's directory, or the
    /// nearest existing ancestor while that does not exist).
    pub const ENDPOINT_WATCHED: &str = "endpoint_watched";
    /// No watch could be set on the endpoint, or it broke; connect
    /// attempts follow the backoff until the next connection: `endpoint`,
    /// `error`.
    pub const ENDPOINT_WATCH_UNAVAILABLE: &str = "endpoint_watch_unavailable";
    /// The endpoint watch looked at the endpoint's files (debug): `why`
    /// (`event`, a change in a watched directory; `floor`, the periodic
    /// look), `ready` (the endpoint looks dialable) and `news` (it appeared
    /// or changed since the last look, which brings a dial).
    pub const ENDPOINT_LOOKED: &str = "endpoint_looked";
    /// The endpoint appeared or changed while not connected; the next
    /// attempt follows within a few milliseconds: `dial_in_ms`.
    pub const ENDPOINT_APPEARED: &str = "endpoint_appeared";
    /// With the endpoint watched and no call waiting, no further attempt
    /// is made until the endpoint appears or a call arrives: `failures`.
    pub const ENDPOINT_AWAITED: &str = "endpoint_awaited";
    /// A call brought the next connect attempt forward: `earlier_by_ms`.
    pub const CONNECT_HURRIED: &str = "connect_hurried";
    /// The daemon sent nothing for a whole call timeout; its connection is
    /// replaced: `conn`, `endpoint`.
    pub const DAEMON_SILENT: &str = "daemon_silent";
    /// Consecutive lines from the daemon were not JSON and the oldest call
    /// failed: `lines`, `failed_call`.
    pub const PARSE_ERROR_STREAK: &str = "daemon_parse_error_streak";
    /// A daemon line answered no pending call: `id` (its JSON text; absent
    /// when the line had none that could be read).
    pub const UNMATCHED_REPLY: &str = "unmatched_reply";
    /// The CLI answered a call while the daemon was unreachable: `tool`,
    /// `command`, `elapsed_ms`.
    pub const DEGRADED_ANSWER: &str = "degraded_answer";
    /// Degraded mode is off because the `iai` CLI was not found: `cli`.
    pub const DEGRADED_UNAVAILABLE: &str = "degraded_unavailable";
    /// The session's doctor verdict, or `iai-mcp doctor` ran, or was due
    /// and did not: `mode` (`probe` or `heal`), `outcome` (`healthy`,
    /// `problem`, `skipped`, `failed`, `healed`), for a probe `verdict`
    /// (`ran`, or `kept` from another session of the same daemon run), and
    /// `command`, `exit`, `elapsed_ms` or `reason` where they apply.
    pub const DOCTOR_RUN: &str = "doctor_run";
    /// The daemon did not answer the probes at start and was asked to
    /// start: `how` (`wake_signal` or `launchctl`), `outcome` (`written`,
    /// `failed`, and for `launchctl` `sent` or `skipped`), and `path`,
    /// `command`, `reason`, `daemon_pid` or `error` where they apply.
    pub const WAKE_REQUESTED: &str = "wake_requested";
    /// The heartbeat file could not be written or removed: `path`,
    /// `error`.
    pub const HEARTBEAT_FAILED: &str = "heartbeat_failed";
    /// The daemon answered the `status` question a connection begins
    /// with: `daemon` (its release; absent when unknown) and `served` (the
    /// release whose tools are served), and `reason` when the release is
    /// unknown. A warning the first time a release other than the served
    /// one is seen, info otherwise, debug when unknown.
    pub const DAEMON_RELEASE: &str = "daemon_release";
    /// Which tool surface is served, at start and whenever it changes:
    /// `release` (its version), `tools` (how many), `bundle` (the file it
    /// was read from) and `cached` (taken from the cache, not parsed
    /// anew) for an installed release's, `reason` when the
    /// built-in table is served because no release's could be (a
    /// warning).
    pub const SURFACE: &str = "surface";
    /// The installed release changed under the running wrapper and its
    /// tools are served from now on (the client is told the list changed):
    /// `from`, `to` (the releases). A `surface` event follows.
    pub const SURFACE_CHANGED: &str = "surface_changed";
    /// Another release is installed than the one whose tools are served,
    /// and the daemon running is not that release yet (a warning, once per
    /// release installed): `installed`, `daemon` (its release, or
    /// `unknown`), `served`.
    pub const SURFACE_PENDING: &str = "surface_pending";
    /// The wrapper is exiting: `reason` (`eof`, `signal`, `output_closed`).
    pub const SHUTTING_DOWN: &str = "shutting_down";
}

/// A duration as a log field: whole milliseconds.
pub fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// How the log is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// Lines for people.
    #[default]
    Text,
    /// One JSON object per event, for programs.
    Json,
}

impl LogFormat {
    /// The filter used when none is configured: warnings for people (a
    /// host's log should stay quiet while all is well), every event for
    /// programs (they asked for the events).
    pub fn default_filter(self) -> &'static str {
        match self {
            LogFormat::Text => "warn",
            LogFormat::Json => "info",
        }
    }

    /// The spelling used on the command line and in `IAI_MCP_LOG_FORMAT`.
    pub fn as_str(self) -> &'static str {
        match self {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        }
    }
}

impl fmt::Display for LogFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A log format that is neither `text` nor `json`.
#[derive(Debug, thiserror::Error)]
#[error("unknown log format {0:?} (expected \"text\" or \"json\")")]
pub struct UnknownFormat(String);

impl FromStr for LogFormat {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(UnknownFormat(other.to_owned())),
        }
    }
}

/// Installs the log for the whole process: `format`, showing what
/// `filter` (tracing's filter syntax) lets through.
pub fn init(format: LogFormat, filter: EnvFilter) {
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .init(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_and_print() {
        for format in [LogFormat::Text, LogFormat::Json] {
            assert_eq!(format.as_str().parse::<LogFormat>().ok(), Some(format));
        }
        assert!("JSON".parse::<LogFormat>().is_err());
        assert_eq!(LogFormat::default(), LogFormat::Text);
    }
}
