//! The MCP stdio loop: read lines, answer what needs no daemon at once, run
//! tool calls concurrently through the bridge, write every response through
//! one writer, and shut down without losing a reply.

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};
use tokio_util::codec::FramedRead;

use super::dispatch::{self, Inbound, ToolCall};
use super::protocol::{self, Era};
use crate::bridge::{BridgeHandle, Request};
use crate::codec::{Frame, LineCodec, recover_id};

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

/// Serve MCP on `input`/`output` until EOF, `stop` completes, or output
/// fails; then let calls in flight finish (up to the grace period), fail the
/// rest, flush, and return why it stopped.
pub async fn serve<R, W, S, T>(
    input: R,
    output: W,
    bridge: BridgeHandle,
    warmup: T,
    config: ServerConfig,
    stop: S,
) -> StopReason
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
    S: Future<Output = ()>,
    T: WarmupTrigger,
{
    let (out_tx, out_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let mut writer = tokio::spawn(write_output(output, out_rx));
    let mut frames = FramedRead::new(input, LineCodec::new(config.max_line_bytes));
    let mut calls: JoinSet<CallOutput> = JoinSet::new();
    let mut live: HashMap<u64, (Value, AbortHandle)> = HashMap::new();
    let mut next_seq = 0u64;
    tokio::pin!(stop);

    let reason = loop {
        tokio::select! {
            frame = frames.next() => {
                let classified = match frame {
                    Some(Ok(Frame::Line(line))) => dispatch::classify(&line),
                    Some(Ok(Frame::Oversized { head })) => {
                        let _ = out_tx.send(protocol::encode(&dispatch::oversized(
                            recover_id(&head),
                            config.max_line_bytes,
                        )));
                        continue;
                    }
                    Some(Err(e)) => {
                        tracing::warn!(error = %e, "stdin read failed; treating as end of input");
                        break StopReason::Eof;
                    }
                    None => break StopReason::Eof,
                };
                if classified.era == Some(Era::Modern) {
                    warmup.initialized();
                }
                match classified.inbound {
                    Inbound::Reply(message) => {
                        let _ = out_tx.send(protocol::encode(&message));
                    }
                    Inbound::ToolCall(call) => {
                        next_seq += 1;
                        let seq = next_seq;
                        let id = call.id.clone();
                        let handle = calls.spawn(run_call(seq, call, bridge.clone()));
                        live.insert(seq, (id, handle));
                    }
                    Inbound::Cancel(id) => {
                        live.retain(|_, (call_id, handle)| {
                            let cancelled = *call_id == id;
                            if cancelled {
                                handle.abort();
                            }
                            !cancelled
                        });
                    }
                    Inbound::Initialized => warmup.initialized(),
                    Inbound::Ignore => {}
                }
            }
            Some(done) = calls.join_next(), if !calls.is_empty() => {
                deliver(done, &mut live, &out_tx);
            }
            () = &mut stop => break StopReason::Signal,
            _ = &mut writer => break StopReason::OutputClosed,
        }
    };

    // Drain: calls in flight get the grace period, then the bridge fails
    // whatever is left, so every one of them is still answered.
    let grace = tokio::time::sleep(config.shutdown_grace);
    tokio::pin!(grace);
    let mut bridge_stopped = false;
    while !calls.is_empty() {
        tokio::select! {
            Some(done) = calls.join_next() => deliver(done, &mut live, &out_tx),
            () = &mut grace, if !bridge_stopped => {
                bridge_stopped = true;
                bridge.shutdown().await;
            }
        }
    }
    drop(out_tx);
    if reason != StopReason::OutputClosed {
        let _ = writer.await;
    }
    reason
}

fn deliver(
    done: Result<CallOutput, tokio::task::JoinError>,
    live: &mut HashMap<u64, (Value, AbortHandle)>,
    out: &mpsc::UnboundedSender<Vec<u8>>,
) {
    // A call cancelled by the client was removed from `live`; its output,
    // if it finished anyway, is dropped.
    if let Ok(output) = done
        && live.remove(&output.seq).is_some()
    {
        let _ = out.send(output.line);
    }
}

async fn run_call(seq: u64, call: ToolCall, bridge: BridgeHandle) -> CallOutput {
    let ToolCall {
        id,
        era,
        tool,
        arguments,
    } = call;
    let outcome = match tool.daemon_request(arguments) {
        Ok((method, params)) => bridge
            .call(Request {
                method: method.to_owned(),
                params,
                replay_safe: tool.replay_safe(),
            })
            .await
            .map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    let result = protocol::finish_result(era, protocol::tool_result(outcome));
    CallOutput {
        seq,
        line: protocol::encode(&protocol::response(id, result)),
    }
}

/// The single stdout writer: buffered, flushed whenever the queue runs dry
/// so that a burst costs one write and a lone reply is never held back.
async fn write_output<W: AsyncWrite + Unpin>(
    output: W,
    mut lines: mpsc::UnboundedReceiver<Vec<u8>>,
) -> std::io::Result<()> {
    let mut out = BufWriter::with_capacity(64 * 1024, output);
    while let Some(line) = lines.recv().await {
        out.write_all(&line).await?;
        while let Ok(line) = lines.try_recv() {
            out.write_all(&line).await?;
        }
        out.flush().await?;
    }
    out.flush().await?;
    out.shutdown().await
}
