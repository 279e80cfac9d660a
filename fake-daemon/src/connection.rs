//! One accepted connection: reads requests, writes replies, obeys the fault
//! settings.
//!
//! A single task owns the socket and everything about the connection. Each
//! turn of its loop waits for whichever comes first: a command from the
//! daemon (inject lines, release held replies), room to write pending output,
//! input to read, or the next delayed reply falling due. Reading and writing
//! are independent, so a client that pipelines many requests before reading
//! any reply never deadlocks against the daemon.
//!
//! Fast path: all complete lines from one read are answered into one output
//! buffer, which is then written with one `write` call. Answering a request
//! copies the raw id and method into that buffer and allocates nothing
//! (recording it for `SEEN`/`LOG` costs one allocation unless disabled).
//!
//! Reply pipeline, applied to success and error replies alike:
//! arrival → (`DELAY` set: wait in `delayed`) → (`HANG` set: wait in `held`)
//! → written. `RESUME` writes held replies at once. One-shot faults
//! (`CUT`, `OVERSIZE`, `DUPLICATE`) alter the next *success* reply when it is
//! written.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
#[cfg(unix)]
use tokio::net::UnixStream;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::faults::OneShots;
use crate::protocol::{self, INVALID_REQUEST, Incoming, PARSE_ERROR};
use crate::shared::{ConnCommand, Shared};
use crate::sync::lock;

/// First read size; grows while reads fill the buffer.
const READ_MIN: usize = 16 * 1024;
/// Largest read size.
const READ_MAX: usize = 256 * 1024;
/// Stop reading while this much output waits for the client to read it.
const OUT_HIGH_WATER: usize = 16 * 1024 * 1024;
/// Move unwritten output to the front of the buffer once this much of it is
/// written.
const OUT_COMPACT_AT: usize = 1024 * 1024;
/// Release an emptied buffer that grew larger than this (e.g. `OVERSIZE`).
const KEEP_CAPACITY: usize = 4 * 1024 * 1024;

/// Serves one accepted connection until it closes, fails, is cut, or the
/// daemon drops it (by aborting this task or closing `commands`). Removes
/// itself from the daemon's table of live connections on the way out.
pub(crate) async fn serve<S: Socket>(
    mut stream: S,
    shared: Arc<Shared>,
    id: u64,
    mut commands: mpsc::UnboundedReceiver<ConnCommand>,
) {
    let _registration = Registration {
        shared: &shared,
        id,
    };
    let mut conn = Connection::new(&shared);
    let (mut reader, mut writer) = stream.halves();
    loop {
        if conn.finished() {
            break;
        }
        let pending = conn.out.len() - conn.out_pos;
        let readable = conn.wants_input(pending);
        if readable {
            conn.make_room();
        }
        let slice = shared.faults.slice();
        let write_end = match slice {
            0 => conn.out.len(),
            slice => conn.out.len().min(conn.out_pos + slice),
        };
        let due = conn.delayed.peek().map(|delayed| delayed.due);
        tokio::select! {
            biased;
            command = commands.recv() => match command {
                Some(command) => conn.on_command(command),
                None => break,
            },
            written = writer.write(&conn.out[conn.out_pos..write_end]), if pending > 0 => match written {
                Ok(n) if n > 0 => {
                    conn.on_written(n);
                    if slice != 0 {
                        tokio::task::yield_now().await;
                    }
                }
                _ => break,
            },
            read = reader.read_buf(&mut conn.input), if readable => match read {
                Ok(0) => conn.input_closed = true,
                Ok(n) => conn.on_input(n),
                Err(_) => break,
            },
            () = wait_until(due), if due.is_some() => conn.release_due(),
        }
    }
    drop((reader, writer));
    if conn.cut {
        discard_unread(|buf| stream.try_read(buf));
    }
}

/// Sleeps until `due`, or forever when there is nothing to wait for.
async fn wait_until(due: Option<Instant>) {
    match due {
        Some(due) => tokio::time::sleep_until(due).await,
        None => std::future::pending().await,
    }
}

/// Reads and drops what the client already sent, so that closing a cut
/// connection shows the client a plain end of file rather than a reset.
fn discard_unread(mut try_read: impl FnMut(&mut [u8]) -> std::io::Result<usize>) {
    let mut scratch = [0_u8; 8192];
    for _ in 0..128 {
        match try_read(&mut scratch) {
            Ok(n) if n > 0 => {}
            _ => break,
        }
    }
}

/// A stream socket a connection can be served on: a Unix socket, or a TCP
/// connection that has passed the token check. Borrowed halves keep reading
/// and writing independent without a lock.
pub(crate) trait Socket: Send + 'static {
    /// The reading half.
    type Read<'a>: tokio::io::AsyncRead + Unpin + Send
    where
        Self: 'a;
    /// The writing half.
    type Write<'a>: tokio::io::AsyncWrite + Unpin + Send
    where
        Self: 'a;
    /// Both halves, borrowed.
    fn halves(&mut self) -> (Self::Read<'_>, Self::Write<'_>);
    /// Read what is already available, without waiting.
    fn try_read(&self, buf: &mut [u8]) -> std::io::Result<usize>;
}

#[cfg(unix)]
impl Socket for UnixStream {
    type Read<'a> = tokio::net::unix::ReadHalf<'a>;
    type Write<'a> = tokio::net::unix::WriteHalf<'a>;
    fn halves(&mut self) -> (Self::Read<'_>, Self::Write<'_>) {
        self.split()
    }
    fn try_read(&self, buf: &mut [u8]) -> std::io::Result<usize> {
        UnixStream::try_read(self, buf)
    }
}

impl Socket for TcpStream {
    type Read<'a> = tokio::net::tcp::ReadHalf<'a>;
    type Write<'a> = tokio::net::tcp::WriteHalf<'a>;
    fn halves(&mut self) -> (Self::Read<'_>, Self::Write<'_>) {
        self.split()
    }
    fn try_read(&self, buf: &mut [u8]) -> std::io::Result<usize> {
        TcpStream::try_read(self, buf)
    }
}

/// Removes the connection from the daemon's table when its task ends.
struct Registration<'a> {
    shared: &'a Shared,
    id: u64,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.shared.forget_connection(self.id);
    }
}

/// A reply waiting in the `delayed` or `held` queue.
#[derive(Debug)]
enum Reply {
    /// A success reply: the raw id followed by the raw method.
    Result { text: Box<str>, id_len: usize },
    /// A complete error line.
    Line(Box<[u8]>),
}

/// A reply waiting for `DELAY` to pass; ordered so that `BinaryHeap` (a
/// max-heap) pops the earliest, and in arrival order among equals.
#[derive(Debug)]
struct Delayed {
    due: Instant,
    seq: u64,
    reply: Reply,
}

impl PartialEq for Delayed {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Delayed {}

impl PartialOrd for Delayed {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Delayed {
    fn cmp(&self, other: &Self) -> Ordering {
        (other.due, other.seq).cmp(&(self.due, self.seq))
    }
}

/// The state of one connection, apart from the socket.
struct Connection<'a> {
    shared: &'a Shared,
    /// Received bytes not yet consumed: at most one partial line.
    input: BytesMut,
    /// Leading bytes of `input` already searched for a newline.
    scanned: usize,
    /// Skipping the rest of an oversized line up to its newline.
    discarding: bool,
    /// The client shut down its writing side.
    input_closed: bool,
    /// How much room to make before the next read.
    read_size: usize,
    /// Output; `out[out_pos..]` is still to be written.
    out: Vec<u8>,
    out_pos: usize,
    /// Bytes written since the connection opened.
    written: u64,
    /// Command acknowledgements waiting for `written` to reach a mark.
    waiters: VecDeque<(u64, oneshot::Sender<()>)>,
    delayed: BinaryHeap<Delayed>,
    next_seq: u64,
    held: VecDeque<Reply>,
    /// A `CUT` reply was written: write what is pending, then close.
    cut: bool,
}

impl<'a> Connection<'a> {
    fn new(shared: &'a Shared) -> Self {
        Connection {
            shared,
            input: BytesMut::new(),
            scanned: 0,
            discarding: false,
            input_closed: false,
            read_size: READ_MIN,
            out: Vec::new(),
            out_pos: 0,
            written: 0,
            waiters: VecDeque::new(),
            delayed: BinaryHeap::new(),
            next_seq: 0,
            held: VecDeque::new(),
            cut: false,
        }
    }

    /// Nothing left to do: cut and flushed, or the client finished sending
    /// and every reply it is owed is written.
    fn finished(&self) -> bool {
        let flushed = self.out_pos == self.out.len();
        flushed
            && (self.cut || (self.input_closed && self.delayed.is_empty() && self.held.is_empty()))
    }

    fn wants_input(&self, pending: usize) -> bool {
        !self.input_closed && !self.cut && pending < OUT_HIGH_WATER
    }

    fn make_room(&mut self) {
        if self.input.capacity() - self.input.len() < self.read_size / 2 {
            self.input.reserve(self.read_size);
        }
    }

    /// Handles `n` freshly read bytes: answers every complete line.
    fn on_input(&mut self, n: usize) {
        if n >= self.read_size {
            self.read_size = (self.read_size * 2).min(READ_MAX);
        }
        let max = self.shared.max_line_bytes;
        let mut input = std::mem::take(&mut self.input);
        let mut start = 0;
        let mut scan = self.scanned;
        while !self.cut {
            let Some(offset) = memchr::memchr(b'\n', &input[scan..]) else {
                break;
            };
            let end = scan + offset;
            if self.discarding {
                self.discarding = false;
            } else if end - start > max {
                self.reject_oversized();
            } else {
                self.on_line(&input[start..end]);
            }
            start = end + 1;
            scan = start;
        }
        input.advance(start);
        if !self.discarding && input.len() > max {
            self.reject_oversized();
            self.discarding = true;
        }
        if self.discarding {
            input.clear();
            if input.capacity() > KEEP_CAPACITY {
                input = BytesMut::new();
            }
        }
        self.scanned = input.len();
        self.input = input;
    }

    fn on_line(&mut self, line: &[u8]) {
        match protocol::classify(line) {
            Incoming::Request(request) => {
                lock(&self.shared.journal).record_request(&request);
                if let Some(id) = request.id {
                    self.answer(id, request.method);
                }
            }
            Incoming::Control { kind } => {
                self.shared.counters.control_received();
                lock(&self.shared.journal).record_control(kind);
                if kind == protocol::STATUS_KIND {
                    self.answer_status();
                }
            }
            Incoming::Invalid { id } => {
                self.answer_error(id.unwrap_or("null"), INVALID_REQUEST, "invalid request")
            }
            Incoming::Malformed => self.answer_error("null", PARSE_ERROR, "parse error"),
            Incoming::Blank => {}
        }
    }

    fn reject_oversized(&mut self) {
        let message = format!(
            "request line longer than {} bytes",
            self.shared.max_line_bytes
        );
        self.answer_error("null", INVALID_REQUEST, &message);
    }

    /// Answers request `id` (raw JSON) for `method` (raw JSON string).
    fn answer(&mut self, id: &str, method: &str) {
        if self.shared.faults.deferring() {
            let mut text = String::with_capacity(id.len() + method.len());
            text.push_str(id);
            text.push_str(method);
            self.defer(Reply::Result {
                text: text.into_boxed_str(),
                id_len: id.len(),
            });
        } else {
            self.emit_result(id, method);
        }
    }

    /// Answers a `status` control message as the real daemon does; like
    /// any reply it waits out `DELAY` and `HANG` (a hung daemon reports
    /// nothing), but one-shot faults are for request replies only.
    fn answer_status(&mut self) {
        if self.shared.faults.deferring() {
            self.defer(Reply::Line(self.shared.status_line.clone()));
        } else if !self.cut {
            self.out.extend_from_slice(&self.shared.status_line);
        }
    }

    fn answer_error(&mut self, id: &str, code: i32, message: &str) {
        if self.shared.faults.deferring() {
            let mut line = Vec::new();
            protocol::write_error(&mut line, id, code, message);
            self.defer(Reply::Line(line.into_boxed_slice()));
        } else if !self.cut {
            protocol::write_error(&mut self.out, id, code, message);
        }
    }

    fn defer(&mut self, reply: Reply) {
        match self.shared.faults.delay() {
            Some(delay) => {
                self.delayed.push(Delayed {
                    due: Instant::now() + delay,
                    seq: self.next_seq,
                    reply,
                });
                self.next_seq += 1;
            }
            None => self.held.push_back(reply),
        }
    }

    /// Moves every delayed reply that is due on (to the output, or to the
    /// held queue while hanging).
    fn release_due(&mut self) {
        let now = Instant::now();
        while self
            .delayed
            .peek()
            .is_some_and(|delayed| delayed.due <= now)
        {
            if let Some(delayed) = self.delayed.pop() {
                self.release(delayed.reply);
            }
        }
    }

    fn release(&mut self, reply: Reply) {
        if self.shared.faults.hanging() {
            self.held.push_back(reply);
            return;
        }
        match reply {
            Reply::Result { text, id_len } => {
                let (id, method) = text.split_at(id_len);
                self.emit_result(id, method);
            }
            Reply::Line(line) => {
                if !self.cut {
                    self.out.extend_from_slice(&line);
                }
            }
        }
    }

    /// Writes a success reply into the output, applying one-shot faults.
    fn emit_result(&mut self, id: &str, method: &str) {
        if self.cut {
            return;
        }
        self.shared.counters.request_answered();
        let shots = self.shared.faults.take();
        if shots == OneShots::default() {
            protocol::write_result(&mut self.out, id, method);
            return;
        }
        let start = self.out.len();
        match shots.oversize {
            Some(min_bytes) => protocol::write_padded_result(&mut self.out, id, method, min_bytes),
            None => protocol::write_result(&mut self.out, id, method),
        }
        if shots.cut {
            let len = self.out.len() - start;
            self.out.truncate(start + len / 2);
            self.cut = true;
        } else if shots.duplicate {
            self.out.extend_from_within(start..);
        }
    }

    fn on_command(&mut self, command: ConnCommand) {
        match command {
            ConnCommand::Inject { bytes, done } => {
                if !self.cut {
                    self.out.extend_from_slice(&bytes);
                }
                self.signal_when_written(done);
            }
            ConnCommand::Resume { done } => {
                for reply in std::mem::take(&mut self.held) {
                    self.release(reply);
                }
                self.signal_when_written(done);
            }
        }
    }

    /// Signals `done` once everything now in the output is written.
    fn signal_when_written(&mut self, done: oneshot::Sender<()>) {
        let mark = self.written + (self.out.len() - self.out_pos) as u64;
        if mark == self.written {
            let _ = done.send(());
        } else {
            self.waiters.push_back((mark, done));
        }
    }

    fn on_written(&mut self, n: usize) {
        self.out_pos += n;
        self.written += n as u64;
        if self.out_pos == self.out.len() {
            self.out.clear();
            self.out_pos = 0;
            if self.out.capacity() > KEEP_CAPACITY {
                self.out = Vec::new();
            }
        } else if self.out_pos >= OUT_COMPACT_AT {
            self.out.drain(..self.out_pos);
            self.out_pos = 0;
        }
        while self
            .waiters
            .front()
            .is_some_and(|(mark, _)| *mark <= self.written)
        {
            if let Some((_, done)) = self.waiters.pop_front() {
                let _ = done.send(());
            }
        }
    }
}
