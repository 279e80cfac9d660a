//! The bridge's vocabulary: the ids, requests, failures, actions and log
//! events it shares with its driver, and the constants of its rules.

use std::time::Duration;

use serde_json::Value;

use crate::bridge::error::BridgeError;
use crate::bridge::wire::DaemonResult;

/// Identifies one call made through the bridge; chosen by the caller and
/// unique for the bridge's lifetime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CallId(pub u64);

/// Identifies one connection attempt and, once it succeeds, that connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnId(pub u64);

/// Number of consecutive non-JSON lines, with calls waiting, after which the
/// oldest call fails with `parse_error:`.
pub const PARSE_STREAK_LIMIT: u32 = 4;

/// A connection that has answered, or stayed up this long, counts as
/// healthy: losing it resets the backoff. One that closes sooner without a
/// single valid line (a daemon that accepts and drops, a crash loop) counts
/// as a failed attempt, so reconnecting to it backs off instead of spinning.
pub const PROVEN_AFTER: Duration = Duration::from_secs(1);

/// While a call waits for a connection, the backoff grows for at most this
/// many failures (to four initial steps, 200 ms by default): the caller is
/// owed an attempt soon after the daemon returns, and the wait itself is
/// bounded by the connect wait. Without waiting calls the backoff grows to
/// its cap, so an idle wrapper costs little during a long outage.
pub const WAITING_BACKOFF_STEPS: u32 = 3;

/// When the endpoint appears, the next attempt is made after a delay drawn
/// from `[0, APPEARED_SPREAD)`: a herd of wrappers that all see the same
/// socket appear dial over a few milliseconds, not in one burst, and a
/// waiting call is still answered within milliseconds of the daemon's
/// return.
pub const APPEARED_SPREAD: Duration = Duration::from_millis(4);

/// With a watch armed and no call waiting, the bridge dials on the backoff
/// only until this many consecutive attempts have failed (counted since the
/// endpoint last appeared); then it awaits the endpoint. The few quick
/// retries cover a daemon that creates its socket a moment before it
/// accepts; waiting beyond them costs no dial and no timer.
pub const WATCHED_RETRIES: u32 = 4;

/// After the endpoint appeared, an attempt refused (nothing listening yet:
/// a daemon binds its socket a moment before it listens on it) is tried
/// again this many times, after [`REFUSED_PAUSE`], doubling, before the
/// refusal counts as a failed attempt: about 130 ms in all.
pub const REFUSED_RETRIES: u32 = 6;

/// The first pause before an attempt refused just after an appearance is
/// made again (each next one doubles).
pub const REFUSED_PAUSE: Duration = Duration::from_millis(2);

/// How a connect attempt failed, as far as the bridge's rules care; each
/// carries the driver's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnectFailure {
    /// Nothing listens there (the connection was refused): a daemon that
    /// has bound but not yet listened looks like this.
    Refused(String),
    /// Any other failure: no socket, no port file, a timeout, ...
    Other(String),
}

impl ConnectFailure {
    /// The driver's message.
    pub fn message(&self) -> &str {
        match self {
            ConnectFailure::Refused(message) | ConnectFailure::Other(message) => message,
        }
    }
}

/// Whether the driver watches the daemon's endpoint for its appearance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Watch {
    /// A watch is armed: [`Bridge::endpoint_appeared`](crate::bridge::Bridge::endpoint_appeared) will be reported, so
    /// an idle bridge need not dial on a timer.
    Armed,
    /// No watch could be set (or it was lost): dial on the backoff.
    Unavailable,
}

/// Whether running a request twice could change anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read-only and idempotent: may be re-sent after its connection was
    /// lost, and may be answered another way whatever happened to it.
    Read,
    /// May change the store: never sent twice, and answered another way
    /// only if it was never sent at all.
    Write,
}

/// A daemon request to make on behalf of a caller.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Daemon JSON-RPC method.
    pub method: String,
    /// Daemon JSON-RPC params.
    pub params: Value,
    /// Whether the request reads or writes.
    pub access: Access,
    /// The caller can answer the request another way (the CLI's degraded
    /// mode) when the daemon cannot be reached, so it need not wait the
    /// full connect wait for a daemon that is down.
    pub fallback: bool,
}

/// Why a call produced no daemon result, with what the bridge knows about
/// it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// What went wrong.
    pub error: BridgeError,
    /// The request was written to a daemon connection at least once, so
    /// the daemon may have run it.
    pub sent: bool,
    /// The caller may answer the request another way: it asked for that,
    /// the daemon could not be reached, and doing so cannot run a write
    /// twice (a read always may; a write only if it was never sent).
    pub fallback: bool,
}

impl Failure {
    /// A failure of a call the bridge never saw (it was not running).
    pub fn detached(error: BridgeError) -> Self {
        Failure {
            error,
            sent: false,
            fallback: false,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

/// Something the driver must do on the bridge's behalf.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Start a connect attempt (logged as `connect_attempt`); its end comes
    /// back as [`Bridge::connected`](crate::bridge::Bridge::connected) or [`Bridge::connect_failed`](crate::bridge::Bridge::connect_failed) with this
    /// id.
    Connect(ConnId),
    /// Write this line (newline included) on that connection. The driver
    /// queues it and writes everything queued in one turn together; a
    /// write that fails comes back as [`Bridge::closed`](crate::bridge::Bridge::closed).
    Send(ConnId, Vec<u8>),
    /// Close that connection, or abandon that connect attempt (whose end
    /// is then never reported).
    Close(ConnId),
    /// The daemon answered the status question asked on that connection
    /// with this line (without its newline): what it says about itself is
    /// the driver's to read and publish.
    Status(ConnId, Vec<u8>),
    /// Deliver the outcome of a call to its caller (dropped if the caller
    /// has gone): the daemon's result, or why there is none.
    Reply(CallId, Result<DaemonResult, Failure>),
    /// Write this event to the log. It changes nothing, in the bridge or
    /// in the driver.
    Report(Event),
}

/// What happened, for the log (each has a stable name in the JSON log).
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The daemon's endpoint appeared or changed while not connected; the
    /// next attempt is due after `dial_in` (`endpoint_appeared`).
    Appeared {
        /// Delay before the attempt (the herd's spread).
        dial_in: Duration,
    },
    /// With a watch armed and no call waiting, the bridge stops dialling
    /// until the endpoint appears or a call arrives (`endpoint_awaited`).
    Awaiting {
        /// Consecutive failed attempts before the wait.
        failures: u32,
    },
    /// A connection was established (`connected`).
    Connected {
        /// The new connection.
        conn: ConnId,
        /// Whether an earlier connection existed.
        reconnect: bool,
    },
    /// A connection closed, and what happens next (`connection_lost`).
    ConnectionLost {
        /// The connection that closed.
        conn: ConnId,
        /// Calls that will be re-sent on the next connection.
        replayed: usize,
        /// Calls failed with `socket closed`.
        failed: usize,
        /// Whether a reconnect is scheduled at all.
        reconnecting: bool,
    },
    /// A connect attempt failed; the next one is due after `retry_in`
    /// (`None`: no further attempt) (`connect_failed`).
    ConnectFailed {
        /// The attempt.
        conn: ConnId,
        /// Consecutive failures so far.
        failures: u32,
        /// The error reported by the driver.
        error: String,
        /// Delay before the next attempt.
        retry_in: Option<Duration>,
    },
    /// A read lost with its connection was sent again (`call_replayed`).
    CallReplayed {
        /// The call.
        call: CallId,
        /// Its daemon method.
        method: String,
        /// How many times it has now been sent.
        sends: u32,
    },
    /// The daemon sent [`PARSE_STREAK_LIMIT`] non-JSON lines in a row while
    /// calls were waiting; the oldest one failed
    /// (`daemon_parse_error_streak`).
    ParseStreak {
        /// Lines in the streak.
        lines: u32,
        /// The call that failed.
        call: CallId,
    },
    /// A call brought the next connect attempt forward during a backoff
    /// pause (`connect_hurried`).
    Hurried {
        /// How much earlier than the backoff timer it is made.
        earlier_by: Duration,
    },
    /// The daemon sent nothing on `conn` for a whole call timeout while a
    /// call waited there: the connection is closed and replaced
    /// (`daemon_silent`).
    Silent {
        /// The recycled connection.
        conn: ConnId,
    },
    /// A line that is JSON but answers no pending call: an unknown id, or
    /// no readable id at all (`unmatched_reply`).
    Unmatched {
        /// The line's `id`, if it had one.
        id: Option<Value>,
    },
}

/// What the rest of the wrapper may know about the connection (the driver
/// publishes it after every turn).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStatus {
    /// Whether a connection is established now.
    pub connected: bool,
    /// Connections established so far.
    pub connects: u64,
    /// Connect attempts that failed so far.
    pub failed_attempts: u64,
    /// No attempt is due: the bridge waits for the watched endpoint to
    /// appear (or a call to arrive).
    pub awaiting_endpoint: bool,
}
