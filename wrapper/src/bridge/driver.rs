//! The one task that owns the daemon connection.
//!
//! It feeds the sans-IO [`Bridge`] with what happens (calls and
//! cancellations from the MCP side, the end of a connect attempt, lines
//! and the close of the connection, time passing) and carries out the
//! actions it returns. Callers reach it only through a channel
//! ([`BridgeHandle`]), so "a call arrives while the connection is dead" is
//! one more event handled in order, never a data race.
//!
//! The connection is tokio's own stream, split in two: lines are read from
//! one half through the line codec, and every line the bridge queued
//! during one turn is written to the other half in one `try_write`; only a
//! full socket makes the driver wait for room. A write that fails does not
//! end the connection at once: the replies the daemon sent before it went
//! away are still read, and the connection is lost when its reading side
//! ends.
//!
//! While the bridge is not connected the driver watches the daemon's
//! endpoint ([`EndpointWatch`]) and passes on what the watch sees: that it
//! is armed, that the endpoint appeared, or that no watch can be had (then
//! the bridge polls on its backoff until the next connection). Once
//! connected, the watch is dropped: a healthy connection costs nothing.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::{FutureExt, StreamExt};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio_util::codec::FramedRead;

use super::core::{
    Action, Bridge, CallId, ConnId, ConnectFailure, Failure, LinkStatus, Request, Watch,
};
use super::error::BridgeError;
use super::report::{Report, Reporter};
use super::wire::{DaemonResult, DaemonStatus, StatusError};
use crate::codec::{Frame, LineCodec};
use crate::endpoint_watch::{EndpointWatch, Notice, WatchError};
use crate::transport::stream;
use crate::transport::{ConnectError, DaemonReader, DaemonStream, DaemonWriter, Endpoint};

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
    /// Whether, and how, the endpoint is watched while the daemon is away.
    pub watch: WatchSettings,
    /// Where what the bridge does is reported (the log).
    pub reporter: Reporter,
}

/// How the endpoint is watched while the daemon is away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchSettings {
    /// Watch it (else the bridge dials on its backoff, as where no watch
    /// can be set).
    pub enabled: bool,
    /// Look at it at least this often while watched, events or not.
    pub floor: Duration,
}

impl Default for WatchSettings {
    fn default() -> Self {
        WatchSettings {
            enabled: true,
            floor: crate::endpoint_watch::DEFAULT_FLOOR,
        }
    }
}

/// Most frames from the daemon handled in one turn of the driver.
const FRAMES_PER_TURN: usize = 256;

/// The outcome of one call, as its caller receives it.
type Outcome = Result<DaemonResult, Failure>;

/// What callers ask of the driver.
enum Command {
    /// Make a call and send its outcome back.
    Call {
        id: CallId,
        request: Request,
        reply: oneshot::Sender<Outcome>,
    },
    /// The caller gave up on a call.
    Cancel(CallId),
    /// Fail everything, close, stop; acknowledge when done.
    Shutdown(oneshot::Sender<()>),
}

impl std::fmt::Debug for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Command::Call { id, request, .. } => write!(f, "Call({id:?}, {})", request.method),
            Command::Cancel(id) => write!(f, "Cancel({id:?})"),
            Command::Shutdown(_) => f.write_str("Shutdown"),
        }
    }
}

/// What the daemon said about itself on one of the bridge's connections,
/// in answer to the status question each connection begins with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusAnswer {
    /// Which connection it came on: the count of connections made when it
    /// arrived (1 for the first).
    pub connection: u64,
    /// The answer as read, or why it could not be.
    pub status: Result<DaemonStatus, StatusError>,
}

/// Cheap, cloneable access to the bridge task.
#[derive(Debug, Clone)]
pub struct BridgeHandle {
    tx: mpsc::UnboundedSender<Command>,
    next_id: Arc<AtomicU64>,
    status: watch::Receiver<LinkStatus>,
    answers: watch::Receiver<Option<StatusAnswer>>,
}

impl BridgeHandle {
    /// Make `request` through the daemon and wait for its outcome. Dropping
    /// the returned future cancels the call: the bridge forgets it and its
    /// response, if one comes, is ignored.
    pub async fn call(&self, request: Request) -> Outcome {
        let id = CallId(self.next_id.fetch_add(1, Ordering::Relaxed));
        let (reply, outcome) = oneshot::channel();
        if self.tx.send(Command::Call { id, request, reply }).is_err() {
            return Err(Failure::detached(BridgeError::Shutdown));
        }
        let mut guard = CancelOnDrop {
            tx: &self.tx,
            id,
            armed: true,
        };
        let outcome = outcome
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

    /// A watch on what the daemon last said about itself (`None` until a
    /// connection's status question is answered).
    pub fn answers(&self) -> watch::Receiver<Option<StatusAnswer>> {
        self.answers.clone()
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
    let (status_tx, status_rx) = watch::channel(bridge.status());
    let (answers_tx, answers_rx) = watch::channel(None);
    let handle = BridgeHandle {
        tx,
        next_id: Arc::new(AtomicU64::new(1)),
        status: status_rx,
        answers: answers_rx,
    };
    let published = Published {
        status: status_tx,
        answers: answers_tx,
    };
    let task = tokio::spawn(Driver::new(bridge, config, published).run(rx));
    (handle, task)
}

/// A connect attempt under way.
struct Dialing {
    conn: ConnId,
    connect: Pin<Box<dyn Future<Output = Result<DaemonStream, ConnectError>> + Send>>,
}

/// The established connection.
struct Connection {
    conn: ConnId,
    lines: FramedRead<DaemonReader, LineCodec>,
    outgoing: Outgoing,
    /// No frame has arrived on it yet (with the codec's buffer: no byte).
    unheard: bool,
}

impl Connection {
    /// Whether the daemon has sent nothing at all on it.
    fn silent(&self) -> bool {
        self.unheard && self.lines.read_buffer().is_empty()
    }
}

/// The writing side of the connection.
enum Outgoing {
    /// Writable: the lines queued for the daemon and not yet taken by the
    /// socket.
    Open {
        writer: DaemonWriter,
        queued: Vec<u8>,
    },
    /// A write failed: nothing more is written, and the reading side's end
    /// (which follows) loses the connection. Lines queued meanwhile are
    /// dropped: the calls they carry are settled when it is lost.
    Broken,
}

/// What woke the driver.
enum Wake {
    Command(Option<Command>),
    Dialled(Result<DaemonStream, ConnectError>),
    /// A frame from the connection, or its end (`None`, or a read error).
    Read(Option<std::io::Result<Frame>>),
    Timer,
    Room,
    /// News from the endpoint watch (`None`: it ended).
    Watch(Option<Notice>),
}

/// The endpoint watch, kept while the bridge is not connected.
enum WatchSlot {
    /// None (connected, or not yet needed).
    Off,
    /// Watching.
    On(EndpointWatch),
    /// None could be had during this outage; the next one tries again.
    Failed,
}

/// What the driver tells the rest of the wrapper.
struct Published {
    /// The connection's state, after every turn.
    status: watch::Sender<LinkStatus>,
    /// The daemon's answer to each connection's status question.
    answers: watch::Sender<Option<StatusAnswer>>,
}

struct Driver {
    core: Bridge,
    config: DriverConfig,
    published: Published,
    replies: BTreeMap<CallId, oneshot::Sender<Outcome>>,
    dialing: Option<Dialing>,
    connection: Option<Connection>,
    /// Connect attempts made so far (the first is the boot probe).
    dials: u64,
    watch: WatchSlot,
}

impl Driver {
    fn new(core: Bridge, config: DriverConfig, published: Published) -> Self {
        Driver {
            core,
            config,
            published,
            replies: BTreeMap::new(),
            dialing: None,
            connection: None,
            dials: 0,
            watch: WatchSlot::Off,
        }
    }

    async fn run(mut self, mut commands: mpsc::UnboundedReceiver<Command>) {
        self.core.start();
        let mut acknowledge = None;
        loop {
            self.settle();
            if acknowledge.is_some() {
                break;
            }
            match self.wait(&mut commands).await {
                Wake::Command(Some(command)) => {
                    acknowledge = self.on_command(command);
                    // Take every command already queued in the same turn:
                    // their lines go out in one write.
                    while acknowledge.is_none()
                        && let Ok(command) = commands.try_recv()
                    {
                        acknowledge = self.on_command(command);
                    }
                }
                Wake::Command(None) => {
                    // Every handle is gone: nobody can be answered anymore.
                    self.core.shutdown();
                    self.settle();
                    break;
                }
                Wake::Dialled(outcome) => self.on_dialled(outcome),
                Wake::Read(frame) => {
                    self.on_read(frame);
                    // Take the frames already read in the same turn, up to
                    // a bound (a flood must not starve callers): their
                    // replies and the lines they cause go out together.
                    for _ in 1..FRAMES_PER_TURN {
                        let Some(frame) = self.ready_frame() else {
                            break;
                        };
                        self.on_read(frame);
                    }
                }
                Wake::Timer => self.core.handle_timeout(now()),
                Wake::Room => {}
                Wake::Watch(notice) => self.on_watch(notice),
            }
        }
        self.connection = None;
        self.dialing = None;
        self.watch = WatchSlot::Off;
        for (_, reply) in std::mem::take(&mut self.replies) {
            let _ = reply.send(Err(Failure::detached(BridgeError::Shutdown)));
        }
        if let Some(ack) = acknowledge {
            let _ = ack.send(());
        }
    }

    /// Waits for the next thing that needs the bridge.
    async fn wait(&mut self, commands: &mut mpsc::UnboundedReceiver<Command>) -> Wake {
        let wake_at = self.core.poll_timeout();
        let watch = match &mut self.watch {
            WatchSlot::On(watch) => Some(watch),
            WatchSlot::Off | WatchSlot::Failed => None,
        };
        let (lines, blocked) = match self.connection.as_mut() {
            Some(Connection {
                lines, outgoing, ..
            }) => {
                let blocked = match outgoing {
                    Outgoing::Open { writer, queued } if !queued.is_empty() => Some(&*writer),
                    _ => None,
                };
                (Some(lines), blocked)
            }
            None => (None, None),
        };
        // Callers and timers first: on this thread neither can refill while
        // the driver runs, so they can never starve the daemon's lines, but
        // a daemon writing without pause could starve them.
        tokio::select! {
            biased;
            command = commands.recv() => Wake::Command(command),
            () = sleep_until(wake_at) => Wake::Timer,
            notice = next_notice(watch) => Wake::Watch(notice),
            outcome = dialled(&mut self.dialing) => Wake::Dialled(outcome),
            frame = next_frame(lines) => Wake::Read(frame),
            () = room(blocked) => Wake::Room,
        }
    }

    fn on_command(&mut self, command: Command) -> Option<oneshot::Sender<()>> {
        match command {
            Command::Call { id, request, reply } => {
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

    fn on_watch(&mut self, notice: Option<Notice>) {
        match notice {
            Some(Notice::Armed { directories }) => {
                self.report(&Report::Watched {
                    directories: &directories,
                });
                self.core.watch(Watch::Armed, now());
            }
            Some(Notice::Appeared) => self.core.endpoint_appeared(now()),
            Some(Notice::Looked(look)) => self.report(&Report::Looked(look)),
            // A file already there when the watch was set is news only to
            // a bridge that may have missed its creation: one awaiting the
            // endpoint, or one whose attempt under way began before it. A
            // bridge backing off dials it on its timer anyway (and one that
            // accepts and drops is not redialled at every loss).
            Some(Notice::Present) => {
                if self.core.status().awaiting_endpoint || self.core.connecting().is_some() {
                    self.core.endpoint_appeared(now());
                }
            }
            Some(Notice::Unavailable(error)) => {
                self.report(&Report::WatchUnavailable {
                    error: error.to_string(),
                });
                self.watch = WatchSlot::Failed;
                self.core.watch(Watch::Unavailable, now());
            }
            None => {
                self.report(&Report::WatchUnavailable {
                    error: "the watch ended".to_owned(),
                });
                self.watch = WatchSlot::Failed;
                self.core.watch(Watch::Unavailable, now());
            }
        }
    }

    /// Keeps the endpoint watch while the bridge waits for the daemon, and
    /// only then: set after the first failed attempt of an outage (a
    /// daemon that answers at once costs no watch; one that appears before
    /// the watch is set is seen by the watch's first look), dropped once
    /// connected (or stopped).
    fn keep_watch(&mut self) {
        match &self.watch {
            WatchSlot::Off if self.core.between_attempts() && !self.config.watch.enabled => {
                self.watch = WatchSlot::Failed;
                self.on_watch(Some(Notice::Unavailable(WatchError::Off)));
            }
            WatchSlot::Off if self.core.between_attempts() => {
                self.watch = WatchSlot::On(EndpointWatch::start(
                    &self.config.endpoint,
                    self.config.watch.floor,
                ));
            }
            WatchSlot::On(_) | WatchSlot::Failed if !self.core.awaits_daemon() => {
                self.watch = WatchSlot::Off;
                self.core.watch(Watch::Unavailable, now());
            }
            _ => {}
        }
    }

    fn on_dialled(&mut self, outcome: Result<DaemonStream, ConnectError>) {
        let Some(Dialing { conn, .. }) = self.dialing.take() else {
            return;
        };
        if self.core.connecting() != Some(conn) {
            // Not the attempt the bridge waits for: dropped unused.
            return;
        }
        match outcome {
            Ok(stream) => {
                let (reader, writer) = stream::split(stream);
                self.connection = Some(Connection {
                    conn,
                    lines: FramedRead::new(reader, LineCodec::new(self.config.max_line_bytes)),
                    outgoing: Outgoing::Open {
                        writer,
                        queued: Vec::new(),
                    },
                    unheard: true,
                });
                self.core.connected(conn, now());
            }
            Err(error) => {
                let failure = if error.is_refused() {
                    ConnectFailure::Refused(error.to_string())
                } else {
                    ConnectFailure::Other(error.to_string())
                };
                self.core.connect_failed(conn, failure, now());
            }
        }
    }

    /// The connection's next frame if it can be had without waiting.
    fn ready_frame(&mut self) -> Option<Option<std::io::Result<Frame>>> {
        self.connection.as_mut()?.lines.next().now_or_never()
    }

    fn on_read(&mut self, frame: Option<std::io::Result<Frame>>) {
        let Some(connection) = self.connection.as_mut() else {
            return;
        };
        let conn = connection.conn;
        if matches!(frame, Some(Ok(_))) {
            connection.unheard = false;
        }
        match frame {
            Some(Ok(Frame::Line(line))) => self.core.line(conn, &line),
            Some(Ok(Frame::Oversized { id })) => {
                let id = id.and_then(|v| v.as_u64());
                self.core
                    .oversized_line(conn, id, self.config.max_line_bytes);
            }
            Some(Err(error)) => {
                self.report(&Report::ReadFailed {
                    conn,
                    error: &error,
                });
                self.lose(conn);
            }
            None => self.lose(conn),
        }
    }

    /// The connection `conn` is gone: drop it and tell the bridge. One the
    /// daemon closed without sending a byte is, where that is how the
    /// daemon refuses a client (a wrong token on TCP), reported as such.
    fn lose(&mut self, conn: ConnId) {
        let silent = self.connection.take().is_some_and(|c| c.silent());
        match self.config.endpoint.silent_close_reason() {
            Some(reason) if silent => self.core.refused(conn, reason, now()),
            _ => self.core.closed(conn, now()),
        }
    }

    /// Carries out the bridge's actions and writes what they queued; then
    /// publishes the connection's status.
    fn settle(&mut self) {
        while let Some(action) = self.core.poll_action() {
            self.apply(action);
        }
        self.flush();
        self.keep_watch();
        let status = self.core.status();
        self.published.status.send_if_modified(|published| {
            let changed = *published != status;
            *published = status;
            changed
        });
    }

    fn apply(&mut self, action: Action) {
        match action {
            Action::Connect(conn) => self.dial(conn),
            Action::Send(conn, line) => {
                if let Some(Connection {
                    outgoing: Outgoing::Open { queued, .. },
                    ..
                }) = self.connection.as_mut().filter(|c| c.conn == conn)
                {
                    queued.extend_from_slice(&line);
                }
            }
            Action::Close(conn) => {
                if self.connection.as_ref().is_some_and(|c| c.conn == conn) {
                    self.connection = None;
                }
                if self.dialing.as_ref().is_some_and(|d| d.conn == conn) {
                    self.dialing = None;
                }
            }
            Action::Reply(id, outcome) => {
                if let Some(reply) = self.replies.remove(&id) {
                    let _ = reply.send(outcome);
                }
            }
            Action::Status(_, line) => {
                let answer = StatusAnswer {
                    connection: self.core.status().connects,
                    status: DaemonStatus::read(&line),
                };
                self.published.answers.send_replace(Some(answer));
            }
            Action::Report(what) => self.report(&Report::Core(&what)),
        }
    }

    /// Writes the queued lines, as much as the socket takes now; the rest
    /// waits for room. A write that fails breaks the writing side (see
    /// [`Outgoing::Broken`]).
    fn flush(&mut self) {
        let Some(Connection {
            conn,
            outgoing: outgoing @ Outgoing::Open { .. },
            ..
        }) = self.connection.as_mut()
        else {
            return;
        };
        let Outgoing::Open { writer, queued } = outgoing else {
            return;
        };
        while !queued.is_empty() {
            let error = match stream::try_write(writer, queued) {
                Ok(0) => std::io::Error::from(std::io::ErrorKind::WriteZero),
                Ok(written) => {
                    queued.drain(..written);
                    continue;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => e,
            };
            let failed = Report::WriteFailed {
                conn: *conn,
                error: &error,
            };
            (self.config.reporter)(&self.config.endpoint, &failed);
            *outgoing = Outgoing::Broken;
            return;
        }
    }

    fn report(&self, report: &Report<'_>) {
        (self.config.reporter)(&self.config.endpoint, report);
    }

    fn dial(&mut self, conn: ConnId) {
        self.dials += 1;
        let limit = if self.dials == 1 {
            self.config.probe_timeout
        } else {
            self.config.connect_timeout
        };
        self.report(&Report::Dialling {
            conn,
            attempt: self.dials,
            timeout: limit,
        });
        let endpoint = self.config.endpoint.clone();
        // A new attempt replaces any other: the bridge never holds two.
        self.dialing = Some(Dialing {
            conn,
            connect: Box::pin(async move { endpoint.connect(limit).await }),
        });
    }
}

/// The connection's next frame (never completes without a connection).
async fn next_frame(
    lines: Option<&mut FramedRead<DaemonReader, LineCodec>>,
) -> Option<std::io::Result<Frame>> {
    match lines {
        Some(lines) => lines.next().await,
        None => std::future::pending().await,
    }
}

/// The endpoint watch's next notice (never completes without a watch).
async fn next_notice(watch: Option<&mut EndpointWatch>) -> Option<Notice> {
    match watch {
        Some(watch) => watch.next().await,
        None => std::future::pending().await,
    }
}

/// The end of the connect attempt under way (never completes without one).
async fn dialled(dialing: &mut Option<Dialing>) -> Result<DaemonStream, ConnectError> {
    match dialing {
        Some(dialing) => dialing.connect.as_mut().await,
        None => std::future::pending().await,
    }
}

/// Completes when `writer` has room (never without one). An error completes
/// it too: the next write meets it and loses the connection.
async fn room(writer: Option<&DaemonWriter>) {
    match writer {
        Some(writer) => {
            let _ = stream::writable(writer).await;
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
