//! The names of the events the wrapper logs, as the `event` field of each,
//! and how a duration is written as a field. The names and the fields
//! beside them are stable (docs/CONTRACT.md section 12 lists them); every
//! module that logs an event names it from here, and
//! [`crate::logging`] writes the log.

use std::time::Duration;

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

/// A duration as a log field: whole milliseconds.
pub fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
