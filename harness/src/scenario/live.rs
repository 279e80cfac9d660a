//! What the live fault scenarios share: a fake daemon and a wrapper started
//! together, handshaken, and proven to work before any fault is injected.

use std::ffi::OsString;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;

use super::outcome::CallOutcome;
use super::race::PROTOCOL_VERSION;
use super::setup::Setup;
use crate::bins::error_chain;
use crate::client::ClientError;
use crate::daemon::FakeDaemon;
use crate::error::HarnessError;
use crate::tempdir::{short_tempdir, socket_path_in};
use crate::wrapper::{WrapperCommand, WrapperOptions, WrapperProcess};

/// How much of the wrapper's stderr a report keeps when something failed.
pub(crate) const STDERR_TAIL_BYTES: usize = 2000;

/// The tool of baseline and probe calls: read-only, no arguments.
pub(crate) const PROBE_TOOL: &str = "topology";

/// Read-only, idempotent tools, each with a parameter that can carry a
/// call's unique tag.
pub(crate) const READ_TOOLS: [(&str, &str); 4] = [
    ("schema_list", "domain"),
    ("memory_recall", "cue"),
    ("events_query", "kind"),
    ("curiosity_pending", "session_id"),
];

/// JSON-RPC ids of pipelined scenario calls start here, far from the
/// client's own ids: call `n` has id `CALL_ID_BASE + n`.
const CALL_ID_BASE: u64 = 1_000_000;

/// Bound on the baseline call (the wrapper's first connect may take a
/// moment on a loaded machine).
const BASELINE_TIMEOUT: Duration = Duration::from_secs(20);

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
    /// Starts the daemon and the wrapper (`mode`, `env` set on top of the
    /// harness's isolated environment; no reconnect test delay), performs
    /// the handshake and a baseline call, which must succeed: otherwise
    /// nothing the scenario measures would mean anything, and the result is
    /// a [`HarnessError::Scenario`].
    pub(crate) fn start(
        cmd: &WrapperCommand,
        setup: &Setup,
        env: &[(&str, String)],
    ) -> Result<Self, HarnessError> {
        let dir = short_tempdir()?;
        let socket = socket_path_in(dir.path());
        let daemon = FakeDaemon::spawn_on(&setup.daemon_bin()?, &socket, setup.transport)?;
        let mut opts = WrapperOptions {
            mode: setup.mode,
            ..WrapperOptions::for_daemon(&daemon)
        };
        opts.extra_env.extend(
            env.iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v))),
        );
        let mut wrapper = WrapperProcess::spawn(cmd, &opts)?;
        wrapper.set_default_timeout(BASELINE_TIMEOUT);
        let mut session = Self {
            wrapper,
            daemon,
            _dir: dir,
        };
        session
            .wrapper
            .initialize(PROTOCOL_VERSION)
            .map_err(|e| session.precondition("initialize", &error_chain(&e)))?;
        let baseline = session.call(PROBE_TOOL, json!({}), BASELINE_TIMEOUT);
        if !baseline.0.is_ok() {
            return Err(session.precondition(
                "the baseline tools/call",
                &format!("it did not succeed: {}", baseline.0),
            ));
        }
        Ok(session)
    }

    /// How this workspace's wrapper names the daemon's endpoint in its
    /// messages (the socket path, or the TCP address).
    pub(crate) fn endpoint_label(&self) -> String {
        self.daemon.endpoint().label()
    }

    /// Calls `tool` and waits up to `timeout`; returns how it ended and how
    /// long it took.
    pub(crate) fn call(
        &mut self,
        tool: &str,
        arguments: Value,
        timeout: Duration,
    ) -> (CallOutcome, Duration) {
        let sent = Instant::now();
        let result = self.wrapper.call_tool(tool, arguments, timeout);
        (CallOutcome::from_client(result), sent.elapsed())
    }

    /// Sends call number `n` (`tools/call` of `tool` with `arguments`) with an
    /// id of our own, without waiting for its answer; see [`answered_call`].
    pub(crate) fn send_call(
        &mut self,
        n: usize,
        tool: &str,
        arguments: Value,
    ) -> Result<(), ClientError> {
        self.wrapper.send_request_with_id(
            json!(CALL_ID_BASE + n as u64),
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        )
    }

    /// Collects, for `period`, every message nobody has asked for (late or
    /// duplicate responses, notifications). Returns early only if the
    /// wrapper closes its stdout.
    pub(crate) fn collect_unsolicited(&mut self, period: Duration) -> Vec<Value> {
        let until = Instant::now() + period;
        let mut messages = Vec::new();
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.wrapper.recv_any(left) {
                Ok(message) => messages.push(message),
                Err(ClientError::Timeout { .. }) if Instant::now() < until => {}
                Err(_) => return messages,
            }
        }
    }

    /// The end of the wrapper's stderr.
    pub(crate) fn stderr_tail(&self) -> String {
        self.wrapper.stderr_tail(STDERR_TAIL_BYTES)
    }

    /// Ends both processes politely (the guards kill them if that fails).
    pub(crate) fn finish(mut self) {
        self.wrapper.close_stdin();
        let _ = self.wrapper.wait_exit(Duration::from_secs(2));
        let _ = self.daemon.quit();
    }

    /// Ends both processes like [`finish`](Self::finish); unless the run
    /// `passed`, first takes the end of the wrapper's stderr and returns it,
    /// for a report's `wrapper_stderr_tail`.
    pub(crate) fn finish_report(self, passed: bool) -> Option<String> {
        let tail = (!passed).then(|| self.stderr_tail());
        self.finish();
        tail
    }

    fn precondition(&self, step: &str, what: &str) -> HarnessError {
        HarnessError::Scenario(format!(
            "{step} failed: {what}; wrapper stderr (tail): {}",
            self.stderr_tail().trim_end()
        ))
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

/// The number of the call (sent with [`LiveSession::send_call`]) whose id
/// `message` carries, if it is one of the first `sent`.
pub(crate) fn answered_call(message: &Value, sent: usize) -> Option<usize> {
    message
        .get("id")
        .and_then(Value::as_u64)
        .and_then(|id| id.checked_sub(CALL_ID_BASE))
        .and_then(|i| usize::try_from(i).ok())
        .filter(|&i| i < sent)
}

/// An environment variable for the wrapper holding a duration in whole
/// milliseconds (`IAI_MCP_CALL_TIMEOUT_MS` and the like).
pub(crate) fn env_ms(name: &'static str, duration: Duration) -> (&'static str, String) {
    (name, duration.as_millis().to_string())
}
