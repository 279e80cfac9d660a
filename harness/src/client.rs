//! A line-oriented MCP (JSON-RPC 2.0 over stdio) client for driving a wrapper
//! process, which also audits the wrapper's stdout framing: anything but one
//! JSON object per line is recorded as a *defect*, because a real MCP client
//! would choke on it. Replies are matched to requests by id, whatever order
//! they arrive in.

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::process::Child;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use devkit::sync::lock;

/// Default time to wait for a reply in helpers that take no timeout
/// ([`McpClient::initialize`]); the seed regression test uses the same.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// How much of an offending line a defect record keeps.
const DEFECT_EXCERPT_CHARS: usize = 200;

/// Why a client operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// No matching message arrived in time.
    #[error("no {waiting_for} within {after:?}")]
    Timeout {
        /// What was awaited (`response to id 3`, `any message`).
        waiting_for: String,
        /// How long the client waited.
        after: Duration,
    },
    /// The server closed its stdout (usually: it exited) before the awaited
    /// message arrived.
    #[error("server closed its stdout while the client waited for {waiting_for}")]
    Closed {
        /// What was awaited.
        waiting_for: String,
    },
    /// The client's side of the server's stdin was already closed by
    /// [`McpClient::close_stdin`].
    #[error("stdin of the server was already closed by the client")]
    StdinClosed,
    /// Writing to the server's stdin failed (for example a broken pipe
    /// because it exited).
    #[error("writing to the server's stdin failed")]
    Write(#[source] io::Error),
    /// The child was not started with piped stdin and stdout.
    #[error("the child process has no piped {0}")]
    NotPiped(&'static str),
    /// The server answered with a JSON-RPC error where a helper needed a
    /// result (see [`McpClient::initialize`]).
    #[error("server answered with an error: {0}")]
    ErrorResponse(Value),
}

/// An MCP client speaking to a child process over its stdin and stdout.
///
/// Request ids assigned by [`request`](Self::request) are integers counting
/// up from 1; tests that pick their own ids with
/// [`send_request_with_id`](Self::send_request_with_id) should use strings
/// or large numbers to avoid colliding with them.
pub struct McpClient {
    stdin: Option<Box<dyn Write + Send>>,
    incoming: Receiver<Value>,
    buffered: VecDeque<Value>,
    defects: Arc<Mutex<Vec<String>>>,
    next_id: i64,
    default_timeout: Duration,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("stdin_open", &self.stdin.is_some())
            .field("buffered", &self.buffered.len())
            .field("next_id", &self.next_id)
            .finish_non_exhaustive()
    }
}

impl McpClient {
    /// Builds a client writing to `stdin` and reading `stdout` on a
    /// background thread.
    pub fn new(stdin: impl Write + Send + 'static, stdout: impl Read + Send + 'static) -> Self {
        let (tx, incoming) = mpsc::channel();
        let defects = Arc::new(Mutex::new(Vec::new()));
        let reader_defects = Arc::clone(&defects);
        // If the thread cannot start, `tx` drops with the closure and the
        // client reports Closed, which is the truth: nothing will be read.
        let _ = thread::Builder::new()
            .name("mcp-stdout".to_owned())
            .spawn(move || read_messages(stdout, &tx, &reader_defects));
        Self {
            stdin: Some(Box::new(stdin)),
            incoming,
            buffered: VecDeque::new(),
            defects,
            next_id: 1,
            default_timeout: DEFAULT_TIMEOUT,
        }
    }

    /// Takes the piped stdin and stdout of `child` and builds a client on
    /// them.
    pub fn attach(child: &mut Child) -> Result<Self, ClientError> {
        let stdin = child.stdin.take().ok_or(ClientError::NotPiped("stdin"))?;
        let stdout = child.stdout.take().ok_or(ClientError::NotPiped("stdout"))?;
        Ok(Self::new(stdin, stdout))
    }

    /// Sets the timeout used by helpers that take none
    /// ([`initialize`](Self::initialize)).
    pub fn set_default_timeout(&mut self, timeout: Duration) {
        self.default_timeout = timeout;
    }

    /// The stdout defects seen so far: lines that are not JSON objects, and a
    /// fragment left without a newline at end of file.
    pub fn defects(&self) -> Vec<String> {
        lock(&self.defects).clone()
    }

    /// Sends a request with the next integer id and waits for its response:
    /// the whole message, a JSON-RPC error included (the caller judges it).
    pub fn request(
        &mut self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, ClientError> {
        let id = Value::from(self.next_id);
        self.next_id += 1;
        self.send_request_with_id(id.clone(), method, params)?;
        self.wait_response(&id, timeout)
    }

    /// Sends a request with a caller-chosen id, without waiting; pair it with
    /// [`wait_response`](Self::wait_response).
    pub fn send_request_with_id(
        &mut self,
        id: Value,
        method: &str,
        params: Value,
    ) -> Result<(), ClientError> {
        self.send_message(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
    }

    /// Sends a notification (no id, no response expected).
    pub fn notify(&mut self, method: &str, params: Value) -> Result<(), ClientError> {
        self.send_message(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    /// Serializes `message` onto one line and sends it.
    pub fn send_message(&mut self, message: &Value) -> Result<(), ClientError> {
        let mut line = serde_json::to_vec(message).expect("a JSON value always serializes");
        line.push(b'\n');
        self.send_raw(&line)
    }

    /// Writes `bytes` to the server's stdin exactly as given (no newline is
    /// added), for malformed-input tests.
    pub fn send_raw(&mut self, bytes: &[u8]) -> Result<(), ClientError> {
        let stdin = self.stdin.as_mut().ok_or(ClientError::StdinClosed)?;
        stdin
            .write_all(bytes)
            .and_then(|()| stdin.flush())
            .map_err(ClientError::Write)
    }

    /// Writes `line` followed by a newline.
    pub fn send_line(&mut self, line: &str) -> Result<(), ClientError> {
        self.send_raw(format!("{line}\n").as_bytes())
    }

    /// Closes the server's stdin (it sees end of file). Later sends fail
    /// with [`ClientError::StdinClosed`]; reading goes on.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits for the response whose id equals `id` (a message with that id
    /// and `result` or `error`, and no `method`). Other messages that arrive
    /// meanwhile are kept for later calls.
    pub fn wait_response(&mut self, id: &Value, timeout: Duration) -> Result<Value, ClientError> {
        if let Some(pos) = self.buffered.iter().position(|m| is_response_to(m, id)) {
            return Ok(self.buffered.remove(pos).expect("position is in range"));
        }
        let deadline = Instant::now() + timeout;
        loop {
            let message = self.recv(deadline, timeout, || format!("response to id {id}"))?;
            if is_response_to(&message, id) {
                return Ok(message);
            }
            self.buffered.push_back(message);
        }
    }

    /// Returns the oldest received message that no wait has consumed yet,
    /// without blocking.
    pub fn next_unmatched(&mut self) -> Option<Value> {
        self.buffered.extend(self.incoming.try_iter());
        self.buffered.pop_front()
    }

    /// Returns the next message of any kind (response, notification, server
    /// request), waiting up to `timeout` when none is pending.
    pub fn recv_any(&mut self, timeout: Duration) -> Result<Value, ClientError> {
        match self.next_unmatched() {
            Some(message) => Ok(message),
            None => self.recv(Instant::now() + timeout, timeout, || "any message".into()),
        }
    }

    /// Waits until the server closes its stdout, up to `timeout`, keeping any
    /// messages that arrive for [`next_unmatched`](Self::next_unmatched).
    /// Returns whether end of file was reached.
    pub fn wait_stdout_closed(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            match self.recv(deadline, timeout, String::new) {
                Ok(message) => self.buffered.push_back(message),
                Err(e) => return matches!(e, ClientError::Closed { .. }),
            }
        }
    }

    /// Performs the MCP handshake for `protocol_version` (client name
    /// `harness`, the default timeout) and returns the `initialize` response;
    /// `notifications/initialized` follows unless that is an error
    /// ([`ClientError::ErrorResponse`]).
    pub fn initialize(&mut self, protocol_version: &str) -> Result<Value, ClientError> {
        let timeout = self.default_timeout;
        let response = self.request("initialize", initialize_params(protocol_version), timeout)?;
        if response.get("result").is_none() {
            return Err(ClientError::ErrorResponse(response));
        }
        self.notify("notifications/initialized", json!({}))?;
        Ok(response)
    }

    /// Calls an MCP tool (`tools/call` with `name` and `arguments`) and
    /// returns the whole response message.
    pub fn call_tool(
        &mut self,
        name: &str,
        arguments: Value,
        timeout: Duration,
    ) -> Result<Value, ClientError> {
        self.request(
            "tools/call",
            json!({"name": name, "arguments": arguments}),
            timeout,
        )
    }

    /// The next message from the reader thread, waiting until `deadline`;
    /// a timeout says the client waited `timeout` for `waiting_for`.
    fn recv(
        &self,
        deadline: Instant,
        timeout: Duration,
        waiting_for: impl FnOnce() -> String,
    ) -> Result<Value, ClientError> {
        let left = deadline.saturating_duration_since(Instant::now());
        self.incoming.recv_timeout(left).map_err(|e| match e {
            RecvTimeoutError::Timeout => ClientError::Timeout {
                waiting_for: waiting_for(),
                after: timeout,
            },
            RecvTimeoutError::Disconnected => ClientError::Closed {
                waiting_for: waiting_for(),
            },
        })
    }
}

/// The `initialize` parameters for `protocol_version`, client name
/// `harness`.
pub(crate) fn initialize_params(protocol_version: &str) -> Value {
    json!({
        "protocolVersion": protocol_version,
        "capabilities": {},
        "clientInfo": {"name": "harness", "version": env!("CARGO_PKG_VERSION")},
    })
}

/// Whether `message` is the response (not a request or notification) with
/// this id.
fn is_response_to(message: &Value, id: &Value) -> bool {
    message.get("method").is_none()
        && (message.get("result").is_some() || message.get("error").is_some())
        && message.get("id") == Some(id)
}

/// The reader thread: one message per stdout line, defects recorded.
fn read_messages(stdout: impl Read, tx: &Sender<Value>, defects: &Mutex<Vec<String>>) {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                lock(defects).push(format!("reading stdout failed: {e}"));
                return;
            }
        }
        let body = line.strip_suffix(b"\n");
        let defect = match body.map(serde_json::from_slice::<Value>) {
            None => "partial line without newline at end of stdout",
            // If the client is gone, keep draining so the child never blocks
            // on a full pipe.
            Some(Ok(message @ Value::Object(_))) => {
                let _ = tx.send(message);
                continue;
            }
            Some(Ok(_)) => "JSON line that is not an object",
            Some(Err(_)) => "line that is not JSON",
        };
        lock(defects).push(format!("{defect}: {}", excerpt(body.unwrap_or(&line))));
        if body.is_none() {
            return;
        }
    }
}

/// A short, printable excerpt of a line for defect records.
fn excerpt(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut short: String = text.chars().take(DEFECT_EXCERPT_CHARS).collect();
    if text.chars().count() > DEFECT_EXCERPT_CHARS {
        short.push('…');
    }
    format!("{short:?}")
}
