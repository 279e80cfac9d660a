//! Newline framing with a size cap, shared by the MCP side (stdin) and the
//! daemon side (the socket).
//!
//! A line longer than the cap is not buffered: its bytes are discarded as
//! they arrive, scanned on the way for the object's top-level `"id"` (which
//! clients may put anywhere, often last), and the decoder reports it as
//! [`Frame::Oversized`] with that id. Memory stays bounded by the cap
//! whatever the peer sends, and the stream stays usable after the long line.

use bytes::{Buf, Bytes, BytesMut};
use serde_json::Value;
use tokio_util::codec::Decoder;

/// Default longest accepted line, on stdin and from the daemon: far above
/// any real tool call (a 384-float embedding is about 8 KiB) while keeping a
/// hostile peer from making the wrapper buffer without bound.
pub const DEFAULT_MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// Longest id value (in bytes of JSON text) recovered from an oversized
/// line; longer ones are given up on.
const MAX_ID_BYTES: usize = 256;

/// One unit read from a newline-delimited stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A complete line without its terminating newline (a trailing `\r` is
    /// kept: JSON parsers accept it as whitespace).
    Line(Bytes),
    /// A line that exceeded the cap.
    Oversized {
        /// The line's top-level request id, when it had a string or number
        /// one.
        id: Option<Value>,
    },
}

/// Splits a byte stream into lines of at most `max_len` bytes.
#[derive(Debug)]
pub struct LineCodec {
    max_len: usize,
    /// Bytes already scanned for a newline in the buffer.
    scanned: usize,
    /// Set while the rest of an oversized line is being discarded.
    discarding: Option<IdScanner>,
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
            if let Some(scanner) = self.discarding.as_mut() {
                match memchr::memchr(b'\n', buf) {
                    Some(pos) => {
                        scanner.feed(&buf[..pos]);
                        buf.advance(pos + 1);
                        let id = self.discarding.take().and_then(IdScanner::finish);
                        self.scanned = 0;
                        return Ok(Some(Frame::Oversized { id }));
                    }
                    None => {
                        scanner.feed(buf);
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
                        let id = recover_id(&buf[..end]);
                        buf.advance(end + 1);
                        return Ok(Some(Frame::Oversized { id }));
                    }
                    let line = buf.split_to(end + 1).freeze().slice(..end);
                    return Ok(Some(Frame::Line(line)));
                }
                None if buf.len() > self.max_len => {
                    let mut scanner = IdScanner::default();
                    scanner.feed(buf);
                    buf.clear();
                    self.scanned = 0;
                    self.discarding = Some(scanner);
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
        if let Some(scanner) = self.discarding.take() {
            return Ok(Some(Frame::Oversized {
                id: scanner.finish(),
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

/// The top-level `"id"` of a JSON object, read from a whole line or from
/// its first bytes: used to answer (or route) a line too large to parse.
/// Only a string or number id at the object's first level counts; anything
/// doubtful gives `None`.
pub fn recover_id(bytes: &[u8]) -> Option<Value> {
    let mut scanner = IdScanner::default();
    scanner.feed(bytes);
    scanner.finish()
}

/// Finds the top-level `"id"` of a JSON object fed to it in pieces, in
/// constant memory: a tiny tokenizer that tracks nesting, strings and
/// whether the next first-level string is a key.
#[derive(Debug, Default, Clone)]
pub struct IdScanner {
    depth: u32,
    top_is_object: bool,
    in_string: bool,
    escaped: bool,
    expect_key: bool,
    /// Capturing a first-level key (its first bytes).
    key: Option<Vec<u8>>,
    /// The last first-level key was `"id"` and its `:` has not come yet.
    key_is_id: bool,
    /// Capturing the value after `"id":`.
    value: Option<Vec<u8>>,
    found: Option<Value>,
    /// Done: the first `"id"`'s value has been judged, or the top-level
    /// value has closed (nothing after it is part of the object), so no
    /// later `"id"` counts.
    ended: bool,
}

impl IdScanner {
    /// Scan the next piece of the line.
    pub fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.found.is_some() || self.ended {
                return;
            }
            self.byte(b);
        }
    }

    /// The id, if one was found (a value still open at the end of the input
    /// is judged as it stands).
    pub fn finish(mut self) -> Option<Value> {
        if self.found.is_none() {
            self.close_value();
        }
        self.found
    }

    fn byte(&mut self, b: u8) {
        self.capture(b);
        if self.in_string {
            self.string_byte(b);
        } else {
            self.structure_byte(b);
        }
    }

    /// Keeps `b` as part of the `"id"` value being captured, if one is: a
    /// byte inside a string, or one that does not end or nest the value.
    /// A value longer than [`MAX_ID_BYTES`] is no id, and ends the scan.
    fn capture(&mut self, b: u8) {
        let Some(value) = self.value.as_mut() else {
            return;
        };
        if value.len() >= MAX_ID_BYTES {
            self.value = None;
            self.ended = true;
        } else if self.in_string || !matches!(b, b',' | b'}' | b'{' | b'[') {
            value.push(b);
        }
    }

    /// A byte inside a string: an escape, the closing quote (which ends a
    /// first-level key, telling whether it was `"id"`), or a byte of a key
    /// being read.
    fn string_byte(&mut self, b: u8) {
        if self.escaped {
            self.escaped = false;
        } else if b == b'\\' {
            self.escaped = true;
            // An escaped key is never the plain `"id"` the scan looks for.
            if let Some(key) = self.key.as_mut() {
                key.push(b);
            }
            return;
        } else if b == b'"' {
            self.in_string = false;
            if let Some(key) = self.key.take() {
                self.key_is_id = key == b"id";
                self.expect_key = false;
            }
            return;
        }
        if let Some(key) = self.key.as_mut()
            && key.len() < 3
        {
            key.push(b);
        }
    }

    /// A byte outside strings: the line's opening, and then the structure
    /// (strings begun, nesting, the first level's `:` and `,`).
    fn structure_byte(&mut self, b: u8) {
        // The line must open with an object (whitespace aside): anything
        // else before it means there is no top-level id to find.
        if self.depth == 0 && !matches!(b, b'{' | b'[') {
            if !b.is_ascii_whitespace() {
                self.ended = true;
            }
            return;
        }
        // Only whitespace may stand between the key `"id"` and its `:`.
        if self.key_is_id && b != b':' && !b.is_ascii_whitespace() {
            self.key_is_id = false;
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.top_is_object && self.expect_key {
                    self.key = Some(Vec::new());
                }
            }
            b'{' | b'[' => self.open(b),
            b'}' | b']' => self.close(),
            b':' if self.depth == 1 => {
                self.expect_key = false;
                if std::mem::take(&mut self.key_is_id) {
                    self.value = Some(Vec::new());
                }
            }
            b',' if self.depth == 1 => {
                self.close_value();
                self.expect_key = true;
            }
            // Anything else at the first level is part of a value.
            b if self.depth == 1 && !b.is_ascii_whitespace() => self.expect_key = false,
            _ => {}
        }
    }

    /// An object or array opens (`b` is `{` or `[`).
    fn open(&mut self, b: u8) {
        if self.depth == 1 && self.value.take().is_some() {
            // The id is an object or array: not a request id.
            self.ended = true;
        }
        if self.depth == 1 {
            self.expect_key = false;
        }
        if self.depth == 0 {
            self.top_is_object = b == b'{';
            self.expect_key = true;
        }
        self.depth = self.depth.saturating_add(1);
    }

    /// An object or array closes.
    fn close(&mut self) {
        if self.depth == 1 {
            self.close_value();
            self.ended = true;
        }
        self.depth = self.depth.saturating_sub(1);
        // A value just ended: a key may only follow a `,`.
        self.expect_key = false;
    }

    /// The value of the first `"id"` is complete: it is the id if it is a
    /// string or a number, and no later `"id"` counts either way.
    fn close_value(&mut self) {
        let Some(text) = self.value.take() else {
            return;
        };
        self.ended = true;
        if let Ok(v @ (Value::String(_) | Value::Number(_))) =
            serde_json::from_slice::<Value>(&text)
        {
            self.found = Some(v);
        }
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
    fn an_id_after_the_object_has_closed_does_not_count() {
        assert_eq!(recover_id(br#"{"x": 1},"id": 5"#), None);
        assert_eq!(recover_id(br#"{"x": 1} {"id": 5}"#), None);
        assert_eq!(recover_id(br#"{"x": {"y": 1}, "id": 5}"#), Some(json!(5)));
    }

    #[test]
    fn a_key_stands_right_after_the_brace_or_a_comma() {
        assert_eq!(recover_id(br#"{"a": 1, "id": 2}"#), Some(json!(2)));
        assert_eq!(recover_id(br#"{"a": "" x "id": 2}"#), None);
        assert_eq!(recover_id(br#"{"a" "id": 2}"#), None);
        assert_eq!(recover_id(br#"{"a": [1] "id": 2}"#), None);
    }

    #[test]
    fn a_key_written_with_an_escape_is_not_the_id() {
        assert_eq!(recover_id(br#"{"i\d": 5}"#), None);
        assert_eq!(recover_id(br#"{"\u0069d": 5, "id": 6}"#), Some(json!(6)));
    }

    #[test]
    fn a_line_that_does_not_open_with_an_object_has_no_id() {
        assert_eq!(recover_id(br#"  {"id": 5}"#), Some(json!(5)));
        assert_eq!(recover_id(br#"?{"id": 5}"#), None);
        assert_eq!(recover_id(br#""s" {"id": 5}"#), None);
    }

    #[test]
    fn only_the_first_id_counts_even_when_it_is_no_id() {
        assert_eq!(recover_id(br#"{"id": 1, "id": 2}"#), Some(json!(1)));
        assert_eq!(recover_id(br#"{"id": 48:"x", "id": 3}"#), None);
        assert_eq!(recover_id(br#"{"id": [1], "id": 3}"#), None);
        assert_eq!(recover_id(br#"{"id": null, "id": 3}"#), None);
    }

    #[test]
    fn only_whitespace_may_stand_between_the_id_key_and_its_colon() {
        assert_eq!(recover_id(br#"{"id" : 5}"#), Some(json!(5)));
        assert_eq!(recover_id(br#"{"id"x:5}"#), None);
        assert_eq!(recover_id(br#"{"id""y":5}"#), None);
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
        assert_eq!(frames[0], Frame::Oversized { id: Some(json!(7)) });
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
    fn finds_an_id_that_comes_after_megabytes_of_params() {
        let mut c = LineCodec::new(64);
        let mut input = br#"{"jsonrpc":"2.0","method":"tools/call","params":{"text":""#.to_vec();
        input.extend(std::iter::repeat_n(b'x', 100_000));
        input.extend_from_slice(br#""},"id":"late"}"#);
        input.push(b'\n');
        let chunks: Vec<&[u8]> = input.chunks(1000).collect();
        let frames = decode_all(&mut c, &chunks);
        assert_eq!(
            frames,
            vec![Frame::Oversized {
                id: Some(json!("late"))
            }]
        );
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
        assert_eq!(
            recover_id(br#"{"x":"a,\"id\":1","id":"z"}"#),
            Some(json!("z"))
        );
        assert_eq!(recover_id(br#"{"id":{"a":1},"x":2}"#), None);
        assert_eq!(recover_id(br#"{"idx":1,"id":2}"#), Some(json!(2)));
        assert_eq!(recover_id(br#"[{"id":1}]"#), None);
        assert_eq!(recover_id(b"\xff\xfe"), None);
    }
}
