//! Daemon replies: arbitrary bytes from the daemon's socket, through the
//! framing the bridge's driver reads it with, into the sans-IO bridge
//! while calls are in flight.
//!
//! Checked, for every input:
//! - nothing panics, and the framing holds at most the line cap of an
//!   unfinished line;
//! - a line whose one `id` (read by `serde_json`, independently of the
//!   wrapper) is the wire id of a call in flight answers that call, once;
//! - the connection begins with the status question; the first JSON
//!   object whose `id` is absent or null (and none of whose `id`, `result`
//!   and `error` is given twice) is its answer, handed on once and
//!   answering no call;
//! - a line with a foreign id, or none, changes nothing: no call is
//!   answered or dropped and nothing but a log event comes of it, except
//!   the parse-streak rule, modelled here: the fourth line in a row that
//!   is not JSON (or is too long and answers no call) while calls are in
//!   flight fails the oldest of them, and any JSON line ends the streak;
//! - in the end every call is answered exactly once, by a result, an error
//!   or its deadline, and no answer goes to a call that was never made.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use iai_mcp_wrapper::bridge::core::PARSE_STREAK_LIMIT;
use iai_mcp_wrapper::bridge::wire::STATUS_REQUEST;
use iai_mcp_wrapper::bridge::{
    Access, Action, Backoff, Bridge, BridgeMode, CallId, ConnId, ConnectFailure, Event, Policy,
    Request, Timings,
};
use iai_mcp_wrapper::codec::{Frame, LineCodec};
use serde::de::IgnoredAny;
use serde_json::{Value, json};
use tokio_util::codec::Decoder;

use crate::jsonrpc::Members;

/// The line cap in this target: small, so that oversized replies are
/// common.
pub const MAX_LINE: usize = 512;

/// Runs one input: its first byte says how many calls are in flight (1 to
/// 8, the low three bits) and which of them write (the high five bits), its
/// second how many bytes each read brings (1 to 256); the rest is what the
/// daemon writes.
pub fn check(data: &[u8]) {
    let [first, second, stream @ ..] = data else {
        return;
    };
    let calls = usize::from(first & 0b111) + 1;
    let read_size = usize::from(*second) + 1;
    let mut run = Run::connected();
    for n in 0..calls {
        let write = first >> 3 & (1 << (n % 5)) != 0;
        run.call(CallId(n as u64 + 1), write);
    }
    assert_eq!(run.bridge.pending(), calls, "every call is in flight");

    let mut codec = LineCodec::new(MAX_LINE);
    let mut buffer = BytesMut::new();
    for read in stream.chunks(read_size) {
        buffer.extend_from_slice(read);
        while let Some(frame) = codec.decode(&mut buffer).expect("framing never fails") {
            run.frame(frame);
        }
        assert!(buffer.len() <= MAX_LINE, "{} bytes held", buffer.len());
    }
    while let Some(frame) = codec.decode_eof(&mut buffer).expect("framing never fails") {
        run.frame(frame);
    }
    run.finish();
    for n in 0..calls {
        let call = CallId(n as u64 + 1);
        assert_eq!(run.answers.get(&call), Some(&1), "{call:?} answered once");
    }
    assert_eq!(run.answers.len(), calls, "answers only for calls made");
}

/// One bridge, one connection, and what came out of it.
struct Run {
    bridge: Bridge,
    now: Instant,
    conn: ConnId,
    /// The call each wire id was sent for.
    wire: HashMap<u64, CallId>,
    /// Answers per call.
    answers: BTreeMap<CallId, u32>,
    /// Lines in a row that were not JSON while calls were in flight.
    streak: u32,
    /// Whether the status question has been answered.
    status_answered: bool,
}

impl Run {
    /// A bridge with an established connection.
    fn connected() -> Run {
        let timings = Timings {
            reconnect_delay: Duration::from_millis(100),
            connect_wait: Duration::from_secs(10),
            fallback_wait: Duration::from_secs(1),
            call_timeout: Duration::from_secs(60),
            backoff: Backoff::new(Duration::from_millis(50), Duration::from_secs(2))
                .expect("valid backoff"),
        };
        let policy = Policy::new(BridgeMode::Fixed, timings).expect("valid policy");
        let mut run = Run {
            bridge: Bridge::new(policy, "/fuzz/daemon.sock", 1),
            now: Instant::now(),
            conn: ConnId(0),
            wire: HashMap::new(),
            answers: BTreeMap::new(),
            streak: 0,
            status_answered: false,
        };
        run.bridge.start();
        let Some(Action::Connect(conn)) = run.bridge.poll_action() else {
            panic!("a started bridge dials");
        };
        run.conn = conn;
        run.bridge.connected(conn, run.now);
        let actions = run.drain();
        let sends: Vec<&Action> = actions
            .iter()
            .filter(|a| !matches!(a, Action::Report(_)))
            .collect();
        assert!(
            matches!(sends[..], [Action::Send(c, line)] if *c == conn && line == STATUS_REQUEST),
            "the status question, then nothing until a call: {actions:?}"
        );
        run
    }

    fn call(&mut self, id: CallId, write: bool) {
        let request = Request {
            method: if write {
                "memory_capture"
            } else {
                "memory_recall"
            }
            .to_owned(),
            params: json!({ "call": id.0 }),
            access: if write { Access::Write } else { Access::Read },
            fallback: false,
        };
        self.bridge.call(id, request, self.now);
        let actions = self.drain();
        let [Action::Send(conn, line)] = &actions[..] else {
            panic!("a call on a connection is sent at once: {actions:?}");
        };
        assert_eq!(*conn, self.conn);
        let sent: Value = serde_json::from_slice(line).expect("requests are JSON");
        let wire = sent["id"].as_u64().expect("wire ids are integers");
        assert!(self.wire.insert(wire, id).is_none(), "wire ids are unique");
    }

    /// Performs what the bridge asks (a new connect attempt fails: the
    /// daemon went away), records answers, and returns the actions.
    fn drain(&mut self) -> Vec<Action> {
        let mut done = Vec::new();
        while let Some(action) = self.bridge.poll_action() {
            match &action {
                Action::Reply(call, _) => *self.answers.entry(*call).or_default() += 1,
                Action::Connect(conn) => {
                    self.bridge.connect_failed(
                        *conn,
                        ConnectFailure::Other("refused".to_owned()),
                        self.now,
                    );
                }
                _ => {}
            }
            done.push(action);
        }
        done
    }

    /// One frame from the daemon, and what it may change.
    fn frame(&mut self, frame: Frame) {
        let pending = self.bridge.pending();
        let (owner, json) = match &frame {
            Frame::Line(line) => {
                let owner = Members::of(line).and_then(|m| self.owner(m.single("id")));
                // UTF-8 first: serde_json skips a string without checking it.
                let json = std::str::from_utf8(line)
                    .is_ok_and(|text| serde_json::from_str::<IgnoredAny>(text).is_ok());
                (owner, json)
            }
            Frame::Oversized { id } => (self.owner(id.clone()), false),
        };
        let status = !self.status_answered
            && owner.is_none()
            && matches!(&frame, Frame::Line(line) if answers_no_call(line));
        self.status_answered |= status;
        let expected = match owner {
            Some(call) => {
                self.streak = 0;
                Some(call)
            }
            None if json => {
                self.streak = 0;
                None
            }
            None => self.count_in_streak(),
        };
        match &frame {
            Frame::Line(line) => self.bridge.line(self.conn, line),
            Frame::Oversized { id } => {
                self.bridge
                    .oversized_line(self.conn, id.as_ref().and_then(Value::as_u64), MAX_LINE)
            }
        }
        let actions = self.drain();
        let answered: Vec<CallId> = actions
            .iter()
            .filter_map(|a| match a {
                Action::Reply(call, _) => Some(*call),
                _ => None,
            })
            .collect();
        assert!(
            actions
                .iter()
                .all(|a| matches!(a, Action::Reply(..) | Action::Report(_))
                    || matches!(a, Action::Status(c, _) if status && *c == self.conn)),
            "a reply line only answers and logs: {actions:?}"
        );
        assert_eq!(
            actions.iter().any(|a| matches!(a, Action::Status(..))),
            status,
            "the status answer is handed on, once: {frame:?}"
        );
        assert_eq!(
            answered,
            Vec::from_iter(expected),
            "the calls answered by {frame:?}"
        );
        if let (None, Some(failed)) = (owner, expected) {
            let reported = actions.iter().any(
                |a| matches!(a, Action::Report(Event::ParseStreak { call, .. }) if *call == failed),
            );
            assert!(reported, "a parse streak is logged: {actions:?}");
        }
        assert_eq!(
            self.bridge.pending(),
            pending - answered.len(),
            "{frame:?} answered {answered:?} and dropped nothing"
        );
    }

    /// A line that is not JSON (or too long, answering no call): it counts
    /// towards the parse streak while calls are in flight; at the limit
    /// the oldest call in flight (the lowest wire id) fails.
    fn count_in_streak(&mut self) -> Option<CallId> {
        let oldest = self
            .wire
            .iter()
            .filter(|(_, call)| !self.answers.contains_key(call))
            .min_by_key(|(wire, _)| **wire)
            .map(|(_, call)| *call);
        let Some(oldest) = oldest else {
            self.streak = 0;
            return None;
        };
        self.streak += 1;
        if self.streak < PARSE_STREAK_LIMIT {
            return None;
        }
        self.streak = 0;
        Some(oldest)
    }

    /// The call in flight a reply with `id` answers, if any.
    fn owner(&self, id: Option<Value>) -> Option<CallId> {
        let call = *self.wire.get(&id?.as_u64()?)?;
        (self.answers.get(&call).copied().unwrap_or(0) == 0).then_some(call)
    }

    /// Lets time pass until every call is answered.
    fn finish(&mut self) {
        for _ in 0..64 {
            if self.bridge.pending() == 0 {
                return;
            }
            let due = self
                .bridge
                .poll_timeout()
                .expect("a bridge with calls has a deadline");
            self.now = self.now.max(due);
            self.bridge.handle_timeout(self.now);
            self.drain();
        }
        panic!("{} calls still unanswered", self.bridge.pending());
    }
}

/// Whether `line` is a JSON object none of whose `id`, `result` and
/// `error` is given twice, and whose `id` is absent or null: no call's
/// answer, so the answer to the status question while it is unanswered.
fn answers_no_call(line: &[u8]) -> bool {
    let Some(members) = Members::of(line) else {
        return false;
    };
    let once = ["id", "result", "error"]
        .iter()
        .all(|name| members.count(name) <= 1);
    once && (members.count("id") == 0 || members.single("id") == Some(Value::Null))
}
