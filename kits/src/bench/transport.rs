//! The one bench client: newline-delimited JSON-RPC over any byte stream.
//!
//! The same code drives every subject, a wrapper's stdin/stdout as well as
//! the fake daemon's socket, so differences between subjects are the
//! subjects' own. It is built to cost as little as possible per call:
//! requests are serialised once ([`RequestTemplate`]), and responses are
//! scanned for their envelope only ([`scan_response`]), without allocating.
//! The client blocks; a watchdog bounds every wait.

use std::fmt;
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use harness::client::ClientError;

/// Capacity of the read buffer: many pipelined responses fit in one read.
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// The MCP protocol revision the bench initialises with.
pub const PROTOCOL_VERSION: &str = "2025-06-18";

/// A request line serialised once, with a hole for the (decimal) id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestTemplate {
    /// `,"method":...,"params":...}` and the newline.
    tail: Vec<u8>,
}

impl RequestTemplate {
    /// A template for `method` with `params` (any JSON value).
    pub fn new(method: &str, params: &Value) -> Self {
        let mut tail = Vec::with_capacity(64);
        tail.extend_from_slice(b",\"method\":");
        // Serialising a &str or a Value into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut tail, method);
        tail.extend_from_slice(b",\"params\":");
        let _ = serde_json::to_writer(&mut tail, params);
        tail.extend_from_slice(b"}\n");
        Self { tail }
    }

    /// `tools/call` of `tool` with empty arguments: what a wrapper is sent.
    pub fn tool_call(tool: &str) -> Self {
        Self::new(
            "tools/call",
            &serde_json::json!({"name": tool, "arguments": {}}),
        )
    }

    /// The daemon method `method` with empty params: what the floor sends
    /// straight to the fake daemon.
    pub fn daemon_call(method: &str) -> Self {
        Self::new(method, &serde_json::json!({}))
    }

    /// Replaces the contents of `out` with the request line for `id`,
    /// newline included.
    pub fn render(&self, id: u64, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        push_decimal(out, id);
        out.extend_from_slice(&self.tail);
    }
}

/// Appends `n` in decimal, without going through `fmt`.
fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[start..]);
}

/// The `notifications/initialized` line, sent after the `initialize`
/// response.
pub const INITIALIZED: &[u8] =
    b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\",\"params\":{}}\n";

/// The `initialize` request the bench sends to wrappers.
pub fn initialize_template() -> RequestTemplate {
    RequestTemplate::new(
        "initialize",
        &serde_json::json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "harness-bench", "version": env!("CARGO_PKG_VERSION")},
        }),
    )
}

/// The write half: renders and writes one request line per call.
#[derive(Debug)]
pub struct RequestWriter<W> {
    inner: W,
    line: Vec<u8>,
}

impl<W: Write> RequestWriter<W> {
    /// Wraps an unbuffered writer (a pipe or a socket): every request is
    /// written with one `write_all`, so nothing waits in a buffer.
    pub fn new(inner: W) -> Self {
        Self {
            inner,
            line: Vec::with_capacity(256),
        }
    }

    /// Sends the request of `template` with `id`.
    pub fn send(&mut self, template: &RequestTemplate, id: u64) -> Result<(), ClientError> {
        template.render(id, &mut self.line);
        self.inner.write_all(&self.line).map_err(ClientError::Write)
    }

    /// Sends `line` exactly as given (it must end with a newline).
    pub fn send_raw(&mut self, line: &[u8]) -> Result<(), ClientError> {
        self.inner.write_all(line).map_err(ClientError::Write)
    }
}

/// The response in one line (newline stripped or not), or `None` for a
/// line that is not one: a notification, a request from the server, or not
/// a JSON object. Only the envelope is deserialised (the id, and whether it
/// is an error); everything else is skipped without allocating.
pub fn scan_response(line: &[u8]) -> Option<Response> {
    // serde would also read an array as a struct (members in order).
    if line.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return None;
    }
    let envelope = serde_json::from_slice::<Envelope>(line).ok()?;
    if envelope.method.is_some() {
        return None;
    }
    let success = match (envelope.result, envelope.error) {
        (_, Some(_)) => false,
        (Some(is_error), None) => !is_error,
        (None, None) => return None,
    };
    Some(Response {
        id: envelope.id.as_ref().and_then(Value::as_u64),
        success,
    })
}

/// The members of a message the bench looks at. Each is `Some` when
/// present, even when its value is `null` (`"result": null` is a valid
/// success response).
#[derive(Deserialize)]
struct Envelope {
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    method: Option<IgnoredAny>,
    /// Whether the result is a tool error (see [`result_is_error`]).
    #[serde(default, deserialize_with = "result_is_error")]
    result: Option<bool>,
    #[serde(default, deserialize_with = "present")]
    error: Option<IgnoredAny>,
}

/// Deserialises a present member as `Some`, `null` included.
fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

/// Deserialises a present `result` as whether it is an object with
/// `"isError": true`; anything but an object is not an error.
fn result_is_error<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<bool>, D::Error> {
    deserializer.deserialize_any(ResultVisitor).map(Some)
}

struct ResultVisitor;

impl<'de> Visitor<'de> for ResultVisitor {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut is_error = false;
        while let Some(key) = map.next_key::<ResultKey>()? {
            match key {
                // Only `true` makes the result an error (MCP says it is a
                // boolean; anything else is read as "not an error").
                ResultKey::IsError => is_error = map.next_value::<Value>()? == Value::Bool(true),
                ResultKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(is_error)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(false)
    }

    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }

    // Scalars: a result that is not an object is not an error.

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<bool, E> {
        Ok(false)
    }
}

/// A key of the `result` object: `isError` or anything else.
#[derive(Deserialize)]
#[serde(field_identifier)]
enum ResultKey {
    #[serde(rename = "isError")]
    IsError,
    #[serde(other)]
    Other,
}

/// One response as read by [`ResponseReader::next_response`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    /// The response's id, when it is an unsigned integer.
    pub id: Option<u64>,
    /// Whether the call succeeded: a `result` that is not an MCP tool
    /// error (`"isError": true`); a JSON-RPC `error` is a failure.
    pub success: bool,
}

/// The read half: buffered, one response per call, lines that are not
/// responses skipped and counted.
#[derive(Debug)]
pub struct ResponseReader<R> {
    inner: BufReader<R>,
    line: Vec<u8>,
    progress: Arc<AtomicU64>,
    skipped: u64,
}

impl<R: Read> ResponseReader<R> {
    /// Wraps `inner` in a buffer.
    pub fn new(inner: R) -> Self {
        Self {
            inner: BufReader::with_capacity(READ_BUFFER_BYTES, inner),
            line: Vec::with_capacity(1024),
            progress: Arc::new(AtomicU64::new(0)),
            skipped: 0,
        }
    }

    /// A counter of lines read so far, for a watchdog to tell a slow
    /// subject from a stuck one.
    pub fn progress(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.progress)
    }

    /// Lines that were read but were not responses (notifications, server
    /// requests, non-JSON noise).
    pub fn skipped_lines(&self) -> u64 {
        self.skipped
    }

    /// The last line read, newline stripped: the text of the last response,
    /// for error messages.
    pub fn last_line(&self) -> &[u8] {
        &self.line
    }

    /// Reads lines until one is a response, and returns it.
    ///
    /// End of stream (the subject exited, or a watchdog shut the stream) is
    /// [`ClientError::Closed`].
    pub fn next_response(&mut self) -> Result<Response, ClientError> {
        loop {
            self.line.clear();
            // `read_until` retries reads that a signal interrupted.
            if let Ok(0) | Err(_) = self.inner.read_until(b'\n', &mut self.line) {
                return Err(ClientError::Closed {
                    waiting_for: "a response".to_owned(),
                });
            }
            self.progress.fetch_add(1, Ordering::Relaxed);
            while matches!(self.line.last(), Some(b'\n' | b'\r')) {
                self.line.pop();
            }
            match scan_response(&self.line) {
                Some(response) => return Ok(response),
                None => self.skipped += 1,
            }
        }
    }

    /// Reads responses until the one with `id`; earlier responses with
    /// other ids are counted as skipped.
    pub fn response_to(&mut self, id: u64) -> Result<Response, ClientError> {
        loop {
            let response = self.next_response()?;
            if response.id == Some(id) {
                return Ok(response);
            }
            self.skipped += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(template: &RequestTemplate, id: u64) -> String {
        let mut out = Vec::new();
        template.render(id, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn templates_render_the_issue_requests() {
        let wrapper = RequestTemplate::tool_call("topology");
        assert_eq!(
            render(&wrapper, 7),
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"topology\",\"arguments\":{}}}\n"
        );
        let floor = RequestTemplate::daemon_call("topology");
        assert_eq!(
            render(&floor, 0),
            "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"topology\",\"params\":{}}\n"
        );
        for id in [1, 9, 10, 99, 100, 12_345, u64::MAX] {
            let line = render(&floor, id);
            let value: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(value["id"].as_u64(), Some(id));
        }
        let init: Value = serde_json::from_str(&render(&initialize_template(), 1)).unwrap();
        assert_eq!(init["params"]["protocolVersion"], PROTOCOL_VERSION);
        let note: Value = serde_json::from_slice(INITIALIZED).unwrap();
        assert!(note.get("id").is_none());
        assert_eq!(note["method"], "notifications/initialized");
    }

    #[test]
    fn scans_responses_of_both_subjects_and_odd_messages() {
        // A line and, when it is a response, what is read of it.
        let ok = |id| Some(Response { id, success: true });
        let failed = |id| Some(Response { id, success: false });
        let cases: [(&[u8], Option<Response>); 15] = [
            (
                br#"{"jsonrpc":"2.0","id":42,"result":{"ok":true,"method":"topology","fake_daemon":true}}"#,
                ok(Some(42)),
            ),
            // The wrapper's answer embeds the daemon's as escaped text; an
            // escaped "isError" inside a string must not count.
            (
                br#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"{\"isError\":true}"}],"structuredContent":{"ok":true}}}"#,
                ok(Some(3)),
            ),
            (
                br#"{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"error: daemon_unreachable: bridge not connected"}],"isError":true}}"#,
                failed(Some(4)),
            ),
            (
                br#"{"id":5,"result":{"structuredContent":{"isError":true},"isError":false}}"#,
                ok(Some(5)),
            ),
            (
                br#"{"jsonrpc":"2.0","id":6,"error":{"code":-32601,"message":"no such method"}}"#,
                failed(Some(6)),
            ),
            // Member order does not matter, `result: null` is a success, and
            // non-integer ids are kept as unknown.
            (br#"{"result":null,"id":8,"jsonrpc":"2.0"}"#, ok(Some(8))),
            (br#"{"jsonrpc":"2.0","id":"a","result":[1,{"isError":true}]}"#, ok(None)),
            (br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700}}"#, failed(None)),
            (br#"{"jsonrpc":"2.0","id":1,"result":{"isError":"yes"}}"#, ok(Some(1))),
            // Not responses.
            (br#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#, None),
            (br#"{"jsonrpc":"2.0","id":9,"method":"ping","result":1}"#, None),
            (br#"{"jsonrpc":"2.0","id":9}"#, None),
            (b"not json", None),
            (b"[1,2]", None),
            (b"{\"id\":1,", None),
        ];
        for (line, expected) in cases {
            let line_text = String::from_utf8_lossy(line);
            assert_eq!(scan_response(line), expected, "{line_text}");
        }
    }

    #[test]
    fn reader_skips_noise_and_reports_eof() {
        let input: &[u8] = b"garbage\n{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n\
            {\"id\":1,\"result\":{}}\r\n{\"id\":2,\"result\":{}}\n{\"id\":3,\"error\":{}}";
        let mut reader = ResponseReader::new(input);
        let first = reader.next_response().unwrap();
        assert_eq!((first.id, first.success), (Some(1), true));
        assert_eq!(reader.skipped_lines(), 2);
        // A final line without a newline still counts.
        assert!(!reader.response_to(3).unwrap().success);
        assert_eq!(reader.skipped_lines(), 3);
        assert_eq!(reader.last_line(), b"{\"id\":3,\"error\":{}}");
        assert!(matches!(
            reader.next_response(),
            Err(ClientError::Closed { .. })
        ));
        assert_eq!(reader.progress().load(Ordering::Relaxed), 5);
    }

    #[test]
    fn writer_writes_one_line_per_request() {
        let mut writer = RequestWriter::new(Vec::new());
        let template = RequestTemplate::daemon_call("m");
        writer.send(&template, 1).unwrap();
        writer.send(&template, 2).unwrap();
        writer.send_raw(b"x\n").unwrap();
        let text = String::from_utf8(writer.inner).unwrap();
        assert_eq!(text.lines().count(), 3);
        assert!(text.ends_with("x\n"));
    }
}
