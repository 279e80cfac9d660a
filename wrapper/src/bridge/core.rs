//! The bridge's decisions, with no I/O and no clock.
//!
//! [`Bridge`] owns the connection state, the table of calls and the
//! reconnect schedule. Its inputs are events (a call arrives, a connect
//! attempt ends, a line arrives, the connection closes, time passes); its
//! outputs are [`Action`]s (dial, send a line, close, answer a call) and the
//! next instant it wants to be woken at. The async driver only moves bytes
//! and time in and out, so every ordering of events, including the V3-05
//! race, can be replayed step by step in a unit test.
//!
//! Every connection attempt gets a fresh [`ConnId`]; events tagged with an
//! older id are ignored, so a late line or close from a dead connection can
//! never touch the calls of its successor.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::error::BridgeError;
use super::policy::Policy;
use super::response::{self, DaemonResult, Line};

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
    /// Start a connect attempt and report its end with this id.
    Connect(ConnId),
    /// Write this line (newline included) on that connection.
    Send(ConnId, Vec<u8>),
    /// Close that connection (or abandon that attempt).
    Close(ConnId),
    /// Deliver the outcome of a call to its caller: the daemon's result
    /// as the JSON text it sent, or why there is none.
    Reply(CallId, Result<DaemonResult, Failure>),
    /// Something worth logging happened.
    Report(Event),
}

/// Observations the driver logs; they change nothing.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A connection was established.
    Connected {
        /// The new connection.
        conn: ConnId,
        /// Whether an earlier connection existed.
        reconnect: bool,
    },
    /// A connection closed; what happens next.
    Disconnected {
        /// The connection that closed.
        conn: ConnId,
        /// Calls re-sent on the next connection.
        replayed: usize,
        /// Calls failed with `socket closed`.
        failed: usize,
        /// Whether a reconnect is scheduled at all.
        reconnecting: bool,
    },
    /// A connect attempt failed; the next one is due after `retry_in`
    /// (`None`: no further attempt).
    ConnectFailed {
        /// Consecutive failures so far.
        failures: u32,
        /// The error reported by the driver.
        error: String,
        /// Delay before the next attempt.
        retry_in: Option<Duration>,
    },
    /// The daemon sent [`PARSE_STREAK_LIMIT`] non-JSON lines in a row while
    /// calls were waiting; the oldest one failed.
    ParseStreak {
        /// Lines in the streak.
        lines: u32,
        /// The call that failed.
        call: CallId,
    },
    /// A call brought the next connect attempt forward during a backoff
    /// pause.
    Hurried {
        /// How much earlier than the backoff timer it is made.
        earlier_by: Duration,
    },
    /// The daemon sent nothing on `conn` for a whole call timeout while a
    /// call waited there: the connection is closed and replaced.
    Silent {
        /// The recycled connection.
        conn: ConnId,
    },
    /// A line that is JSON but not a response to any pending call.
    Unmatched {
        /// The line's `id`, if it had one.
        id: Option<Value>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Link {
    /// Not started yet.
    Idle,
    /// A connect attempt is under way.
    Connecting(ConnId),
    /// Connected; calls are sent at once.
    Connected(ConnId),
    /// Waiting until the instant to dial again.
    Retrying(Instant),
    /// No further connect attempts (pre-fix budget spent, or shut down).
    Stopped,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for a connection until `deadline`; with `next_attempt_only`,
    /// only until the next connect attempt fails (the caller answers it
    /// another way).
    Waiting {
        deadline: Instant,
        since: Instant,
        next_attempt_only: bool,
    },
    /// Sent on `conn` as daemon request `wire`; the response is due by
    /// `deadline`. `heard` is how many lines the connection had delivered
    /// when it was sent.
    InFlight {
        conn: ConnId,
        wire: u64,
        deadline: Instant,
        heard: u64,
    },
}

#[derive(Debug, Clone)]
struct Call {
    request: Request,
    phase: Phase,
    sends: u32,
    /// The call's one deadline, replays included: the connect wait plus
    /// the call timeout after it was made.
    expires: Instant,
}

/// The sans-IO bridge state machine. See the module documentation.
#[derive(Debug, Clone)]
pub struct Bridge {
    policy: Policy,
    endpoint: String,
    link: Link,
    next_conn: u64,
    ever_connected: bool,
    failures: u32,
    /// When the current connection was established.
    connected_at: Option<Instant>,
    /// When the last connection was lost, while no new one is up: the
    /// daemon is presumed to be restarting until the connect wait has
    /// passed since then.
    lost_at: Option<Instant>,
    /// Whether the current connection has delivered a valid line.
    proven: bool,
    /// Lines of any kind the current connection has delivered.
    heard: u64,
    /// When the last connect attempt began (`None`: the first, or none).
    last_dial: Option<Instant>,
    /// How soon after `last_dial` a call may bring the next attempt
    /// forward: one to two initial backoffs, drawn at each attempt.
    hurry_spacing: Duration,
    /// Whether the wait before the next attempt is a backoff after failed
    /// attempts (which a call may cut short), not the reconnect delay.
    backing_off: bool,
    reconnects: u32,
    shut: bool,
    last_error: Option<String>,
    calls: BTreeMap<CallId, Call>,
    wire: BTreeMap<u64, CallId>,
    next_wire: u64,
    streak: u32,
    rng: fastrand::Rng,
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
            ever_connected: false,
            failures: 0,
            connected_at: None,
            lost_at: None,
            proven: false,
            heard: 0,
            last_dial: None,
            hurry_spacing: policy.timings().backoff.initial(),
            backing_off: false,
            reconnects: 0,
            shut: false,
            last_error: None,
            calls: BTreeMap::new(),
            wire: BTreeMap::new(),
            next_wire: 0,
            streak: 0,
            rng: fastrand::Rng::with_seed(seed),
            actions: VecDeque::new(),
        }
    }

    /// Begin the first connect attempt.
    pub fn start(&mut self) {
        if self.link == Link::Idle && !self.shut {
            self.dial(None);
        }
    }

    /// A caller wants `request` made; its outcome will be a
    /// [`Action::Reply`] for `id`.
    pub fn call(&mut self, id: CallId, request: Request, now: Instant) {
        if self.shut {
            self.refuse(id, BridgeError::Shutdown);
            return;
        }
        let timings = self.policy.timings();
        let expires = now + timings.connect_wait + timings.call_timeout;
        let call = Call {
            phase: self.waiting(&request, now, expires),
            request,
            sends: 0,
            expires,
        };
        let Phase::Waiting {
            deadline,
            next_attempt_only,
            ..
        } = call.phase
        else {
            unreachable!("a new call waits");
        };
        match self.link {
            Link::Connected(conn) => {
                self.calls.insert(id, call);
                self.send(id, conn, now);
            }
            // Before the first connection every mode waits: the boot connect
            // runs in the background and a call made meanwhile rides on it.
            _ if !self.ever_connected => {
                self.calls.insert(id, call);
                self.hurry(deadline, next_attempt_only, now);
            }
            Link::Stopped => {
                self.calls.insert(id, call);
                self.finish(id, Err(BridgeError::NotConnected));
            }
            _ if self.policy.calls_wait_for_reconnect() => {
                self.calls.insert(id, call);
                self.hurry(deadline, next_attempt_only, now);
            }
            // The V3-05 bug, kept as a policy: disconnected means refused,
            // even though a reconnect is about to succeed.
            _ => {
                self.calls.insert(id, call);
                self.finish(id, Err(BridgeError::NotConnected));
            }
        }
    }

    /// The caller gave up on `id` (MCP cancellation): forget it, answer
    /// nothing.
    pub fn cancel(&mut self, id: CallId) {
        if let Some(call) = self.calls.remove(&id)
            && let Phase::InFlight { wire, .. } = call.phase
        {
            self.wire.remove(&wire);
        }
    }

    /// The connect attempt `conn` succeeded.
    pub fn connected(&mut self, conn: ConnId, now: Instant) {
        if self.link != Link::Connecting(conn) {
            // Not the attempt we are waiting for: never hold two.
            self.actions.push_back(Action::Close(conn));
            return;
        }
        let reconnect = self.ever_connected;
        self.link = Link::Connected(conn);
        self.ever_connected = true;
        self.connected_at = Some(now);
        self.lost_at = None;
        self.proven = false;
        self.heard = 0;
        self.streak = 0;
        self.actions
            .push_back(Action::Report(Event::Connected { conn, reconnect }));
        let waiting: Vec<CallId> = self
            .calls
            .iter()
            .filter(|(_, c)| matches!(c.phase, Phase::Waiting { .. }))
            .map(|(id, _)| *id)
            .collect();
        for id in waiting {
            self.send(id, conn, now);
        }
    }

    /// The connect attempt `conn` failed with `error`.
    pub fn connect_failed(&mut self, conn: ConnId, error: String, now: Instant) {
        if self.link != Link::Connecting(conn) {
            return;
        }
        self.failures = self.failures.saturating_add(1);
        self.last_error = Some(error.clone());
        let retry_in = if self.ever_connected && self.policy.reconnect_budget().is_some() {
            // The pre-fix bridge made one reconnect attempt and gave up.
            None
        } else {
            Some(self.retry_delay())
        };
        self.backing_off = true;
        self.link = match retry_in {
            Some(delay) => Link::Retrying(now + delay),
            None => Link::Stopped,
        };
        self.actions.push_back(Action::Report(Event::ConnectFailed {
            failures: self.failures,
            error,
            retry_in,
        }));
        if self.link == Link::Stopped {
            self.fail_waiting(BridgeError::NotConnected);
        }
        // Calls that only waited for this attempt are answered another way.
        let settled: Vec<(CallId, Instant)> = self
            .calls
            .iter()
            .filter_map(|(id, c)| match c.phase {
                Phase::Waiting {
                    next_attempt_only: true,
                    since,
                    ..
                } => Some((*id, since)),
                _ => None,
            })
            .collect();
        for (id, since) in settled {
            let error = self.connect_wait_error(now.saturating_duration_since(since));
            self.finish(id, Err(error));
        }
    }

    /// The connection `conn` closed (EOF, read or write error).
    pub fn closed(&mut self, conn: ConnId, now: Instant) {
        if self.link != Link::Connected(conn) {
            return;
        }
        self.streak = 0;
        let healthy = self.proven
            || self
                .connected_at
                .is_some_and(|at| now.saturating_duration_since(at) >= PROVEN_AFTER);
        // Only a connection that worked suggests a daemon about to return;
        // one that never did (accept-and-drop, a refused token) does not.
        if healthy {
            self.lost_at = Some(now);
        }
        let retry_in = if healthy {
            self.failures = 0;
            self.policy.timings().reconnect_delay
        } else {
            self.failures = self.failures.saturating_add(1);
            self.policy
                .timings()
                .reconnect_delay
                .max(self.retry_delay())
        };
        let mut replayed = 0;
        let mut failed = 0;
        let lost: Vec<CallId> = self
            .calls
            .iter()
            .filter(
                |(_, c)| matches!(c.phase, Phase::InFlight { conn: c_conn, .. } if c_conn == conn),
            )
            .map(|(id, _)| *id)
            .collect();
        for id in lost {
            let Some(call) = self.calls.get(&id) else {
                continue;
            };
            if let Phase::InFlight { wire, .. } = call.phase {
                self.wire.remove(&wire);
            }
            // A read is re-sent after every lost connection for as long as
            // its own deadline allows; a write never is.
            if self.policy.replays() && call.request.access == Access::Read && now < call.expires {
                let phase = self.waiting(&call.request, now, call.expires);
                if let Some(call) = self.calls.get_mut(&id) {
                    call.phase = phase;
                }
                replayed += 1;
            } else {
                self.finish(id, Err(BridgeError::SocketClosed));
                failed += 1;
            }
        }
        let may_reconnect = match self.policy.reconnect_budget() {
            None => true,
            Some(budget) => self.reconnects < budget,
        };
        self.backing_off = !healthy;
        self.link = if may_reconnect {
            self.reconnects = self.reconnects.saturating_add(1);
            Link::Retrying(now + retry_in)
        } else {
            Link::Stopped
        };
        self.actions.push_back(Action::Report(Event::Disconnected {
            conn,
            replayed,
            failed,
            reconnecting: may_reconnect,
        }));
        if may_reconnect && retry_in.is_zero() {
            self.dial(Some(now));
        }
        if self.link == Link::Stopped {
            self.fail_waiting(BridgeError::NotConnected);
        }
    }

    /// A complete line (without its newline) arrived on `conn`.
    pub fn line(&mut self, conn: ConnId, line: &[u8]) {
        if self.link != Link::Connected(conn) {
            return;
        }
        self.heard += 1;
        let (id, outcome) = match response::parse(line) {
            Line::NotJson => {
                self.non_json_line(conn);
                return;
            }
            Line::NotObject => (None, None),
            Line::Message { id, outcome } => (Some(id), Some(outcome)),
        };
        self.streak = 0;
        if !self.proven {
            self.proven = true;
            self.failures = 0;
        }
        let (Some(id), Some(outcome)) = (id, outcome) else {
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
        if self.link != Link::Connected(conn) {
            return;
        }
        self.heard += 1;
        match id.and_then(|w| self.wire.get(&w).copied()) {
            Some(call) => {
                self.streak = 0;
                self.finish(call, Err(BridgeError::ResponseTooLarge(limit)));
            }
            None => self.non_json_line(conn),
        }
    }

    /// Time has reached `now`: dial if a retry is due, and fail calls whose
    /// deadline has passed.
    pub fn handle_timeout(&mut self, now: Instant) {
        if let Link::Retrying(at) = self.link
            && at <= now
            && !self.shut
        {
            self.dial(Some(now));
        }
        let expired: Vec<(CallId, Phase)> = self
            .calls
            .iter()
            .filter(|(_, c)| match c.phase {
                Phase::Waiting { deadline, .. } | Phase::InFlight { deadline, .. } => {
                    deadline <= now
                }
            })
            .map(|(id, c)| (*id, c.phase))
            .collect();
        let mut silent = None;
        for (id, phase) in expired {
            let error = match phase {
                Phase::Waiting { since, .. } => self.connect_wait_error(now - since),
                Phase::InFlight { conn, heard, .. } => {
                    if heard == self.heard && self.link == Link::Connected(conn) {
                        silent = Some(conn);
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

    /// Stop: fail every call, close the connection, dial no more.
    pub fn shutdown(&mut self) {
        self.shut = true;
        match self.link {
            Link::Connected(conn) | Link::Connecting(conn) => {
                self.actions.push_back(Action::Close(conn));
            }
            _ => {}
        }
        self.link = Link::Stopped;
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
        let retry = match self.link {
            Link::Retrying(at) if !self.shut => Some(at),
            _ => None,
        };
        self.calls
            .values()
            .map(|c| match c.phase {
                Phase::Waiting { deadline, .. } | Phase::InFlight { deadline, .. } => deadline,
            })
            .chain(retry)
            .min()
    }

    /// The connection currently established, if any.
    pub fn connection(&self) -> Option<ConnId> {
        match self.link {
            Link::Connected(conn) => Some(conn),
            _ => None,
        }
    }

    /// The connect attempt under way, if any.
    pub fn connecting(&self) -> Option<ConnId> {
        match self.link {
            Link::Connecting(conn) => Some(conn),
            _ => None,
        }
    }

    /// Number of calls not yet answered.
    pub fn pending(&self) -> usize {
        self.calls.len()
    }

    /// A call now waits until `deadline`: if the next connect attempt is
    /// due only after that (or the call waits for the next attempt only),
    /// make it now, so that no call gives up on the daemon without an
    /// attempt made while it waited.
    /// A call arrived while the bridge waits between connect attempts. The
    /// daemon may be back: after a failed attempt the next one is brought
    /// forward to one to two initial backoffs after the last (jittered; at
    /// once if that has passed), so a stream of calls against a dead daemon
    /// keeps a bounded attempt rate; and it is made at once when the timer
    /// would come too late for the call anyway.
    fn hurry(&mut self, deadline: Instant, next_attempt_only: bool, now: Instant) {
        let Link::Retrying(at) = self.link else {
            return;
        };
        if self.shut {
            return;
        }
        if next_attempt_only || at > deadline {
            self.dial(Some(now));
            return;
        }
        if !self.backing_off {
            return;
        }
        let soonest = self
            .last_dial
            .map_or(now, |last| last + self.hurry_spacing)
            .max(now);
        if soonest < at {
            self.actions.push_back(Action::Report(Event::Hurried {
                earlier_by: at - soonest,
            }));
            if soonest <= now {
                self.dial(Some(now));
            } else {
                self.link = Link::Retrying(soonest);
            }
        }
    }

    /// The pause before the next connect attempt after `failures` failed
    /// ones, growing less while a call waits ([`WAITING_BACKOFF_STEPS`]).
    fn retry_delay(&mut self) -> Duration {
        let waiting = self.calls.values().any(|c| {
            matches!(
                c.phase,
                Phase::Waiting {
                    next_attempt_only: false,
                    ..
                }
            )
        });
        let failures = if waiting {
            self.failures.min(WAITING_BACKOFF_STEPS)
        } else {
            self.failures
        };
        self.policy
            .timings()
            .backoff
            .delay(failures, self.rng.f64())
    }

    fn dial(&mut self, now: Option<Instant>) {
        self.last_dial = now.or(self.last_dial);
        // Jittered like the backoff, so that the wrappers of many sessions
        // woken by their callers still do not dial in lockstep.
        self.hurry_spacing = self
            .policy
            .timings()
            .backoff
            .initial()
            .mul_f64(1.0 + self.rng.f64());
        self.next_conn += 1;
        let conn = ConnId(self.next_conn);
        self.link = Link::Connecting(conn);
        self.actions.push_back(Action::Connect(conn));
    }

    fn send(&mut self, id: CallId, conn: ConnId, now: Instant) {
        let Some(call) = self.calls.get_mut(&id) else {
            return;
        };
        self.next_wire += 1;
        let wire = self.next_wire;
        let line = encode_request(wire, &call.request);
        call.phase = Phase::InFlight {
            conn,
            wire,
            deadline: (now + self.policy.timings().call_timeout).min(call.expires),
            heard: self.heard,
        };
        call.sends += 1;
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
                Phase::InFlight {
                    conn: c_conn, wire, ..
                } if c_conn == conn => Some((wire, *id)),
                _ => None,
            })
            .min();
        let Some((_, id)) = oldest else {
            self.streak = 0;
            return;
        };
        self.streak += 1;
        if self.streak >= PARSE_STREAK_LIMIT {
            let lines = self.streak;
            self.streak = 0;
            self.finish(id, Err(BridgeError::ParseStreak(lines)));
            self.actions
                .push_back(Action::Report(Event::ParseStreak { lines, call: id }));
        }
    }

    fn connect_wait_error(&self, waited: Duration) -> BridgeError {
        BridgeError::ConnectWait {
            endpoint: self.endpoint.clone(),
            waited,
            last_error: self.last_error.clone(),
        }
    }

    fn fail_waiting(&mut self, error: BridgeError) {
        let waiting: Vec<CallId> = self
            .calls
            .iter()
            .filter(|(_, c)| matches!(c.phase, Phase::Waiting { .. }))
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
        if let Phase::InFlight { wire, .. } = call.phase {
            self.wire.remove(&wire);
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

    /// Answer a call that never entered the table.
    fn refuse(&mut self, id: CallId, error: BridgeError) {
        self.actions
            .push_back(Action::Reply(id, Err(Failure::detached(error))));
    }

    /// How a call arriving (or put back to wait) at `now` waits for a
    /// connection. Without a fallback: the full connect wait. With one:
    /// if a connection was lost less than a connect wait ago the daemon is
    /// presumed to be restarting, and the call waits until the connect wait
    /// has passed since the loss, to get the daemon's own answer; otherwise
    /// the daemon is presumed down, and the call waits for one fresh connect
    /// attempt only (at most the fallback wait), so that a user whose
    /// daemon is down is answered at once.
    /// How a call waits for a connection from `now`, never past `expires`.
    fn waiting(&self, request: &Request, now: Instant, expires: Instant) -> Phase {
        let timings = self.policy.timings();
        let (deadline, next_attempt_only) = if !request.fallback {
            (now + timings.connect_wait, false)
        } else {
            let quick = now + timings.fallback_wait.min(timings.connect_wait);
            match self.lost_at {
                Some(lost) if now < lost + timings.connect_wait => {
                    (quick.max(lost + timings.connect_wait), false)
                }
                _ => (quick, true),
            }
        };
        Phase::Waiting {
            deadline: deadline.min(expires),
            since: now,
            next_attempt_only,
        }
    }
}

/// The daemon request line for `request` under wire id `wire`.
fn encode_request(wire: u64, request: &Request) -> Vec<u8> {
    let mut line = Vec::with_capacity(64 + request.method.len());
    line.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    line.extend_from_slice(wire.to_string().as_bytes());
    line.extend_from_slice(b",\"method\":");
    // Serializing a string or a Value into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut line, &request.method);
    line.extend_from_slice(b",\"params\":");
    let _ = serde_json::to_writer(&mut line, &request.params);
    line.extend_from_slice(b"}\n");
    line
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
        b.start();
        let mut now = Instant::now();
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
        let bound = t + b.hurry_spacing;
        assert!(
            (Duration::from_millis(50)..Duration::from_millis(100)).contains(&b.hurry_spacing),
            "one to two initial backoffs: {:?}",
            b.hurry_spacing
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

    #[test]
    fn requests_are_single_json_lines() {
        let line = encode_request(
            5,
            &Request {
                method: "memory_capture".into(),
                params: json!({"text": "a\nb"}),
                access: Access::Write,
                fallback: false,
            },
        );
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        let v: Value = serde_json::from_slice(&line).expect("json");
        assert_eq!(
            v,
            json!({"jsonrpc":"2.0","id":5,"method":"memory_capture","params":{"text":"a\nb"}})
        );
    }
}
