//! The calls table: every call not yet answered, what phase it is in, and
//! the daemon request ids of those in flight.
//!
//! The table knows nothing of the connection's state; the bridge tells it
//! which connection a call goes out on and what the connection has heard.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::types::{CallId, ConnId, Request};
use crate::bridge::policy::Timings;
use crate::bridge::wire;

/// How a call waits for a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Wait {
    /// When it gives up.
    pub(super) deadline: Instant,
    /// When it began waiting.
    pub(super) since: Instant,
    /// It waits only until the next connect attempt fails (the caller
    /// answers it another way then).
    pub(super) next_attempt_only: bool,
}

impl Wait {
    /// How a call arriving (or put back to wait) at `now` waits for a
    /// connection, never past `expires`. Without a fallback: the full
    /// connect wait. With one: if a healthy connection was lost (at
    /// `lost_at`) less than a connect wait ago, the daemon is presumed to
    /// be restarting, and the call waits until the connect wait has passed
    /// since the loss, to get the daemon's own answer; otherwise the daemon
    /// is presumed down, and the call waits for one fresh connect attempt
    /// only (at most the fallback wait), so that a user whose daemon is
    /// down is answered at once.
    pub(super) fn new(
        timings: &Timings,
        request: &Request,
        now: Instant,
        expires: Instant,
        lost_at: Option<Instant>,
    ) -> Self {
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
}

/// A call sent on a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct InFlight {
    pub(super) conn: ConnId,
    /// Its daemon request id.
    pub(super) wire: u64,
    /// When the response is due.
    pub(super) deadline: Instant,
    /// How many lines the connection had delivered when it was sent.
    pub(super) heard: u64,
    /// The wait it was sent from, if it waited for this connection: it
    /// goes on as it was if the connection turns out to have been refused.
    pub(super) waited: Option<Wait>,
}

/// Where a call is: waiting for a connection, or sent on one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    Waiting(Wait),
    InFlight(InFlight),
}

impl Phase {
    /// When the call fails if nothing happens first.
    pub(super) fn deadline(&self) -> Instant {
        match self {
            Phase::Waiting(wait) => wait.deadline,
            Phase::InFlight(sent) => sent.deadline,
        }
    }
}

/// One call not yet answered.
#[derive(Debug, Clone)]
pub(super) struct Call {
    pub(super) request: Request,
    pub(super) phase: Phase,
    /// Times it has been written to a connection.
    pub(super) sends: u32,
    /// The call's one deadline, replays included: the connect wait plus
    /// the call timeout after it was made.
    pub(super) expires: Instant,
}

/// A call just written to a connection, as [`Calls::send`] reports it.
pub(super) struct Sent<'a> {
    /// The request line, newline included.
    pub(super) line: Vec<u8>,
    /// Times the call has now been written (above 1: a replay).
    pub(super) sends: u32,
    /// Its daemon method.
    pub(super) method: &'a str,
}

/// Every call not yet answered, by caller id, and the daemon request ids
/// of those in flight.
#[derive(Debug, Clone, Default)]
pub(super) struct Calls {
    table: BTreeMap<CallId, Call>,
    /// Daemon request ids of the calls in flight.
    wire: BTreeMap<u64, CallId>,
    next_wire: u64,
}

impl Calls {
    /// Adds a call (its caller id is new).
    pub(super) fn insert(&mut self, id: CallId, call: Call) {
        self.table.insert(id, call);
    }

    /// Takes a call out of the table, forgetting its request id.
    pub(super) fn remove(&mut self, id: CallId) -> Option<Call> {
        let call = self.table.remove(&id)?;
        if let Phase::InFlight(sent) = call.phase {
            self.wire.remove(&sent.wire);
        }
        Some(call)
    }

    pub(super) fn get(&self, id: CallId) -> Option<&Call> {
        self.table.get(&id)
    }

    /// Number of calls not yet answered.
    pub(super) fn len(&self) -> usize {
        self.table.len()
    }

    /// Every call's id.
    pub(super) fn ids(&self) -> Vec<CallId> {
        self.table.keys().copied().collect()
    }

    /// The call a daemon reply with request id `wire` answers, if any.
    pub(super) fn answered_by(&self, wire: u64) -> Option<CallId> {
        self.wire.get(&wire).copied()
    }

    /// The calls waiting for a connection.
    pub(super) fn waiting(&self) -> Vec<CallId> {
        self.table
            .iter()
            .filter(|(_, c)| matches!(c.phase, Phase::Waiting(_)))
            .map(|(id, _)| *id)
            .collect()
    }

    /// The calls waiting for the next connect attempt only, with when each
    /// began waiting.
    pub(super) fn waiting_for_next_attempt(&self) -> Vec<(CallId, Instant)> {
        self.table
            .iter()
            .filter_map(|(id, c)| match c.phase {
                Phase::Waiting(wait) if wait.next_attempt_only => Some((*id, wait.since)),
                _ => None,
            })
            .collect()
    }

    /// Whether a call waits for a connection beyond the next attempt.
    pub(super) fn any_waiting_for_a_connection(&self) -> bool {
        self.table.values().any(|c| {
            matches!(
                c.phase,
                Phase::Waiting(Wait {
                    next_attempt_only: false,
                    ..
                })
            )
        })
    }

    /// The calls in flight on `conn`.
    pub(super) fn in_flight_on(&self, conn: ConnId) -> Vec<CallId> {
        self.table
            .iter()
            .filter(|(_, c)| matches!(c.phase, Phase::InFlight(sent) if sent.conn == conn))
            .map(|(id, _)| *id)
            .collect()
    }

    /// The call sent first among those in flight on `conn`.
    pub(super) fn oldest_in_flight_on(&self, conn: ConnId) -> Option<CallId> {
        self.table
            .iter()
            .filter_map(|(id, c)| match c.phase {
                Phase::InFlight(sent) if sent.conn == conn => Some((sent.wire, *id)),
                _ => None,
            })
            .min()
            .map(|(_, id)| id)
    }

    /// The calls whose deadline has come by `now`, with their phase.
    pub(super) fn expired(&self, now: Instant) -> Vec<(CallId, Phase)> {
        self.table
            .iter()
            .filter(|(_, c)| c.phase.deadline() <= now)
            .map(|(id, c)| (*id, c.phase))
            .collect()
    }

    /// The earliest deadline of any call.
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.table.values().map(|c| c.phase.deadline()).min()
    }

    /// Puts call `id` back to wait for a connection (it was in flight on a
    /// connection that was lost).
    pub(super) fn put_back(&mut self, id: CallId, wait: Wait) {
        let Some(call) = self.table.get_mut(&id) else {
            return;
        };
        if let Phase::InFlight(sent) = call.phase {
            self.wire.remove(&sent.wire);
        }
        call.phase = Phase::Waiting(wait);
    }

    /// Writes call `id` on `conn` under a fresh request id, due after
    /// `call_timeout` (never past its one deadline); `heard` is how many
    /// lines the connection has delivered so far.
    pub(super) fn send(
        &mut self,
        id: CallId,
        conn: ConnId,
        heard: u64,
        now: Instant,
        call_timeout: Duration,
    ) -> Option<Sent<'_>> {
        let call = self.table.get_mut(&id)?;
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
            deadline: (now + call_timeout).min(call.expires),
            heard,
            waited,
        });
        call.sends += 1;
        self.wire.insert(wire, id);
        Some(Sent {
            line,
            sends: call.sends,
            method: &call.request.method,
        })
    }
}
