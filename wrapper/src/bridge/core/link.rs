//! The connection's states, each holding what only it has, and the
//! transitions between them that need nothing but the state itself.
//!
//! A transition consumes one state and builds the next; the bridge
//! ([`Bridge`](crate::bridge::Bridge)) takes its state out, matches on it by value and puts
//! back whatever the match builds, so no state is ever asserted after the
//! fact. Transitions that need the bridge (a fresh connection id, the
//! backoff's jitter, the calls waiting) are the bridge's own methods.

use std::time::{Duration, Instant};

use super::types::ConnId;

/// The connection's state, each variant with the data only it has.
#[derive(Debug, Clone)]
pub(super) enum Link {
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

impl Link {
    /// The outage under way, while not connected.
    pub(super) fn outage(&self) -> Option<&Outage> {
        match self {
            Link::Connecting(connecting) => Some(&connecting.outage),
            Link::Retrying(retrying) => Some(&retrying.outage),
            Link::Awaiting(awaiting) => Some(&awaiting.outage),
            Link::Idle | Link::Connected(_) | Link::Stopped(_) => None,
        }
    }
}

/// One connect attempt.
#[derive(Debug, Clone, Copy)]
pub(super) struct Attempt {
    /// The attempt's id (the connection's, if it succeeds).
    pub(super) conn: ConnId,
    /// When it began; `None` for the boot probe, which no caller asked
    /// for, so a call after it fails may dial at once.
    pub(super) began: Option<Instant>,
    /// How soon after `began` a call may bring the next attempt forward:
    /// one to two initial backoffs, drawn at each attempt so that the
    /// wrappers of many sessions woken by their callers do not dial in
    /// lockstep.
    pub(super) hurry_spacing: Duration,
    /// The appearance of the endpoint the attempt answers, if it answers
    /// one: a refusal then may be a daemon between its bind and its
    /// listen.
    pub(super) answers: Option<Appearance>,
}

/// An appearance of the endpoint that attempts answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Appearance {
    /// Attempts answering it that were refused and made again so far.
    pub(super) refusals: u32,
}

impl Appearance {
    /// A new appearance, no attempt refused yet.
    pub(super) fn new() -> Appearance {
        Appearance { refusals: 0 }
    }
}

impl Attempt {
    /// The earliest instant the next attempt may be brought forward to
    /// after this one (`now` for the boot probe).
    pub(super) fn spaced_from(&self, now: Instant) -> Instant {
        self.began.map_or(now, |began| began + self.hurry_spacing)
    }
}

/// What is known about a daemon that is not connected now.
#[derive(Debug, Clone, Default)]
pub(super) struct Outage {
    /// Consecutive failed connect attempts (a connection lost before it
    /// proved itself counts as one).
    pub(super) failures: u32,
    /// The most recent connect error.
    pub(super) last_error: Option<String>,
    /// When a healthy connection was lost, if the outage began that way:
    /// until a connect wait has passed since, the daemon is presumed to be
    /// restarting.
    pub(super) lost_at: Option<Instant>,
}

impl Outage {
    /// The outage after one more failed attempt, which failed with `error`.
    pub(super) fn after_failed_attempt(self, error: String) -> Outage {
        Outage {
            failures: self.failures.saturating_add(1),
            last_error: Some(error),
            lost_at: self.lost_at,
        }
    }

    /// The outage before a connection that never proved itself, continued
    /// by its loss as one more failed attempt (no longer a restart).
    pub(super) fn after_unproven_connection(self) -> Outage {
        Outage {
            failures: self.failures.saturating_add(1),
            last_error: self.last_error,
            lost_at: None,
        }
    }

    /// A new outage, begun by losing a healthy connection at `now`.
    pub(super) fn lost_healthy_connection(now: Instant) -> Outage {
        Outage {
            lost_at: Some(now),
            ..Outage::default()
        }
    }
}

/// A connect attempt under way.
#[derive(Debug, Clone)]
pub(super) struct Connecting {
    pub(super) attempt: Attempt,
    pub(super) outage: Outage,
    /// The endpoint appeared while the attempt was under way: if it fails,
    /// it may have raced the daemon's bind, so the next one follows at once
    /// (within the spread) rather than after a backoff.
    pub(super) appeared: bool,
}

impl Connecting {
    /// The attempt succeeded at `now`: it is the connection, unproven
    /// until it delivers a valid line.
    pub(super) fn established(self, now: Instant) -> Connected {
        Connected {
            conn: self.attempt.conn,
            since: now,
            attempt: self.attempt,
            proof: Proof::Unproven(self.outage),
            heard: 0,
            streak: 0,
            status: StatusQuestion::Asked,
        }
    }
}

/// Waiting, with no timer, for the endpoint to appear or a call to arrive.
#[derive(Debug, Clone)]
pub(super) struct Awaiting {
    /// The attempt that failed last (a call may bring the next one forward
    /// only after its spacing).
    pub(super) last: Attempt,
    pub(super) outage: Outage,
}

impl Awaiting {
    /// Back to the backoff: the next attempt is due at `at`.
    pub(super) fn retry_at(self, at: Instant) -> Retrying {
        Retrying {
            at,
            pause: Pause::Backoff { last: self.last },
            outage: self.outage,
        }
    }
}

/// An established connection.
#[derive(Debug, Clone)]
pub(super) struct Connected {
    pub(super) conn: ConnId,
    /// When the connection was made.
    pub(super) since: Instant,
    /// The attempt that made it.
    pub(super) attempt: Attempt,
    pub(super) proof: Proof,
    /// Lines of any kind the connection has delivered.
    pub(super) heard: u64,
    /// Consecutive non-JSON lines while calls waited on it.
    pub(super) streak: u32,
    /// Whether the daemon has answered the status question asked as the
    /// connection's first line.
    pub(super) status: StatusQuestion,
}

/// The status question the bridge asks on each connection, as the
/// connection's first line: the daemon says which release it is and when
/// it started, with no connection of its own for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StatusQuestion {
    /// Asked, not answered yet: the next line that answers no call is the
    /// answer.
    Asked,
    /// Answered: further lines that answer no call are unmatched.
    Answered,
}

/// Whether a connection has shown that the daemon works.
#[derive(Debug, Clone)]
pub(super) enum Proof {
    /// Not yet: losing it within [`super::PROVEN_AFTER`] continues the
    /// outage before it, as one more failed attempt.
    Unproven(Outage),
    /// It delivered a valid line.
    Proven,
}

/// Waiting until it is time to dial again.
#[derive(Debug, Clone)]
pub(super) struct Retrying {
    /// When to dial.
    pub(super) at: Instant,
    pub(super) pause: Pause,
    pub(super) outage: Outage,
}

/// Why the bridge is waiting to dial.
#[derive(Debug, Clone, Copy)]
pub(super) enum Pause {
    /// The reconnect delay after a healthy connection was lost; calls do
    /// not cut it short.
    Reconnect,
    /// A backoff after failed attempts; a call may cut it short, but not
    /// before the last attempt's spacing has passed.
    Backoff {
        /// The attempt that failed.
        last: Attempt,
    },
    /// A few milliseconds before an attempt that answers an appearance of
    /// the endpoint (or the refusal of one that did); a call does not cut
    /// it short unless it would outlast the call's wait.
    Appeared {
        /// The appearance the next attempt answers.
        appearance: Appearance,
    },
}

impl Pause {
    /// The appearance the attempt after this pause answers, if any.
    pub(super) fn appearance(&self) -> Option<Appearance> {
        match self {
            Pause::Appeared { appearance, .. } => Some(*appearance),
            Pause::Reconnect | Pause::Backoff { .. } => None,
        }
    }
}

/// Why the bridge dials no more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stop {
    /// The pre-fix policy's one reconnect is spent.
    GaveUp,
    /// The wrapper is exiting.
    Shutdown,
}
