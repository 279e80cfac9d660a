//! What the live fault scenarios share: a fake daemon and a wrapper started
//! together, handshaken, and proven to work before any fault is injected;
//! calls pipelined on them; and what every report keeps of the wrapper's
//! output.

use std::ffi::OsString;
use std::fmt;
use std::time::{Duration, Instant};

use devkit::bins::error_chain;
use devkit::tempdir::{short_tempdir, socket_path_in};
use serde::Serialize;
use serde_json::{Value, json};
use tempfile::TempDir;

use super::outcome::CallOutcome;
use super::property::Judged;
use super::race::PROTOCOL_VERSION;
use super::setup::Setup;
use crate::client::ClientError;
use crate::daemon::FakeDaemon;
use crate::error::HarnessError;
use crate::wrapper::{BridgeMode, WrapperCommand, WrapperOptions, WrapperProcess};

/// How much of the wrapper's stderr a report keeps when something failed.
pub(crate) const STDERR_TAIL_BYTES: usize = 2000;

/// The tool of baseline and probe calls: read-only, no arguments.
pub(crate) const PROBE_TOOL: &str = "topology";

/// A read-only, idempotent tool with a string argument that can carry a
/// call's unique tag, so the daemon's `LOG` shows how often it was
/// received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TaggedRead {
    /// The tool.
    pub(crate) tool: &'static str,
    /// The argument that carries the tag.
    pub(crate) tag_field: &'static str,
}

impl TaggedRead {
    /// A call of the tool carrying `tag`.
    pub(crate) fn call(self, tag: String) -> ToolCall {
        ToolCall::read(self.tool, json!({ self.tag_field: tag }))
    }
}

/// The tagged reads the storm and the hostile client call.
pub(crate) const READ_TOOLS: [TaggedRead; 4] = [
    TaggedRead {
        tool: "schema_list",
        tag_field: "domain",
    },
    TaggedRead {
        tool: "memory_recall",
        tag_field: "cue",
    },
    TaggedRead {
        tool: "events_query",
        tag_field: "kind",
    },
    TaggedRead {
        tool: "curiosity_pending",
        tag_field: "session_id",
    },
];

/// One `tools/call` a scenario makes: the tool, its arguments, and
/// whether it writes (a write must never reach the daemon twice; a read
/// may be re-sent).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolCall {
    /// The tool.
    pub(crate) tool: &'static str,
    /// Its arguments.
    pub(crate) arguments: Value,
    /// Whether it is a write.
    pub(crate) write: bool,
}

impl ToolCall {
    /// A read-only call.
    pub(crate) fn read(tool: &'static str, arguments: Value) -> Self {
        Self {
            tool,
            arguments,
            write: false,
        }
    }

    /// A call that writes.
    pub(crate) fn write(tool: &'static str, arguments: Value) -> Self {
        Self {
            tool,
            arguments,
            write: true,
        }
    }

    /// The `tools/call` params of the call.
    pub(crate) fn params(&self) -> Value {
        json!({"name": self.tool, "arguments": self.arguments})
    }
}

/// How a call made with [`LiveSession::call`] ended, and how long it took.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TimedOutcome {
    /// How it ended.
    pub(crate) outcome: CallOutcome,
    /// From sending it to its answer (or to giving up).
    pub(crate) latency: Duration,
}

/// JSON-RPC ids of pipelined scenario calls start here, far from the
/// client's own ids: call `n` has id `CALL_ID_BASE + n`.
const CALL_ID_BASE: u64 = 1_000_000;

/// How many samples (lost calls, odd messages) a report keeps.
pub(crate) const MAX_SAMPLES: usize = 12;

/// Bound on the baseline call (the wrapper's first connect may take a
/// moment on a loaded machine).
const BASELINE_TIMEOUT: Duration = Duration::from_secs(20);

/// What every live report keeps of the wrapper's output, flattened into
/// the report's JSON.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct WrapperOutput {
    /// Stdout framing defects (must be none).
    pub defects: Vec<String>,
    /// The end of the wrapper's stderr, kept when the run did not pass.
    pub wrapper_stderr_tail: Option<String>,
}

/// A fake daemon listening in a short temporary directory of its own.
///
/// Fields drop in order: the daemon is killed first, then its directory
/// is removed.
#[derive(Debug)]
pub(crate) struct DaemonInTempDir {
    pub(crate) daemon: FakeDaemon,
    _dir: TempDir,
}

/// Starts the fake daemon `setup` names, listening in a fresh short
/// temporary directory (removed when the result drops).
pub(crate) fn start_daemon(setup: &Setup) -> Result<DaemonInTempDir, HarnessError> {
    let dir = short_tempdir()?;
    let socket = socket_path_in(dir.path());
    let daemon = FakeDaemon::spawn_on(&setup.daemon_bin()?, &socket, setup.transport)?;
    Ok(DaemonInTempDir { daemon, _dir: dir })
}

/// Starts a wrapper dialling `daemon` in `mode`, with `env` set on top of
/// the harness's isolated environment (no reconnect test delay).
pub(crate) fn spawn_wrapper(
    cmd: &WrapperCommand,
    mode: Option<BridgeMode>,
    daemon: &FakeDaemon,
    env: &[(&str, String)],
) -> Result<WrapperProcess, HarnessError> {
    let mut opts = WrapperOptions {
        mode,
        ..WrapperOptions::for_daemon(daemon)
    };
    opts.extra_env.extend(
        env.iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v))),
    );
    WrapperProcess::spawn(cmd, &opts)
}

/// A fake daemon and a wrapper dialling it, initialized, with one tool call
/// answered.
///
/// Fields drop in order: the wrapper is killed first, then the daemon, then
/// the socket directory is removed.
#[derive(Debug)]
pub(crate) struct LiveSession {
    pub(crate) wrapper: WrapperProcess,
    pub(crate) daemon: FakeDaemon,
    _dir: TempDir,
}

impl LiveSession {
    /// Starts the daemon and the wrapper (see [`spawn_wrapper`]), performs
    /// the handshake and a baseline call, which must succeed: otherwise
    /// nothing the scenario measures would mean anything, and the result is
    /// a [`HarnessError::Scenario`].
    pub(crate) fn start(
        cmd: &WrapperCommand,
        setup: &Setup,
        env: &[(&str, String)],
    ) -> Result<Self, HarnessError> {
        let DaemonInTempDir { daemon, _dir } = start_daemon(setup)?;
        let wrapper = spawn_wrapper(cmd, setup.mode, &daemon, env)?;
        Self::begin(wrapper, daemon, _dir)
    }

    /// As [`LiveSession::start`], with the wrapper started with `opts`
    /// (which `opts_for` makes for the daemon started for `setup`).
    pub(crate) fn start_with(
        cmd: &WrapperCommand,
        setup: &Setup,
        opts_for: impl FnOnce(&FakeDaemon) -> WrapperOptions,
    ) -> Result<Self, HarnessError> {
        let DaemonInTempDir { daemon, _dir } = start_daemon(setup)?;
        let wrapper = WrapperProcess::spawn(cmd, &opts_for(&daemon))?;
        Self::begin(wrapper, daemon, _dir)
    }

    /// The handshake and the baseline call on a session just started.
    fn begin(
        mut wrapper: WrapperProcess,
        daemon: FakeDaemon,
        _dir: TempDir,
    ) -> Result<Self, HarnessError> {
        wrapper.set_default_timeout(BASELINE_TIMEOUT);
        let mut session = Self {
            wrapper,
            daemon,
            _dir,
        };
        session
            .wrapper
            .initialize(PROTOCOL_VERSION)
            .map_err(|e| session.precondition("initialize", &error_chain(&e)))?;
        let baseline = session.call(PROBE_TOOL, json!({}), BASELINE_TIMEOUT);
        if !baseline.outcome.is_ok() {
            return Err(session.precondition(
                "the baseline tools/call",
                &format!("it did not succeed: {}", baseline.outcome),
            ));
        }
        Ok(session)
    }

    /// Calls `tool` and waits up to `timeout`; returns how it ended and how
    /// long it took.
    pub(crate) fn call(&mut self, tool: &str, arguments: Value, timeout: Duration) -> TimedOutcome {
        let sent = Instant::now();
        let result = self.wrapper.call_tool(tool, arguments, timeout);
        TimedOutcome {
            outcome: CallOutcome::from_client(result),
            latency: sent.elapsed(),
        }
    }

    /// The end of the wrapper's stderr.
    pub(crate) fn stderr_tail(&self) -> String {
        self.wrapper.stderr_tail(STDERR_TAIL_BYTES)
    }

    /// Ends both processes politely (the guards kill them if that fails)
    /// and returns `report` with its [`WrapperOutput`] (which `output`
    /// reaches) filled in: the stdout defects, then, unless the report
    /// passes with them, the end of the wrapper's stderr.
    pub(crate) fn conclude<R: Judged>(
        mut self,
        mut report: R,
        output: fn(&mut R) -> &mut WrapperOutput,
    ) -> R {
        output(&mut report).defects = self.wrapper.defects();
        if !report.passed() {
            output(&mut report).wrapper_stderr_tail = Some(self.stderr_tail());
        }
        self.wrapper.close_stdin();
        let _ = self.wrapper.wait_exit(Duration::from_secs(2));
        let _ = self.daemon.quit();
        report
    }

    fn precondition(&self, step: &str, what: &str) -> HarnessError {
        HarnessError::Scenario(format!(
            "{step} failed: {what}; wrapper stderr (tail): {}",
            self.stderr_tail().trim_end()
        ))
    }
}

/// A call sent through a [`Pipeline`], and what came back.
#[derive(Debug)]
pub(crate) struct Sent {
    pub(crate) tool: &'static str,
    pub(crate) write: bool,
    pub(crate) sent_at: Instant,
    pub(crate) answers: u32,
    /// How its first answer ended.
    pub(crate) outcome: Option<CallOutcome>,
}

/// Calls kept in flight on a session, each with an id of our own (call `n`
/// has id `CALL_ID_BASE + n`), and what came back.
pub(crate) struct Pipeline<'a> {
    pub(crate) session: &'a mut LiveSession,
    /// When the pipeline began: the samples time calls from here.
    pub(crate) started: Instant,
    pub(crate) calls: Vec<Sent>,
    pub(crate) in_flight: usize,
    /// Messages that answer no call sent, notifications included.
    pub(crate) unmatched: u64,
    /// Of those, the responses.
    pub(crate) stray: usize,
    /// A few odd messages, in words: answering no call, answering a call
    /// again, first answers `odd` picks out.
    pub(crate) samples: Vec<String>,
    odd: fn(&CallOutcome) -> bool,
    /// Why the wrapper stopped talking, if it did.
    pub(crate) gone: Option<String>,
}

impl<'a> Pipeline<'a> {
    /// No calls yet on `session`; first answers for which `odd` holds are
    /// sampled.
    pub(crate) fn new(session: &'a mut LiveSession, odd: fn(&CallOutcome) -> bool) -> Self {
        Self {
            session,
            started: Instant::now(),
            calls: Vec::new(),
            in_flight: 0,
            unmatched: 0,
            stray: 0,
            samples: Vec::new(),
            odd,
            gone: None,
        }
    }

    /// Sends the next call without waiting for its answer; `false` when
    /// the wrapper is gone (and `gone` says why).
    pub(crate) fn send(&mut self, call: ToolCall) -> bool {
        let id = json!(CALL_ID_BASE + self.calls.len() as u64);
        if let Err(e) = self
            .session
            .wrapper
            .send_request_with_id(id, "tools/call", call.params())
        {
            self.gone = Some(error_chain(&e));
            return false;
        }
        self.calls.push(Sent {
            tool: call.tool,
            write: call.write,
            sent_at: Instant::now(),
            answers: 0,
            outcome: None,
        });
        self.in_flight += 1;
        true
    }

    /// Books one message from the wrapper; whether it was the first answer
    /// to a call.
    pub(crate) fn receive(&mut self, message: &Value) -> bool {
        let n = message
            .get("id")
            .and_then(Value::as_u64)
            .and_then(|id| id.checked_sub(CALL_ID_BASE))
            .and_then(|n| usize::try_from(n).ok())
            .filter(|&n| n < self.calls.len() && is_response(message));
        let Some(n) = n else {
            self.unmatched += 1;
            self.stray += usize::from(is_response(message));
            let text: String = message.to_string().chars().take(200).collect();
            self.sample(format!("a message answering no call: {text}"));
            return false;
        };
        let call = &mut self.calls[n];
        call.answers += 1;
        if call.answers > 1 {
            let since = call.sent_at.duration_since(self.started).as_secs_f64();
            let (tool, answers) = (call.tool, call.answers);
            self.sample(format!(
                "call #{n} {tool} sent at {since:.3} s answered {answers} times"
            ));
            return false;
        }
        let outcome = CallOutcome::from_response(message);
        let odd = (self.odd)(&outcome).then(|| format!("call #{n} {}: {outcome}", call.tool));
        call.outcome = Some(outcome);
        self.in_flight -= 1;
        if let Some(text) = odd {
            self.sample(text);
        }
        true
    }

    /// Receives one message within `timeout`, if one comes (else, if the
    /// wrapper went away, `gone` says why); whether it was the first answer
    /// to a call.
    pub(crate) fn receive_for(&mut self, timeout: Duration) -> bool {
        match self.session.wrapper.recv_any(timeout) {
            Ok(message) => self.receive(&message),
            Err(ClientError::Timeout { .. }) => false,
            Err(e) => {
                self.gone = Some(error_chain(&e));
                false
            }
        }
    }

    /// Receives until no call is in flight, at most `timeout`.
    pub(crate) fn drain(&mut self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while self.in_flight > 0 && self.gone.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            self.receive_for(left);
        }
    }

    fn sample(&mut self, text: String) {
        if self.samples.len() < MAX_SAMPLES {
            self.samples.push(text);
        }
    }
}

/// Collects, for `period`, every message from `wrapper` nobody has asked
/// for (late or duplicate responses, notifications). Returns early only if
/// the wrapper closes its stdout.
pub(crate) fn collect_unsolicited(wrapper: &mut WrapperProcess, period: Duration) -> Vec<Value> {
    let until = Instant::now() + period;
    let mut messages = Vec::new();
    loop {
        let left = until.saturating_duration_since(Instant::now());
        match wrapper.recv_any(left) {
            Ok(message) => messages.push(message),
            Err(ClientError::Timeout { .. }) if Instant::now() < until => {}
            Err(_) => return messages,
        }
    }
}

/// Joins `problems` for a report line: `none`, or `a; b`.
pub(crate) fn problems_text(problems: &[String]) -> String {
    if problems.is_empty() {
        "none".to_owned()
    } else {
        problems.join("; ")
    }
}

/// Whether `message` is a JSON-RPC response: `result` or `error`, no
/// `method`.
pub(crate) fn is_response(message: &Value) -> bool {
    message.get("method").is_none()
        && (message.get("result").is_some() || message.get("error").is_some())
}

/// An environment variable for the wrapper holding a duration in whole
/// milliseconds (`IAI_MCP_CALL_TIMEOUT_MS` and the like).
pub(crate) fn env_ms(name: &'static str, duration: Duration) -> (&'static str, String) {
    (name, duration.as_millis().to_string())
}

/// A figure that may be missing, for people: the figure, or `n/a`.
pub(crate) fn or_na(figure: Option<impl fmt::Display>) -> String {
    figure.map_or_else(|| "n/a".to_owned(), |f| f.to_string())
}

/// Writes the name serde gives `value` (a unit variant, in its
/// `rename_all` spelling), so text and JSON reports name it alike.
pub(crate) fn write_serde_name(value: &impl Serialize, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let name = serde_json::to_value(value).map_err(|_| fmt::Error)?;
    f.write_str(name.as_str().unwrap_or_default())
}

/// The call numbers tagged `<prefix><digits>` in `text`, `digits` wide, in
/// order; lookalikes (fewer digits, other characters) are skipped.
pub(crate) fn tag_numbers<'t>(
    text: &'t str,
    prefix: &'t str,
    digits: usize,
) -> impl Iterator<Item = usize> + 't {
    text.match_indices(prefix).filter_map(move |(at, _)| {
        let start = at + prefix.len();
        let number = text.get(start..start + digits)?;
        number
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| number.parse().ok())?
    })
}

/// Asserts that the report `clean` makes passes, and that each of
/// `breakages` makes it fail with exactly one problem.
#[cfg(test)]
pub(crate) fn assert_each_breaks_once<R: Judged + fmt::Display, const N: usize>(
    clean: fn() -> R,
    breakages: [fn(&mut R); N],
) {
    let report = clean();
    assert!(report.passed(), "{report}");
    for breakage in breakages {
        let mut report = clean();
        breakage(&mut report);
        assert_eq!(report.problems().len(), 1, "{report}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_responses() {
        assert!(is_response(&json!({"id": 1, "result": {}})));
        assert!(is_response(&json!({"id": null, "error": {}})));
        assert!(!is_response(
            &json!({"method": "notifications/message", "params": {}})
        ));
    }
}
