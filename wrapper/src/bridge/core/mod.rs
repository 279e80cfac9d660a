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
//! The core is split by what each part decides:
//!
//! - `types`: the vocabulary shared with the driver (ids, requests,
//!   failures, actions, log events) and the constants of the rules;
//! - `link`: the connection's six states, each holding what only it has
//!   (not started; connecting: the attempt, what is known of the outage so
//!   far, whether the endpoint appeared meanwhile; connected: the
//!   connection, when it was made, whether it has proven itself, what it
//!   has delivered; retrying: when, why, and the outage; awaiting the
//!   endpoint: the last attempt and the outage, no timer; stopped: why),
//!   and the transitions that need only the state;
//! - this module: the inputs about the connection and time, and the
//!   transitions that need the bridge (a fresh connection id, the
//!   backoff's jitter, the calls waiting). Each takes the state out,
//!   matches on it by value and puts back the state it builds;
//! - `state`: what the bridge holds, how one is made, and the one place a
//!   call is answered;
//! - `routing`: where a call goes when it arrives, and which call a line
//!   from the daemon answers;
//! - `calls`: the table of calls not yet answered, and how each waits.
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

mod calls;
mod link;
mod routing;
mod state;
#[cfg(test)]
mod tests;
mod types;

use std::time::{Duration, Instant};

use self::calls::{Call, Phase, Wait};
use self::link::{
    Appearance, Attempt, Awaiting, Connected, Connecting, Link, Outage, Pause, Proof, Retrying,
    Stop,
};
use self::routing::Route;
pub use self::state::Bridge;
use super::error::BridgeError;
use super::wire;

pub use self::types::{
    APPEARED_SPREAD, Access, Action, CallId, ConnId, ConnectFailure, Event, Failure, LinkStatus,
    PARSE_STREAK_LIMIT, PROVEN_AFTER, REFUSED_PAUSE, REFUSED_RETRIES, Request,
    WAITING_BACKOFF_STEPS, WATCHED_RETRIES, Watch,
};

/// How many calls a lost connection's loss settled, each way.
struct Settled {
    /// Reads put back to wait for the next connection.
    replayed: usize,
    /// Calls failed (`socket closed`, or the refusal).
    failed: usize,
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

impl Bridge {
    /// Begin the first connect attempt (the boot probe).
    pub fn start(&mut self) {
        if matches!(self.link, Link::Idle) {
            self.link = self.dial(None, Outage::default(), None);
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
        let wait = Wait::new(timings, &request, now, expires, self.lost_at());
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

    /// The caller gave up on `id` (MCP cancellation): forget it, answer
    /// nothing.
    pub fn cancel(&mut self, id: CallId) {
        self.calls.remove(id);
    }

    /// The driver armed a watch on the endpoint, or lost it (or could not
    /// set one): with [`Watch::Unavailable`] the bridge dials on the
    /// backoff again.
    pub fn watch(&mut self, watch: Watch, now: Instant) {
        self.watch = watch;
        if watch == Watch::Armed {
            return;
        }
        self.link = match self.take_link() {
            Link::Awaiting(awaiting) => {
                let delay = self.retry_delay(awaiting.outage.failures.max(1));
                Link::Retrying(awaiting.retry_at(now + delay))
            }
            other => other,
        };
    }

    /// The daemon's endpoint appeared or changed (its socket was created,
    /// its port file written). While backing off or awaiting it, the next
    /// attempt is made within [`APPEARED_SPREAD`], however recent the last
    /// one; during an attempt, its failure is followed as soon by another. The failure count goes on,
    /// so an endpoint that appears but refuses is awaited again at once.
    /// Connected, stopped or in a reconnect delay, nothing changes.
    pub fn endpoint_appeared(&mut self, now: Instant) {
        self.link = match self.take_link() {
            Link::Connecting(connecting) => Link::Connecting(Connecting {
                appeared: true,
                ..connecting
            }),
            Link::Awaiting(Awaiting { outage, .. }) => self.retry_on_appearance(now, None, outage),
            Link::Retrying(Retrying {
                at,
                pause: Pause::Backoff { .. },
                outage,
            }) => self.retry_on_appearance(now, Some(at), outage),
            other => other,
        };
    }

    /// The connect attempt `conn` succeeded.
    pub fn connected(&mut self, conn: ConnId, now: Instant) {
        self.link = match self.take_link() {
            Link::Connecting(connecting) if connecting.attempt.conn == conn => {
                self.establish(connecting, now)
            }
            other => {
                // Not the attempt we are waiting for: never hold two.
                self.actions.push_back(Action::Close(conn));
                self.link = other;
                return;
            }
        };
        for id in self.calls.waiting() {
            self.send(id, conn, now);
        }
    }

    /// The connect attempt `conn` failed (`failure` says how).
    pub fn connect_failed(&mut self, conn: ConnId, failure: ConnectFailure, now: Instant) {
        let connecting = match self.take_link() {
            Link::Connecting(connecting) if connecting.attempt.conn == conn => connecting,
            other => {
                self.link = other;
                return;
            }
        };
        self.failed_attempts += 1;
        let error = failure.message().to_owned();
        // Refused just after the endpoint appeared: a daemon between its
        // bind and its listen. Made again in a few milliseconds, and not
        // counted as a failure, a few times.
        let refused_again = match (&failure, connecting.attempt.answers) {
            (ConnectFailure::Refused(_), Some(appearance))
                if appearance.refusals < REFUSED_RETRIES =>
            {
                Some(appearance)
            }
            _ => None,
        };
        match refused_again {
            Some(appearance) => self.retry_refusal(connecting.outage, appearance, conn, error, now),
            None => self.after_connect_failure(connecting, conn, error, now),
        }
    }

    /// An attempt answering `appearance` was refused: made again after
    /// [`REFUSED_PAUSE`], doubled at each refusal, without counting as a
    /// failure of `outage`.
    fn retry_refusal(
        &mut self,
        outage: Outage,
        appearance: Appearance,
        conn: ConnId,
        error: String,
        now: Instant,
    ) {
        let pause = REFUSED_PAUSE * 2u32.pow(appearance.refusals);
        self.actions.push_back(Action::Report(Event::ConnectFailed {
            conn,
            failures: outage.failures,
            error,
            retry_in: Some(pause),
        }));
        self.link = Link::Retrying(Retrying {
            at: now + pause,
            pause: Pause::Appeared {
                appearance: Appearance {
                    refusals: appearance.refusals + 1,
                },
            },
            outage,
        });
    }

    /// An attempt failed and counts as a failure: the pre-fix bridge gives
    /// up; an attempt that may have raced the daemon's bind is made again
    /// within the spread; any other waits its backoff or the endpoint.
    /// Calls that waited only for this attempt are answered another way.
    fn after_connect_failure(
        &mut self,
        connecting: Connecting,
        conn: ConnId,
        error: String,
        now: Instant,
    ) {
        let Connecting {
            attempt,
            outage,
            appeared,
        } = connecting;
        let outage = outage.after_failed_attempt(error.clone());
        let failures = outage.failures;
        // The pre-fix bridge made one reconnect attempt and gave up.
        let gives_up = self.connects > 0 && self.policy.reconnect_budget().is_some();
        let next = if gives_up {
            Link::Stopped(Stop::GaveUp)
        } else if appeared {
            // The attempt may have raced the daemon's bind: the appearance
            // is news the failure predates, and brings the next attempt
            // within the spread as it does between attempts.
            let at = now + self.appeared_delay();
            Link::Retrying(Retrying {
                at,
                pause: Pause::Appeared {
                    appearance: Appearance::new(),
                },
                outage,
            })
        } else {
            self.after_failed_attempt(now, attempt, outage, Duration::ZERO)
        };
        let retry_in = match &next {
            Link::Retrying(retrying) => Some(retrying.at - now),
            _ => None,
        };
        self.actions.push_back(Action::Report(Event::ConnectFailed {
            conn,
            failures,
            error: error.clone(),
            retry_in,
        }));
        match next {
            Link::Stopped(why) => self.stop(why),
            Link::Awaiting(awaiting) => self.await_endpoint(awaiting),
            next => self.link = next,
        }
        self.fail_calls_waiting_for_attempt(&error, now);
    }

    /// Calls that only waited for the attempt that just failed with
    /// `error` are answered another way.
    fn fail_calls_waiting_for_attempt(&mut self, error: &str, now: Instant) {
        for (id, since) in self.calls.waiting_for_next_attempt() {
            let error = BridgeError::ConnectWait {
                endpoint: self.endpoint.clone(),
                waited: now.saturating_duration_since(since),
                last_error: Some(error.to_owned()),
            };
            self.finish(id, Err(error));
        }
    }

    /// The connection `conn` closed (EOF, read or write error).
    pub fn closed(&mut self, conn: ConnId, now: Instant) {
        let connected = match self.take_link() {
            Link::Connected(connected) if connected.conn == conn => connected,
            other => {
                self.link = other;
                return;
            }
        };
        let next = self.after_lost_connection(connected, now);
        let lost = Lost::Closed {
            lost_at: next.outage().and_then(|o| o.lost_at),
        };
        let settled = self.settle_lost_calls(conn, now, lost);
        let may_reconnect = match self.policy.reconnect_budget() {
            None => true,
            Some(budget) => self.reconnects < budget,
        };
        self.actions
            .push_back(Action::Report(Event::ConnectionLost {
                conn,
                replayed: settled.replayed,
                failed: settled.failed,
                reconnecting: may_reconnect,
            }));
        if !may_reconnect {
            self.stop(Stop::GaveUp);
            return;
        }
        self.reconnects = self.reconnects.saturating_add(1);
        match next {
            // A connection that never proved itself is one more failed
            // attempt: awaited like one when the endpoint is watched.
            Link::Retrying(Retrying {
                pause: Pause::Backoff { last },
                outage,
                ..
            }) if self.should_await(&outage) => self.await_endpoint(Awaiting { last, outage }),
            Link::Retrying(retrying) if retrying.at <= now => {
                self.link = self.dial(Some(now), retrying.outage, None);
            }
            next => self.link = next,
        }
    }

    /// The daemon closed the connection `conn` before sending a single
    /// byte on it, which on TCP is how iai-mcp's daemon refuses a token;
    /// `reason` says so, naming the token file. A connection younger than
    /// [`PROVEN_AFTER`] closed that way is a failed connect attempt with
    /// that reason (`connect_failed`, the backoff, the failure count and
    /// the connect wait's message all as for a refused dial): its reads go
    /// on waiting as they were, and its writes fail with
    /// [`BridgeError::Refused`], never re-sent. An older one is only lost
    /// ([`Bridge::closed`]): a daemon that stops closes an idle connection
    /// without a word too.
    pub fn refused(&mut self, conn: ConnId, reason: String, now: Instant) {
        let connected = match self.take_link() {
            Link::Connected(connected) if connected.conn == conn => connected,
            other => {
                self.link = other;
                return;
            }
        };
        let young = now.saturating_duration_since(connected.since) < PROVEN_AFTER;
        match connected.proof {
            Proof::Unproven(before) if young => {
                let lost = Lost::Refused {
                    lost_at: before.lost_at,
                    reason: reason.clone(),
                };
                self.settle_lost_calls(conn, now, lost);
                // Back to the attempt it was, which now fails.
                self.link = Link::Connecting(Connecting {
                    attempt: connected.attempt,
                    outage: before,
                    appeared: false,
                });
                self.connect_failed(conn, ConnectFailure::Other(reason), now);
            }
            proof => {
                self.link = Link::Connected(Connected { proof, ..connected });
                self.closed(conn, now);
            }
        }
    }

    /// Time has reached `now`: dial if a retry is due, and fail calls whose
    /// deadline has passed.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.link = match self.take_link() {
            Link::Retrying(retrying) if retrying.at <= now => {
                let answers = retrying.pause.appearance();
                self.dial(Some(now), retrying.outage, answers)
            }
            other => other,
        };
        let mut silent = None;
        for (id, phase) in self.calls.expired(now) {
            let error = match phase {
                Phase::Waiting(wait) => self.connect_wait_error(now - wait.since),
                Phase::InFlight(sent) => {
                    if self.heard_nothing_since(sent.conn, sent.heard) {
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

    /// Stop: fail every call, close the connection, dial no more.
    pub fn shutdown(&mut self) {
        if let Some(conn) = self.connection().or(self.connecting()) {
            self.actions.push_back(Action::Close(conn));
        }
        self.stop(Stop::Shutdown);
        for id in self.calls.ids() {
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
        self.calls.next_deadline().into_iter().chain(retry).min()
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

    /// Whether an appearance of the endpoint would bring the next attempt
    /// within the spread ([`Bridge::endpoint_appeared`]): backing off after
    /// failed attempts, or awaiting the endpoint; not in the reconnect
    /// delay, nor in the few milliseconds before an attempt that already
    /// answers an appearance.
    pub fn heeds_appearance(&self) -> bool {
        matches!(
            self.link,
            Link::Awaiting(_)
                | Link::Retrying(Retrying {
                    pause: Pause::Backoff { .. },
                    ..
                })
        )
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

    /// Takes the state out for a transition to consume. Every caller puts
    /// a state back before it returns; the placeholder is never seen.
    fn take_link(&mut self) -> Link {
        std::mem::replace(&mut self.link, Link::Idle)
    }

    /// Transition: start a connect attempt at `now` (`None`: the boot
    /// probe), carrying `outage` into it; `answers` is the appearance of
    /// the endpoint it answers, if any. Returns the new state.
    fn dial(&mut self, now: Option<Instant>, outage: Outage, answers: Option<Appearance>) -> Link {
        let hurry_spacing = self
            .policy
            .timings()
            .backoff
            .initial()
            .mul_f64(1.0 + self.rng.f64());
        self.next_conn += 1;
        let conn = ConnId(self.next_conn);
        self.actions.push_back(Action::Connect(conn));
        Link::Connecting(Connecting {
            attempt: Attempt {
                conn,
                began: now,
                hurry_spacing,
                answers,
            },
            outage,
            appeared: false,
        })
    }

    /// Transition: the attempt under way became the connection. Its first
    /// line asks the daemon about itself, so that what the rest of the
    /// wrapper wants to know (the daemon's release) costs no connection of
    /// its own.
    fn establish(&mut self, connecting: Connecting, now: Instant) -> Link {
        let reconnect = self.connects > 0;
        self.connects += 1;
        let connected = connecting.established(now);
        self.actions.push_back(Action::Report(Event::Connected {
            conn: connected.conn,
            reconnect,
        }));
        self.actions
            .push_back(Action::Send(connected.conn, wire::STATUS_REQUEST.to_vec()));
        Link::Connected(connected)
    }

    /// Transition: dial no more until the endpoint appears or a call
    /// arrives (only with a watch armed); reported as `endpoint_awaited`.
    fn await_endpoint(&mut self, awaiting: Awaiting) {
        let failures = awaiting.outage.failures;
        self.link = Link::Awaiting(awaiting);
        self.actions
            .push_back(Action::Report(Event::Awaiting { failures }));
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

    /// The state after the failed attempt `last`: a pause on the backoff
    /// (at least `floor`), or, with a watch armed, no call waiting and
    /// [`WATCHED_RETRIES`] failures in a row, awaiting the endpoint.
    fn after_failed_attempt(
        &mut self,
        now: Instant,
        last: Attempt,
        outage: Outage,
        floor: Duration,
    ) -> Link {
        if self.should_await(&outage) {
            return Link::Awaiting(Awaiting { last, outage });
        }
        let delay = floor.max(self.retry_delay(outage.failures));
        Link::Retrying(Retrying {
            at: now + delay,
            pause: Pause::Backoff { last },
            outage,
        })
    }

    /// The state after losing `connected` at `now`, before anything else
    /// is decided: only a connection that worked suggests a daemon about
    /// to return (the reconnect delay, then a dial); one that never did
    /// (accept-and-drop, a refused token) continues the outage before it,
    /// as one more failed attempt on the backoff.
    fn after_lost_connection(&mut self, connected: Connected, now: Instant) -> Link {
        let up_long_enough = now.saturating_duration_since(connected.since) >= PROVEN_AFTER;
        let reconnect_delay = self.policy.timings().reconnect_delay;
        match connected.proof {
            Proof::Unproven(before) if !up_long_enough => {
                let outage = before.after_unproven_connection();
                // Drawn before the lost calls are put back to wait, as one
                // more failed attempt with nothing waiting yet: so a read
                // replayed on a daemon that accepts and drops outlives its
                // wait, rather than being replayed on every reconnect.
                let delay = reconnect_delay.max(self.retry_delay(outage.failures));
                Link::Retrying(Retrying {
                    at: now + delay,
                    pause: Pause::Backoff {
                        last: connected.attempt,
                    },
                    outage,
                })
            }
            _ => Link::Retrying(Retrying {
                at: now + reconnect_delay,
                pause: Pause::Reconnect,
                outage: Outage::lost_healthy_connection(now),
            }),
        }
    }

    /// The calls in flight on `conn`, which is gone (`how`): a read is put
    /// back to wait for the next connection for as long as its own
    /// deadline allows (after a refusal, the wait it was sent from goes on
    /// as it was: the refused connection gave it nothing); any other call
    /// fails.
    fn settle_lost_calls(&mut self, conn: ConnId, now: Instant, how: Lost) -> Settled {
        let mut settled = Settled {
            replayed: 0,
            failed: 0,
        };
        for id in self.calls.in_flight_on(conn) {
            let Some(call) = self.calls.get(id) else {
                continue;
            };
            let Phase::InFlight(sent) = call.phase else {
                continue;
            };
            if self.policy.replays() && call.request.access == Access::Read && now < call.expires {
                let wait = match (&how, sent.waited) {
                    (Lost::Refused { .. }, Some(waited)) => waited,
                    (Lost::Refused { lost_at, .. } | Lost::Closed { lost_at }, _) => Wait::new(
                        self.policy.timings(),
                        &call.request,
                        now,
                        call.expires,
                        *lost_at,
                    ),
                };
                self.calls.put_back(id, wait);
                settled.replayed += 1;
            } else {
                let error = match &how {
                    Lost::Closed { .. } => BridgeError::SocketClosed,
                    Lost::Refused { reason, .. } => BridgeError::Refused {
                        reason: reason.clone(),
                    },
                };
                self.finish(id, Err(error));
                settled.failed += 1;
            }
        }
        settled
    }

    /// The endpoint appeared while backing off (the pause's timer `timer`)
    /// or awaiting it: the next attempt within the spread, however recent
    /// the last one. The spacing that holds back an attempt a call brings
    /// does not apply: an appearance is news of the daemon (a new socket,
    /// a new port), told once per change, so it cannot make the dial rate
    /// run away as a stream of calls could. A timer due sooner stands.
    fn retry_on_appearance(
        &mut self,
        now: Instant,
        timer: Option<Instant>,
        outage: Outage,
    ) -> Link {
        let brought = now + self.appeared_delay();
        let due = timer.map_or(brought, |at| at.min(brought));
        self.actions.push_back(Action::Report(Event::Appeared {
            dial_in: due.saturating_duration_since(now),
        }));
        Link::Retrying(Retrying {
            at: due,
            pause: Pause::Appeared {
                appearance: Appearance::new(),
            },
            outage,
        })
    }

    /// A call arrived while the bridge waits between connect attempts. The
    /// daemon may be back: after a failed attempt the next one is brought
    /// forward to one to two initial backoffs after the last (jittered; at
    /// once if that has passed), so a stream of calls against a dead daemon
    /// keeps a bounded attempt rate; and it is made at once when the timer
    /// would come too late for the call anyway, or when the call waits for
    /// the next attempt only.
    fn hurry(&mut self, wait: Wait, now: Instant) {
        self.link = match self.take_link() {
            Link::Awaiting(awaiting) => self.hurry_awaiting(awaiting, wait, now),
            Link::Retrying(retrying) => self.hurry_retrying(retrying, wait, now),
            other => other,
        };
    }

    /// [`Bridge::hurry`] while awaiting the endpoint: dial once the last
    /// attempt's spacing has passed (at once for a call that waits for the
    /// next attempt only).
    fn hurry_awaiting(&mut self, awaiting: Awaiting, wait: Wait, now: Instant) -> Link {
        let soonest = if wait.next_attempt_only {
            now
        } else {
            awaiting.last.spaced_from(now).max(now)
        };
        if soonest <= now {
            self.dial(Some(now), awaiting.outage, None)
        } else {
            Link::Retrying(awaiting.retry_at(soonest))
        }
    }

    /// [`Bridge::hurry`] while a timer is set: a backoff is cut short to
    /// the last attempt's spacing; a reconnect delay only when it would
    /// outlast the call's wait.
    fn hurry_retrying(&mut self, retrying: Retrying, wait: Wait, now: Instant) -> Link {
        if wait.next_attempt_only || retrying.at > wait.deadline {
            let answers = retrying.pause.appearance();
            return self.dial(Some(now), retrying.outage, answers);
        }
        let Pause::Backoff { last } = retrying.pause else {
            return Link::Retrying(retrying);
        };
        let soonest = last.spaced_from(now).max(now);
        if soonest >= retrying.at {
            return Link::Retrying(retrying);
        }
        self.actions.push_back(Action::Report(Event::Hurried {
            earlier_by: retrying.at - soonest,
        }));
        if soonest <= now {
            self.dial(Some(now), retrying.outage, None)
        } else {
            Link::Retrying(Retrying {
                at: soonest,
                ..retrying
            })
        }
    }

    /// Whether, after a failed attempt, to stop dialling and await the
    /// endpoint: it is watched, [`WATCHED_RETRIES`] attempts in a row have
    /// failed, and no call waits.
    fn should_await(&self, outage: &Outage) -> bool {
        self.watch == Watch::Armed
            && outage.failures >= WATCHED_RETRIES
            && !self.calls.any_waiting_for_a_connection()
    }

    /// The delay before an attempt the endpoint's appearance brings on:
    /// drawn from `[0, APPEARED_SPREAD)`.
    fn appeared_delay(&mut self) -> Duration {
        // Whole nanoseconds below the spread: a fraction of it, rounded,
        // could come to the spread itself.
        let spread = u64::try_from(APPEARED_SPREAD.as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(self.rng.u64(..spread))
    }

    /// The pause before the next connect attempt after `failures` failed
    /// ones, growing less while a call waits ([`WAITING_BACKOFF_STEPS`]).
    /// With a watch armed the steps grow to the cap even while a call
    /// waits: the watch tells of the daemon's return, and the backoff is
    /// only a safety net for a file system that reports nothing.
    fn retry_delay(&mut self, failures: u32) -> Duration {
        let waiting = self.watch == Watch::Unavailable && self.calls.any_waiting_for_a_connection();
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

    /// When the last healthy connection was lost, while no new one is up.
    fn lost_at(&self) -> Option<Instant> {
        self.link.outage().and_then(|outage| outage.lost_at)
    }

    /// Whether `conn` is still the connection and has delivered no line
    /// since it had delivered `heard`.
    fn heard_nothing_since(&self, conn: ConnId, heard: u64) -> bool {
        matches!(&self.link, Link::Connected(c) if c.conn == conn && c.heard == heard)
    }

    fn connect_wait_error(&self, waited: Duration) -> BridgeError {
        BridgeError::ConnectWait {
            endpoint: self.endpoint.clone(),
            waited,
            last_error: self.link.outage().and_then(|o| o.last_error.clone()),
        }
    }

    fn fail_waiting(&mut self, error: BridgeError) {
        for id in self.calls.waiting() {
            self.finish(id, Err(error.clone()));
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
