//! A model of the bridge's environment (callers, connect attempts, the
//! daemon's connection, time) that drives the sans-IO `Bridge` one event at
//! a time and checks its invariants after every step.
//!
//! Shared by the exhaustive search and the random runs.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use iai_mcp_wrapper::bridge::core::{APPEARED_SPREAD, REFUSED_RETRIES};
use iai_mcp_wrapper::bridge::{
    Access, Action, Backoff, Bridge, BridgeError, BridgeMode, CallId, ConnId, ConnectFailure,
    Event, Failure, Policy, Request, Timings, Watch,
};
use serde_json::{Value, json};

/// One event the environment can inject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The next call (in script order) arrives.
    Call,
    /// The pending connect attempt succeeds.
    ConnectOk,
    /// The pending connect attempt fails.
    ConnectFail,
    /// The pending connect attempt is refused: nothing listens (yet).
    ConnectRefused,
    /// The current connection closes.
    Close,
    /// The daemon closes the current connection before sending anything
    /// on it, as it refuses a wrong token (the driver reports such a close
    /// as a refusal).
    Refused,
    /// The daemon answers the n-th unanswered request on the current
    /// connection.
    Respond(usize),
    /// The daemon writes a non-JSON line on the current connection.
    Garbage,
    /// A response to a request sent on an earlier connection arrives,
    /// tagged with that old connection.
    StaleLine,
    /// A close of an earlier connection is reported late.
    StaleClose,
    /// Time advances to the bridge's next deadline.
    Timer,
    /// The daemon answers the status question the current connection
    /// began with.
    StatusAnswer,
    /// The watched endpoint appears (its socket is created).
    Appeared,
    /// The endpoint watch breaks: the bridge must poll again.
    WatchLost,
}

/// The calls made, in order: whether each reads (else writes) and whether
/// its caller can answer it another way (degraded mode).
pub const SCRIPT: [(Access, bool); 3] = [
    (Access::Read, true),
    (Access::Write, true),
    (Access::Read, false),
];

/// Why a run broke an invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Which invariant.
    pub invariant: &'static str,
    /// Details.
    pub detail: String,
}

#[derive(Debug, Clone)]
struct Sent {
    conn: ConnId,
    wire: u64,
    call: usize,
    answered: bool,
}

/// The environment plus the bridge under test.
#[derive(Debug, Clone)]
pub struct World {
    pub bridge: Bridge,
    now: Instant,
    calls_made: usize,
    script_len: usize,
    /// Replies per call index.
    replies: BTreeMap<usize, Vec<Result<iai_mcp_wrapper::bridge::DaemonResult, Failure>>>,
    /// Sends per call index.
    sends: BTreeMap<usize, usize>,
    /// When each call was made, and when it was answered.
    made_at: BTreeMap<usize, Instant>,
    answered_at: BTreeMap<usize, Instant>,
    /// Whether the policy re-sends reads lost with a connection.
    replays: bool,
    sent: Vec<Sent>,
    attempt: Option<ConnId>,
    open: BTreeSet<ConnId>,
    current: Option<ConnId>,
    /// Whether the daemon has written anything on the current connection.
    heard_current: bool,
    /// Connections the daemon refused (closed before writing anything).
    refused: BTreeSet<ConnId>,
    /// Calls made while no connection was up (they began by waiting).
    made_waiting: BTreeSet<usize>,
    old: Vec<ConnId>,
    /// Old connections whose late close has been injected already.
    stale_closed: usize,
    ever_connected: bool,
    /// Calls refused with an unreachable error, before being sent, while a
    /// reconnect was in flight: V3-05 if that reconnect then succeeds.
    refused_in_window: Vec<usize>,
    closes: usize,
    max_closes: usize,
    /// Whether the bridge was told its endpoint is watched (and not told
    /// since that the watch broke).
    watched: bool,
    /// Connections whose status question the bridge asked, and those
    /// whose question the daemon answered.
    status_asked: BTreeSet<ConnId>,
    status_answered: BTreeSet<ConnId>,
    /// A status answer was just injected: the bridge must hand it on.
    status_due: bool,
    /// Whether the daemon may answer the status question at all.
    answers_status: bool,
    /// The failure count the last `connect_failed` event reported, and how
    /// many in a row since the last appearance did not raise it (refusals
    /// tried again).
    last_failures: u32,
    uncounted: u32,
    /// An appearance was injected since the last connection.
    appeared_since_connect: bool,
    /// Appearances injected so far, and at most.
    appearances: usize,
    max_appearances: usize,
    pub trace: Vec<Step>,
}

/// The bridge policy used by the model: every timing distinct and nonzero
/// so that each kind of timer is its own event.
pub fn policy(mode: BridgeMode) -> Policy {
    let timings = Timings {
        reconnect_delay: Duration::from_millis(1000),
        connect_wait: Duration::from_secs(10),
        fallback_wait: Duration::from_millis(700),
        call_timeout: Duration::from_secs(120),
        backoff: Backoff::new(Duration::from_millis(50), Duration::from_secs(2))
            .expect("valid backoff"),
    };
    Policy::new(mode, timings).expect("valid policy")
}

impl World {
    /// A fresh world whose bridge has started its first connect attempt.
    pub fn new(mode: BridgeMode, script_len: usize, max_closes: usize) -> Self {
        let now = Instant::now();
        let mut world = World {
            bridge: Bridge::new(policy(mode), "/tmp/model.sock", 7),
            now,
            calls_made: 0,
            script_len,
            replies: BTreeMap::new(),
            sends: BTreeMap::new(),
            made_at: BTreeMap::new(),
            answered_at: BTreeMap::new(),
            replays: mode == BridgeMode::Fixed,
            sent: Vec::new(),
            attempt: None,
            open: BTreeSet::new(),
            current: None,
            heard_current: false,
            refused: BTreeSet::new(),
            made_waiting: BTreeSet::new(),
            old: Vec::new(),
            stale_closed: 0,
            ever_connected: false,
            refused_in_window: Vec::new(),
            closes: 0,
            max_closes,
            watched: false,
            status_asked: BTreeSet::new(),
            status_answered: BTreeSet::new(),
            status_due: false,
            answers_status: true,
            last_failures: 0,
            uncounted: 0,
            appeared_since_connect: false,
            appearances: 0,
            max_appearances: 0,
            trace: Vec::new(),
        };
        world.bridge.start();
        world
            .absorb(false)
            .expect("starting cannot break an invariant");
        world
    }

    /// The same world with its endpoint watched from the start: the bridge
    /// is told the watch is armed, and the endpoint may appear up to
    /// `max_appearances` times and the watch break once, at any point.
    pub fn watched(mut self, max_appearances: usize) -> Self {
        self.watched = true;
        self.max_appearances = max_appearances;
        self.bridge.watch(Watch::Armed, self.now);
        self.absorb(false)
            .expect("arming the watch cannot break an invariant");
        self
    }

    /// The same world with a daemon that never answers the status
    /// question: the search about the endpoint's watch leaves the answer
    /// out (it only proves a connection, which the searches without a
    /// watch and the random runs cover) to stay within its depth.
    pub fn ignoring_status(mut self) -> Self {
        self.answers_status = false;
        self
    }

    /// The events possible now.
    pub fn enabled(&self) -> Vec<Step> {
        let mut steps = Vec::new();
        if self.calls_made < self.script_len {
            steps.push(Step::Call);
        }
        if self.attempt.is_some() {
            steps.push(Step::ConnectOk);
            steps.push(Step::ConnectFail);
            // A refusal differs from any other failure only for an attempt
            // answering an appearance (the unit tests show the rest): it
            // is explored while one may.
            if self.uncounted_may_apply() {
                steps.push(Step::ConnectRefused);
            }
        }
        if self.current.is_some() {
            if self.closes < self.max_closes {
                steps.push(Step::Close);
                if !self.heard_current {
                    steps.push(Step::Refused);
                }
            }
            let unanswered = self.unanswered_current().len();
            for i in 0..unanswered {
                steps.push(Step::Respond(i));
            }
            // The daemon answers a connection's lines in order: the status
            // answer comes before any call's, or (a daemon that ignores
            // the question) never.
            if self.answers_status
                && self.current.is_some_and(|conn| {
                    self.status_asked.contains(&conn)
                        && !self.status_answered.contains(&conn)
                        && !self.sent.iter().any(|s| s.conn == conn && s.answered)
                })
            {
                steps.push(Step::StatusAnswer);
            }
        }
        if self.stale_unanswered().is_some() {
            steps.push(Step::StaleLine);
        }
        if self.stale_closed < self.old.len() {
            steps.push(Step::StaleClose);
        }
        if self.bridge.poll_timeout().is_some() {
            steps.push(Step::Timer);
        }
        if self.appearances < self.max_appearances {
            steps.push(Step::Appeared);
        }
        if self.watched {
            steps.push(Step::WatchLost);
        }
        steps
    }

    /// Whether an appearance has been injected since the last connection,
    /// so that the pending attempt may answer it.
    fn uncounted_may_apply(&self) -> bool {
        self.appeared_since_connect
    }

    /// [`World::enabled`] plus daemon garbage lines (left out of the
    /// exhaustive search to keep it small; the random runs use it).
    pub fn enabled_with_garbage(&self) -> Vec<Step> {
        let mut steps = self.enabled();
        if self.current.is_some() {
            steps.push(Step::Garbage);
        }
        steps
    }

    fn unanswered_current(&self) -> Vec<usize> {
        self.sent
            .iter()
            .enumerate()
            .filter(|(_, s)| Some(s.conn) == self.current && !s.answered)
            .map(|(i, _)| i)
            .collect()
    }

    fn stale_unanswered(&self) -> Option<usize> {
        self.sent
            .iter()
            .position(|s| Some(s.conn) != self.current && !s.answered)
    }

    /// Whether a reconnect is under way (the V3-05 window).
    fn in_reconnect_window(&self) -> bool {
        self.ever_connected && self.current.is_none()
    }

    /// Apply one event, then check every invariant.
    pub fn step(&mut self, step: Step) -> Result<(), Violation> {
        self.trace.push(step);
        let now = self.now;
        let mut stale = false;
        match step {
            Step::Call => {
                let index = self.calls_made;
                self.calls_made += 1;
                self.made_at.insert(index, now);
                if self.current.is_none() {
                    self.made_waiting.insert(index);
                }
                let (access, fallback) = SCRIPT[index % SCRIPT.len()];
                let window = self.in_reconnect_window();
                self.bridge.call(
                    CallId(index as u64),
                    Request {
                        method: match access {
                            Access::Read => "memory_recall",
                            Access::Write => "memory_capture",
                        }
                        .into(),
                        params: json!({ "call": index }),
                        access,
                        fallback,
                    },
                    now,
                );
                if window {
                    // Checked once the actions are absorbed below.
                    self.absorb(false)?;
                    if self.replies.get(&index).is_some_and(|r| {
                        r.iter().any(|o| {
                            matches!(
                                o,
                                Err(Failure {
                                    error: BridgeError::NotConnected | BridgeError::SocketClosed,
                                    ..
                                })
                            )
                        })
                    }) {
                        self.refused_in_window.push(index);
                    }
                    return self.check();
                }
            }
            Step::ConnectOk => {
                let conn = self.attempt.take().expect("enabled only with an attempt");
                self.open.insert(conn);
                self.current = Some(conn);
                self.heard_current = false;
                self.ever_connected = true;
                self.bridge.connected(conn, now);
                if let Some(&call) = self.refused_in_window.first() {
                    return Err(self.violation(
                        "no daemon_unreachable for a call made during a reconnect that succeeds",
                        format!("call {call} was refused; the reconnect then succeeded"),
                    ));
                }
            }
            Step::ConnectRefused => {
                let conn = self.attempt.take().expect("enabled only with an attempt");
                self.bridge
                    .connect_failed(conn, ConnectFailure::Refused("refused".into()), now);
                self.refused_in_window.clear();
            }
            Step::ConnectFail => {
                let conn = self.attempt.take().expect("enabled only with an attempt");
                self.bridge
                    .connect_failed(conn, ConnectFailure::Other("refused".into()), now);
                // A failed reconnect ends the window without success.
                self.refused_in_window.clear();
            }
            Step::Close => {
                let conn = self.current.take().expect("enabled only when connected");
                self.open.remove(&conn);
                self.old.push(conn);
                self.closes += 1;
                self.bridge.closed(conn, now);
            }
            Step::Refused => {
                let conn = self.current.take().expect("enabled only when connected");
                self.open.remove(&conn);
                self.old.push(conn);
                self.closes += 1;
                self.refused.insert(conn);
                self.bridge
                    .refused(conn, "token refused, /tmp/model.token".into(), now);
            }
            Step::Respond(n) => {
                let index = self.unanswered_current()[n];
                let s = &mut self.sent[index];
                s.answered = true;
                let line = json!({"jsonrpc": "2.0", "id": s.wire, "result": {"call": s.call}});
                let conn = s.conn;
                self.heard_current = true;
                self.bridge.line(conn, line.to_string().as_bytes());
            }
            Step::StatusAnswer => {
                let conn = self.current.expect("enabled only when connected");
                self.status_answered.insert(conn);
                self.heard_current = true;
                self.status_due = true;
                self.bridge
                    .line(conn, br#"{"ok":true,"state":"WAKE","version":"3.3.0"}"#);
                self.absorb(false)?;
                if self.status_due {
                    return Err(self.violation(
                        "the answer to the status question is handed on",
                        format!("no status action on {conn:?}"),
                    ));
                }
                return self.check();
            }
            Step::Garbage => {
                let conn = self.current.expect("enabled only when connected");
                self.heard_current = true;
                self.bridge.line(conn, b"not json");
            }
            Step::StaleLine => {
                let index = self.stale_unanswered().expect("enabled only with one");
                let s = &mut self.sent[index];
                s.answered = true;
                let line = json!({"jsonrpc": "2.0", "id": s.wire, "result": {"stale": true}});
                let conn = s.conn;
                self.bridge.line(conn, line.to_string().as_bytes());
                stale = true;
            }
            Step::StaleClose => {
                let conn = self.old[self.stale_closed];
                self.stale_closed += 1;
                self.bridge.closed(conn, now);
                stale = true;
            }
            Step::Timer => {
                let at = self
                    .bridge
                    .poll_timeout()
                    .expect("enabled only with a deadline");
                self.now = self.now.max(at);
                self.bridge.handle_timeout(self.now);
            }
            Step::Appeared => {
                self.appearances += 1;
                self.uncounted = 0;
                self.appeared_since_connect = true;
                let heeded = self.bridge.heeds_appearance();
                let due_before = self.bridge.poll_timeout();
                self.bridge.endpoint_appeared(now);
                self.absorb(false)?;
                let due = self.bridge.poll_timeout();
                // Within the spread, however recent the last attempt.
                let bound = now + APPEARED_SPREAD;
                if heeded && due.is_none_or(|at| at >= bound) {
                    return Err(self.violation(
                        "an appearance while backing off or awaiting brings an attempt within the spread",
                        format!("next deadline {due:?} after the appearance at {now:?}"),
                    ));
                }
                if let (Some(before), Some(after)) = (due_before, due)
                    && after > before
                {
                    return Err(self.violation(
                        "an appearance never delays anything",
                        format!("next deadline {after:?}, was {before:?}"),
                    ));
                }
                return self.check();
            }
            Step::WatchLost => {
                self.watched = false;
                self.bridge.watch(Watch::Unavailable, now);
                self.absorb(false)?;
                if self.bridge.between_attempts() && self.bridge.poll_timeout().is_none() {
                    return Err(self.violation(
                        "without a watch, a bridge waiting to dial has a timer",
                        "no deadline after the watch broke".into(),
                    ));
                }
                return self.check();
            }
        }
        self.absorb(stale)?;
        self.check()
    }

    /// Carry out the bridge's actions as the driver would.
    fn absorb(&mut self, stale_event: bool) -> Result<(), Violation> {
        while let Some(action) = self.bridge.poll_action() {
            if stale_event {
                return Err(self.violation(
                    "stale events from an old connection have no effect",
                    format!("{action:?}"),
                ));
            }
            match action {
                Action::Connect(conn) => {
                    if let Some(old) = self.attempt.replace(conn) {
                        return Err(self.violation(
                            "never two connections or attempts",
                            format!("attempt {old:?} still pending when {conn:?} started"),
                        ));
                    }
                }
                Action::Send(conn, line) => {
                    if Some(conn) != self.current {
                        return Err(self.violation(
                            "sends go to the current connection only",
                            format!("send on {conn:?}, current {:?}", self.current),
                        ));
                    }
                    let msg: Value = serde_json::from_slice(&line).expect("bridge sends JSON");
                    if msg["type"] == "status" {
                        let first = !self.sent.iter().any(|s| s.conn == conn);
                        if !first || !self.status_asked.insert(conn) {
                            return Err(self.violation(
                                "each connection begins with one status question",
                                format!("status asked again, or after a call, on {conn:?}"),
                            ));
                        }
                        continue;
                    }
                    if !self.status_asked.contains(&conn) {
                        return Err(self.violation(
                            "each connection begins with one status question",
                            format!("a call sent on {conn:?} before the question"),
                        ));
                    }
                    let call = msg["params"]["call"].as_u64().expect("call index") as usize;
                    let wire = msg["id"].as_u64().expect("integer id");
                    *self.sends.entry(call).or_default() += 1;
                    self.sent.push(Sent {
                        conn,
                        wire,
                        call,
                        answered: false,
                    });
                }
                Action::Close(conn) => {
                    self.open.remove(&conn);
                    if self.current == Some(conn) {
                        self.current = None;
                    }
                    if self.attempt == Some(conn) {
                        self.attempt = None;
                    }
                }
                Action::Reply(id, outcome) => {
                    self.replies.entry(id.0 as usize).or_default().push(outcome);
                    self.answered_at.insert(id.0 as usize, self.now);
                }
                Action::Status(conn, _) => {
                    if !std::mem::take(&mut self.status_due) || Some(conn) != self.current {
                        return Err(self.violation(
                            "only the status answer is handed on as one",
                            format!("a status action on {conn:?}"),
                        ));
                    }
                }
                Action::Report(Event::ConnectFailed { failures, .. }) => {
                    if failures > self.last_failures {
                        self.uncounted = 0;
                    } else {
                        self.uncounted += 1;
                    }
                    self.last_failures = failures;
                    if self.uncounted > REFUSED_RETRIES {
                        return Err(self.violation(
                            "a refusal goes uncounted only a few times after each appearance",
                            format!("{} failed attempts in a row uncounted", self.uncounted),
                        ));
                    }
                }
                Action::Report(Event::Connected { .. }) => {
                    self.last_failures = 0;
                    self.uncounted = 0;
                    self.appeared_since_connect = false;
                }
                Action::Report(_) => {}
            }
        }
        Ok(())
    }

    fn check(&self) -> Result<(), Violation> {
        for (call, replies) in &self.replies {
            if replies.len() > 1 {
                return Err(self.violation(
                    "every call answered exactly once",
                    format!("call {call} answered {} times", replies.len()),
                ));
            }
        }
        for (call, &n) in &self.sends {
            let (access, _) = SCRIPT[call % SCRIPT.len()];
            if access == Access::Write && n > 1 {
                return Err(self.violation(
                    "no write is sent twice",
                    format!("call {call} sent {n} times"),
                ));
            }
        }
        let timings = *policy(BridgeMode::Fixed).timings();
        let budget = timings.connect_wait + timings.call_timeout;
        for (call, &at) in &self.answered_at {
            let made = self.made_at[call];
            if at > made + budget {
                return Err(self.violation(
                    "no call is answered after its one deadline (connect wait plus call timeout)",
                    format!("call {call} answered {:?} after it was made", at - made),
                ));
            }
            let only_refused = self
                .sent
                .iter()
                .filter(|s| s.call == *call)
                .all(|s| self.refused.contains(&s.conn));
            let waited_out = self.replies[call]
                .iter()
                .any(|r| matches!(r, Err(f) if matches!(f.error, BridgeError::ConnectWait { .. })));
            if waited_out
                && only_refused
                && self.made_waiting.contains(call)
                && at > made + timings.connect_wait
            {
                return Err(self.violation(
                    "a refused connection never lengthens a call's wait",
                    format!(
                        "call {call} failed its wait {:?} after it was made",
                        at - made
                    ),
                ));
            }
            let (access, _) = SCRIPT[call % SCRIPT.len()];
            let closed = self.replies[call]
                .iter()
                .any(|r| matches!(r, Err(f) if f.error == BridgeError::SocketClosed));
            if self.replays && access == Access::Read && closed && at < made + budget {
                return Err(self.violation(
                    "a read lost with its connection is re-sent while its deadline allows",
                    format!(
                        "call {call} failed `socket closed` {:?} after it was made",
                        at - made
                    ),
                ));
            }
        }
        for (call, replies) in &self.replies {
            let (access, fallback) = SCRIPT[call % SCRIPT.len()];
            let sent = self.sends.get(call).copied().unwrap_or(0);
            for reply in replies {
                let Err(failure) = reply else { continue };
                if failure.sent != (sent > 0) {
                    return Err(self.violation(
                        "a failure says truly whether its call was sent",
                        format!(
                            "call {call} sent {sent} times, reported sent={}",
                            failure.sent
                        ),
                    ));
                }
                let unreachable = matches!(
                    failure.error,
                    BridgeError::NotConnected
                        | BridgeError::SocketClosed
                        | BridgeError::Refused { .. }
                        | BridgeError::ConnectWait { .. }
                );
                let allowed = fallback && (access == Access::Read || sent == 0);
                if unreachable && allowed && !failure.fallback {
                    return Err(self.violation(
                        "a call the daemon could not take is handed on when that is safe",
                        format!(
                            "call {call} ({access:?}) failed with {} and was not handed on",
                            failure.error
                        ),
                    ));
                }
                if failure.fallback && (!fallback || (access == Access::Write && sent > 0)) {
                    return Err(self.violation(
                        "no write is both sent to the daemon and handed to the CLI",
                        format!(
                            "call {call} ({access:?}, fallback asked: {fallback}) sent {sent} times, handed on"
                        ),
                    ));
                }
            }
        }
        if let Some(conn) = self.current {
            for call in 0..self.calls_made {
                let answered = self.replies.contains_key(&call);
                let in_flight = self
                    .sent
                    .iter()
                    .any(|s| s.call == call && s.conn == conn && !s.answered);
                if !answered && !in_flight {
                    return Err(self.violation(
                        "while connected, every unanswered call is in flight",
                        format!("call {call} waits although {conn:?} is up"),
                    ));
                }
            }
        }
        if !self.watched && self.bridge.between_attempts() && self.bridge.poll_timeout().is_none() {
            return Err(self.violation(
                "without a watch, a bridge waiting to dial has a timer",
                format!("status {:?}", self.bridge.status()),
            ));
        }
        let live = self.open.len() + usize::from(self.attempt.is_some());
        if live > 1 {
            return Err(self.violation(
                "never two connections or attempts",
                format!("open {:?}, attempt {:?}", self.open, self.attempt),
            ));
        }
        Ok(())
    }

    /// Let time run out with the daemon gone: every call made so far must
    /// then have exactly one answer.
    pub fn drain(&mut self) -> Result<(), Violation> {
        for _ in 0..10_000 {
            if self.bridge.pending() == 0 {
                break;
            }
            if self.attempt.is_some() {
                self.step(Step::ConnectFail)?;
            } else if self.bridge.poll_timeout().is_some() {
                self.step(Step::Timer)?;
            } else {
                break;
            }
        }
        for call in 0..self.calls_made {
            let n = self.replies.get(&call).map_or(0, Vec::len);
            if n != 1 {
                return Err(self.violation(
                    "every call answered exactly once",
                    format!("call {call} answered {n} times after draining"),
                ));
            }
        }
        Ok(())
    }

    fn violation(&self, invariant: &'static str, detail: String) -> Violation {
        Violation {
            invariant,
            detail: format!("{detail}; trace {:?}", self.trace),
        }
    }
}
