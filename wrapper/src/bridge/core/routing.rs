//! Where things go: a call that has just arrived (sent, left to wait, or
//! refused), and a line from the daemon (the call it answers, or the
//! parse-error streak).

use serde_json::Value;
use std::time::Instant;

use super::link::{Link, Proof, StatusQuestion};
use super::state::Bridge;
use super::types::{Action, CallId, ConnId, Event, PARSE_STREAK_LIMIT};
use crate::bridge::error::BridgeError;
use crate::bridge::wire::{self, Reply};

/// What to do with a call that has just arrived.
pub(super) enum Route {
    /// Send it on this connection.
    Send(ConnId),
    /// Let it wait for a connection.
    Wait,
    /// Fail it: the bridge is not connected and will not wait.
    Refuse,
}

impl Bridge {
    /// Where a call arriving now goes.
    pub(super) fn route(&self) -> Route {
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

    /// Writes call `id` on the connection `conn` (if it is still the
    /// connection and the call still pending), logging a replay.
    pub(super) fn send(&mut self, id: CallId, conn: ConnId, now: Instant) {
        let Link::Connected(connected) = &self.link else {
            return;
        };
        let heard = connected.heard;
        let call_timeout = self.policy.timings().call_timeout;
        let Some(sent) = self.calls.send(id, conn, heard, now, call_timeout) else {
            return;
        };
        if sent.sends > 1 {
            self.actions.push_back(Action::Report(Event::CallReplayed {
                call: id,
                method: sent.method.to_owned(),
                sends: sent.sends,
            }));
        }
        self.actions.push_back(Action::Send(conn, sent.line));
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
        let reply = wire::read_reply(line);
        if matches!(reply, Reply::NotJson) {
            self.non_json_line(conn);
            return;
        }
        connected.streak = 0;
        connected.proof = Proof::Proven;
        if connected.status == StatusQuestion::Asked && answers_no_call(&reply) {
            connected.status = StatusQuestion::Answered;
            self.actions.push_back(Action::Status(conn, line.to_vec()));
            return;
        }
        let (id, outcome) = match reply {
            Reply::NotJson => return,
            Reply::Unroutable | Reply::Control => (None, None),
            Reply::Message { id, outcome } => (id, Some(outcome)),
        };
        let Some(outcome) = outcome else {
            self.actions
                .push_back(Action::Report(Event::Unmatched { id: None }));
            return;
        };
        let wire = id.as_ref().and_then(Value::as_u64);
        let Some(call) = wire.and_then(|w| self.calls.answered_by(w)) else {
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
        match id.and_then(|w| self.calls.answered_by(w)) {
            Some(call) => {
                connected.streak = 0;
                self.finish(call, Err(BridgeError::ResponseTooLarge(limit)));
            }
            None => self.non_json_line(conn),
        }
    }

    /// A line that is not JSON arrived on `conn`. Only lines that arrive
    /// while calls wait on the connection count: a stray print on an idle
    /// connection harms nobody. [`PARSE_STREAK_LIMIT`] in a row fail the
    /// oldest call there.
    fn non_json_line(&mut self, conn: ConnId) {
        let oldest = self.calls.oldest_in_flight_on(conn);
        let Link::Connected(connected) = &mut self.link else {
            return;
        };
        let Some(id) = oldest else {
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
}

/// Whether a line can only be the answer to a control message: an object
/// with no `id`, `result` or `error` (how the daemon answers `status`), or
/// a reply whose `id` is null (how a daemon that takes no control messages
/// refuses one). The daemon answers one connection's lines in order, and
/// every call's id is a number, so while the status question is
/// unanswered such a line is its answer.
fn answers_no_call(reply: &Reply) -> bool {
    match reply {
        Reply::Control => true,
        Reply::Message { id, .. } => matches!(id, None | Some(Value::Null)),
        Reply::NotJson | Reply::Unroutable => false,
    }
}
