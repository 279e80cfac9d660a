//! A handle on a running `fake-daemon`: start it, wait until it listens, and
//! drive its fault-injection commands.
//!
//! The fake daemon reads one command per line on stdin and acknowledges each
//! with exactly one line on stdout (except `QUIT`, which exits). The handle
//! sends a command and returns the next acknowledgement, so every method
//! returns only once the daemon has acted: no sleeping needed.

use std::collections::HashMap;
use std::fmt;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use devkit::bins;
#[cfg(unix)]
use devkit::process::Signal;
use devkit::process::{CapturedOutput, ChildGuard};
use devkit::sync::lock;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::HarnessError;

/// How long to wait for `BOUND` after starting the daemon.
pub const BIND_TIMEOUT: Duration = Duration::from_secs(10);

/// How long to wait for the acknowledgement of a command.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// How the fake daemon listens. The default is [`Transport::native`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// A Unix socket (the daemon's own choice where there are Unix
    /// sockets).
    Unix,
    /// Loopback TCP with a token (the daemon's choice elsewhere), with its
    /// port and token files beside the socket path.
    Tcp,
}

impl Transport {
    /// How iai-mcp's daemon listens on this system: a Unix socket, or TCP
    /// with its port and token files on Windows, which has no Unix sockets
    /// (the wrapper's own default there too).
    pub const fn native() -> Self {
        if cfg!(windows) {
            Transport::Tcp
        } else {
            Transport::Unix
        }
    }
}

impl Default for Transport {
    fn default() -> Self {
        Self::native()
    }
}

impl std::fmt::Display for Transport {
    /// The spelling on the command line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Transport::Unix => "unix",
            Transport::Tcp => "tcp",
        })
    }
}

impl std::str::FromStr for Transport {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "unix" => Ok(Transport::Unix),
            "tcp" => Ok(Transport::Tcp),
            other => Err(format!(
                "unknown transport {other:?} (expected unix or tcp)"
            )),
        }
    }
}

/// Where a wrapper finds a daemon, in the terms of the wrapper's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DaemonEndpoint {
    /// `IAI_DAEMON_SOCKET_PATH`.
    Unix(PathBuf),
    /// `IAI_DAEMON_TCP_PORT` and `IAI_DAEMON_TOKEN_PATH`.
    Tcp {
        /// The port.
        port: u16,
        /// The token file.
        token_path: PathBuf,
    },
}

impl DaemonEndpoint {
    /// How the wrapper of this workspace names the endpoint in messages.
    pub fn label(&self) -> String {
        match self {
            DaemonEndpoint::Unix(path) => path.display().to_string(),
            DaemonEndpoint::Tcp { port, .. } => format!("tcp://127.0.0.1:{port}"),
        }
    }
}

impl Default for DaemonEndpoint {
    fn default() -> Self {
        DaemonEndpoint::Unix(PathBuf::new())
    }
}

/// The counters reported by the `STATS` command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DaemonStats {
    /// Client connections open right now.
    pub conns: u32,
    /// Connections accepted since start (on TCP: that sent the token).
    pub accepted: u64,
    /// TCP connections closed for a missing or wrong token (0 when the
    /// daemon does not report it).
    pub refused: u64,
    /// JSON-RPC requests the daemon has answered with a result since start
    /// (error replies and requests still held by HANG or DELAY not counted).
    pub requests: u64,
    /// Control messages (no `jsonrpc` field, a `type`) received since start.
    pub controls: u64,
}

impl DaemonStats {
    /// Parses `STATS conns=<n> accepted=<n> requests=<n> controls=<n>`
    /// (`refused=<n>` optional); unknown extra fields are ignored, missing
    /// ones are an error.
    pub fn parse(line: &str) -> Option<Self> {
        let fields: HashMap<&str, &str> = line
            .strip_prefix("STATS")?
            .split_whitespace()
            .map(|field| field.split_once('='))
            .collect::<Option<_>>()?;
        let get = |key| fields.get(key).copied();
        Some(Self {
            conns: get("conns")?.parse().ok()?,
            accepted: get("accepted")?.parse().ok()?,
            refused: get("refused").map_or(Some(0), |v| v.parse().ok())?,
            requests: get("requests")?.parse().ok()?,
            controls: get("controls")?.parse().ok()?,
        })
    }
}

/// What the daemon's `LOG` reports: the JSON-RPC requests it received,
/// oldest first, as far as its bounded journal holds them.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct RequestLog {
    /// The requests the journal still holds.
    pub requests: Vec<LoggedRequest>,
    /// How many older requests the journal forgot to stay within its
    /// memory budget (the daemon leaves the field out when none).
    #[serde(default)]
    pub dropped: u64,
}

/// One request in the daemon's [`RequestLog`].
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct LoggedRequest {
    /// Its method.
    pub method: String,
    /// Its params (`null` when it had none).
    #[serde(default)]
    pub params: Value,
}

/// The command channel: the daemon's stdin, and its stdout lines.
#[derive(Debug)]
struct Control {
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Acknowledgements still owed for commands that timed out; they are
    /// skipped before reading the next command's answer, so a late ack is
    /// never taken for the answer to a later command.
    late_acks: usize,
}

/// When an `UP` took effect, by the harness's clock
/// ([`FakeDaemon::up_timed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rebind {
    /// Just before `UP` was sent.
    pub sent: Instant,
    /// When the socket was first seen bound (on TCP, or if the watch saw
    /// nothing, the acknowledgement).
    pub bound: Instant,
    /// When the acknowledgement had been read.
    pub acknowledged: Instant,
}

/// How often [`first_seen`] looks for the socket file.
const APPEARANCE_POLL: Duration = Duration::from_micros(20);

/// The first instant `path` was seen to exist, looking every
/// [`APPEARANCE_POLL`] until `give_up`.
fn first_seen(path: &Path, give_up: Instant) -> Option<Instant> {
    loop {
        if path.symlink_metadata().is_ok() {
            return Some(Instant::now());
        }
        if Instant::now() >= give_up {
            return None;
        }
        // The watch's own pace, not a synchronisation.
        thread::sleep(APPEARANCE_POLL);
    }
}

/// A running fake daemon, killed and reaped when the handle drops.
///
/// Methods take `&self` (commands are serialized internally), so a handle
/// can be shared between threads, for example to drop connections while
/// another thread issues calls.
#[derive(Debug)]
pub struct FakeDaemon {
    socket_path: PathBuf,
    endpoint: DaemonEndpoint,
    control: Mutex<Control>,
    child: Mutex<ChildGuard>,
    stderr: CapturedOutput,
}

impl FakeDaemon {
    /// Starts the fake daemon (found by [`bins::try_fake_daemon_bin`]) on
    /// `socket_path` the way the real daemon listens on this system
    /// ([`Transport::native`]) and waits until it prints `BOUND`.
    pub fn spawn(socket_path: &Path) -> Result<Self, HarnessError> {
        Self::spawn_on(
            &bins::try_fake_daemon_bin()?,
            socket_path,
            Transport::native(),
        )
    }

    /// Starts the fake daemon binary `program` listening on `transport`
    /// (for TCP, `socket_path` is the base of its port and token files) and
    /// waits until it prints `BOUND`.
    pub fn spawn_on(
        program: &Path,
        socket_path: &Path,
        transport: Transport,
    ) -> Result<Self, HarnessError> {
        Self::spawn_with(program, socket_path, transport, &[])
    }

    /// Like [`spawn_on`](Self::spawn_on), with more options for the fake
    /// daemon's command line (for example `--release 3.2.3`).
    pub fn spawn_with(
        program: &Path,
        socket_path: &Path,
        transport: Transport,
        options: &[&str],
    ) -> Result<Self, HarnessError> {
        let mut command = Command::new(program);
        if transport == Transport::Tcp {
            command.arg("--tcp");
        }
        command.args(options);
        let mut guard = ChildGuard::spawn(
            command
                .arg(socket_path)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
        )?;
        let child = guard.child_mut();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr =
            CapturedOutput::spawn(child.stderr.take().expect("stderr is piped"), "fake-daemon");
        let (tx, lines) = mpsc::channel();
        thread::Builder::new()
            .name("fake-daemon-stdout".to_owned())
            .spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| HarnessError::io("starting the fake daemon's stdout reader", e))?;
        let mut daemon = Self {
            socket_path: socket_path.to_path_buf(),
            endpoint: DaemonEndpoint::Unix(socket_path.to_path_buf()),
            control: Mutex::new(Control {
                stdin,
                lines,
                late_acks: 0,
            }),
            child: Mutex::new(guard),
            stderr,
        };
        let first = daemon.next_line(&mut lock(&daemon.control), "BOUND", BIND_TIMEOUT)?;
        if first.trim() != "BOUND" {
            return Err(HarnessError::UnexpectedAck {
                command: "(start)".to_owned(),
                ack: first,
            });
        }
        if transport == Transport::Tcp {
            let port_file = with_suffix(socket_path, ".port");
            let text = std::fs::read_to_string(&port_file)
                .map_err(|e| HarnessError::io(format!("reading {}", port_file.display()), e))?;
            let port = text
                .trim()
                .parse()
                .map_err(|_| HarnessError::DaemonOutput {
                    command: "(start)".to_owned(),
                    line: format!("port file {} holds {text:?}", port_file.display()),
                })?;
            daemon.endpoint = DaemonEndpoint::Tcp {
                port,
                token_path: with_suffix(socket_path, ".token"),
            };
        }
        Ok(daemon)
    }

    /// Where a wrapper finds this daemon.
    pub fn endpoint(&self) -> &DaemonEndpoint {
        &self.endpoint
    }

    /// The socket the daemon listens on.
    pub fn socket_path(&self) -> &Path {
        &self.socket_path
    }

    /// The daemon's process id.
    pub fn pid(&self) -> u32 {
        lock(&self.child).pid()
    }

    /// Everything the daemon wrote to stderr so far.
    pub fn stderr_text(&self) -> String {
        self.stderr.text()
    }

    /// Sends one command line and returns the daemon's acknowledgement line,
    /// waiting at most [`COMMAND_TIMEOUT`].
    pub fn command(&self, command: &str) -> Result<String, HarnessError> {
        self.command_timeout(command, COMMAND_TIMEOUT)
    }

    /// Like [`command`](Self::command) with an explicit timeout.
    pub fn command_timeout(
        &self,
        command: &str,
        timeout: Duration,
    ) -> Result<String, HarnessError> {
        if command.contains(['\n', '\r']) {
            return Err(HarnessError::InvalidCommand(command.to_owned()));
        }
        let mut control = lock(&self.control);
        self.write_command(&mut control, command)?;
        // Acks owed, this command's included; on a timeout below the count
        // stays, so the late ones are skipped by the next command.
        control.late_acks += 1;
        loop {
            let line = self.next_line(&mut control, command, timeout)?;
            control.late_acks -= 1;
            if control.late_acks == 0 {
                return Ok(line);
            }
        }
    }

    /// Sends `command` and checks that the acknowledgement is exactly
    /// `expected`.
    pub fn expect_ack(&self, command: &str, expected: &str) -> Result<(), HarnessError> {
        let ack = self.command(command)?;
        if ack.trim_end() == expected {
            Ok(())
        } else {
            Err(HarnessError::UnexpectedAck {
                command: command.to_owned(),
                ack,
            })
        }
    }

    /// `STATS`: the daemon's connection and request counters.
    pub fn stats(&self) -> Result<DaemonStats, HarnessError> {
        self.parsed("STATS", |line| DaemonStats::parse(line.trim()))
    }

    /// `SEEN`: the list the daemon reports as `{"seen": [...]}`; items that
    /// are not strings are returned as their JSON text.
    pub fn seen(&self) -> Result<Vec<String>, HarnessError> {
        self.parsed("SEEN", |line| {
            let items = json_field(line, "seen")?.as_array()?.clone();
            let text = |item| match item {
                Value::String(s) => s,
                other => other.to_string(),
            };
            Some(items.into_iter().map(text).collect())
        })
    }

    /// `ACCEPTS`: when the daemon accepted its most recent connections
    /// (up to 10,000), in microseconds since the Unix epoch, oldest first.
    pub fn accept_times(&self) -> Result<Vec<u64>, HarnessError> {
        self.parsed("ACCEPTS", |line| {
            let times = json_field(line, "accepted_at_us")?;
            Some(times.as_array()?.iter().filter_map(Value::as_u64).collect())
        })
    }

    /// `LOG`: every JSON-RPC request the daemon received, as
    /// `{"method": .., "params": ..}` objects, oldest first.
    pub fn request_log(&self) -> Result<Vec<Value>, HarnessError> {
        self.parsed("LOG", |line| {
            json_field(line, "requests")?.as_array().cloned()
        })
    }

    /// `LOG` read into its typed form, with the count of requests the
    /// journal forgot, waiting at most `timeout` (the log of a long run is
    /// tens of MiB).
    pub fn request_journal(&self, timeout: Duration) -> Result<RequestLog, HarnessError> {
        let line = self.command_timeout("LOG", timeout)?;
        serde_json::from_str(&line).map_err(|_| HarnessError::DaemonOutput {
            command: "LOG".to_owned(),
            line,
        })
    }

    /// Sends `command` and reads its acknowledgement with `parse`; a line it
    /// cannot read is a [`HarnessError::DaemonOutput`].
    fn parsed<T>(
        &self,
        command: &str,
        parse: impl FnOnce(&str) -> Option<T>,
    ) -> Result<T, HarnessError> {
        let line = self.command(command)?;
        parse(&line).ok_or_else(|| HarnessError::DaemonOutput {
            command: command.to_owned(),
            line,
        })
    }

    /// `DROP`: closes every accepted connection (the listener stays bound)
    /// and returns once the daemon acknowledged `DROPPED`.
    pub fn drop_connections(&self) -> Result<(), HarnessError> {
        self.expect_ack("DROP", "DROPPED")
    }

    /// `DOWN`: stop accepting connections (simulates a stopped daemon).
    pub fn down(&self) -> Result<(), HarnessError> {
        self.expect_ack("DOWN", "OK DOWN")
    }

    /// `UP`: accept connections again.
    pub fn up(&self) -> Result<(), HarnessError> {
        self.expect_ack("UP", "OK UP")
    }

    /// `UP`, timed. The acknowledgement can be read some milliseconds
    /// after the daemon bound its socket when the machine is busy (with
    /// the wrappers it wakes), so on a Unix socket a thread also watches
    /// for the socket file, which the daemon creates as it binds and
    /// listens: [`Rebind::bound`] is the earlier of the two.
    pub fn up_timed(&self) -> Result<Rebind, HarnessError> {
        let socket = match &self.endpoint {
            DaemonEndpoint::Unix(socket) => Some(socket.as_path()),
            DaemonEndpoint::Tcp { .. } => None,
        };
        let sent = Instant::now();
        let (acknowledged, appeared) = thread::scope(|scope| {
            let appeared = socket.map(|path| {
                let give_up = sent + COMMAND_TIMEOUT;
                scope.spawn(move || first_seen(path, give_up))
            });
            let acknowledged = self.up().map(|()| Instant::now());
            let appeared = appeared.and_then(|watch| watch.join().ok().flatten());
            (acknowledged, appeared)
        });
        let acknowledged = acknowledged?;
        Ok(Rebind {
            sent,
            bound: appeared.map_or(acknowledged, |at| at.min(acknowledged)),
            acknowledged,
        })
    }

    /// `HANG`: keep connections open but stop answering.
    pub fn hang(&self) -> Result<(), HarnessError> {
        self.expect_ack("HANG", "OK HANG")
    }

    /// `RESUME`: answer again after [`hang`](Self::hang).
    pub fn resume(&self) -> Result<(), HarnessError> {
        self.expect_ack("RESUME", "OK RESUME")
    }

    /// `CUT`: cut the connection in the middle of the next answer.
    pub fn cut(&self) -> Result<(), HarnessError> {
        self.expect_ack("CUT", "OK CUT")
    }

    /// `DUPLICATE`: send the next answer twice.
    pub fn duplicate(&self) -> Result<(), HarnessError> {
        self.expect_ack("DUPLICATE", "OK DUPLICATE")
    }

    /// `STRAY`: send an answer whose id matches no request.
    pub fn stray(&self) -> Result<(), HarnessError> {
        self.expect_ack("STRAY", "OK STRAY")
    }

    /// `DELAY <ms>`: delay every answer by `ms` milliseconds.
    pub fn delay(&self, ms: u64) -> Result<(), HarnessError> {
        self.command_with_value("DELAY", ms)
    }

    /// `GARBAGE <n>`: emit `lines` non-JSON lines before the next answer.
    pub fn garbage(&self, lines: u32) -> Result<(), HarnessError> {
        self.command_with_value("GARBAGE", lines)
    }

    /// `SLICE <b>`: write answers in slices of `bytes` bytes.
    pub fn slice(&self, bytes: u64) -> Result<(), HarnessError> {
        self.command_with_value("SLICE", bytes)
    }

    /// `OVERSIZE <b>`: make the next answer at least `bytes` bytes long.
    pub fn oversize(&self, bytes: u64) -> Result<(), HarnessError> {
        self.command_with_value("OVERSIZE", bytes)
    }

    /// Sends `<name> <value>` and expects `OK <name> <value>` back: how the
    /// daemon acknowledges every command that takes a number.
    fn command_with_value(&self, name: &str, value: impl fmt::Display) -> Result<(), HarnessError> {
        let command = format!("{name} {value}");
        self.expect_ack(&command, &format!("OK {command}"))
    }

    /// `QUIT`: asks the daemon to exit (it removes its socket file) and waits
    /// for it, at most [`COMMAND_TIMEOUT`].
    pub fn quit(&self) -> Result<ExitStatus, HarnessError> {
        {
            let mut control = lock(&self.control);
            self.write_command(&mut control, "QUIT")?;
            control.stdin = None;
        }
        Ok(lock(&self.child).wait_exit(COMMAND_TIMEOUT)?)
    }

    /// Sends `signal` to the daemon (SIGTERM and SIGINT make it remove its
    /// socket file and exit). Unix only: Windows has no signals to send.
    #[cfg(unix)]
    pub fn signal(&self, signal: Signal) -> Result<(), HarnessError> {
        Ok(lock(&self.child).signal(signal)?)
    }

    /// Waits up to `timeout` for the daemon to exit.
    pub fn wait_exit(&self, timeout: Duration) -> Result<ExitStatus, HarnessError> {
        Ok(lock(&self.child).wait_exit(timeout)?)
    }

    /// Kills the daemon (SIGKILL) and reaps it.
    pub fn kill(&self) -> Result<ExitStatus, HarnessError> {
        Ok(lock(&self.child).kill()?)
    }

    fn write_command(&self, control: &mut Control, command: &str) -> Result<(), HarnessError> {
        let stdin = control.stdin.as_mut().ok_or_else(|| {
            self.exited(format!(
                "the command `{command}` (its stdin is closed after QUIT)"
            ))
        })?;
        writeln!(stdin, "{command}")
            .and_then(|()| stdin.flush())
            .map_err(|_| self.exited(format!("the command `{command}` to be written")))
    }

    /// The daemon went away while the harness waited for `waiting_for`.
    fn exited(&self, waiting_for: String) -> HarnessError {
        HarnessError::DaemonExited {
            waiting_for,
            stderr: self.stderr.tail(4096),
        }
    }

    fn next_line(
        &self,
        control: &mut Control,
        waiting_for: &str,
        timeout: Duration,
    ) -> Result<String, HarnessError> {
        match control.lines.recv_timeout(timeout) {
            Ok(line) => Ok(line),
            Err(RecvTimeoutError::Timeout) => Err(HarnessError::DaemonTimeout {
                waiting_for: format!("answer to `{waiting_for}`"),
                timeout,
            }),
            Err(RecvTimeoutError::Disconnected) => {
                // Give the stderr reader a moment to collect the last words.
                self.stderr.wait_eof(Duration::from_millis(500));
                Err(self.exited(format!("the answer to `{waiting_for}`")))
            }
        }
    }
}

/// `path` with `suffix` appended to its file name.
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Parses `line` as a JSON object and returns its field `key`.
fn json_field(line: &str, key: &str) -> Option<Value> {
    let mut value: Value = serde_json::from_str(line).ok()?;
    value.get_mut(key).map(Value::take)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_request_log_with_and_without_forgotten_requests() {
        let line = r#"{"requests":[{"method":"topology","params":{"x":1},"id":3},{"method":"notifications/initialized"}],"dropped":42}"#;
        let log: RequestLog = serde_json::from_str(line).unwrap();
        assert_eq!(log.dropped, 42);
        assert_eq!(log.requests[0].method, "topology");
        assert_eq!(log.requests[0].params, serde_json::json!({"x": 1}));
        assert_eq!(log.requests[1].params, Value::Null);
        let log: RequestLog = serde_json::from_str(r#"{"requests":[]}"#).unwrap();
        assert_eq!(log, RequestLog::default());
    }

    #[test]
    fn parses_stats() {
        let stats = DaemonStats::parse("STATS conns=1 accepted=3 requests=7 controls=1").unwrap();
        assert_eq!(
            stats,
            DaemonStats {
                conns: 1,
                accepted: 3,
                refused: 0,
                requests: 7,
                controls: 1
            }
        );
        assert!(DaemonStats::parse("STATS conns=1 accepted=3 requests=7").is_none());
        assert!(DaemonStats::parse("STATS conns=x accepted=3 requests=7 controls=1").is_none());
        assert!(DaemonStats::parse("ERR unknown command: STATS").is_none());
        assert_eq!(
            DaemonStats::parse("STATS conns=2 accepted=2 requests=0 controls=0 extra=9")
                .unwrap()
                .conns,
            2
        );
    }
}
