//! Newline framing with a size cap, shared by the MCP side (stdin) and the
//! daemon side (the socket).
//!
//! A line longer than the cap is not buffered: its bytes are discarded as
//! they arrive, only its first bytes are kept so that the request id can be
//! read from them, and the decoder reports it as [`Frame::Oversized`]. Memory
//! stays bounded by the cap whatever the peer sends, and the stream stays
//! usable after the long line.

use bytes::{Buf, Bytes, BytesMut};
use serde_json::Value;
use tokio_util::codec::Decoder;

/// How many leading bytes of an oversized line are kept for id recovery.
const HEAD_BYTES: usize = 512;

/// One unit read from a newline-delimited stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A complete line without its terminating newline (a trailing `\r` is
    /// kept: JSON parsers accept it as whitespace).
    Line(Bytes),
    /// A line that exceeded the cap; `head` holds its first bytes.
    Oversized {
        /// The first bytes of the line (at most a few hundred).
        head: Bytes,
    },
}

/// Splits a byte stream into lines of at most `max_len` bytes.
#[derive(Debug)]
pub struct LineCodec {
    max_len: usize,
    /// Bytes already scanned for a newline in the buffer.
    scanned: usize,
    /// Set while the rest of an oversized line is being discarded.
    discarding: Option<BytesMut>,
}

impl LineCodec {
    /// A codec accepting lines of up to `max_len` bytes.
    pub fn new(max_len: usize) -> Self {
        LineCodec {
            max_len,
            scanned: 0,
            discarding: None,
        }
    }

    /// The cap in bytes.
    pub fn max_len(&self) -> usize {
        self.max_len
    }
}

impl Decoder for LineCodec {
    type Item = Frame;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, Self::Error> {
        loop {
            if let Some(head) = self.discarding.as_mut() {
                match memchr::memchr(b'\n', buf) {
                    Some(pos) => {
                        buf.advance(pos + 1);
                        let head = self.discarding.take().unwrap_or_default().freeze();
                        self.scanned = 0;
                        return Ok(Some(Frame::Oversized { head }));
                    }
                    None => {
                        let room = HEAD_BYTES.saturating_sub(head.len());
                        head.extend_from_slice(&buf[..room.min(buf.len())]);
                        buf.clear();
                        return Ok(None);
                    }
                }
            }
            let start = self.scanned;
            match memchr::memchr(b'\n', &buf[start..]) {
                Some(offset) => {
                    let end = start + offset;
                    self.scanned = 0;
                    if end > self.max_len {
                        let head = Bytes::copy_from_slice(&buf[..HEAD_BYTES.min(end)]);
                        buf.advance(end + 1);
                        return Ok(Some(Frame::Oversized { head }));
                    }
                    let line = buf.split_to(end + 1).freeze().slice(..end);
                    return Ok(Some(Frame::Line(line)));
                }
                None if buf.len() > self.max_len => {
                    let mut head = BytesMut::with_capacity(HEAD_BYTES);
                    head.extend_from_slice(&buf[..HEAD_BYTES.min(buf.len())]);
                    buf.clear();
                    self.scanned = 0;
                    self.discarding = Some(head);
                    continue;
                }
                None => {
                    self.scanned = buf.len();
                    return Ok(None);
                }
            }
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, Self::Error> {
        if let Some(frame) = self.decode(buf)? {
            return Ok(Some(frame));
        }
        if let Some(head) = self.discarding.take() {
            return Ok(Some(Frame::Oversized {
                head: head.freeze(),
            }));
        }
        if buf.is_empty() {
            return Ok(None);
        }
        // A final line without its newline still counts as a line.
        self.scanned = 0;
        let line = buf.split().freeze();
        Ok(Some(Frame::Line(line)))
    }
}

/// The top-level `"id"` of a JSON object that may be cut short: used to
/// answer (or route) a line too large to parse whole. Only a string or
/// number id at the object's first level counts; anything doubtful gives
/// `None`.
pub fn recover_id(head: &[u8]) -> Option<Value> {
    let mut depth = 0usize;
    let mut i = 0usize;
    let n = head.len();
    while i < n {
        match head[i] {
            b'"' => {
                let end = string_end(head, i)?;
                if depth == 1 && &head[i..=end] == b"\"id\"" {
                    let mut j = end + 1;
                    while j < n && head[j].is_ascii_whitespace() {
                        j += 1;
                    }
                    if j < n && head[j] == b':' {
                        return parse_scalar(&head[j + 1..]);
                    }
                }
                i = end + 1;
            }
            b'{' | b'[' => {
                depth += 1;
                i += 1;
            }
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                i += 1;
            }
            _ => i += 1,
        }
    }
    None
}

/// Index of the quote closing the string that opens at `start`.
fn string_end(s: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < s.len() {
        match s[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// A JSON string or number at the start of `s`, followed by `,` or `}`.
fn parse_scalar(s: &[u8]) -> Option<Value> {
    let trimmed = s.iter().position(|b| !b.is_ascii_whitespace())?;
    let s = &s[trimmed..];
    let len = if s.first() == Some(&b'"') {
        string_end(s, 0)? + 1
    } else {
        s.iter()
            .position(|b| matches!(b, b',' | b'}') || b.is_ascii_whitespace())?
    };
    match serde_json::from_slice::<Value>(&s[..len]).ok()? {
        v @ (Value::String(_) | Value::Number(_)) => Some(v),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decode_all(codec: &mut LineCodec, input: &[&[u8]]) -> Vec<Frame> {
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for chunk in input {
            buf.extend_from_slice(chunk);
            while let Some(frame) = codec.decode(&mut buf).expect("decode") {
                out.push(frame);
            }
        }
        while let Some(frame) = codec.decode_eof(&mut buf).expect("eof") {
            out.push(frame);
        }
        out
    }

    fn line(s: &str) -> Frame {
        Frame::Line(Bytes::copy_from_slice(s.as_bytes()))
    }

    #[test]
    fn splits_lines_across_and_within_chunks() {
        let mut c = LineCodec::new(100);
        let frames = decode_all(&mut c, &[b"ab", b"c\nde\nf", b"g\n", b"tail"]);
        assert_eq!(
            frames,
            vec![line("abc"), line("de"), line("fg"), line("tail")]
        );
    }

    #[test]
    fn oversized_line_is_reported_once_and_the_stream_recovers() {
        let mut c = LineCodec::new(8);
        let frames = decode_all(
            &mut c,
            &[b"{\"id\":7,", b"\"x\":\"aaaaaaaa", b"aaaaaaa\"}\nok\n"],
        );
        assert_eq!(frames.len(), 2);
        match &frames[0] {
            Frame::Oversized { head } => assert!(head.starts_with(b"{\"id\":7,")),
            other => panic!("expected oversized, got {other:?}"),
        }
        assert_eq!(frames[1], line("ok"));
    }

    #[test]
    fn oversized_line_in_one_chunk_is_cut_at_its_newline() {
        let mut c = LineCodec::new(4);
        let frames = decode_all(&mut c, &[b"0123456789\nabc\n"]);
        assert_eq!(frames[1], line("abc"));
        assert!(matches!(frames[0], Frame::Oversized { .. }));
    }

    #[test]
    fn buffer_never_grows_past_the_cap_while_discarding() {
        let mut c = LineCodec::new(16);
        let mut buf = BytesMut::new();
        for _ in 0..1000 {
            buf.extend_from_slice(&[b'x'; 64]);
            assert!(c.decode(&mut buf).expect("decode").is_none());
            assert!(buf.len() <= 64);
        }
    }

    #[test]
    fn recovers_top_level_ids_only() {
        assert_eq!(
            recover_id(br#"{"jsonrpc":"2.0","id":12,"method":"x""#),
            Some(json!(12))
        );
        assert_eq!(recover_id(br#"{"id" : "a\"b", "#), Some(json!("a\"b")));
        assert_eq!(recover_id(br#"{"params":{"id":3},"id":4}"#), Some(json!(4)));
        assert_eq!(recover_id(br#"{"params":{"id":3},"x":"#), None);
        assert_eq!(recover_id(br#"{"id":null,"#), None);
        assert_eq!(recover_id(br#"{"id":12"#), None, "number may be cut short");
        assert_eq!(recover_id(br#"[{"id":1}]"#), None);
        assert_eq!(recover_id(b"\xff\xfe"), None);
    }
}
