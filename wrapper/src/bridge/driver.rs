//! The one task that owns the daemon connection.
//!
//! It feeds the sans-IO [`Bridge`] with events (calls from the MCP side,
//! connect results, lines and closes from the socket, timer expiry) and
//! carries out the actions it returns. Callers reach it only through a
//! channel ([`BridgeHandle`]), so "a call arrives while the connection is
//! dead" is one more event handled in order, never a data race.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use tokio::net::unix::pipe;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio_util::codec::FramedRead;

use super::core::{Action, Bridge, CallId, ConnId, Event, Failure, Request};
use super::error::BridgeError;
use super::response::DaemonResult;
use super::socket;
use crate::codec::{Frame, LineCodec};
use crate::transport::{DaemonStream, Endpoint};

/// I/O settings of the driver (the decisions live in the policy).
#[derive(Debug, Clone)]
pub struct DriverConfig {
    /// Where the daemon listens.
    pub endpoint: Endpoint,
    /// Limit for one connect attempt after the first (contract: 5 s).
    pub connect_timeout: Duration,
    /// Limit for the very first attempt, which doubles as the boot probe
    /// (contract: 1 s), so that waking a stopped daemon is not delayed.
    pub probe_timeout: Duration,
    /// Longest daemon response line accepted.
    pub max_line_bytes: usize,
}

/// What the rest of the wrapper may observe about the connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStatus {
    /// Whether a connection is established now.
    pub connected: bool,
    /// Connections established so far.
    pub connects: u64,
    /// Connect attempts that failed so far.
    pub failed_attempts: u64,
}

enum Command {
    Call(
        CallId,
        Request,
        oneshot::Sender<Result<DaemonResult, Failure>>,
    ),
    Cancel(CallId),
    Shutdown(oneshot::Sender<()>),
}

/// Cheap, cloneable access to the bridge task.
#[derive(Debug, Clone)]
pub struct BridgeHandle {
    tx: mpsc::UnboundedSender<Command>,
    next_id: Arc<AtomicU64>,
    status: watch::Receiver<LinkStatus>,
}

impl std::fmt::Debug for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Command::Call(id, r, _) => write!(f, "Call({id:?}, {})", r.method),
            Command::Cancel(id) => write!(f, "Cancel({id:?})"),
            Command::Shutdown(_) => f.write_str("Shutdown"),
        }
    }
}

impl BridgeHandle {
    /// Make `request` through the daemon and wait for its outcome (the
    /// result as the JSON text the daemon sent). Dropping
    /// the returned future cancels the call: the bridge forgets it and its
    /// response, if one comes, is ignored.
    pub async fn call(&self, request: Request) -> Result<DaemonResult, Failure> {
        let id = CallId(self.next_id.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Command::Call(id, request, tx)).is_err() {
            return Err(Failure::detached(BridgeError::Shutdown));
        }
        let mut guard = CancelOnDrop {
            tx: &self.tx,
            id,
            armed: true,
        };
        let outcome = rx
            .await
            .unwrap_or_else(|_| Err(Failure::detached(BridgeError::Shutdown)));
        guard.armed = false;
        outcome
    }

    /// Fail every call still waiting, close the connection and stop the
    /// task; returns once that is done.
    pub async fn shutdown(&self) {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Command::Shutdown(tx)).is_ok() {
            let _ = rx.await;
        }
    }

    /// A watch on the connection state (for warm-up and wake-up logic).
    pub fn status(&self) -> watch::Receiver<LinkStatus> {
        self.status.clone()
    }
}

struct CancelOnDrop<'a> {
    tx: &'a mpsc::UnboundedSender<Command>,
    id: CallId,
    armed: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.tx.send(Command::Cancel(self.id));
        }
    }
}

/// Start the bridge task on the current tokio runtime.
pub fn spawn(bridge: Bridge, config: DriverConfig) -> (BridgeHandle, JoinHandle<()>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let (status_tx, status_rx) = watch::channel(LinkStatus::default());
    let handle = BridgeHandle {
        tx,
        next_id: Arc::new(AtomicU64::new(1)),
        status: status_rx,
    };
    let task = tokio::spawn(Driver::new(bridge, config, status_tx).run(rx));
    (handle, task)
}

enum ConnEvent {
    ConnectDone(ConnId, Result<DaemonStream, String>),
    Frame(ConnId, Frame),
    Closed(ConnId),
}

/// The established connection: the driver writes to it itself, a reader
/// task frames what arrives.
struct Live {
    id: ConnId,
    socket: socket::Writer,
    /// Lines queued for the daemon and not yet taken by the socket.
    out: Vec<u8>,
    /// A write failed: the close event is on its way; write no more.
    broken: bool,
    reader: JoinHandle<()>,
}

struct Driver {
    core: Bridge,
    config: DriverConfig,
    status: watch::Sender<LinkStatus>,
    replies: BTreeMap<CallId, oneshot::Sender<Result<DaemonResult, Failure>>>,
    events_tx: mpsc::UnboundedSender<ConnEvent>,
    events_rx: mpsc::UnboundedReceiver<ConnEvent>,
    live: Option<Live>,
    attempt: Option<(ConnId, JoinHandle<()>)>,
    attempts: u64,
}

impl Driver {
    fn new(core: Bridge, config: DriverConfig, status: watch::Sender<LinkStatus>) -> Self {
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        Driver {
            core,
            config,
            status,
            replies: BTreeMap::new(),
            events_tx,
            events_rx,
            live: None,
            attempt: None,
            attempts: 0,
        }
    }

    async fn run(mut self, mut commands: mpsc::UnboundedReceiver<Command>) {
        self.core.start();
        let mut shutdown_ack = None;
        loop {
            self.apply_actions();
            self.flush();
            if shutdown_ack.is_some() {
                break;
            }
            let wake = self.core.poll_timeout();
            // Lines the socket did not take at once wait for it to drain.
            let blocked = self
                .live
                .as_ref()
                .filter(|l| !l.out.is_empty() && !l.broken)
                .and_then(|l| l.socket.blocked());
            tokio::select! {
                biased;
                Some(event) = self.events_rx.recv() => {
                    self.on_conn_event(event);
                    while let Ok(event) = self.events_rx.try_recv() {
                        self.on_conn_event(event);
                    }
                }
                command = commands.recv() => match command {
                    Some(command) => {
                        if let Some(ack) = self.on_command(command) {
                            shutdown_ack = Some(ack);
                        }
                        while shutdown_ack.is_none() && let Ok(command) = commands.try_recv() {
                            if let Some(ack) = self.on_command(command) {
                                shutdown_ack = Some(ack);
                            }
                        }
                    }
                    None => {
                        self.core.shutdown();
                        self.apply_actions();
                        break;
                    }
                },
                () = sleep_until(wake), if wake.is_some() => {
                    self.core.handle_timeout(now());
                }
                () = writable(blocked), if blocked.is_some() => {}
            }
        }
        self.apply_actions();
        self.close_all();
        if let Some(ack) = shutdown_ack {
            let _ = ack.send(());
        }
    }

    fn on_command(&mut self, command: Command) -> Option<oneshot::Sender<()>> {
        match command {
            Command::Call(id, request, reply) => {
                self.replies.insert(id, reply);
                self.core.call(id, request, now());
            }
            Command::Cancel(id) => {
                self.replies.remove(&id);
                self.core.cancel(id);
            }
            Command::Shutdown(ack) => {
                self.core.shutdown();
                return Some(ack);
            }
        }
        None
    }

    fn on_conn_event(&mut self, event: ConnEvent) {
        let now = now();
        match event {
            ConnEvent::ConnectDone(conn, Ok(stream)) => {
                if self.attempt.as_ref().is_some_and(|(id, _)| *id == conn) {
                    self.attempt = None;
                }
                // Only the attempt the core waits for becomes the live
                // connection; any other is dropped unused.
                if self.core.connecting() == Some(conn) {
                    match self.install(conn, stream) {
                        Ok(()) => self.core.connected(conn, now),
                        Err(e) => self.core.connect_failed(
                            conn,
                            format!("could not register the connection: {e}"),
                            now,
                        ),
                    }
                }
            }
            ConnEvent::ConnectDone(conn, Err(error)) => {
                if self.attempt.as_ref().is_some_and(|(id, _)| *id == conn) {
                    self.attempt = None;
                }
                self.core.connect_failed(conn, error, now);
            }
            ConnEvent::Frame(conn, Frame::Line(line)) => self.core.line(conn, &line),
            ConnEvent::Frame(conn, Frame::Oversized { id }) => {
                let id = id.and_then(|v| v.as_u64());
                self.core
                    .oversized_line(conn, id, self.config.max_line_bytes);
            }
            ConnEvent::Closed(conn) => {
                if self.live.as_ref().is_some_and(|l| l.id == conn) {
                    self.drop_live();
                }
                self.core.closed(conn, now);
            }
        }
    }

    fn apply_actions(&mut self) {
        while let Some(action) = self.core.poll_action() {
            match action {
                Action::Connect(conn) => self.dial(conn),
                Action::Send(conn, line) => {
                    // Queued, and written once this turn's actions are
                    // applied (one write for all of them). After a failed
                    // write the close event is on its way and will be
                    // handled in order; the line is moot.
                    if let Some(live) = self.live.as_mut().filter(|l| l.id == conn && !l.broken) {
                        live.out.extend_from_slice(&line);
                    }
                }
                Action::Close(conn) => {
                    if self.live.as_ref().is_some_and(|l| l.id == conn) {
                        self.drop_live();
                    }
                    if let Some((id, task)) = self.attempt.take() {
                        if id == conn {
                            task.abort();
                        } else {
                            self.attempt = Some((id, task));
                        }
                    }
                }
                Action::Reply(id, outcome) => {
                    if let Some(reply) = self.replies.remove(&id) {
                        let _ = reply.send(outcome);
                    }
                }
                Action::Report(event) => self.report(event),
            }
        }
    }

    fn report(&mut self, event: Event) {
        match event {
            Event::Connected { conn, reconnect } => {
                tracing::info!(conn = conn.0, reconnect, "connected to daemon");
                self.status.send_modify(|s| {
                    s.connected = true;
                    s.connects += 1;
                });
            }
            Event::Disconnected {
                conn,
                replayed,
                failed,
                reconnecting,
            } => {
                tracing::warn!(
                    conn = conn.0,
                    replayed,
                    failed,
                    reconnecting,
                    "daemon connection closed"
                );
                self.status.send_modify(|s| s.connected = false);
            }
            Event::ConnectFailed {
                failures,
                error,
                retry_in,
            } => {
                tracing::info!(failures, %error, ?retry_in, "daemon connect failed");
                self.status.send_modify(|s| s.failed_attempts += 1);
            }
            Event::ParseStreak { lines, call } => {
                let line = serde_json::json!({
                    "event": "daemon_parse_error_streak",
                    "lines": lines,
                    "failed_call": call.0,
                });
                eprintln!("{line}");
            }
            Event::Hurried { earlier_by } => {
                tracing::info!(
                    ?earlier_by,
                    "a call brought the next daemon connect attempt forward"
                );
            }
            Event::Silent { conn } => {
                tracing::warn!(
                    conn = conn.0,
                    "the daemon sent nothing for a whole call timeout: reconnecting"
                );
            }
            Event::Unmatched { id } => {
                tracing::debug!(?id, "ignored daemon line with no pending request");
            }
        }
    }

    fn dial(&mut self, conn: ConnId) {
        self.attempts += 1;
        let limit = if self.attempts == 1 {
            self.config.probe_timeout
        } else {
            self.config.connect_timeout
        };
        let endpoint = self.config.endpoint.clone();
        let events = self.events_tx.clone();
        let task = tokio::spawn(async move {
            let outcome = endpoint.connect(limit).await.map_err(|e| e.to_string());
            let _ = events.send(ConnEvent::ConnectDone(conn, outcome));
        });
        if let Some((_, old)) = self.attempt.replace((conn, task)) {
            old.abort();
        }
    }

    /// Makes `stream` the live connection, with its reader task; an error
    /// leaves the live connection as it was.
    fn install(&mut self, conn: ConnId, stream: DaemonStream) -> std::io::Result<()> {
        let (read, socket) = socket::split(stream)?;
        let events = self.events_tx.clone();
        let max = self.config.max_line_bytes;
        let mut frames = FramedRead::new(read, LineCodec::new(max));
        let reader = tokio::spawn(async move {
            while let Some(Ok(frame)) = frames.next().await {
                if events.send(ConnEvent::Frame(conn, frame)).is_err() {
                    return;
                }
            }
            let _ = events.send(ConnEvent::Closed(conn));
        });
        if let Some(old) = self.live.replace(Live {
            id: conn,
            socket,
            out: Vec::new(),
            broken: false,
            reader,
        }) {
            old.reader.abort();
        }
        Ok(())
    }

    /// Writes the queued lines: as much as the socket takes now, in one
    /// system call unless it takes only part; the rest waits for the
    /// socket to drain. A failed write closes the connection (in order,
    /// through the event queue).
    fn flush(&mut self) {
        let Some(live) = self.live.as_mut().filter(|l| !l.broken) else {
            return;
        };
        while !live.out.is_empty() {
            match live.socket.write(&live.out) {
                Ok(n) if n > 0 => {
                    live.out.drain(..n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                _ => {
                    live.broken = true;
                    live.out = Vec::new();
                    live.socket.idle();
                    let _ = self.events_tx.send(ConnEvent::Closed(live.id));
                    return;
                }
            }
        }
        live.socket.idle();
    }

    fn drop_live(&mut self) {
        if let Some(live) = self.live.take() {
            live.reader.abort();
        }
    }

    fn close_all(&mut self) {
        self.drop_live();
        if let Some((_, task)) = self.attempt.take() {
            task.abort();
        }
        for (_, reply) in std::mem::take(&mut self.replies) {
            let _ = reply.send(Err(Failure::detached(BridgeError::Shutdown)));
        }
    }
}

/// Completes when `socket` is writable (never without one). An error
/// completes it too: the next write meets it and closes the connection.
async fn writable(socket: Option<&pipe::Sender>) {
    match socket {
        Some(socket) => {
            let _ = socket.writable().await;
        }
        None => std::future::pending().await,
    }
}

/// The current instant on tokio's clock (so that timers and deadlines agree,
/// also under a paused test clock), as the core's `std` instant.
fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await,
        None => std::future::pending().await,
    }
}
