//! The MCP input stream: arbitrary bytes through the framing and the
//! dispatch `iai-mcp-wrapper` serves stdin with.
//!
//! Checked, for every input:
//! - the framing holds at most the line cap of a line not yet complete,
//!   whatever arrives (memory stays bounded), gives every line whole and
//!   in order, and calls a line oversized exactly when it is longer than
//!   the cap;
//! - every line is owed what the hostile-client oracle
//!   ([`mcp_oracle::expected_reply`], built on `serde_json`
//!   alone) says: a line with a usable id gets exactly one answer with that
//!   id (a reply now, or a tool call the call path answers), a response
//!   from the client at most one, a line without one at most an error with
//!   `id: null`;
//! - every reply is one valid JSON-RPC 2.0 response on one line;
//! - differentially, a line is answered "parse error" exactly when it is
//!   not UTF-8 JSON by `serde_json`'s reading, the names of an object's
//!   members decoded (a line of only whitespace is not a message);
//! - the whole input through the real stdio loop (`mcp::server::serve`,
//!   with a daemon that is not there, so every tool call ends in an error
//!   after the connect wait, on a paused clock): every line written to
//!   stdout is a valid JSON-RPC response, every id owed an answer gets
//!   exactly one (a tool call cancelled by a later line may get none), no
//!   id gets more than it is owed, and errors with `id: null` are at most
//!   the lines without a usable id.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use iai_mcp_wrapper::bridge::{
    self, Backoff, Bridge, BridgeMode, DriverConfig, Policy, Timings, WatchSettings, report,
};
use iai_mcp_wrapper::call::Caller;
use iai_mcp_wrapper::codec::{Frame, LineCodec};
use iai_mcp_wrapper::degraded::{Degraded, DegradedConfig};
use iai_mcp_wrapper::mcp::dispatch::{self, Inbound};
use iai_mcp_wrapper::mcp::server::{ServerConfig, Serving, serve};
use iai_mcp_wrapper::programs::Installation;
use iai_mcp_wrapper::surface::Surface;
use iai_mcp_wrapper::transport::Endpoint;
use mcp_oracle::{Expect, expected_reply};
use serde::de::IgnoredAny;
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::sync::watch;
use tokio_util::codec::Decoder;

use crate::jsonrpc::{Members, assert_response};

/// The line cap in this target: small, so that oversized lines, and lines
/// cut across reads, are common.
pub const MAX_LINE: usize = 512;

/// JSON-RPC's parse error.
const PARSE_ERROR: i64 = -32700;

/// Runs one input: its first byte sets how many bytes each read brings
/// (1 to 256), the rest is what the host writes.
pub fn check(data: &[u8]) {
    let Some((&first, stream)) = data.split_first() else {
        return;
    };
    let read_size = usize::from(first) + 1;
    let frames = frame(stream, read_size);
    let lines = lines(stream);
    assert_eq!(
        frames.len(),
        lines.len(),
        "one frame per line: {frames:?} for {lines:?}"
    );
    let mut owed = Owed::default();
    for (frame, line) in frames.iter().zip(&lines) {
        let expect = expected_reply(line, MAX_LINE);
        let answer = match frame {
            Frame::Line(bytes) => {
                assert_eq!(&bytes[..], *line, "a line comes out as it went in");
                let classified = dispatch::classify(bytes, &Surface::builtin(None));
                assert_parse_error_agrees(line, &classified.inbound);
                classified.inbound
            }
            Frame::Oversized { id } => {
                assert!(
                    line.len() > MAX_LINE,
                    "{} bytes is not oversized",
                    line.len()
                );
                Inbound::Reply(dispatch::oversized(id.clone(), MAX_LINE))
            }
        };
        assert_owed(line, &expect, &answer);
        owed.add(&expect, &answer);
    }
    owed.assert_met(&served(stream));
}

/// The frames of `stream` read `read_size` bytes at a time, checking the
/// buffer after every read.
fn frame(stream: &[u8], read_size: usize) -> Vec<Frame> {
    let mut codec = LineCodec::new(MAX_LINE);
    let mut buffer = BytesMut::new();
    let mut frames = Vec::new();
    for read in stream.chunks(read_size) {
        buffer.extend_from_slice(read);
        while let Some(frame) = codec.decode(&mut buffer).expect("framing never fails") {
            frames.push(frame);
        }
        assert!(
            buffer.len() <= MAX_LINE,
            "{} bytes held for a {MAX_LINE}-byte cap",
            buffer.len()
        );
    }
    while let Some(frame) = codec.decode_eof(&mut buffer).expect("framing never fails") {
        frames.push(frame);
    }
    assert!(buffer.is_empty(), "nothing is left at the end");
    for frame in &frames {
        if let Frame::Line(line) = frame {
            assert!(
                line.len() <= MAX_LINE,
                "a {}-byte line passed the cap",
                line.len()
            );
        }
    }
    frames
}

/// The lines of `stream` as a reader splitting at newlines sees them (a
/// last line without its newline counts).
fn lines(stream: &[u8]) -> Vec<&[u8]> {
    let mut lines: Vec<&[u8]> = stream.split(|b| *b == b'\n').collect();
    if lines.last().is_some_and(|last| last.is_empty()) {
        lines.pop();
    }
    lines
}

/// The answer to `line` is what the oracle says it is owed.
fn assert_owed(line: &[u8], owed: &Expect, answer: &Inbound) {
    let shown = String::from_utf8_lossy(line);
    match (owed, answer) {
        (Expect::Exactly(id) | Expect::AtMostOnce(id), Inbound::Reply(reply)) => {
            assert_eq!(
                &assert_response(reply),
                id,
                "the reply to {shown} carries its id"
            );
        }
        (Expect::Exactly(id), Inbound::ToolCall(call)) => {
            assert_eq!(&call.id, id, "the call {shown} is answered with its id");
        }
        (Expect::Exactly(id), Inbound::Listen(stream)) => {
            assert_eq!(&stream.id, id, "the stream {shown} is answered with its id");
        }
        (Expect::Exactly(id), other) => {
            panic!("{shown} carries the id {id} and gets no answer: {other:?}")
        }
        (Expect::AtMostOnce(_), Inbound::ToolCall(_) | Inbound::Listen(_)) => {
            panic!("the client response {shown} was taken for a request")
        }
        (Expect::NoId, Inbound::Reply(reply)) => {
            assert_eq!(
                assert_response(reply),
                Value::Null,
                "{shown} has no usable id: its error carries null"
            );
        }
        (Expect::NoId, Inbound::ToolCall(call)) => {
            panic!(
                "{shown} has no usable id but became a call with {}",
                call.id
            )
        }
        (Expect::NoId, Inbound::Listen(stream)) => {
            panic!(
                "{shown} has no usable id but opened a stream with {}",
                stream.id
            )
        }
        (_, Inbound::Cancel(_) | Inbound::Initialized | Inbound::Ignore) => {}
    }
}

/// A line is answered with a parse error exactly when `serde_json` cannot
/// read it as UTF-8 JSON (a line of only whitespace is not a message at
/// all, and gets nothing).
fn assert_parse_error_agrees(line: &[u8], answer: &Inbound) {
    let text = std::str::from_utf8(line).ok();
    if text.is_some_and(|t| t.trim_ascii().is_empty()) {
        assert!(
            matches!(answer, Inbound::Ignore),
            "a blank line gets nothing"
        );
        return;
    }
    // JSON by the grammar, and (as the wrapper reads a line) the names of
    // an object's members, or a lone top-level scalar, decode: a broken
    // escape or an unholdable number there spoils the whole line, one in a
    // skipped value does not.
    let json = text.is_some_and(|t| {
        let start = t.trim_ascii_start();
        serde_json::from_str::<IgnoredAny>(t).is_ok()
            && (!start.starts_with('{') || Members::of(line).is_some())
            && (start.starts_with(['{', '[']) || serde_json::from_str::<Value>(t).is_ok())
    });
    let parse_error = match answer {
        Inbound::Reply(reply) => {
            let reply: Value = serde_json::from_slice(reply).expect("a reply is JSON");
            reply["error"]["code"] == PARSE_ERROR
        }
        _ => false,
    };
    assert_eq!(
        parse_error,
        !json,
        "parse error {parse_error} but serde_json reads JSON {json}: {}",
        String::from_utf8_lossy(line)
    );
}

/// What the whole input is owed, line by line, for judging the stdio
/// loop's output.
#[derive(Default)]
struct Owed {
    /// Per id (as JSON text): answers owed, and answers allowed beyond.
    ids: HashMap<String, (usize, usize)>,
    /// Tool calls and notification streams by id, not yet cancelled by a
    /// later line.
    calls: HashMap<String, usize>,
    /// Lines that may be answered with `id: null`.
    anonymous: usize,
}

impl Owed {
    fn add(&mut self, expect: &Expect, answer: &Inbound) {
        match (expect, answer) {
            (Expect::Exactly(id), Inbound::ToolCall(_) | Inbound::Listen(_)) => {
                *self.calls.entry(id.to_string()).or_default() += 1;
                self.ids.entry(id.to_string()).or_default().0 += 1;
            }
            (Expect::Exactly(id), _) => self.ids.entry(id.to_string()).or_default().0 += 1,
            (Expect::AtMostOnce(id), _) => self.ids.entry(id.to_string()).or_default().1 += 1,
            (Expect::NoId, _) => self.anonymous += 1,
        }
        if let Inbound::Cancel(id) = answer {
            // Every call in flight with that id is answered no more.
            let key = id.to_string();
            if let Some(cancelled) = self.calls.remove(&key) {
                let owed = self.ids.entry(key).or_default();
                owed.0 -= cancelled;
                owed.1 += cancelled;
            }
        }
    }

    fn assert_met(&self, output: &[Vec<u8>]) {
        let mut got: HashMap<String, usize> = HashMap::new();
        let mut nulls = 0;
        for line in output.iter().filter(|line| !is_notification(line)) {
            match assert_response(line) {
                Value::Null => nulls += 1,
                id => *got.entry(id.to_string()).or_default() += 1,
            }
        }
        for (id, (owed, extra)) in &self.ids {
            let answered = got.get(id).copied().unwrap_or(0);
            assert!(
                (*owed..=owed + extra).contains(&answered),
                "id {id}: {answered} answers on stdout, {owed} owed (+{extra} allowed)"
            );
        }
        for (id, answered) in &got {
            assert!(
                self.ids.contains_key(id),
                "id {id}: {answered} answers, none owed"
            );
        }
        assert!(
            nulls <= self.anonymous,
            "{nulls} errors with id null for {} lines without a usable id",
            self.anonymous
        );
    }
}

/// Whether an output line is a notification (a stream's acknowledgement,
/// say) rather than a response: a `method` and no `id`.
fn is_notification(line: &[u8]) -> bool {
    Members::of(line.strip_suffix(b"\n").unwrap_or(line))
        .is_some_and(|m| m.count("method") == 1 && m.count("id") == 0)
}

/// The input through the real stdio loop; what it wrote, line by line
/// (newlines kept). No daemon listens at the socket, the CLI fallback is
/// off, and the clock is paused, so every tool call ends the same way.
fn served(stream: &[u8]) -> Vec<Vec<u8>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let timings = Timings {
            connect_wait: Duration::from_millis(100),
            backoff: Backoff::new(Duration::from_millis(10), Duration::from_millis(20))
                .expect("valid backoff"),
            ..Timings::default()
        };
        let policy = Policy::new(BridgeMode::Fixed, timings).expect("valid policy");
        let socket = std::path::PathBuf::from("/nonexistent/iai-mcp-fuzz/daemon.sock");
        let (handle, driver) = bridge::spawn(
            Bridge::new(policy, socket.display().to_string(), 1),
            DriverConfig {
                endpoint: Endpoint::Unix(socket),
                connect_timeout: Duration::from_secs(1),
                probe_timeout: Duration::from_secs(1),
                max_line_bytes: MAX_LINE,
                watch: WatchSettings::default(),
                reporter: report::unlogged,
            },
        );
        let degraded = Degraded::new(
            DegradedConfig {
                enabled: false,
                ..DegradedConfig::default()
            },
            &Installation::default(),
        );
        let (out_writer, mut out_reader) = tokio::io::duplex(1 << 16);
        let reader = tokio::spawn(async move {
            let mut out = Vec::new();
            out_reader.read_to_end(&mut out).await.map(|_| out)
        });
        let config = ServerConfig {
            max_line_bytes: MAX_LINE,
            shutdown_grace: Duration::from_secs(5),
        };
        let (_surface, surface) = watch::channel(Arc::new(Surface::builtin(None)));
        let serving = Serving {
            surface,
            caller: Caller::new(handle.clone(), degraded),
            warmup: (),
        };
        serve(stream, out_writer, serving, config, std::future::pending()).await;
        handle.shutdown().await;
        driver.await.expect("the bridge's driver ends");
        let out = reader
            .await
            .expect("the reader ends")
            .expect("stdout reads");
        out.split_inclusive(|b| *b == b'\n')
            .map(<[u8]>::to_vec)
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn owed_one(id: Value) -> Owed {
        let mut owed = Owed::default();
        owed.add(&Expect::Exactly(id), &Inbound::Ignore);
        owed
    }

    #[test]
    #[should_panic(expected = "0 answers on stdout, 1 owed")]
    fn a_missing_answer_is_caught() {
        owed_one(json!(7)).assert_met(&[]);
    }

    #[test]
    #[should_panic(expected = "2 answers on stdout, 1 owed")]
    fn a_second_answer_is_caught() {
        let line = b"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n".to_vec();
        owed_one(json!(7)).assert_met(&[line.clone(), line]);
    }

    #[test]
    #[should_panic(expected = "a reply carries an id")]
    fn a_reply_without_an_id_is_caught() {
        owed_one(json!(7)).assert_met(&[b"{\"jsonrpc\":\"2.0\",\"result\":{}}\n".to_vec()]);
    }

    #[test]
    fn a_cancelled_call_may_go_unanswered() {
        let mut owed = Owed::default();
        let call = dispatch::classify(
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"topology"}}"#,
            &Surface::builtin(None),
        );
        owed.add(&Expect::Exactly(json!(7)), &call.inbound);
        owed.add(&Expect::NoId, &Inbound::Cancel(json!(7)));
        owed.assert_met(&[]);
    }
}
