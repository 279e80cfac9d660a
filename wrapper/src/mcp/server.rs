//! The MCP stdio loop: read lines, answer what needs no daemon at once, run
//! tool calls concurrently through the bridge, write every response through
//! one writer, and shut down without losing a reply.

use std::collections::BTreeMap;
use std::future::Future;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::{Notify, mpsc, watch};
use tokio::task::{AbortHandle, JoinError, JoinHandle, JoinSet};
use tokio_util::codec::FramedRead;

use super::dispatch::{self, Classified, Inbound, Subscription, ToolCall};
use super::protocol::{self, Era};
use super::reply::{self, ServerInfo};
use crate::bridge::{Access, BridgeError};
use crate::call::Caller;
use crate::codec::{Frame, LineCodec};
use crate::surface::Surface;

/// Calls forwarded to the daemon at once; past this the loop stops reading
/// stdin until some finish, so a client cannot make the wrapper hold an
/// unbounded number of calls.
pub const MAX_CALLS_IN_FLIGHT: usize = 1024;

/// Bytes of responses waiting for stdout; past this the loop stops reading
/// stdin until the client reads, so a client that does not read its
/// output cannot make the wrapper buffer without bound.
pub const MAX_QUEUED_OUTPUT: usize = 4 * 1024 * 1024;

/// How long calls in flight may still finish after the client has gone, by
/// default: well under the 2 s clients wait before they send SIGTERM.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// Settings of the stdio loop.
#[derive(Debug, Clone, Copy)]
pub struct ServerConfig {
    /// Longest request line accepted; longer ones are answered with an
    /// error and their bytes discarded.
    pub max_line_bytes: usize,
    /// How long calls in flight may still finish after the client has gone
    /// (EOF or signal) before they are failed.
    pub shutdown_grace: Duration,
}

/// Why the loop stopped reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The client closed stdin.
    Eof,
    /// A termination signal (or other external stop) arrived.
    Signal,
    /// stdout could not be written: the client is gone.
    OutputClosed,
}

impl StopReason {
    /// The reason's name in the log.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Eof => "eof",
            StopReason::Signal => "signal",
            StopReason::OutputClosed => "output_closed",
        }
    }
}

/// Receives the events that start the wrapper's warm-up.
pub trait WarmupTrigger {
    /// The session is initialized (legacy `notifications/initialized`, or
    /// the first modern request). Called possibly more than once.
    fn initialized(&self);
}

impl WarmupTrigger for () {
    fn initialized(&self) {}
}

struct CallOutput {
    seq: u64,
    line: Vec<u8>,
}

/// What the loop serves and through what: the surface (which may change
/// while it runs), the caller of tools, the warm-up to start.
pub struct Serving<T> {
    /// The tool surface; a change is announced to the client.
    pub surface: watch::Receiver<Arc<Surface>>,
    /// Makes the tool calls.
    pub caller: Caller,
    /// Told when the session is initialized.
    pub warmup: T,
}

/// Serve MCP on `input`/`output` until EOF, `stop` completes, or output
/// fails; then let calls in flight finish (up to the grace period), fail the
/// rest, flush, and return why it stopped.
pub async fn serve<R, W, S, T>(
    input: R,
    output: W,
    serving: Serving<T>,
    config: ServerConfig,
    stop: S,
) -> StopReason
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
    S: Future<Output = ()>,
    T: WarmupTrigger,
{
    let (out, out_rx) = Output::new();
    let mut writer = tokio::spawn(write_output(output, out_rx));
    let mut session = Session::new(input, out, serving, config);
    let reason = session.read_until_stopped(stop, &mut writer).await;
    session.answer_calls_in_flight().await;
    session.end_subscriptions();
    // Closing the queue lets the writer end once it has written it out;
    // the rest of the session (the caller among it) lives until return.
    let Session { out, .. } = session;
    drop(out);
    if reason != StopReason::OutputClosed {
        flush_output(writer, config.shutdown_grace).await;
    }
    reason
}

/// The stdio loop's state: the client's lines, the responses queued for
/// stdout, and the calls in progress.
struct Session<R, T> {
    frames: FramedRead<R, LineCodec>,
    out: Output,
    calls: JoinSet<CallOutput>,
    live: BTreeMap<u64, Live>,
    next_seq: u64,
    surface: watch::Receiver<Arc<Surface>>,
    caller: Caller,
    warmup: T,
    /// The client finished the legacy handshake: notifications may be
    /// sent to it.
    initialized: bool,
    /// The modern notification streams open, in the order opened.
    subscriptions: Vec<Subscription>,
    config: ServerConfig,
}

impl<R, T> Session<R, T>
where
    R: AsyncRead + Unpin,
    T: WarmupTrigger,
{
    /// A session reading `input` and answering through `out`, no call yet.
    fn new(input: R, out: Output, serving: Serving<T>, config: ServerConfig) -> Self {
        let Serving {
            mut surface,
            caller,
            warmup,
        } = serving;
        surface.mark_unchanged();
        Session {
            frames: FramedRead::new(input, LineCodec::new(config.max_line_bytes)),
            out,
            calls: JoinSet::new(),
            live: BTreeMap::new(),
            next_seq: 0,
            surface,
            caller,
            warmup,
            initialized: false,
            subscriptions: Vec::new(),
            config,
        }
    }

    /// Reads and answers the client's lines, and delivers finished calls,
    /// until EOF, `stop`, or the writer ends; stops reading (and only
    /// delivers) while too many calls or too many output bytes are pending.
    async fn read_until_stopped<S>(
        &mut self,
        stop: S,
        writer: &mut JoinHandle<std::io::Result<()>>,
    ) -> StopReason
    where
        S: Future<Output = ()>,
    {
        tokio::pin!(stop);
        loop {
            let backlogged = self.calls.len() >= MAX_CALLS_IN_FLIGHT || self.out.backlogged();
            tokio::select! {
                frame = self.frames.next(), if !backlogged => {
                    if let ControlFlow::Break(reason) = self.on_frame(frame) {
                        break reason;
                    }
                }
                () = self.out.drained(), if backlogged => {}
                Some(done) = self.calls.join_next(), if !self.calls.is_empty() => {
                    deliver(done, &mut self.live, &self.out);
                }
                Ok(()) = self.surface.changed() => self.on_surface_changed(),
                () = &mut stop => break StopReason::Signal,
                _ = &mut *writer => break StopReason::OutputClosed,
            }
        }
    }

    /// One read from stdin: a line is handled, an oversized one answered
    /// with an error; the end of input (or a read error) stops the loop.
    fn on_frame(&mut self, frame: Option<std::io::Result<Frame>>) -> ControlFlow<StopReason> {
        match frame {
            Some(Ok(Frame::Line(line))) => {
                let classified = dispatch::classify(&line, &self.surface.borrow());
                self.on_message(classified);
            }
            Some(Ok(Frame::Oversized { id })) => {
                self.out
                    .send(dispatch::oversized(id, self.config.max_line_bytes));
            }
            Some(Err(e)) => {
                tracing::warn!(error = %e, "stdin read failed; treating as end of input");
                return ControlFlow::Break(StopReason::Eof);
            }
            None => return ControlFlow::Break(StopReason::Eof),
        }
        ControlFlow::Continue(())
    }

    /// Acts on one classified message: answers it, starts its call,
    /// cancels a call, or notes the handshake.
    fn on_message(&mut self, classified: Classified) {
        if classified.era == Some(Era::Modern) {
            self.warmup.initialized();
        }
        match classified.inbound {
            Inbound::Reply(line) => self.out.send(line),
            Inbound::ToolCall(call) => self.start_call(call),
            Inbound::Cancel(id) => self.cancel(&id),
            Inbound::Listen(subscription) => self.listen(subscription),
            Inbound::Initialized => {
                self.initialized = true;
                self.warmup.initialized();
            }
            Inbound::Ignore => {}
        }
    }

    /// The surface changed: a client that finished the handshake is told
    /// to list the tools again (one that has not will list them anyway),
    /// and so is every modern stream that asked to hear of it.
    fn on_surface_changed(&mut self) {
        self.surface.mark_unchanged();
        if self.initialized {
            self.out.send(reply::tools_list_changed());
        }
        for subscription in &self.subscriptions {
            if subscription.tools_list_changed {
                self.out
                    .send(reply::tools_list_changed_on(&subscription.id));
            }
        }
    }

    /// A modern client opened a notification stream: acknowledged at
    /// once, answered when the server ends (or never, if the client
    /// cancels it).
    fn listen(&mut self, subscription: Subscription) {
        self.out.send(reply::subscription_acknowledged(
            &subscription.id,
            subscription.tools_list_changed,
        ));
        self.subscriptions.push(subscription);
    }

    /// The server is ending: every stream still open is answered, so that
    /// its request, like every other, gets its one response.
    fn end_subscriptions(&mut self) {
        for subscription in std::mem::take(&mut self.subscriptions) {
            self.out.send(reply::subscription_ended(&subscription.id));
        }
    }

    /// Runs `call` in its own task, remembered until it is answered.
    fn start_call(&mut self, call: ToolCall) {
        self.next_seq += 1;
        let seq = self.next_seq;
        let id = call.id.clone();
        let era = call.era;
        let server = call.server.clone();
        let writes = call.tool.access() == Access::Write;
        let handle = self.calls.spawn(run_call(seq, call, self.caller.clone()));
        self.live.insert(
            seq,
            Live {
                id,
                era,
                server,
                writes,
                handle,
            },
        );
    }

    /// The client cancelled request `id`: its call is stopped and never
    /// answered, or its notification stream closed without an answer.
    fn cancel(&mut self, id: &Value) {
        self.subscriptions
            .retain(|subscription| subscription.id != *id);
        self.live.retain(|_, call| {
            let cancelled = call.id == *id;
            if cancelled {
                call.handle.abort();
            }
            !cancelled
        });
    }

    /// Drain: calls in flight get the grace period; then the bridge fails
    /// whatever waits on the daemon and any CLI run still going is killed,
    /// and every one of them is still answered.
    async fn answer_calls_in_flight(&mut self) {
        let grace = tokio::time::sleep(self.config.shutdown_grace);
        tokio::pin!(grace);
        let mut stopped = false;
        while !self.calls.is_empty() {
            tokio::select! {
                Some(done) = self.calls.join_next() => deliver(done, &mut self.live, &self.out),
                () = &mut grace, if !stopped => {
                    stopped = true;
                    self.caller.shutdown().await;
                    self.calls.abort_all();
                }
            }
        }
    }
}

/// Waits for the writer to write out what is queued, for at most `grace`:
/// a client that stopped reading must not keep the wrapper alive.
async fn flush_output(mut writer: JoinHandle<std::io::Result<()>>, grace: Duration) {
    let flush = tokio::time::timeout(grace, &mut writer).await;
    if flush.is_err() {
        tracing::warn!("stdout not drained within the grace period; exiting anyway");
        writer.abort();
    }
}

/// The response queue towards the single stdout writer, with the byte count
/// that lets the loop stop reading stdin while the client is not reading.
struct Output {
    tx: mpsc::UnboundedSender<Vec<u8>>,
    queued: Arc<AtomicUsize>,
    drained: Arc<Notify>,
}

/// The writer's side of [`Output`].
struct OutputRx {
    rx: mpsc::UnboundedReceiver<Vec<u8>>,
    queued: Arc<AtomicUsize>,
    drained: Arc<Notify>,
}

impl Output {
    fn new() -> (Self, OutputRx) {
        let (tx, rx) = mpsc::unbounded_channel();
        let queued = Arc::new(AtomicUsize::new(0));
        let drained = Arc::new(Notify::new());
        let rx = OutputRx {
            rx,
            queued: Arc::clone(&queued),
            drained: Arc::clone(&drained),
        };
        (
            Output {
                tx,
                queued,
                drained,
            },
            rx,
        )
    }

    fn send(&self, line: Vec<u8>) {
        self.queued.fetch_add(line.len(), Ordering::Relaxed);
        let _ = self.tx.send(line);
    }

    fn backlogged(&self) -> bool {
        self.queued.load(Ordering::Relaxed) >= MAX_QUEUED_OUTPUT
    }

    async fn drained(&self) {
        self.drained.notified().await;
    }
}

/// A call in progress: its request id and era (to answer it however it
/// ends) and its task.
struct Live {
    id: Value,
    era: Era,
    /// Who answers it.
    server: ServerInfo,
    /// The tool may change the store: an interrupted call may have done so.
    writes: bool,
    handle: AbortHandle,
}

fn deliver(done: Result<CallOutput, JoinError>, live: &mut BTreeMap<u64, Live>, out: &Output) {
    match done {
        // A call cancelled by the client was removed from `live`; its
        // output, if it finished anyway, is dropped.
        Ok(output) => {
            if live.remove(&output.seq).is_some() {
                out.send(output.line);
            }
        }
        // A call task that panicked, or was stopped at exit, still owes
        // its client an answer.
        Err(e) => {
            let task = e.id();
            let seq = live
                .iter()
                .find(|(_, call)| call.handle.id() == task)
                .map(|(seq, _)| *seq);
            let Some(call) = seq.and_then(|seq| live.remove(&seq)) else {
                return;
            };
            let line = if e.is_panic() {
                tracing::error!("a tool call task panicked");
                reply::error(
                    &call.id,
                    protocol::INTERNAL_ERROR,
                    "internal error in the wrapper",
                )
            } else {
                let mut text = BridgeError::Shutdown.to_string();
                if call.writes {
                    text.push_str("; it may have been stored");
                }
                reply::tool_failure(&call.id, call.era, &call.server, &text)
            };
            out.send(line);
        }
    }
}

async fn run_call(seq: u64, call: ToolCall, caller: Caller) -> CallOutput {
    let ToolCall {
        id,
        era,
        tool,
        arguments,
        server,
    } = call;
    let line = match caller.call(&tool, arguments).await {
        Ok(result) => reply::tool_success(&id, era, &server, &result),
        Err(error) => reply::tool_failure(&id, era, &server, &error.to_string()),
    };
    CallOutput { seq, line }
}

/// The single stdout writer: buffered, flushed whenever the queue runs dry
/// so that a burst costs one write and a lone reply is never held back.
async fn write_output<W: AsyncWrite + Unpin>(
    output: W,
    mut queue: OutputRx,
) -> std::io::Result<()> {
    let mut out = BufWriter::with_capacity(64 * 1024, output);
    while let Some(line) = queue.rx.recv().await {
        let mut written = line.len();
        out.write_all(&line).await?;
        while let Ok(line) = queue.rx.try_recv() {
            written += line.len();
            out.write_all(&line).await?;
        }
        out.flush().await?;
        queue.queued.fetch_sub(written, Ordering::Relaxed);
        queue.drained.notify_one();
    }
    out.flush().await?;
    out.shutdown().await
}
