//! The MCP input stream: arbitrary bytes through the framing and the
//! dispatch `iai-mcp-wrapper` serves stdin with.
//!
//! Checked, for every input:
//! - the framing holds at most the line cap of a line not yet complete,
//!   whatever arrives (memory stays bounded), gives every line whole and
//!   in order, and calls a line oversized exactly when it is longer than
//!   the cap;
//! - every line is owed what the hostile-client oracle
//!   ([`harness::scenario::hostile::expected_reply`], built on `serde_json`
//!   alone) says: a line with a usable id gets exactly one answer with that
//!   id (a reply now, or a tool call the call path answers), a response
//!   from the client at most one, a line without one at most an error with
//!   `id: null`;
//! - every reply is one valid JSON-RPC 2.0 response on one line;
//! - differentially, a line is answered "parse error" exactly when it is
//!   not UTF-8 JSON by `serde_json`'s reading.

use bytes::BytesMut;
use harness::scenario::hostile::{Expect, expected_reply};
use iai_mcp_wrapper::codec::{Frame, LineCodec};
use iai_mcp_wrapper::mcp::dispatch::{self, Inbound};
use serde::de::IgnoredAny;
use serde_json::Value;
use tokio_util::codec::Decoder;

use crate::jsonrpc::assert_response;

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
    for (frame, line) in frames.iter().zip(&lines) {
        let owed = expected_reply(line, MAX_LINE);
        let answer = match frame {
            Frame::Line(bytes) => {
                assert_eq!(&bytes[..], *line, "a line comes out as it went in");
                let classified = dispatch::classify(bytes);
                if let Inbound::Reply(reply) = &classified.inbound {
                    assert_parse_error_agrees(line, reply);
                }
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
        assert_owed(line, &owed, &answer);
    }
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
        (Expect::Exactly(id), other) => {
            panic!("{shown} carries the id {id} and gets no answer: {other:?}")
        }
        (Expect::AtMostOnce(_), Inbound::ToolCall(_)) => {
            panic!("the client response {shown} was taken for a tool call")
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
        (_, Inbound::Cancel(_) | Inbound::Initialized | Inbound::Ignore) => {}
    }
}

/// A reply is a parse error exactly when `serde_json` cannot read the line
/// as UTF-8 JSON (a line of only whitespace is not a message at all).
fn assert_parse_error_agrees(line: &[u8], reply: &[u8]) {
    let reply: Value = serde_json::from_slice(reply).expect("checked as a response");
    let parse_error = reply["error"]["code"] == PARSE_ERROR;
    let json = std::str::from_utf8(line)
        .is_ok_and(|text| serde_json::from_str::<IgnoredAny>(text).is_ok());
    assert_eq!(
        parse_error,
        !json,
        "parse error {parse_error} but serde_json reads JSON {json}: {}",
        String::from_utf8_lossy(line)
    );
}
