//! The fake daemon itself: its endpoint, the table of live connections, and
//! the execution of stdin commands against them.
//!
//! The accept loop (the `endpoint` module) and every connection run as Tokio
//! tasks; the state they
//! share (`Shared`) is counters, fault settings, the journal and the
//! connection table. Commands that act on connections wait until the effect
//! has happened (connections closed, bytes written) before they return, so an
//! acknowledgement printed afterwards can be relied upon.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use fake_daemon_control::{Ack, Command, StartupOrder, StatsSnapshot};
use tokio::task::JoinHandle;

use crate::endpoint::Endpoint;
use crate::faults::OneShots;
use crate::journal::DEFAULT_JOURNAL_BYTES;
use crate::listener::BindError;
use crate::protocol;
use crate::shared::{ConnCommand, Shared};
use crate::sync::lock;

/// Default longest request line (16 MiB); longer lines get an error reply
/// and are skipped up to their newline, so memory stays bounded.
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// The release `status` reports by default: the one the wrapper's tool
/// table describes.
pub const DEFAULT_RELEASE: &str = "3.3.0";

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
    /// The order of every start (at process start, and at an `UP` that
    /// names none).
    pub start_up: StartupOrder,
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
            start_up: StartupOrder::AtOnce,
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
    endpoint: Endpoint,
    /// The order of a start that names none.
    start_up: StartupOrder,
}

impl FakeDaemon {
    /// Comes up in the configured start-up order (a stale socket file is
    /// removed first, the new one gets mode 0600) and accepts connections.
    pub async fn bind(config: Config) -> Result<Self, BindError> {
        let shared = Arc::new(Shared::new(
            config.max_line_bytes,
            config.journal_bytes,
            protocol::status_line(config.release.as_deref()),
        ));
        let mut daemon = FakeDaemon {
            shared,
            endpoint: Endpoint::new(config.socket_path, config.tcp),
            start_up: config.start_up,
        };
        daemon.endpoint.up(daemon.start_up, &daemon.shared).await?;
        Ok(daemon)
    }

    /// The socket path the daemon binds (with TCP: the base of its port
    /// and token files).
    pub fn socket_path(&self) -> &Path {
        self.endpoint.path()
    }

    /// The TCP port listened on, when listening on TCP.
    pub fn tcp_port(&self) -> Option<u16> {
        self.endpoint.tcp_port()
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
            Command::Up { order } => {
                let order = order.unwrap_or(self.start_up);
                match self.endpoint.up(order, &self.shared).await {
                    Ok(()) => carried_out,
                    Err(err) => Ack::Refused(err.to_string()),
                }
            }
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
    /// (or the port and token files) and closes every connection.
    async fn down(&mut self) {
        self.endpoint.down().await;
        self.drop_connections().await;
    }
}

impl Drop for FakeDaemon {
    fn drop(&mut self) {
        self.endpoint.abandon();
        self.shared.abort_connections();
    }
}
