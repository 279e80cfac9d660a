//! The fake daemon itself: the listener, the table of live connections, and
//! the execution of stdin commands against them.
//!
//! The accept loop and every connection run as Tokio tasks; the state they
//! share (`Shared`) is counters, fault settings, the journal and the
//! connection table. Commands that act on connections wait until the effect
//! has happened (connections closed, bytes written) before they return, so an
//! acknowledgement printed afterwards can be relied upon.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use fake_daemon_control::{Ack, Command, StatsSnapshot};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::connection::{self, Socket};
use crate::faults::OneShots;
use crate::journal::DEFAULT_JOURNAL_BYTES;
use crate::listener::{self, Accepted, BindError, Bound, Listener};
use crate::protocol;
use crate::shared::{ConnCommand, Shared};
use crate::sync::lock;

/// Default longest request line (16 MiB); longer lines get an error reply
/// and are skipped up to their newline, so memory stays bounded.
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// The release `status` reports by default: the one the wrapper's tool
/// table describes.
pub const DEFAULT_RELEASE: &str = "3.3.0";

/// Pause after a failed `accept` (e.g. out of file descriptors) so the loop
/// does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// How long a TCP connection may take to send its token line.
pub const TOKEN_TIMEOUT: Duration = Duration::from_secs(5);

/// Longest token line accepted.
const MAX_TOKEN_LINE: usize = 256;

/// How to run a [`FakeDaemon`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Where to bind the Unix socket; with [`Config::tcp`], the base of the
    /// port and token files (`<path>.port`, `<path>.token`).
    pub socket_path: PathBuf,
    /// Listen on loopback TCP with a token instead of a Unix socket, as
    /// iai-mcp does where there are no Unix sockets.
    pub tcp: bool,
    /// Longest accepted request line, in bytes.
    pub max_line_bytes: usize,
    /// Memory budget for what `SEEN` and `LOG` report; 0 records nothing
    /// (fastest, for benchmarks).
    pub journal_bytes: usize,
    /// The release the `status` control message reports as `version`;
    /// `None` leaves the member out, as a daemon that does not report its
    /// release.
    pub release: Option<String>,
}

impl Config {
    /// The default configuration for `socket_path`.
    pub fn new(socket_path: impl Into<PathBuf>) -> Self {
        Config {
            socket_path: socket_path.into(),
            tcp: false,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            journal_bytes: DEFAULT_JOURNAL_BYTES,
            release: Some(DEFAULT_RELEASE.to_owned()),
        }
    }
}

/// What executing a command produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The acknowledgement to print.
    Ack(Ack),
    /// `QUIT`: everything is closed and the socket file removed; the caller
    /// should exit.
    Quit,
}

/// Registers a freshly accepted connection and starts serving it.
fn adopt<S: Socket>(shared: &Arc<Shared>, stream: S) {
    shared.counters.connection_accepted();
    let (commands, receiver) = mpsc::unbounded_channel();
    shared.register(
        |id| tokio::spawn(connection::serve(stream, Arc::clone(shared), id, receiver)),
        commands,
    );
}

/// The accepting side while the daemon is up.
#[derive(Debug)]
struct Listening {
    accept: JoinHandle<()>,
    bound: Bound,
}

async fn accept_loop(listener: Listener, shared: Arc<Shared>) {
    loop {
        match listener.accept().await {
            Ok(Accepted::Unix(stream)) => adopt(&shared, stream),
            Ok(Accepted::Tcp(stream)) => {
                let task = tokio::spawn(authenticate(stream, Arc::clone(&shared)));
                let mut pending = lock(&shared.authenticating);
                pending.retain(|t| !t.is_finished());
                pending.push(task);
            }
            Err(err) => {
                eprintln!("fake-daemon: accept failed: {err}");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
            }
        }
    }
}

/// Admits a TCP connection whose first line is the current token; closes
/// any other (counted as refused).
async fn authenticate(mut stream: TcpStream, shared: Arc<Shared>) {
    let expected = lock(&shared.token).clone();
    let line = tokio::time::timeout(TOKEN_TIMEOUT, read_token_line(&mut stream)).await;
    match (line, expected) {
        (Ok(Some(line)), Some(token)) if line.trim() == token => adopt(&shared, stream),
        _ => shared.counters.connection_refused(),
    }
}

/// Reads one line, byte by byte so that nothing after it is consumed.
async fn read_token_line(stream: &mut TcpStream) -> Option<String> {
    let mut line = Vec::new();
    loop {
        let byte = stream.read_u8().await.ok()?;
        if byte == b'\n' {
            return String::from_utf8(line).ok();
        }
        if line.len() >= MAX_TOKEN_LINE {
            return None;
        }
        line.push(byte);
    }
}

/// A running fake daemon: a bound socket answering every JSON-RPC request,
/// plus the fault-injection commands of the stdin language.
///
/// Must be created and used inside a Tokio runtime (a current-thread runtime
/// is what the binary uses and measures fastest). Dropping it closes the
/// listener and every connection and removes the socket file, as
/// [`FakeDaemon::shutdown`] does, without waiting for the tasks.
#[derive(Debug)]
pub struct FakeDaemon {
    shared: Arc<Shared>,
    socket_path: PathBuf,
    tcp: bool,
    /// The TCP port, kept across `DOWN`/`UP` (0 before the first bind).
    port: u16,
    listening: Option<Listening>,
}

impl FakeDaemon {
    /// Binds the socket (a stale socket file is removed first, the new one
    /// gets mode 0600) and starts accepting connections.
    pub async fn bind(config: Config) -> Result<Self, BindError> {
        let shared = Arc::new(Shared::new(
            config.max_line_bytes,
            config.journal_bytes,
            protocol::status_line(config.release.as_deref()),
        ));
        let mut daemon = FakeDaemon {
            shared,
            socket_path: config.socket_path,
            tcp: config.tcp,
            port: 0,
            listening: None,
        };
        daemon.up()?;
        Ok(daemon)
    }

    /// The socket path the daemon binds (with TCP: the base of its port
    /// and token files).
    pub fn socket_path(&self) -> &Path {
        &self.socket_path
    }

    /// The TCP port listened on, when listening on TCP.
    pub fn tcp_port(&self) -> Option<u16> {
        (self.tcp && self.port != 0).then_some(self.port)
    }

    /// The current counters (what `STATS` reports).
    pub fn stats(&self) -> StatsSnapshot {
        let conns = self.shared.live_connections();
        let pending = lock(&self.shared.authenticating)
            .iter()
            .filter(|t| !t.is_finished())
            .count();
        self.shared.counters.snapshot(conns, pending)
    }

    /// Carries out one stdin command and returns its acknowledgement once
    /// the effect has taken place.
    pub async fn execute(&mut self, command: Command) -> Outcome {
        let faults = &self.shared.faults;
        let carried_out = Ack::carried_out(command);
        let ack = match command {
            Command::Drop => {
                self.drop_connections().await;
                carried_out
            }
            Command::Quit => {
                self.shutdown().await;
                return Outcome::Quit;
            }
            Command::Stats => Ack::Stats(self.stats()),
            Command::Accepts => Ack::Report(self.shared.counters.accepts_line()),
            Command::Seen => Ack::Report(lock(&self.shared.journal).seen_line()),
            Command::Log => Ack::Report(lock(&self.shared.journal).log_line()),
            Command::Down => {
                self.down().await;
                carried_out
            }
            Command::Up => match self.up() {
                Ok(()) => carried_out,
                Err(err) => Ack::Refused(err.to_string()),
            },
            Command::Hang => {
                faults.set_hang(true);
                carried_out
            }
            Command::Resume => {
                // Clear the flag first: a connection then either sees it
                // cleared or still has the Resume command queued.
                faults.set_hang(false);
                self.shared
                    .broadcast(|done| ConnCommand::Resume { done })
                    .await;
                carried_out
            }
            Command::Delay { ms } => {
                faults.set_delay_ms(ms);
                carried_out
            }
            Command::Garbage { lines } => {
                self.inject(protocol::garbage_lines(lines)).await;
                carried_out
            }
            Command::Slice { bytes } => {
                faults.set_slice(bytes);
                carried_out
            }
            Command::Cut => {
                faults.arm(OneShots {
                    cut: true,
                    ..OneShots::default()
                });
                carried_out
            }
            Command::Oversize { bytes } => {
                faults.arm(OneShots {
                    oversize: Some(bytes),
                    ..OneShots::default()
                });
                carried_out
            }
            Command::Duplicate => {
                faults.arm(OneShots {
                    duplicate: true,
                    ..OneShots::default()
                });
                carried_out
            }
            Command::Stray => {
                self.inject(protocol::STRAY_LINE.as_bytes().to_vec()).await;
                carried_out
            }
        };
        Outcome::Ack(ack)
    }

    /// Stops accepting, removes the socket file and closes every
    /// connection; returns once they are closed.
    pub async fn shutdown(&mut self) {
        self.down().await;
    }

    /// Writes `bytes` to every live connection, returning once written.
    async fn inject(&self, bytes: Vec<u8>) {
        let bytes: Arc<[u8]> = bytes.into();
        self.shared
            .broadcast(|done| ConnCommand::Inject {
                bytes: Arc::clone(&bytes),
                done,
            })
            .await;
    }

    /// Closes every accepted connection and waits until their sockets are
    /// closed; the listener is untouched.
    async fn drop_connections(&self) {
        let pending: Vec<JoinHandle<()>> = lock(&self.shared.authenticating).drain(..).collect();
        for task in pending {
            task.abort();
            let _ = task.await;
        }
        for task in self.shared.abort_connections() {
            // The task was aborted: the join error says just that.
            let _ = task.await;
        }
    }

    /// Stops the accept loop (closing the listener), removes the socket file
    /// and closes every connection.
    async fn down(&mut self) {
        if let Some(listening) = self.listening.take() {
            listening.accept.abort();
            // Unlink before awaiting: if a signal cancels this command at
            // the await, the socket file is already gone.
            listening.bound.unlink();
            let _ = listening.accept.await;
        }
        self.drop_connections().await;
    }

    /// Binds the socket path and starts the accept loop, unless already up.
    fn up(&mut self) -> Result<(), BindError> {
        if self.listening.is_some() {
            return Ok(());
        }
        let (listener, bound) = if self.tcp {
            let (listener, addr, files, token) = listener::bind_tcp(&self.socket_path, self.port)?;
            self.port = addr.port();
            *lock(&self.shared.token) = Some(token);
            (Listener::Tcp(listener), Bound::Tcp(files))
        } else {
            let (listener, socket) = listener::bind(&self.socket_path)?;
            (Listener::Unix(listener), Bound::Unix(socket))
        };
        let accept = tokio::spawn(accept_loop(listener, Arc::clone(&self.shared)));
        self.listening = Some(Listening { accept, bound });
        Ok(())
    }
}

impl Drop for FakeDaemon {
    fn drop(&mut self) {
        if let Some(listening) = self.listening.take() {
            listening.accept.abort();
            listening.bound.unlink();
        }
        self.shared.abort_connections();
    }
}
