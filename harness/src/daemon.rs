//! A handle on a running `fake-daemon`: start it, wait until it listens, and
//! drive its fault-injection commands.
//!
//! The fake daemon reads one command per line on stdin and acknowledges each
//! with exactly one line on stdout (except `QUIT`, which exits). The handle
//! sends a [`Command`] and reads the next line as its [`Ack`], both in the
//! types of `fake-daemon-control`, which the daemon speaks too; so every
//! method returns only once the daemon has acted: no sleeping needed.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, ExitStatus, Stdio};
use std::sync::Mutex;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use devkit::bins;
#[cfg(unix)]
use devkit::process::Signal;
use devkit::process::{CapturedOutput, ChildGuard};
use devkit::sync::lock;
use fake_daemon_control::reports::{AcceptTimes, SeenReport};
pub use fake_daemon_control::reports::{LoggedRequest, RequestLog};
pub use fake_daemon_control::{Ack, BOUND, Command, StartupOrder, StatsSnapshot, TcpEndpointFiles};
use serde::Serialize;
use serde::de::DeserializeOwned;
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
        let mut command = std::process::Command::new(program);
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
        let first = daemon.next_line(&mut lock(&daemon.control), BOUND, BIND_TIMEOUT)?;
        if first.trim() != BOUND {
            return Err(HarnessError::UnexpectedAck {
                command: "(start)".to_owned(),
                ack: first,
            });
        }
        if transport == Transport::Tcp {
            let files = TcpEndpointFiles::beside(socket_path);
            let port_file = &files.port;
            let text = std::fs::read_to_string(port_file)
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
                token_path: files.token,
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

    /// Sends `command` and reads its acknowledgement, waiting at most
    /// [`COMMAND_TIMEOUT`]; a line that is no acknowledgement is a
    /// [`HarnessError::DaemonOutput`].
    pub fn send(&self, command: Command) -> Result<Ack, HarnessError> {
        self.send_timeout(command, COMMAND_TIMEOUT)
    }

    /// Like [`send`](Self::send) with an explicit timeout.
    pub fn send_timeout(&self, command: Command, timeout: Duration) -> Result<Ack, HarnessError> {
        let wire = command.to_string();
        let line = self.command_timeout(&wire, timeout)?;
        line.parse().map_err(|_| HarnessError::DaemonOutput {
            command: wire,
            line,
        })
    }

    /// Sends `command`, one that changes something, and checks that the
    /// daemon carried it out (`DROPPED` for `DROP`, else `OK <command>`).
    pub fn carry_out(&self, command: Command) -> Result<(), HarnessError> {
        let ack = self.send(command)?;
        if ack == Ack::carried_out(command) {
            Ok(())
        } else {
            Err(HarnessError::UnexpectedAck {
                command: command.to_string(),
                ack: ack.to_string(),
            })
        }
    }

    /// Sends one line as it is written and returns the daemon's answer line,
    /// waiting at most [`COMMAND_TIMEOUT`]: for tests of what the daemon
    /// refuses. Everything else sends a [`Command`].
    pub fn command(&self, line: &str) -> Result<String, HarnessError> {
        self.command_timeout(line, COMMAND_TIMEOUT)
    }

    /// Like [`command`](Self::command) with an explicit timeout.
    fn command_timeout(&self, line: &str, timeout: Duration) -> Result<String, HarnessError> {
        if line.contains(['\n', '\r']) {
            return Err(HarnessError::InvalidCommand(line.to_owned()));
        }
        let mut control = lock(&self.control);
        self.write_command(&mut control, line)?;
        // Acks owed, this command's included; on a timeout below the count
        // stays, so the late ones are skipped by the next command.
        control.late_acks += 1;
        loop {
            let answer = self.next_line(&mut control, line, timeout)?;
            control.late_acks -= 1;
            if control.late_acks == 0 {
                return Ok(answer);
            }
        }
    }

    /// `STATS`: the daemon's connection and request counters.
    pub fn stats(&self) -> Result<StatsSnapshot, HarnessError> {
        match self.send(Command::Stats)? {
            Ack::Stats(stats) => Ok(stats),
            other => Err(unexpected(Command::Stats, &other)),
        }
    }

    /// `SEEN`: the request methods and control types the daemon received,
    /// in order; items that are not strings are returned as their JSON text.
    pub fn seen(&self) -> Result<Vec<String>, HarnessError> {
        let report: SeenReport = self.report(Command::Seen, COMMAND_TIMEOUT)?;
        let text = |item| match item {
            Value::String(s) => s,
            other => other.to_string(),
        };
        Ok(report.seen.into_iter().map(text).collect())
    }

    /// `ACCEPTS`: when the daemon accepted its most recent connections
    /// (up to 10,000), in microseconds since the Unix epoch, oldest first.
    pub fn accept_times(&self) -> Result<Vec<u64>, HarnessError> {
        let report: AcceptTimes = self.report(Command::Accepts, COMMAND_TIMEOUT)?;
        Ok(report.accepted_at_us)
    }

    /// `LOG`: every JSON-RPC request the daemon received, as
    /// `{"method": .., "params": .., "id": ..}` objects, oldest first.
    pub fn request_log(&self) -> Result<Vec<Value>, HarnessError> {
        #[derive(serde::Deserialize)]
        struct Requests {
            requests: Vec<Value>,
        }
        let report: Requests = self.report(Command::Log, COMMAND_TIMEOUT)?;
        Ok(report.requests)
    }

    /// `LOG` read into its typed form, with the count of requests the
    /// journal forgot, waiting at most `timeout` (the log of a long run is
    /// tens of MiB).
    pub fn request_journal(&self, timeout: Duration) -> Result<RequestLog, HarnessError> {
        self.report(Command::Log, timeout)
    }

    /// Sends `command`, which the daemon answers with a JSON report, and
    /// reads the report as a `T`.
    fn report<T: DeserializeOwned>(
        &self,
        command: Command,
        timeout: Duration,
    ) -> Result<T, HarnessError> {
        match self.send_timeout(command, timeout)? {
            Ack::Report(json) => {
                serde_json::from_str(&json).map_err(|_| HarnessError::DaemonOutput {
                    command: command.to_string(),
                    line: json,
                })
            }
            other => Err(unexpected(command, &other)),
        }
    }

    /// `DROP`: closes every accepted connection (the listener stays bound)
    /// and returns once the daemon acknowledged `DROPPED`.
    pub fn drop_connections(&self) -> Result<(), HarnessError> {
        self.carry_out(Command::Drop)
    }

    /// `DOWN`: stop accepting connections (simulates a stopped daemon).
    pub fn down(&self) -> Result<(), HarnessError> {
        self.carry_out(Command::Down)
    }

    /// `UP`: accept connections again, in the start-up order the daemon was
    /// started with.
    pub fn up(&self) -> Result<(), HarnessError> {
        self.carry_out(Command::Up { order: None })
    }

    /// `UP <order>`: accept connections again, coming up in `order` this
    /// time.
    pub fn up_in(&self, order: StartupOrder) -> Result<(), HarnessError> {
        self.carry_out(Command::Up { order: Some(order) })
    }

    /// `UP`, timed. The acknowledgement can be read some milliseconds
    /// after the daemon bound its socket when the machine is busy (with
    /// the wrappers it wakes), so on a Unix socket a thread also watches
    /// for the socket file, which the daemon creates as it binds and
    /// listens: [`Rebind::bound`] is the earlier of the two.
    pub fn up_timed(&self) -> Result<Rebind, HarnessError> {
        self.up_timed_in(None)
    }

    /// Like [`up_timed`](Self::up_timed), coming up in `order` this time
    /// (`None`: the order the daemon was started with). The socket file
    /// appears at the bind, so with `listen-after` [`Rebind::bound`] is the
    /// bind, not the listen.
    pub fn up_timed_in(&self, order: Option<StartupOrder>) -> Result<Rebind, HarnessError> {
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
            let acknowledged = self
                .carry_out(Command::Up { order })
                .map(|()| Instant::now());
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
        self.carry_out(Command::Hang)
    }

    /// `RESUME`: answer again after [`hang`](Self::hang).
    pub fn resume(&self) -> Result<(), HarnessError> {
        self.carry_out(Command::Resume)
    }

    /// `CUT`: cut the connection in the middle of the next answer.
    pub fn cut(&self) -> Result<(), HarnessError> {
        self.carry_out(Command::Cut)
    }

    /// `DUPLICATE`: send the next answer twice.
    pub fn duplicate(&self) -> Result<(), HarnessError> {
        self.carry_out(Command::Duplicate)
    }

    /// `STRAY`: send an answer whose id matches no request.
    pub fn stray(&self) -> Result<(), HarnessError> {
        self.carry_out(Command::Stray)
    }

    /// `DELAY <ms>`: delay every answer by `ms` milliseconds.
    pub fn delay(&self, ms: u64) -> Result<(), HarnessError> {
        self.carry_out(Command::Delay { ms })
    }

    /// `GARBAGE <n>`: write `lines` non-JSON lines to every live connection
    /// now.
    pub fn garbage(&self, lines: u32) -> Result<(), HarnessError> {
        self.carry_out(Command::Garbage { lines })
    }

    /// `SLICE <bytes>`: write answers in pieces of at most `bytes` bytes.
    pub fn slice(&self, bytes: usize) -> Result<(), HarnessError> {
        self.carry_out(Command::Slice { bytes })
    }

    /// `OVERSIZE <bytes>`: make the next answer's line (newline excluded)
    /// longer than `bytes`.
    pub fn oversize(&self, bytes: usize) -> Result<(), HarnessError> {
        self.carry_out(Command::Oversize { bytes })
    }

    /// `QUIT`: asks the daemon to exit (it removes its socket file) and waits
    /// for it, at most [`COMMAND_TIMEOUT`].
    pub fn quit(&self) -> Result<ExitStatus, HarnessError> {
        {
            let mut control = lock(&self.control);
            self.write_command(&mut control, &Command::Quit.to_string())?;
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

/// The daemon answered `command` with `ack`, which is not how it answers it.
fn unexpected(command: Command, ack: &Ack) -> HarnessError {
    HarnessError::UnexpectedAck {
        command: command.to_string(),
        ack: ack.to_string(),
    }
}
