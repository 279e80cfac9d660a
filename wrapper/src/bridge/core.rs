//! The bridge's decisions, with no I/O and no clock.
//!
//! [`Bridge`] owns the connection state, the table of calls and the
//! reconnect schedule. Its inputs are events (a call arrives, a connect
//! attempt ends, a line arrives, the connection closes, time passes); its
//! outputs are [`Action`]s (dial, send a line, close, answer a call, log an
//! [`Event`]) and the next instant it wants to be woken at. The async
//! driver only moves bytes and time in and out, so every ordering of
//! events, including the V3-05 race, can be replayed step by step in a
//! test.
//!
//! The connection is in one of six states, each holding what only it
//! has: not started; connecting (the attempt, what is known of the outage
//! so far, and whether the endpoint appeared meanwhile); connected (the
//! connection, when it was made, whether it has proven itself, what it has
//! delivered); retrying (when, why, and the outage); awaiting the endpoint
//! (the last attempt and the outage, no timer); stopped (why). States
//! change only through the transitions [`Bridge::dial`],
//! [`Bridge::establish`], [`Bridge::pause`], [`Bridge::await_endpoint`]
//! and [`Bridge::stop`].
//!
//! While the daemon is away the driver may watch its endpoint (the socket's
//! directory, or the port file) and say so ([`Bridge::watch`]). With a
//! watch armed the bridge stops dialling on a timer once a few attempts
//! have failed and no call waits: it waits for [`Bridge::endpoint_appeared`]
//! and dials within [`APPEARED_SPREAD`] of it. Without one it backs off as
//! before.
//!
//! Every connection attempt gets a fresh [`ConnId`]; events tagged with an
//! older id are ignored, so a late line or close from a dead connection can
//! never touch the calls of its successor.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::error::BridgeError;
use super::policy::Policy;
use super::wire::{self, DaemonResult, Reply};

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

/// Whether the driver watches the daemon's endpoint for its appearance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Watch {
    /// A watch is armed: [`Bridge::endpoint_appeared`] will be reported, so
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
    /// back as [`Bridge::connected`] or [`Bridge::connect_failed`] with this
    /// id.
    Connect(ConnId),
    /// Write this line (newline included) on that connection. The driver
    /// queues it and writes everything queued in one turn together; a
    /// write that fails comes back as [`Bridge::closed`].
    Send(ConnId, Vec<u8>),
    /// Close that connection, or abandon that connect attempt (whose end
    /// is then never reported).
    Close(ConnId),
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

/// The connection's state, each variant with the data only it has.
#[derive(Debug, Clone)]
enum Link {
    /// Not started yet.
    Idle,
    /// A connect attempt is under way.
    Connecting(Connecting),
    /// Connected: calls are sent at once.
    Connected(Connected),
    /// Waiting until it is time to dial again.
    Retrying(Retrying),
    /// Waiting, with no timer, for the endpoint to appear (or a call).
    Awaiting(Awaiting),
    /// No further connect attempts.
    Stopped(Stop),
}

/// One connect attempt.
#[derive(Debug, Clone, Copy)]
struct Attempt {
    /// The attempt's id (the connection's, if it succeeds).
    conn: ConnId,
    /// When it began; `None` for the boot probe, which no caller asked
    /// for, so a call after it fails may dial at once.
    began: Option<Instant>,
    /// How soon after `began` a call may bring the next attempt forward:
    /// one to two initial backoffs, drawn at each attempt so that the
    /// wrappers of many sessions woken by their callers do not dial in
    /// lockstep.
    hurry_spacing: Duration,
}

/// What is known about a daemon that is not connected now.
#[derive(Debug, Clone, Default)]
struct Outage {
    /// Consecutive failed connect attempts (a connection lost before it
    /// proved itself counts as one).
    failures: u32,
    /// The most recent connect error.
    last_error: Option<String>,
    /// When a healthy connection was lost, if the outage began that way:
    /// until a connect wait has passed since, the daemon is presumed to be
    /// restarting.
    lost_at: Option<Instant>,
}

#[derive(Debug, Clone)]
struct Connecting {
    attempt: Attempt,
    outage: Outage,
    /// The endpoint appeared while the attempt was under way: if it fails,
    /// it may have raced the daemon's bind, so the next one follows at once
    /// (within the spread) rather than after a backoff.
    appeared: bool,
}

#[derive(Debug, Clone)]
struct Awaiting {
    /// The attempt that failed last (a call may bring the next one forward
    /// only after its spacing).
    last: Attempt,
    outage: Outage,
}

#[derive(Debug, Clone)]
struct Connected {
    conn: ConnId,
    /// When the connection was made.
    since: Instant,
    /// The attempt that made it.
    attempt: Attempt,
    proof: Proof,
    /// Lines of any kind the connection has delivered.
    heard: u64,
    /// Consecutive non-JSON lines while calls waited on it.
    streak: u32,
}

/// Whether a connection has shown that the daemon works.
#[derive(Debug, Clone)]
enum Proof {
    /// Not yet: losing it within [`PROVEN_AFTER`] continues the outage
    /// before it, as one more failed attempt.
    Unproven(Outage),
    /// It delivered a valid line.
    Proven,
}

#[derive(Debug, Clone)]
struct Retrying {
    /// When to dial.
    at: Instant,
    pause: Pause,
    outage: Outage,
}

/// Why the bridge is waiting to dial.
#[derive(Debug, Clone, Copy)]
enum Pause {
    /// The reconnect delay after a healthy connection was lost; calls do
    /// not cut it short.
    Reconnect,
    /// A backoff after failed attempts; a call may cut it short, but not
    /// before the last attempt's spacing has passed.
    Backoff {
        /// The attempt that failed.
        last: Attempt,
    },
}

/// Why the bridge dials no more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// The pre-fix policy's one reconnect is spent.
    GaveUp,
    /// The wrapper is exiting.
    Shutdown,
}

/// How a call waits for a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Wait {
    /// When it gives up.
    deadline: Instant,
    /// When it began waiting.
    since: Instant,
    /// It waits only until the next connect attempt fails (the caller
    /// answers it another way then).
    next_attempt_only: bool,
}

/// A call sent on a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct InFlight {
    conn: ConnId,
    /// Its daemon request id.
    wire: u64,
    /// When the response is due.
    deadline: Instant,
    /// How many lines the connection had delivered when it was sent.
    heard: u64,
    /// The wait it was sent from, if it waited for this connection: resumed
    /// as it was if the connection turns out to have been refused.
    waited: Option<Wait>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Waiting(Wait),
    InFlight(InFlight),
}

impl Phase {
    fn deadline(&self) -> Instant {
        match self {
            Phase::Waiting(wait) => wait.deadline,
            Phase::InFlight(sent) => sent.deadline,
        }
    }
}

#[derive(Debug, Clone)]
struct Call {
    request: Request,
    phase: Phase,
    /// Times it has been written to a connection.
    sends: u32,
    /// The call's one deadline, replays included: the connect wait plus
    /// the call timeout after it was made.
    expires: Instant,
}

/// How a connection with calls in flight went away.
#[derive(Debug, Clone)]
enum Lost {
    /// It closed (EOF, a read or write error, recycled when silent).
    Closed {
        /// When the healthy connection before the outage was lost, if the
        /// outage began that way.
        lost_at: Option<Instant>,
    },
    /// The daemon closed it at once, having sent nothing: a refusal.
    Refused {
        /// As for [`Lost::Closed`].
        lost_at: Option<Instant>,
        /// What the refusal means (`token refused, <token file>`).
        reason: String,
    },
}

/// What to do with a call that has just arrived.
enum Route {
    /// Send it on this connection.
    Send(ConnId),
    /// Let it wait for a connection.
    Wait,
    /// Fail it: the bridge is not connected and will not wait.
    Refuse,
}

/// The sans-IO bridge state machine. See the module documentation.
#[derive(Debug, Clone)]
pub struct Bridge {
    policy: Policy,
    endpoint: String,
    link: Link,
    next_conn: u64,
    /// Connections established so far.
    connects: u64,
    /// Connect attempts that failed so far.
    failed_attempts: u64,
    /// Reconnects scheduled after lost connections (the pre-fix policy
    /// allows one).
    reconnects: u32,
    calls: BTreeMap<CallId, Call>,
    /// Daemon request ids of the calls in flight.
    wire: BTreeMap<u64, CallId>,
    next_wire: u64,
    rng: fastrand::Rng,
    /// Whether the endpoint is watched.
    watch: Watch,
    actions: VecDeque<Action>,
}

impl Bridge {
    /// A bridge following `policy`, dialling the daemon at `endpoint` (a
    /// socket path or TCP address, used in error messages). `seed` drives
    /// the backoff jitter, so a test can replay a run exactly.
    pub fn new(policy: Policy, endpoint: impl Into<String>, seed: u64) -> Self {
        Bridge {
            policy,
            endpoint: endpoint.into(),
            link: Link::Idle,
            next_conn: 0,
            connects: 0,
            failed_attempts: 0,
            reconnects: 0,
            calls: BTreeMap::new(),
            wire: BTreeMap::new(),
            next_wire: 0,
            rng: fastrand::Rng::with_seed(seed),
            watch: Watch::Unavailable,
            actions: VecDeque::new(),
        }
    }

    /// Begin the first connect attempt (the boot probe).
    pub fn start(&mut self) {
        if matches!(self.link, Link::Idle) {
            self.dial(None, Outage::default());
        }
    }

    /// A caller wants `request` made; its outcome will be a
    /// [`Action::Reply`] for `id`.
    pub fn call(&mut self, id: CallId, request: Request, now: Instant) {
        if matches!(self.link, Link::Stopped(Stop::Shutdown)) {
            self.actions.push_back(Action::Reply(
                id,
                Err(Failure::detached(BridgeError::Shutdown)),
            ));
            return;
        }
        let timings = self.policy.timings();
        let expires = now + timings.connect_wait + timings.call_timeout;
        let wait = self.waiting(&request, now, expires, self.lost_at());
        self.calls.insert(
            id,
            Call {
                request,
                phase: Phase::Waiting(wait),
                sends: 0,
                expires,
            },
        );
        match self.route() {
            Route::Send(conn) => self.send(id, conn, now),
            Route::Wait => self.hurry(wait, now),
            Route::Refuse => self.finish(id, Err(BridgeError::NotConnected)),
        }
    }

    /// Where a call arriving now goes.
    fn route(&self) -> Route {
        match &self.link {
            Link::Connected(connected) => Route::Send(connected.conn),
            // Before the first connection every mode waits: the boot
            // connect runs in the background and a call made meanwhile
            // rides on it.
            _ if self.connects == 0 => Route::Wait,
            Link::Stopped(_) => Route::Refuse,
            _ if self.policy.calls_wait_for_reconnect() => Route::Wait,
            // The V3-05 bug, kept as a policy: disconnected means refused,
            // even though a reconnect is about to succeed.
            _ => Route::Refuse,
        }
    }

    /// The caller gave up on `id` (MCP cancellation): forget it, answer
    /// nothing.
    pub fn cancel(&mut self, id: CallId) {
        if let Some(call) = self.calls.remove(&id)
            && let Phase::InFlight(sent) = call.phase
        {
            self.wire.remove(&sent.wire);
        }
    }

    /// The driver armed a watch on the endpoint, or lost it (or could not
    /// set one): with [`Watch::Unavailable`] the bridge dials on the
    /// backoff again.
    pub fn watch(&mut self, watch: Watch, now: Instant) {
        self.watch = watch;
        if watch == Watch::Unavailable
            && let Link::Awaiting(_) = &self.link
        {
            let Link::Awaiting(Awaiting { last, outage }) = self.take_link() else {
                unreachable!("checked above");
            };
            let delay = self.retry_delay(outage.failures.max(1));
            self.pause(now + delay, Pause::Backoff { last }, outage);
        }
    }

    /// The daemon's endpoint appeared or changed (its socket was created,
    /// its port file written). While backing off or awaiting it, the next
    /// attempt is made within [`APPEARED_SPREAD`] (but not sooner than a
    /// call could bring it after the last attempt); during an attempt, its
    /// failure is followed as soon by another. The failure count goes on,
    /// so an endpoint that appears but refuses is awaited again at once. Connected, stopped or in a reconnect delay, nothing
    /// changes.
    pub fn endpoint_appeared(&mut self, now: Instant) {
        match &mut self.link {
            Link::Connecting(connecting) => {
                connecting.appeared = true;
                return;
            }
            Link::Awaiting(_)
            | Link::Retrying(Retrying {
                pause: Pause::Backoff { .. },
                ..
            }) => {}
            Link::Idle
            | Link::Connected(_)
            | Link::Retrying(Retrying {
                pause: Pause::Reconnect,
                ..
            })
            | Link::Stopped(_) => return,
        }
        let delay = self.appeared_delay();
        let (timer, last, outage) = match self.take_link() {
            Link::Awaiting(Awaiting { last, outage }) => (None, last, outage),
            Link::Retrying(Retrying {
                at,
                pause: Pause::Backoff { last },
                outage,
            }) => (Some(at), last, outage),
            _ => unreachable!("matched above"),
        };
        // Within the spread, but never sooner than a call could bring it
        // (one to two initial backoffs after the last attempt began): an
        // endpoint that keeps appearing is not spun on. A timer due sooner
        // stands.
        let soonest = last.began.map_or(now, |began| began + last.hurry_spacing);
        let brought = (now + delay).max(soonest);
        let due = timer.map_or(brought, |at| at.min(brought));
        self.actions.push_back(Action::Report(Event::Appeared {
            dial_in: due.saturating_duration_since(now),
        }));
        self.pause(due, Pause::Backoff { last }, outage);
    }

    /// The connect attempt `conn` succeeded.
    pub fn connected(&mut self, conn: ConnId, now: Instant) {
        if self.connecting() != Some(conn) {
            // Not the attempt we are waiting for: never hold two.
            self.actions.push_back(Action::Close(conn));
            return;
        }
        self.establish(now);
        let waiting: Vec<CallId> = self
            .calls
            .iter()
            .filter(|(_, c)| matches!(c.phase, Phase::Waiting(_)))
            .map(|(id, _)| *id)
            .collect();
        for id in waiting {
            self.send(id, conn, now);
        }
    }

    /// The connect attempt `conn` failed with `error`.
    pub fn connect_failed(&mut self, conn: ConnId, error: String, now: Instant) {
        if self.connecting() != Some(conn) {
            return;
        }
        let Link::Connecting(Connecting {
            attempt,
            outage,
            appeared,
        }) = self.take_link()
        else {
            unreachable!("checked above");
        };
        self.failed_attempts += 1;
        let outage = Outage {
            failures: outage.failures.saturating_add(1),
            last_error: Some(error.clone()),
            lost_at: outage.lost_at,
        };
        let failures = outage.failures;
        // The pre-fix bridge made one reconnect attempt and gave up.
        let gives_up = self.connects > 0 && self.policy.reconnect_budget().is_some();
        let retry_in = if gives_up {
            None
        } else if appeared {
            // The attempt may have raced the daemon's bind: the appearance
            // is news the failure predates.
            let soonest = attempt
                .began
                .map_or(now, |began| began + attempt.hurry_spacing);
            let at = (now + self.appeared_delay()).max(soonest);
            self.pause(at, Pause::Backoff { last: attempt }, outage);
            Some(at - now)
        } else {
            self.redial_later(now, attempt, outage, Duration::ZERO)
        };
        self.actions.push_back(Action::Report(Event::ConnectFailed {
            conn,
            failures,
            error: error.clone(),
            retry_in,
        }));
        if gives_up {
            self.stop(Stop::GaveUp);
        } else if retry_in.is_none() {
            self.actions
                .push_back(Action::Report(Event::Awaiting { failures }));
        }
        // Calls that only waited for this attempt are answered another way.
        let settled: Vec<(CallId, Instant)> = self
            .calls
            .iter()
            .filter_map(|(id, c)| match c.phase {
                Phase::Waiting(wait) if wait.next_attempt_only => Some((*id, wait.since)),
                _ => None,
            })
            .collect();
        for (id, since) in settled {
            let error = BridgeError::ConnectWait {
                endpoint: self.endpoint.clone(),
                waited: now.saturating_duration_since(since),
                last_error: Some(error.clone()),
            };
            self.finish(id, Err(error));
        }
    }

    /// The connection `conn` closed (EOF, read or write error).
    pub fn closed(&mut self, conn: ConnId, now: Instant) {
        if self.connection() != Some(conn) {
            return;
        }
        let Link::Connected(connected) = self.take_link() else {
            unreachable!("checked above");
        };
        let up_long_enough = now.saturating_duration_since(connected.since) >= PROVEN_AFTER;
        // Only a connection that worked suggests a daemon about to return;
        // one that never did (accept-and-drop, a refused token) continues
        // the outage before it, as one more failed attempt.
        let (outage, pause, retry_in) = match connected.proof {
            Proof::Unproven(before) if !up_long_enough => {
                let outage = Outage {
                    failures: before.failures.saturating_add(1),
                    last_error: before.last_error,
                    lost_at: None,
                };
                // Drawn before the lost calls are put back to wait, as one
                // more failed attempt with nothing waiting yet: so a read
                // replayed on a daemon that accepts and drops outlives its
                // wait, rather than being replayed on every reconnect.
                let retry_in = self
                    .policy
                    .timings()
                    .reconnect_delay
                    .max(self.retry_delay(outage.failures));
                let pause = Pause::Backoff {
                    last: connected.attempt,
                };
                (outage, pause, retry_in)
            }
            _ => {
                let outage = Outage {
                    lost_at: Some(now),
                    ..Outage::default()
                };
                (
                    outage,
                    Pause::Reconnect,
                    self.policy.timings().reconnect_delay,
                )
            }
        };
        let (replayed, failed) = self.settle_lost_calls(conn, now, outage.lost_at);
        let may_reconnect = match self.policy.reconnect_budget() {
            None => true,
            Some(budget) => self.reconnects < budget,
        };
        self.actions
            .push_back(Action::Report(Event::ConnectionLost {
                conn,
                replayed,
                failed,
                reconnecting: may_reconnect,
            }));
        if !may_reconnect {
            self.stop(Stop::GaveUp);
            return;
        }
        self.reconnects = self.reconnects.saturating_add(1);
        match pause {
            // A connection that never proved itself is one more failed
            // attempt: awaited like one when the endpoint is watched.
            Pause::Backoff { last } if self.should_await(&outage) => {
                let failures = outage.failures;
                self.await_endpoint(last, outage);
                self.actions
                    .push_back(Action::Report(Event::Awaiting { failures }));
            }
            _ if retry_in.is_zero() => self.dial(Some(now), outage),
            _ => self.pause(now + retry_in, pause, outage),
        }
    }

    /// The daemon closed the connection `conn` before sending a single
    /// byte on it, which on TCP is how iai-mcp's daemon refuses a token;
    /// `reason` says so, naming the token file. A connection younger than
    /// [`PROVEN_AFTER`] closed that way is a failed connect attempt with
    /// that reason (`connect_failed`, the backoff, the failure count and
    /// the connect wait's message all as for a refused dial): its reads
    /// wait for the next connection, and its writes fail with
    /// [`BridgeError::Refused`], never re-sent. An older one is only lost
    /// ([`Bridge::closed`]): a daemon that stops closes an idle connection
    /// without a word too.
    pub fn refused(&mut self, conn: ConnId, reason: String, now: Instant) {
        let young = match &self.link {
            Link::Connected(connected) if connected.conn == conn => {
                matches!(connected.proof, Proof::Unproven(_))
                    && now.saturating_duration_since(connected.since) < PROVEN_AFTER
            }
            _ => return,
        };
        if !young {
            self.closed(conn, now);
            return;
        }
        let Link::Connected(Connected {
            attempt,
            proof: Proof::Unproven(before),
            ..
        }) = self.take_link()
        else {
            unreachable!("checked above");
        };
        self.settle_calls_of(
            conn,
            now,
            Lost::Refused {
                lost_at: before.lost_at,
                reason: reason.clone(),
            },
        );
        // Back to the attempt it was, which now fails.
        self.link = Link::Connecting(Connecting {
            attempt,
            outage: before,
            appeared: false,
        });
        self.connect_failed(conn, reason, now);
    }

    /// The calls in flight on the lost connection `conn`: a read is put
    /// back to wait for the next connection for as long as its own
    /// deadline allows; a write never is. Returns how many were put back
    /// and how many failed.
    fn settle_lost_calls(
        &mut self,
        conn: ConnId,
        now: Instant,
        lost_at: Option<Instant>,
    ) -> (usize, usize) {
        self.settle_calls_of(conn, now, Lost::Closed { lost_at })
    }

    /// The calls in flight on `conn`, which is gone (`how`): a read is put
    /// back to wait for the next connection for as long as its own
    /// deadline allows; any other call fails. Returns how many were put
    /// back and how many failed.
    fn settle_calls_of(&mut self, conn: ConnId, now: Instant, how: Lost) -> (usize, usize) {
        let lost: Vec<CallId> = self
            .calls
            .iter()
            .filter(|(_, c)| matches!(c.phase, Phase::InFlight(sent) if sent.conn == conn))
            .map(|(id, _)| *id)
            .collect();
        let (mut replayed, mut failed) = (0, 0);
        for id in lost {
            let Some(call) = self.calls.get(&id) else {
                continue;
            };
            let Phase::InFlight(sent) = call.phase else {
                continue;
            };
            self.wire.remove(&sent.wire);
            if self.policy.replays() && call.request.access == Access::Read && now < call.expires {
                let wait = match (&how, sent.waited) {
                    // A refused connection gave the call nothing: the wait
                    // it was sent from goes on as it was.
                    (Lost::Refused { .. }, Some(waited)) => waited,
                    (Lost::Refused { lost_at, .. } | Lost::Closed { lost_at }, _) => {
                        self.waiting(&call.request, now, call.expires, *lost_at)
                    }
                };
                if let Some(call) = self.calls.get_mut(&id) {
                    call.phase = Phase::Waiting(wait);
                }
                replayed += 1;
            } else {
                let error = match &how {
                    Lost::Closed { .. } => BridgeError::SocketClosed,
                    Lost::Refused { reason, .. } => BridgeError::Refused {
                        reason: reason.clone(),
                    },
                };
                self.finish(id, Err(error));
                failed += 1;
            }
        }
        (replayed, failed)
    }

    /// A complete line (without its newline) arrived on `conn`.
    pub fn line(&mut self, conn: ConnId, line: &[u8]) {
        let Link::Connected(connected) = &mut self.link else {
            return;
        };
        if connected.conn != conn {
            return;
        }
        connected.heard += 1;
        let (id, outcome) = match wire::read_reply(line) {
            Reply::NotJson => {
                self.non_json_line(conn);
                return;
            }
            Reply::Unroutable => (None, None),
            Reply::Message { id, outcome } => (id, Some(outcome)),
        };
        connected.streak = 0;
        connected.proof = Proof::Proven;
        let Some(outcome) = outcome else {
            self.actions
                .push_back(Action::Report(Event::Unmatched { id: None }));
            return;
        };
        let wire = id.as_ref().and_then(Value::as_u64);
        let Some(call) = wire.and_then(|w| self.wire.get(&w).copied()) else {
            self.actions
                .push_back(Action::Report(Event::Unmatched { id }));
            return;
        };
        self.finish(call, outcome);
    }

    /// A line longer than the driver accepts arrived on `conn`; `id` is the
    /// request id the driver could read from its beginning, if any.
    pub fn oversized_line(&mut self, conn: ConnId, id: Option<u64>, limit: usize) {
        let Link::Connected(connected) = &mut self.link else {
            return;
        };
        if connected.conn != conn {
            return;
        }
        connected.heard += 1;
        match id.and_then(|w| self.wire.get(&w).copied()) {
            Some(call) => {
                connected.streak = 0;
                self.finish(call, Err(BridgeError::ResponseTooLarge(limit)));
            }
            None => self.non_json_line(conn),
        }
    }

    /// Time has reached `now`: dial if a retry is due, and fail calls whose
    /// deadline has passed.
    pub fn handle_timeout(&mut self, now: Instant) {
        if let Link::Retrying(retrying) = &self.link
            && retrying.at <= now
        {
            let Link::Retrying(retrying) = self.take_link() else {
                unreachable!("checked above");
            };
            self.dial(Some(now), retrying.outage);
        }
        let expired: Vec<(CallId, Phase)> = self
            .calls
            .iter()
            .filter(|(_, c)| c.phase.deadline() <= now)
            .map(|(id, c)| (*id, c.phase))
            .collect();
        let mut silent = None;
        for (id, phase) in expired {
            let error = match phase {
                Phase::Waiting(wait) => self.connect_wait_error(now - wait.since),
                Phase::InFlight(sent) => {
                    if self.heard_nothing_since(sent) {
                        silent = Some(sent.conn);
                    }
                    BridgeError::Timeout(self.policy.timings().call_timeout)
                }
            };
            self.finish(id, Err(error));
        }
        // Nothing at all arrived on the connection for a whole call
        // timeout while a call waited: the daemon is hung, not slow (a slow
        // one answers other calls or sends something meanwhile). Recycle
        // the connection; its other calls go the way of a lost connection.
        if let Some(conn) = silent {
            self.actions
                .push_back(Action::Report(Event::Silent { conn }));
            self.actions.push_back(Action::Close(conn));
            self.closed(conn, now);
        }
    }

    /// Whether the connection `sent` went out on is still up and has
    /// delivered nothing since.
    fn heard_nothing_since(&self, sent: InFlight) -> bool {
        matches!(&self.link, Link::Connected(c) if c.conn == sent.conn && c.heard == sent.heard)
    }

    /// Stop: fail every call, close the connection, dial no more.
    pub fn shutdown(&mut self) {
        if let Some(conn) = self.connection().or(self.connecting()) {
            self.actions.push_back(Action::Close(conn));
        }
        self.stop(Stop::Shutdown);
        let ids: Vec<CallId> = self.calls.keys().copied().collect();
        for id in ids {
            self.finish(id, Err(BridgeError::Shutdown));
        }
    }

    /// The next action for the driver, if any.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// The earliest instant at which [`Bridge::handle_timeout`] has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let retry = match &self.link {
            Link::Retrying(retrying) => Some(retrying.at),
            _ => None,
        };
        self.calls
            .values()
            .map(|c| c.phase.deadline())
            .chain(retry)
            .min()
    }

    /// The connection currently established, if any.
    pub fn connection(&self) -> Option<ConnId> {
        match &self.link {
            Link::Connected(connected) => Some(connected.conn),
            _ => None,
        }
    }

    /// The connect attempt under way, if any.
    pub fn connecting(&self) -> Option<ConnId> {
        match &self.link {
            Link::Connecting(connecting) => Some(connecting.attempt.conn),
            _ => None,
        }
    }

    /// Whether the bridge is waiting for the daemon: dialling it, backing
    /// off, or awaiting its endpoint (not connected, and not stopped).
    pub fn awaits_daemon(&self) -> bool {
        matches!(
            self.link,
            Link::Connecting(_) | Link::Retrying(_) | Link::Awaiting(_)
        )
    }

    /// Whether the bridge is between connect attempts: backing off, or
    /// awaiting its endpoint (an attempt has failed, and none is under way).
    pub fn between_attempts(&self) -> bool {
        matches!(self.link, Link::Retrying(_) | Link::Awaiting(_))
    }

    /// Number of calls not yet answered.
    pub fn pending(&self) -> usize {
        self.calls.len()
    }

    /// What the rest of the wrapper may know about the connection.
    pub fn status(&self) -> LinkStatus {
        LinkStatus {
            connected: matches!(self.link, Link::Connected(_)),
            connects: self.connects,
            failed_attempts: self.failed_attempts,
            awaiting_endpoint: matches!(self.link, Link::Awaiting(_)),
        }
    }

    /// Transition: start a connect attempt at `now` (`None`: the boot
    /// probe), carrying `outage` into it.
    fn dial(&mut self, now: Option<Instant>, outage: Outage) {
        let hurry_spacing = self
            .policy
            .timings()
            .backoff
            .initial()
            .mul_f64(1.0 + self.rng.f64());
        self.next_conn += 1;
        let conn = ConnId(self.next_conn);
        self.link = Link::Connecting(Connecting {
            attempt: Attempt {
                conn,
                began: now,
                hurry_spacing,
            },
            outage,
            appeared: false,
        });
        self.actions.push_back(Action::Connect(conn));
    }

    /// Transition: the attempt under way became the connection.
    fn establish(&mut self, now: Instant) {
        let Link::Connecting(Connecting {
            attempt, outage, ..
        }) = self.take_link()
        else {
            unreachable!("only an attempt under way is established");
        };
        let reconnect = self.connects > 0;
        self.connects += 1;
        self.link = Link::Connected(Connected {
            conn: attempt.conn,
            since: now,
            attempt,
            proof: Proof::Unproven(outage),
            heard: 0,
            streak: 0,
        });
        self.actions.push_back(Action::Report(Event::Connected {
            conn: attempt.conn,
            reconnect,
        }));
    }

    /// Transition: wait until `at` to dial again.
    fn pause(&mut self, at: Instant, pause: Pause, outage: Outage) {
        self.link = Link::Retrying(Retrying { at, pause, outage });
    }

    /// Transition: dial no more until the endpoint appears or a call
    /// arrives (only with a watch armed).
    fn await_endpoint(&mut self, last: Attempt, outage: Outage) {
        self.link = Link::Awaiting(Awaiting { last, outage });
    }

    /// After the failed attempt `last`: pause on the backoff (at least
    /// `floor`), or, with a watch armed, no call waiting and
    /// [`WATCHED_RETRIES`] failures in a row, await the endpoint. Returns
    /// the pause, `None` when awaiting (the caller reports it, after its own
    /// report of the failure).
    fn redial_later(
        &mut self,
        now: Instant,
        last: Attempt,
        outage: Outage,
        floor: Duration,
    ) -> Option<Duration> {
        if self.should_await(&outage) {
            self.await_endpoint(last, outage);
            return None;
        }
        let delay = floor.max(self.retry_delay(outage.failures));
        self.pause(now + delay, Pause::Backoff { last }, outage);
        Some(delay)
    }

    /// Whether, after a failed attempt, to stop dialling and await the
    /// endpoint: it is watched, [`WATCHED_RETRIES`] attempts in a row have
    /// failed, and no call waits.
    fn should_await(&self, outage: &Outage) -> bool {
        self.watch == Watch::Armed && outage.failures >= WATCHED_RETRIES && !self.calls_waiting()
    }

    /// Whether a call waits for a connection (beyond the next attempt).
    fn calls_waiting(&self) -> bool {
        self.calls.values().any(|c| {
            matches!(
                c.phase,
                Phase::Waiting(Wait {
                    next_attempt_only: false,
                    ..
                })
            )
        })
    }

    /// The delay before an attempt the endpoint's appearance brings on:
    /// drawn from `[0, APPEARED_SPREAD)`.
    fn appeared_delay(&mut self) -> Duration {
        APPEARED_SPREAD.mul_f64(self.rng.f64())
    }

    /// Transition: dial no more. Calls waiting for a connection fail,
    /// unless the wrapper is exiting (then every call fails with
    /// `Shutdown`).
    fn stop(&mut self, why: Stop) {
        self.link = Link::Stopped(why);
        if why == Stop::GaveUp {
            self.fail_waiting(BridgeError::NotConnected);
        }
    }

    /// Takes the state out for a transition to consume (the placeholder
    /// never outlives the transition).
    fn take_link(&mut self) -> Link {
        std::mem::replace(&mut self.link, Link::Idle)
    }

    /// The outage under way, while not connected.
    fn outage(&self) -> Option<&Outage> {
        match &self.link {
            Link::Connecting(connecting) => Some(&connecting.outage),
            Link::Retrying(retrying) => Some(&retrying.outage),
            Link::Awaiting(awaiting) => Some(&awaiting.outage),
            Link::Idle | Link::Connected(_) | Link::Stopped(_) => None,
        }
    }

    /// When the last healthy connection was lost, while no new one is up.
    fn lost_at(&self) -> Option<Instant> {
        self.outage().and_then(|outage| outage.lost_at)
    }

    /// A call arrived while the bridge waits between connect attempts. The
    /// daemon may be back: after a failed attempt the next one is brought
    /// forward to one to two initial backoffs after the last (jittered; at
    /// once if that has passed), so a stream of calls against a dead daemon
    /// keeps a bounded attempt rate; and it is made at once when the timer
    /// would come too late for the call anyway, or when the call waits for
    /// the next attempt only.
    fn hurry(&mut self, wait: Wait, now: Instant) {
        if let Link::Awaiting(awaiting) = &self.link {
            let soonest = if wait.next_attempt_only {
                now
            } else {
                awaiting
                    .last
                    .began
                    .map_or(now, |began| began + awaiting.last.hurry_spacing)
                    .max(now)
            };
            let Link::Awaiting(Awaiting { last, outage }) = self.take_link() else {
                unreachable!("checked above");
            };
            if soonest <= now {
                self.dial(Some(now), outage);
            } else {
                self.pause(soonest, Pause::Backoff { last }, outage);
            }
            return;
        }
        let Link::Retrying(retrying) = &self.link else {
            return;
        };
        if wait.next_attempt_only || retrying.at > wait.deadline {
            let Link::Retrying(retrying) = self.take_link() else {
                unreachable!("checked above");
            };
            self.dial(Some(now), retrying.outage);
            return;
        }
        let Pause::Backoff { last } = retrying.pause else {
            return;
        };
        let soonest = last
            .began
            .map_or(now, |began| began + last.hurry_spacing)
            .max(now);
        if soonest >= retrying.at {
            return;
        }
        self.actions.push_back(Action::Report(Event::Hurried {
            earlier_by: retrying.at - soonest,
        }));
        let Link::Retrying(retrying) = self.take_link() else {
            unreachable!("checked above");
        };
        if soonest <= now {
            self.dial(Some(now), retrying.outage);
        } else {
            self.pause(soonest, retrying.pause, retrying.outage);
        }
    }

    /// The pause before the next connect attempt after `failures` failed
    /// ones, growing less while a call waits ([`WAITING_BACKOFF_STEPS`]).
    /// With a watch armed the steps grow to the cap even while a call
    /// waits: the watch tells of the daemon's return, and the backoff is
    /// only a safety net for a file system that reports nothing.
    fn retry_delay(&mut self, failures: u32) -> Duration {
        let waiting = self.watch == Watch::Unavailable && self.calls_waiting();
        let failures = if waiting {
            failures.min(WAITING_BACKOFF_STEPS)
        } else {
            failures
        };
        self.policy
            .timings()
            .backoff
            .delay(failures, self.rng.f64())
    }

    fn send(&mut self, id: CallId, conn: ConnId, now: Instant) {
        let Link::Connected(connected) = &self.link else {
            return;
        };
        let heard = connected.heard;
        let Some(call) = self.calls.get_mut(&id) else {
            return;
        };
        self.next_wire += 1;
        let wire = self.next_wire;
        let line = wire::request_line(wire, &call.request.method, &call.request.params);
        let waited = match call.phase {
            Phase::Waiting(wait) => Some(wait),
            Phase::InFlight(_) => None,
        };
        call.phase = Phase::InFlight(InFlight {
            conn,
            wire,
            deadline: (now + self.policy.timings().call_timeout).min(call.expires),
            heard,
            waited,
        });
        call.sends += 1;
        if call.sends > 1 {
            self.actions.push_back(Action::Report(Event::CallReplayed {
                call: id,
                method: call.request.method.clone(),
                sends: call.sends,
            }));
        }
        self.wire.insert(wire, id);
        self.actions.push_back(Action::Send(conn, line));
    }

    fn non_json_line(&mut self, conn: ConnId) {
        // Only lines that arrive while calls wait on this connection count:
        // a stray print on an idle connection harms nobody.
        let oldest = self
            .calls
            .iter()
            .filter_map(|(id, c)| match c.phase {
                Phase::InFlight(sent) if sent.conn == conn => Some((sent.wire, *id)),
                _ => None,
            })
            .min();
        let Link::Connected(connected) = &mut self.link else {
            return;
        };
        let Some((_, id)) = oldest else {
            connected.streak = 0;
            return;
        };
        connected.streak += 1;
        if connected.streak >= PARSE_STREAK_LIMIT {
            let lines = connected.streak;
            connected.streak = 0;
            self.finish(id, Err(BridgeError::ParseStreak(lines)));
            self.actions
                .push_back(Action::Report(Event::ParseStreak { lines, call: id }));
        }
    }

    fn connect_wait_error(&self, waited: Duration) -> BridgeError {
        BridgeError::ConnectWait {
            endpoint: self.endpoint.clone(),
            waited,
            last_error: self.outage().and_then(|o| o.last_error.clone()),
        }
    }

    fn fail_waiting(&mut self, error: BridgeError) {
        let waiting: Vec<CallId> = self
            .calls
            .iter()
            .filter(|(_, c)| matches!(c.phase, Phase::Waiting(_)))
            .map(|(id, _)| *id)
            .collect();
        for id in waiting {
            self.finish(id, Err(error.clone()));
        }
    }

    /// Answer call `id` (if still pending) with `outcome`, stating on a
    /// failure whether it was ever sent and whether the caller may answer
    /// it another way. This is the one place that decides the write rule:
    /// a write that reached a daemon connection is never handed on.
    fn finish(&mut self, id: CallId, outcome: Result<DaemonResult, BridgeError>) {
        let Some(call) = self.calls.remove(&id) else {
            return;
        };
        if let Phase::InFlight(sent) = call.phase {
            self.wire.remove(&sent.wire);
        }
        let outcome = outcome.map_err(|error| {
            let sent = call.sends > 0;
            let unreachable = match error {
                BridgeError::Shutdown => false,
                BridgeError::Timeout(_) => call.request.access == Access::Read,
                ref e => e.is_unreachable(),
            };
            let fallback = call.request.fallback
                && unreachable
                && (call.request.access == Access::Read || !sent);
            Failure {
                error,
                sent,
                fallback,
            }
        });
        self.actions.push_back(Action::Reply(id, outcome));
    }

    /// How a call arriving (or put back to wait) at `now` waits for a
    /// connection, never past `expires`. Without a fallback: the full
    /// connect wait. With one: if a healthy connection was lost (at
    /// `lost_at`) less than a connect wait ago, the daemon is presumed to
    /// be restarting, and the call waits until the connect wait has passed
    /// since the loss, to get the daemon's own answer; otherwise the daemon
    /// is presumed down, and the call waits for one fresh connect attempt
    /// only (at most the fallback wait), so that a user whose daemon is
    /// down is answered at once.
    fn waiting(
        &self,
        request: &Request,
        now: Instant,
        expires: Instant,
        lost_at: Option<Instant>,
    ) -> Wait {
        let timings = self.policy.timings();
        let (deadline, next_attempt_only) = if !request.fallback {
            (now + timings.connect_wait, false)
        } else {
            let quick = now + timings.fallback_wait.min(timings.connect_wait);
            match lost_at {
                Some(lost) if now < lost + timings.connect_wait => {
                    (quick.max(lost + timings.connect_wait), false)
                }
                _ => (quick, true),
            }
        };
        Wait {
            deadline: deadline.min(expires),
            since: now,
            next_attempt_only,
        }
    }

    /// The earliest instant a call could bring the next attempt forward
    /// to, while backing off (tests check the spacing).
    #[cfg(test)]
    fn hurry_bound(&self) -> Option<(Duration, Instant)> {
        match &self.link {
            Link::Retrying(Retrying {
                pause: Pause::Backoff { last },
                ..
            }) => last
                .began
                .map(|began| (last.hurry_spacing, began + last.hurry_spacing)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bridge::policy::{Backoff, BridgeMode, Timings};
    use serde_json::json;

    const DELAY: Duration = Duration::from_millis(1000);

    fn bridge(mode: BridgeMode) -> (Bridge, Instant) {
        let timings = Timings {
            reconnect_delay: DELAY,
            connect_wait: Duration::from_secs(10),
            fallback_wait: Duration::from_secs(1),
            call_timeout: Duration::from_secs(60),
            backoff: Backoff::new(Duration::from_millis(50), Duration::from_secs(2))
                .expect("valid"),
        };
        let policy = Policy::new(mode, timings).expect("valid");
        let now = Instant::now();
        let mut b = Bridge::new(policy, "/tmp/t.sock", 1);
        b.start();
        (b, now)
    }

    fn drain(b: &mut Bridge) -> Vec<Action> {
        std::iter::from_fn(|| b.poll_action())
            .filter(|a| !matches!(a, Action::Report(_)))
            .collect()
    }

    fn req(method: &str, read: bool) -> Request {
        Request {
            method: method.into(),
            params: json!({}),
            access: if read { Access::Read } else { Access::Write },
            fallback: false,
        }
    }

    /// A failure as the bridge reports it for a call without a fallback.
    fn failed(error: BridgeError, sent: bool) -> Result<DaemonResult, Failure> {
        Err(Failure {
            error,
            sent,
            fallback: false,
        })
    }

    fn wire_id(line: &[u8]) -> u64 {
        let v: Value = serde_json::from_slice(line).expect("json");
        v["id"].as_u64().expect("id")
    }

    fn response(wire: u64) -> Vec<u8> {
        json!({"jsonrpc": "2.0", "id": wire, "result": {"ok": true}})
            .to_string()
            .into_bytes()
    }

    /// Connected on ConnId(1) with one call answered.
    fn connected(mode: BridgeMode) -> (Bridge, Instant) {
        let (mut b, now) = bridge(mode);
        assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(1))]);
        b.connected(ConnId(1), now);
        b.call(CallId(1), req("topology", true), now);
        let Some(Action::Send(_, line)) = drain(&mut b).pop() else {
            panic!("expected a send");
        };
        b.line(ConnId(1), &response(wire_id(&line)));
        assert!(matches!(
            drain(&mut b)[..],
            [Action::Reply(CallId(1), Ok(_))]
        ));
        (b, now)
    }

    #[test]
    fn fixed_call_during_reconnect_waits_for_it() {
        let (mut b, now) = connected(BridgeMode::Fixed);
        b.closed(ConnId(1), now);
        assert!(drain(&mut b).is_empty(), "reconnect waits for the delay");
        let t = now + Duration::from_millis(50);
        b.call(CallId(2), req("topology", true), t);
        assert!(drain(&mut b).is_empty(), "the racing call waits");
        assert_eq!(b.poll_timeout(), Some(now + DELAY));
        b.handle_timeout(now + DELAY);
        assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(2))]);
        b.connected(ConnId(2), now + DELAY);
        let actions = drain(&mut b);
        let [Action::Send(ConnId(2), line)] = &actions[..] else {
            panic!("expected the waiting call to be sent: {actions:?}");
        };
        b.line(ConnId(2), &response(wire_id(line)));
        assert!(matches!(
            drain(&mut b)[..],
            [Action::Reply(CallId(2), Ok(_))]
        ));
    }

    #[test]
    fn prefix_call_during_reconnect_fails_at_once() {
        let (mut b, now) = connected(BridgeMode::Prefix);
        b.closed(ConnId(1), now);
        b.call(CallId(2), req("topology", true), now);
        assert_eq!(
            drain(&mut b),
            vec![Action::Reply(
                CallId(2),
                failed(BridgeError::NotConnected, false)
            )]
        );
        b.handle_timeout(now + DELAY);
        assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(2))]);
        b.connected(ConnId(2), now + DELAY);
        // A second drop exhausts the pre-fix bridge's one reconnect.
        b.closed(ConnId(2), now + DELAY);
        b.handle_timeout(now + DELAY * 10);
        assert!(drain(&mut b).is_empty(), "no further reconnect");
        b.call(CallId(3), req("topology", true), now + DELAY * 10);
        assert_eq!(
            drain(&mut b),
            vec![Action::Reply(
                CallId(3),
                failed(BridgeError::NotConnected, false)
            )]
        );
    }

    #[test]
    fn fixed_survives_any_number_of_drops() {
        let (mut b, mut now) = connected(BridgeMode::Fixed);
        for round in 2..10u64 {
            b.closed(ConnId(round - 1), now);
            now += DELAY;
            b.handle_timeout(now);
            assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(round))]);
            b.connected(ConnId(round), now);
            b.call(CallId(round), req("memory_capture", false), now);
            let actions = drain(&mut b);
            let [Action::Send(c, line)] = &actions[..] else {
                panic!("expected one send: {actions:?}");
            };
            assert_eq!(*c, ConnId(round));
            b.line(*c, &response(wire_id(line)));
            assert!(matches!(drain(&mut b)[..], [Action::Reply(_, Ok(_))]));
        }
    }

    #[test]
    fn reads_in_flight_are_replayed_and_writes_fail() {
        let (mut b, now) = connected(BridgeMode::Fixed);
        b.call(CallId(2), req("topology", true), now);
        b.call(CallId(3), req("memory_capture", false), now);
        let sends = drain(&mut b);
        assert_eq!(sends.len(), 2);
        b.closed(ConnId(1), now);
        assert_eq!(
            drain(&mut b),
            vec![Action::Reply(
                CallId(3),
                failed(BridgeError::SocketClosed, true)
            )]
        );
        b.handle_timeout(now + DELAY);
        drain(&mut b);
        b.connected(ConnId(2), now + DELAY);
        let actions = drain(&mut b);
        let [Action::Send(ConnId(2), line)] = &actions[..] else {
            panic!("expected the read to be re-sent: {actions:?}");
        };
        let Action::Send(_, first) = &sends[0] else {
            panic!("send");
        };
        assert_ne!(wire_id(line), wire_id(first), "replay uses a fresh id");
        // Lost again within its deadline: re-sent again.
        b.closed(ConnId(2), now + DELAY);
        assert!(
            drain(&mut b).is_empty(),
            "the read waits for the next connection"
        );
        b.handle_timeout(now + DELAY + DELAY);
        drain(&mut b);
        b.connected(ConnId(3), now + DELAY + DELAY);
        assert!(matches!(drain(&mut b)[..], [Action::Send(ConnId(3), _)]));
    }

    #[test]
    fn a_read_is_replayed_only_while_its_one_deadline_allows() {
        let (mut b, now) = connected(BridgeMode::Fixed);
        b.call(CallId(2), req("topology", true), now);
        drain(&mut b);
        // The call's deadline: connect wait (10 s) plus call timeout (60 s).
        let expires = now + Duration::from_secs(70);
        // Lost after its deadline's end: no replay, whatever the count.
        b.closed(ConnId(1), expires);
        assert_eq!(
            drain(&mut b),
            vec![Action::Reply(
                CallId(2),
                failed(BridgeError::SocketClosed, true)
            )]
        );
        // A replayed read's wait and response deadline never pass it.
        let (mut b, now) = connected(BridgeMode::Fixed);
        b.call(CallId(2), req("topology", true), now);
        drain(&mut b);
        let lost = now + Duration::from_secs(65);
        b.closed(ConnId(1), lost);
        assert!(drain(&mut b).is_empty(), "replayed");
        b.handle_timeout(lost + DELAY);
        drain(&mut b);
        b.connected(ConnId(2), lost + DELAY);
        drain(&mut b);
        assert_eq!(b.poll_timeout(), Some(now + Duration::from_secs(70)));
    }

    #[test]
    fn four_garbage_lines_fail_the_oldest_call_and_valid_lines_reset_the_streak() {
        let (mut b, now) = connected(BridgeMode::Fixed);
        b.call(CallId(2), req("topology", true), now);
        b.call(CallId(3), req("topology", true), now);
        drain(&mut b);
        for _ in 0..3 {
            b.line(ConnId(1), b"noise");
        }
        b.line(ConnId(1), b"{\"jsonrpc\":\"2.0\",\"id\":999,\"result\":1}");
        for _ in 0..3 {
            b.line(ConnId(1), b"noise");
        }
        assert!(drain(&mut b).is_empty(), "the streak was reset");
        b.line(ConnId(1), b"noise");
        assert_eq!(
            drain(&mut b),
            vec![Action::Reply(
                CallId(2),
                failed(BridgeError::ParseStreak(4), true)
            )]
        );
    }

    #[test]
    fn a_daemon_that_accepts_and_drops_is_redialled_with_backoff() {
        let timings = Timings {
            backoff: Backoff::new(Duration::from_millis(100), Duration::from_secs(2))
                .expect("valid"),
            ..Timings::default()
        };
        let mut b = Bridge::new(
            Policy::new(BridgeMode::Fixed, timings).expect("valid"),
            "/tmp/t.sock",
            3,
        );
        let mut now = Instant::now();
        b.start();
        let mut gaps = Vec::new();
        for round in 1..=6u64 {
            assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(round))]);
            b.connected(ConnId(round), now);
            b.closed(ConnId(round), now);
            assert!(drain(&mut b).is_empty(), "no immediate redial");
            let next = b.poll_timeout().expect("a retry");
            gaps.push(next - now);
            now = next;
            b.handle_timeout(now);
        }
        assert!(gaps.windows(2).all(|w| w[1] >= w[0] / 2), "{gaps:?}");
        assert!(gaps[5] >= Duration::from_millis(1000), "{gaps:?}");
        // A connection that answered is healthy: losing it redials at once.
        b.connected(ConnId(7), now);
        b.call(CallId(1), req("topology", true), now);
        let Some(Action::Send(_, line)) = drain(&mut b).pop() else {
            panic!("send");
        };
        b.line(ConnId(7), &response(wire_id(&line)));
        drain(&mut b);
        b.closed(ConnId(7), now);
        assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(8))]);
    }

    /// The reason a TCP daemon's silent close is given.
    const REFUSED: &str = "token refused, /h/.iai-mcp/.daemon.token";

    #[test]
    fn a_refused_token_is_a_failed_attempt_and_the_call_fails_at_its_wait_naming_it() {
        let (mut b, now) = bridge(BridgeMode::Fixed);
        drain(&mut b);
        b.call(CallId(1), req("topology", true), now);
        b.call(CallId(2), req("memory_capture", false), now);
        let mut t = now;
        let mut conn = 1;
        let mut attempts = 0;
        let reply = loop {
            b.connected(ConnId(conn), t);
            let sent = drain(&mut b);
            assert!(
                sent.iter()
                    .all(|a| matches!(a, Action::Send(c, _) if *c == ConnId(conn))),
                "{sent:?}"
            );
            b.refused(ConnId(conn), REFUSED.into(), t);
            attempts += 1;
            let mut actions = drain(&mut b);
            if conn == 1 {
                // The write went out and is never sent again.
                assert_eq!(
                    actions.remove(0),
                    Action::Reply(
                        CallId(2),
                        failed(
                            BridgeError::Refused {
                                reason: REFUSED.into()
                            },
                            true
                        )
                    )
                );
            }
            assert!(actions.is_empty(), "no redial at once: {actions:?}");
            assert_eq!(b.status().failed_attempts, attempts);
            let next = b.poll_timeout().expect("a retry or the deadline");
            assert!(next > t, "backoff applies");
            t = next;
            b.handle_timeout(t);
            match drain(&mut b).pop() {
                Some(Action::Connect(c)) => conn = c.0,
                Some(Action::Reply(CallId(1), reply)) => break reply,
                other => panic!("{other:?}"),
            }
        };
        // The read waited its one connect wait, not one per refusal.
        assert_eq!(t, now + Duration::from_secs(10));
        let Err(Failure { error, sent, .. }) = reply else {
            panic!("a failure");
        };
        assert!(sent);
        let text = error.to_string();
        assert!(text.starts_with("daemon_unreachable: "), "{text}");
        assert!(text.contains(REFUSED), "{text}");
        assert!((10..=100).contains(&attempts), "{attempts} attempts");
    }

    #[test]
    fn a_silent_close_after_the_connection_proved_itself_is_only_a_loss() {
        // Answered once: a later silent close is a daemon going away.
        let (mut b, now) = connected(BridgeMode::Fixed);
        b.refused(ConnId(1), REFUSED.into(), now);
        assert_eq!(b.status().failed_attempts, 0);
        assert!(b.poll_timeout().is_some(), "the reconnect delay");
        // Up for a while without a word: the same.
        let (mut b, now) = bridge(BridgeMode::Fixed);
        drain(&mut b);
        b.connected(ConnId(1), now);
        b.refused(ConnId(1), REFUSED.into(), now + PROVEN_AFTER);
        assert_eq!(b.status().failed_attempts, 0);
        // An old connection's close does nothing.
        b.refused(ConnId(1), REFUSED.into(), now + PROVEN_AFTER);
        assert!(drain(&mut b).is_empty());
    }

    #[test]
    fn garbage_on_an_idle_connection_does_not_count_toward_the_streak() {
        let (mut b, now) = connected(BridgeMode::Fixed);
        for _ in 0..10 {
            b.line(ConnId(1), b"stray print");
        }
        b.call(CallId(2), req("topology", true), now);
        drain(&mut b);
        b.line(ConnId(1), b"stray print");
        assert!(drain(&mut b).is_empty(), "one line is not a streak");
    }

    #[test]
    fn a_hung_daemon_fails_the_call_at_its_deadline_and_its_connection_is_replaced() {
        let (mut b, now) = connected(BridgeMode::Fixed);
        b.call(CallId(2), req("topology", true), now);
        drain(&mut b);
        // A read sent later is still in flight when the first call expires.
        let later = now + Duration::from_secs(1);
        b.call(CallId(3), req("topology", true), later);
        drain(&mut b);
        let deadline = b.poll_timeout().expect("a deadline");
        assert_eq!(deadline, now + Duration::from_secs(60));
        b.handle_timeout(deadline);
        assert_eq!(
            drain(&mut b),
            vec![
                Action::Reply(
                    CallId(2),
                    failed(BridgeError::Timeout(Duration::from_secs(60)), true)
                ),
                Action::Close(ConnId(1)),
            ]
        );
        assert_eq!(b.connection(), None, "the silent connection is gone");
        // The other read is re-sent on the next connection.
        b.handle_timeout(deadline + DELAY);
        assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(2))]);
        b.connected(ConnId(2), deadline + DELAY);
        let actions = drain(&mut b);
        assert!(
            matches!(&actions[..], [Action::Send(ConnId(2), _)]),
            "{actions:?}"
        );
    }

    #[test]
    fn a_slow_daemon_that_answers_other_calls_keeps_its_connection() {
        let (mut b, now) = connected(BridgeMode::Fixed);
        b.call(CallId(2), req("memory_consolidate", false), now);
        drain(&mut b);
        b.call(CallId(3), req("topology", true), now);
        let Some(Action::Send(_, line)) = drain(&mut b).pop() else {
            panic!("send");
        };
        b.line(ConnId(1), &response(wire_id(&line)));
        drain(&mut b);
        b.handle_timeout(now + Duration::from_secs(60));
        assert_eq!(
            drain(&mut b),
            vec![Action::Reply(
                CallId(2),
                failed(BridgeError::Timeout(Duration::from_secs(60)), true)
            )]
        );
        assert_eq!(
            b.connection(),
            Some(ConnId(1)),
            "alive: the connection is kept"
        );
    }

    #[test]
    fn a_down_daemon_is_dialled_with_growing_backoff_and_calls_fail_at_the_wait_deadline() {
        let (mut b, now) = bridge(BridgeMode::Fixed);
        drain(&mut b);
        b.call(CallId(1), req("topology", true), now);
        let mut t = now;
        let mut gaps = Vec::new();
        let mut conn = 1;
        loop {
            b.connect_failed(ConnId(conn), "refused".into(), t);
            let next = b.poll_timeout().expect("retry or deadline");
            gaps.push(next - t);
            t = next;
            b.handle_timeout(t);
            let actions = drain(&mut b);
            if let [Action::Reply(CallId(1), Err(Failure { error: e, .. }))] = &actions[..] {
                assert!(matches!(e, BridgeError::ConnectWait { .. }));
                assert!(e.to_string().contains("/tmp/t.sock"));
                break;
            }
            conn += 1;
            assert_eq!(actions, vec![Action::Connect(ConnId(conn))]);
        }
        assert_eq!(t, now + Duration::from_secs(10));
        // While the call waits, the pause grows to four initial steps
        // (jittered by half a step either way) and no further.
        assert!(
            gaps.iter().all(|g| *g >= Duration::from_millis(25)),
            "{gaps:?}"
        );
        assert!(
            gaps.iter().all(|g| *g < Duration::from_millis(300)),
            "{gaps:?}"
        );
        assert!(gaps.len() <= 100, "bounded attempts: {}", gaps.len());
    }

    #[test]
    fn without_waiting_calls_the_backoff_grows_to_its_cap() {
        let (mut b, now) = bridge(BridgeMode::Fixed);
        drain(&mut b);
        let mut t = now;
        let mut gaps = Vec::new();
        for conn in 1..=10 {
            b.connect_failed(ConnId(conn), "refused".into(), t);
            let next = b.poll_timeout().expect("retry");
            gaps.push(next - t);
            t = next;
            b.handle_timeout(t);
            assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(conn + 1))]);
        }
        assert!(gaps[9] >= Duration::from_secs(1), "{gaps:?}");
    }

    #[test]
    fn a_call_in_a_backoff_pause_brings_the_attempt_forward_at_most_once_per_initial_backoff() {
        let (mut b, now) = bridge(BridgeMode::Fixed);
        drain(&mut b);
        let mut t = now;
        // Four failed attempts: the pause grows well past the initial 50 ms.
        for conn in 1..=4 {
            b.connect_failed(ConnId(conn), "refused".into(), t);
            t = b.poll_timeout().expect("retry");
            b.handle_timeout(t);
            assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(conn + 1))]);
        }
        b.connect_failed(ConnId(5), "refused".into(), t);
        drain(&mut b);
        let retry_at = b.poll_timeout().expect("retry");
        let (spacing, bound) = b.hurry_bound().expect("backing off");
        assert_eq!(bound, t + spacing);
        assert!(
            (Duration::from_millis(50)..Duration::from_millis(100)).contains(&spacing),
            "one to two initial backoffs: {spacing:?}"
        );
        assert!(
            bound < retry_at,
            "the backoff pause is longer than the bound"
        );
        // Within the initial backoff of the last attempt, a call brings the
        // next attempt forward to the bound, not sooner.
        b.call(
            CallId(1),
            req("topology", true),
            t + Duration::from_millis(10),
        );
        assert!(drain(&mut b).is_empty(), "bounded: no attempt yet");
        assert_eq!(b.poll_timeout(), Some(bound));
        // More calls meanwhile change nothing.
        b.call(
            CallId(2),
            req("topology", true),
            t + Duration::from_millis(20),
        );
        assert!(drain(&mut b).is_empty());
        assert_eq!(b.poll_timeout(), Some(bound));
        b.handle_timeout(bound);
        assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(6))]);
        // That attempt fails too; a call well after it dials at once.
        b.connect_failed(ConnId(6), "refused".into(), bound);
        drain(&mut b);
        let later = bound + Duration::from_millis(100);
        assert!(later < b.poll_timeout().expect("retry"));
        b.call(CallId(3), req("topology", true), later);
        assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(7))]);
        // The daemon is back: the three waiting calls go out on it.
        b.connected(ConnId(7), later);
        let sent = drain(&mut b)
            .iter()
            .filter(|a| matches!(a, Action::Send(ConnId(7), _)))
            .count();
        assert_eq!(sent, 3);
    }

    #[test]
    fn the_reconnect_delay_is_not_cut_short_by_calls() {
        let (mut b, now) = connected(BridgeMode::Fixed);
        b.closed(ConnId(1), now);
        drain(&mut b);
        for ms in [60, 200, 600] {
            b.call(
                CallId(ms),
                req("topology", true),
                now + Duration::from_millis(ms),
            );
            assert!(drain(&mut b).is_empty(), "waits for the delay at {ms} ms");
        }
    }

    #[test]
    fn stale_events_are_ignored() {
        let (mut b, now) = connected(BridgeMode::Fixed);
        b.call(CallId(2), req("topology", true), now);
        let Some(Action::Send(_, line)) = drain(&mut b).pop() else {
            panic!("send");
        };
        b.closed(ConnId(1), now);
        b.handle_timeout(now + DELAY);
        b.connected(ConnId(2), now + DELAY);
        drain(&mut b);
        b.line(ConnId(1), &response(wire_id(&line)));
        b.closed(ConnId(1), now + DELAY);
        assert!(drain(&mut b).is_empty());
        assert_eq!(b.connection(), Some(ConnId(2)));
        // A connect result for an attempt nobody waits for is closed.
        b.connected(ConnId(7), now + DELAY);
        assert_eq!(drain(&mut b), vec![Action::Close(ConnId(7))]);
    }

    #[test]
    fn shutdown_fails_everything_and_closes() {
        let (mut b, now) = connected(BridgeMode::Fixed);
        b.call(CallId(2), req("topology", true), now);
        drain(&mut b);
        b.shutdown();
        assert_eq!(
            drain(&mut b),
            vec![
                Action::Close(ConnId(1)),
                Action::Reply(CallId(2), failed(BridgeError::Shutdown, true))
            ]
        );
        b.call(CallId(3), req("topology", true), now);
        assert_eq!(
            drain(&mut b),
            vec![Action::Reply(
                CallId(3),
                failed(BridgeError::Shutdown, false)
            )]
        );
    }

    /// A bridge with a watch armed whose idle outage has reached the wait
    /// for the endpoint: `(bridge, now, next conn id)`.
    fn awaiting_endpoint() -> (Bridge, Instant, u64) {
        let (mut b, now) = bridge(BridgeMode::Fixed);
        b.watch(Watch::Armed, now);
        let mut t = now;
        let mut conn = 1;
        loop {
            assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(conn))]);
            b.connect_failed(ConnId(conn), "refused".into(), t);
            conn += 1;
            match b.poll_timeout() {
                Some(at) => {
                    t = at;
                    b.handle_timeout(t);
                }
                None => break,
            }
        }
        assert_eq!(conn - 1, u64::from(WATCHED_RETRIES), "a few quick retries");
        assert!(drain(&mut b).is_empty(), "no timer, no dial");
        (b, t, conn)
    }

    #[test]
    fn with_a_watch_an_idle_bridge_stops_dialling_and_dials_when_the_endpoint_appears() {
        let (mut b, t, conn) = awaiting_endpoint();
        let appeared = t + Duration::from_secs(3600);
        b.endpoint_appeared(appeared);
        let due = b.poll_timeout().expect("an attempt is due");
        assert!(due < appeared + APPEARED_SPREAD, "{:?}", due - appeared);
        b.handle_timeout(due);
        assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(conn))]);
        // An endpoint that appears but refuses is awaited again at once.
        b.connect_failed(ConnId(conn), "refused".into(), due);
        assert_eq!(b.poll_timeout(), None);
        assert!(b.status().awaiting_endpoint);
    }

    #[test]
    fn with_a_watch_a_waiting_call_goes_out_within_the_spread_of_the_appearance() {
        let (mut b, now) = bridge(BridgeMode::Fixed);
        b.watch(Watch::Armed, now);
        drain(&mut b);
        b.connect_failed(ConnId(1), "refused".into(), now);
        let mut t = now + Duration::from_millis(1);
        b.call(CallId(1), req("topology", true), t);
        assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(2))]);
        b.connect_failed(ConnId(2), "refused".into(), t);
        let mut conn = 3;
        // The call waits through attempts that keep failing; the backoff
        // grows past the waiting cap: it is only a safety net.
        let mut gaps = Vec::new();
        for _ in 0..6 {
            let at = b.poll_timeout().expect("a retry while a call waits");
            gaps.push(at - t);
            t = at;
            b.handle_timeout(t);
            assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(conn))]);
            b.connect_failed(ConnId(conn), "refused".into(), t);
            conn += 1;
        }
        assert!(
            gaps.iter().any(|g| *g > Duration::from_millis(300)),
            "{gaps:?}"
        );
        let appeared = t + Duration::from_millis(200);
        b.endpoint_appeared(appeared);
        let due = b.poll_timeout().expect("due");
        assert!(due < appeared + APPEARED_SPREAD);
        b.handle_timeout(due);
        assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(conn))]);
        b.connected(ConnId(conn), due);
        let actions = drain(&mut b);
        assert!(
            matches!(actions[..], [Action::Send(c, _)] if c == ConnId(conn)),
            "{actions:?}"
        );
    }

    #[test]
    fn an_appearance_during_an_attempt_brings_the_next_one_without_backoff_if_it_fails() {
        let (mut b, t, conn) = awaiting_endpoint();
        b.call(CallId(1), req("topology", true), t + Duration::from_secs(1));
        assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(conn))]);
        let appeared = t + Duration::from_secs(1);
        b.endpoint_appeared(appeared);
        // The attempt raced the daemon's bind and fails: the next attempt
        // follows one to two initial backoffs after it began (as a call's
        // would), not on the grown backoff, and is not awaited.
        b.connect_failed(ConnId(conn), "refused".into(), appeared);
        let due = b.poll_timeout().expect("due");
        assert!(
            due <= appeared + Duration::from_millis(100),
            "{:?}",
            due - appeared
        );
        b.handle_timeout(due);
        assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(conn + 1))]);
    }

    #[test]
    fn a_call_while_the_endpoint_is_awaited_dials_at_once() {
        let (mut b, t, conn) = awaiting_endpoint();
        b.call(CallId(1), req("topology", true), t + Duration::from_secs(5));
        assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(conn))]);
        // Failing, it is retried on the backoff while the call waits.
        b.connect_failed(ConnId(conn), "refused".into(), t + Duration::from_secs(5));
        assert!(b.poll_timeout().is_some());
        assert!(drain(&mut b).is_empty());
    }

    #[test]
    fn losing_the_watch_resumes_the_backoff() {
        let (mut b, t, conn) = awaiting_endpoint();
        b.watch(Watch::Unavailable, t);
        let at = b.poll_timeout().expect("the backoff again");
        b.handle_timeout(at);
        assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(conn))]);
        b.connect_failed(ConnId(conn), "refused".into(), at);
        assert!(b.poll_timeout().is_some(), "no wait without a watch");
    }

    #[test]
    fn an_appearance_while_connected_or_stopped_changes_nothing() {
        let (mut b, now) = connected(BridgeMode::Fixed);
        b.endpoint_appeared(now);
        assert!(drain(&mut b).is_empty());
        assert_eq!(b.poll_timeout(), None);
        b.shutdown();
        drain(&mut b);
        b.endpoint_appeared(now);
        assert!(drain(&mut b).is_empty());
        assert_eq!(b.poll_timeout(), None);
    }

    fn degradable(method: &str, read: bool) -> Request {
        Request {
            fallback: true,
            ..req(method, read)
        }
    }

    #[test]
    fn a_call_that_can_fall_back_is_handed_on_when_the_next_attempt_fails() {
        let (mut b, now) = bridge(BridgeMode::Fixed);
        assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(1))]);
        b.call(CallId(1), degradable("memory_capture", false), now);
        assert!(
            drain(&mut b).is_empty(),
            "it waits for the attempt under way"
        );
        b.connect_failed(ConnId(1), "No such file or directory".into(), now);
        let actions = drain(&mut b);
        let [Action::Reply(CallId(1), Err(failure))] = &actions[..] else {
            panic!("expected a failure: {actions:?}");
        };
        assert!(failure.fallback && !failure.sent, "{failure:?}");
        assert!(failure.error.is_unreachable());
        // The next one makes a fresh attempt at once instead of waiting for
        // the backoff.
        b.call(CallId(2), degradable("memory_recall", true), now);
        assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(2))]);
        b.connected(ConnId(2), now);
        let actions = drain(&mut b);
        assert!(
            matches!(actions[..], [Action::Send(ConnId(2), _)]),
            "{actions:?}"
        );
    }

    #[test]
    fn while_restarting_a_call_that_can_fall_back_waits_for_the_daemon() {
        let (mut b, now) = connected(BridgeMode::Fixed);
        b.closed(ConnId(1), now);
        b.call(CallId(2), degradable("memory_recall", true), now);
        b.handle_timeout(now + DELAY);
        assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(2))]);
        b.connect_failed(ConnId(2), "refused".into(), now + DELAY);
        assert!(drain(&mut b).is_empty(), "a restart is waited out");
        // A connect wait after the loss, the daemon counts as down.
        let until = b.poll_timeout().expect("a retry");
        assert!(until < now + Duration::from_secs(10));
        b.handle_timeout(until);
        assert_eq!(drain(&mut b), vec![Action::Connect(ConnId(3))]);
        b.connected(ConnId(3), until);
        let actions = drain(&mut b);
        assert!(
            matches!(actions[..], [Action::Send(ConnId(3), _)]),
            "{actions:?}"
        );
    }

    #[test]
    fn a_write_lost_after_sending_is_never_handed_on_but_a_read_is() {
        let (mut b, now) = connected(BridgeMode::Fixed);
        b.call(CallId(2), degradable("memory_capture", false), now);
        b.call(CallId(3), degradable("memory_recall", true), now);
        drain(&mut b);
        b.closed(ConnId(1), now);
        let actions = drain(&mut b);
        let [Action::Reply(CallId(2), Err(failure))] = &actions[..] else {
            panic!("expected the write to fail: {actions:?}");
        };
        assert_eq!(failure.error, BridgeError::SocketClosed);
        assert!(failure.sent && !failure.fallback, "{failure:?}");
        // The read waits out the restart, then may be answered elsewhere.
        let deadline = now + Duration::from_secs(10);
        b.handle_timeout(deadline);
        let actions: Vec<Action> = drain(&mut b)
            .into_iter()
            .filter(|a| matches!(a, Action::Reply(..)))
            .collect();
        let [Action::Reply(CallId(3), Err(failure))] = &actions[..] else {
            panic!("expected the read to give up: {actions:?}");
        };
        assert!(failure.sent && failure.fallback, "{failure:?}");
    }
}
