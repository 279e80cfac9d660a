//! The daemon's side of the socket protocol (docs/CONTRACT.md section 4): sorting
//! one received line into request, control message or error, and writing the
//! reply lines.
//!
//! Everything here borrows from the received line: ids, method names and
//! params are kept as the exact JSON text the client sent, so an id is echoed
//! byte for byte (`1.0` stays `1.0`) and answering a request costs no
//! allocation beyond appending to the connection's output buffer.

use std::fmt::Write as _;

use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

/// JSON-RPC error code for a line that is not JSON.
pub const PARSE_ERROR: i32 = -32700;

/// JSON-RPC error code for JSON that is not a valid request, and for a line
/// longer than the configured limit.
pub const INVALID_REQUEST: i32 = -32600;

/// The id carried by the `STRAY` response, which no client is expected to use.
pub const STRAY_ID: u64 = 999_999_999;

/// The complete line `STRAY` writes: a well-formed response to a request
/// nobody sent.
pub const STRAY_LINE: &str = "{\"jsonrpc\":\"2.0\",\"id\":999999999,\"result\":{\"ok\":true,\"method\":\"stray\",\"fake_daemon\":true,\"stray\":true}}\n";

/// What one received line is, as far as the daemon is concerned.
///
/// The `&str` fields are raw JSON texts borrowed from the line (a string
/// keeps its quotes), ready to be copied into a reply or a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Incoming<'a> {
    /// A JSON-RPC 2.0 request; a notification when `id` is `None`.
    Request(Request<'a>),
    /// A control message: an object without `jsonrpc` whose `type` is a
    /// string (the real daemon knows status, user_initiated_sleep,
    /// force_wake, force_rem, pause, resume and session_open). Only
    /// `status` is answered ([`status_line`]).
    Control {
        /// The `type` member, as a JSON string literal.
        kind: &'a str,
    },
    /// Valid JSON that is not a valid request: answered with
    /// [`INVALID_REQUEST`], echoing `id` when the message carried a usable
    /// one (a string, a number or null).
    Invalid {
        /// The request's id, when one could be recovered.
        id: Option<&'a str>,
    },
    /// Not JSON at all: answered with [`PARSE_ERROR`] and id null.
    Malformed,
    /// Only whitespace: ignored, like the real daemon does.
    Blank,
}

/// A syntactically valid JSON-RPC 2.0 request, as raw JSON texts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request<'a> {
    /// The id (string, number or null); `None` for a notification.
    pub id: Option<&'a str>,
    /// The method, a JSON string literal including its quotes.
    pub method: &'a str,
    /// The params (an object or an array), when present.
    pub params: Option<&'a str>,
}

/// The members the daemon looks at; everything else is skipped unparsed.
/// Each member is `Some` when present, even when its value is `null`.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present", rename = "type")]
    kind: Option<&'a RawValue>,
}

/// Deserializes a member that is present (so `null` becomes `Some("null")`
/// rather than `None`, which is what serde does for `Option` by default).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&'de RawValue>::deserialize(deserializer).map(Some)
}

/// Sorts one received line (without its newline) into an [`Incoming`].
/// A line that is not UTF-8 is not JSON (RFC 8259), even when the bad bytes
/// sit in a member the daemon would skip.
pub fn classify(line: &[u8]) -> Incoming<'_> {
    let Ok(line) = std::str::from_utf8(line) else {
        return Incoming::Malformed;
    };
    match line
        .trim_start_matches(|c: char| c.is_ascii_whitespace())
        .as_bytes()
        .first()
    {
        None => Incoming::Blank,
        Some(b'{') => match serde_json::from_str::<Envelope<'_>>(line) {
            Ok(envelope) => envelope.interpret(),
            // Well-formed JSON of the wrong shape, e.g. a duplicated member.
            Err(err) if err.is_data() => Incoming::Invalid { id: None },
            Err(_) => Incoming::Malformed,
        },
        // Arrays, strings, numbers...: valid JSON perhaps, never a request.
        Some(_) => match serde_json::from_str::<IgnoredAny>(line) {
            Ok(_) => Incoming::Invalid { id: None },
            Err(_) => Incoming::Malformed,
        },
    }
}

impl<'a> Envelope<'a> {
    fn interpret(self) -> Incoming<'a> {
        let usable_id = self.id.map(RawValue::get).filter(|id| is_usable_id(id));
        let invalid = Incoming::Invalid { id: usable_id };
        let Some(version) = self.jsonrpc else {
            return match self.kind.map(RawValue::get) {
                Some(kind) if kind.starts_with('"') => Incoming::Control { kind },
                _ => invalid,
            };
        };
        if version.get() != "\"2.0\"" {
            return invalid;
        }
        let Some(method) = self
            .method
            .map(RawValue::get)
            .filter(|m| m.starts_with('"'))
        else {
            return invalid;
        };
        let params = self.params.map(RawValue::get);
        if params.is_some_and(|p| !p.starts_with(['{', '['])) {
            return invalid;
        }
        if self.id.is_some() && usable_id.is_none() {
            return invalid;
        }
        Incoming::Request(Request {
            id: usable_id,
            method,
            params,
        })
    }
}

/// JSON-RPC ids are strings, numbers or null.
fn is_usable_id(raw: &str) -> bool {
    raw == "null" || raw.starts_with(|c: char| c == '"' || c == '-' || c.is_ascii_digit())
}

/// The `type` of the status control message, as the raw JSON text
/// [`Incoming::Control`] holds.
pub const STATUS_KIND: &str = "\"status\"";

/// The line the `status` control message is answered with, the shape of
/// the real daemon's answer cut to the members the wrapper reads:
/// `{"ok":true,"state":"WAKE","version":<release>}`, without `version`
/// when `release` is `None`.
pub fn status_line(release: Option<&str>) -> Vec<u8> {
    let mut reply = serde_json::json!({ "ok": true, "state": "WAKE" });
    if let Some(release) = release {
        reply["version"] = serde_json::Value::from(release);
    }
    let mut line = reply.to_string().into_bytes();
    line.push(b'\n');
    line
}

const RESULT_HEAD: &str = "{\"jsonrpc\":\"2.0\",\"id\":";
const RESULT_METHOD: &str = ",\"result\":{\"ok\":true,\"method\":";
const RESULT_TAIL: &str = ",\"fake_daemon\":true}}\n";
const PADDING_HEAD: &str = ",\"fake_daemon\":true,\"padding\":\"";
const PADDING_TAIL: &str = "\"}}\n";

/// Appends the success reply to request `id` for `method` (both raw JSON).
pub fn write_result(out: &mut Vec<u8>, id: &str, method: &str) {
    out.reserve(
        RESULT_HEAD.len() + id.len() + RESULT_METHOD.len() + method.len() + RESULT_TAIL.len(),
    );
    out.extend_from_slice(RESULT_HEAD.as_bytes());
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(RESULT_METHOD.as_bytes());
    out.extend_from_slice(method.as_bytes());
    out.extend_from_slice(RESULT_TAIL.as_bytes());
}

/// Appends the success reply with an extra `padding` result member long
/// enough that the line, newline excluded, is more than `min_bytes` long.
pub fn write_padded_result(out: &mut Vec<u8>, id: &str, method: &str, min_bytes: usize) {
    let unpadded = RESULT_HEAD.len()
        + id.len()
        + RESULT_METHOD.len()
        + method.len()
        + PADDING_HEAD.len()
        + PADDING_TAIL.len()
        - 1;
    let padding = (min_bytes + 1).saturating_sub(unpadded);
    out.reserve(unpadded + padding + 1);
    out.extend_from_slice(RESULT_HEAD.as_bytes());
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(RESULT_METHOD.as_bytes());
    out.extend_from_slice(method.as_bytes());
    out.extend_from_slice(PADDING_HEAD.as_bytes());
    out.resize(out.len() + padding, b'x');
    out.extend_from_slice(PADDING_TAIL.as_bytes());
}

/// Appends an error reply; `id` is raw JSON (`null` when unknown) and
/// `message` must not need JSON escaping.
pub fn write_error(out: &mut Vec<u8>, id: &str, code: i32, message: &str) {
    let mut line = String::with_capacity(64 + id.len() + message.len());
    // Writing to a String cannot fail.
    let _ = writeln!(
        line,
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{{\"code\":{code},\"message\":\"{message}\"}}}}"
    );
    out.extend_from_slice(line.as_bytes());
}

/// The `count` non-JSON lines `GARBAGE` writes: `garbage line 1` and so on.
pub fn garbage_lines(count: u32) -> Vec<u8> {
    let mut text = String::new();
    for k in 1..=count {
        let _ = writeln!(text, "garbage line {k}");
    }
    text.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request<'a>(id: Option<&'a str>, method: &'a str, params: Option<&'a str>) -> Incoming<'a> {
        Incoming::Request(Request { id, method, params })
    }

    #[test]
    fn classifies_requests_with_raw_texts() {
        let line = br#"{"jsonrpc":"2.0","id":7,"method":"topology","params":{"a": [1, 2]}}"#;
        assert_eq!(
            classify(line),
            request(Some("7"), "\"topology\"", Some("{\"a\": [1, 2]}"))
        );
        let line = br#" {"method":"m","id":"x-1","jsonrpc":"2.0","extra":{"deep":[]}} "#;
        assert_eq!(classify(line), request(Some("\"x-1\""), "\"m\"", None));
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","id":1.0,"method":"m","params":[]}"#),
            request(Some("1.0"), "\"m\"", Some("[]"))
        );
    }

    #[test]
    fn null_id_is_an_id_and_missing_id_is_a_notification() {
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","id":null,"method":"m"}"#),
            request(Some("null"), "\"m\"", None)
        );
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","method":"m"}"#),
            request(None, "\"m\"", None)
        );
    }

    #[test]
    fn control_messages_have_a_type_and_no_jsonrpc() {
        let line = br#"{"type":"session_open","session_id":"abc","ts":"2026-01-01T00:00:00Z"}"#;
        assert_eq!(
            classify(line),
            Incoming::Control {
                kind: "\"session_open\""
            }
        );
        assert_eq!(classify(br#"{"type":5}"#), Incoming::Invalid { id: None });
    }

    #[test]
    fn invalid_requests_keep_a_usable_id() {
        for (line, id) in [
            (&br#"{"jsonrpc":"2.0","id":3}"#[..], Some("3")),
            (br#"{"jsonrpc":"1.0","id":3,"method":"m"}"#, Some("3")),
            (br#"{"jsonrpc":"2.0","id":"q","method":5}"#, Some("\"q\"")),
            (
                br#"{"jsonrpc":"2.0","id":4,"method":"m","params":"s"}"#,
                Some("4"),
            ),
            (br#"{"jsonrpc":"2.0","id":{"a":1},"method":"m"}"#, None),
            (br#"{"id":9,"method":"m"}"#, Some("9")),
            (br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}"#, None),
            (b"[1,2,3,4,5]", None),
            (b"\"just a string\"", None),
            (b"42", None),
        ] {
            assert_eq!(
                classify(line),
                Incoming::Invalid { id },
                "{}",
                String::from_utf8_lossy(line)
            );
        }
    }

    #[test]
    fn non_json_is_malformed_and_whitespace_is_blank() {
        for line in [
            &b"hello"[..],
            b"{",
            b"{\"jsonrpc\":\"2.0\"} trailing",
            b"{\"a\":\"\xff\"}",
            b"[1,",
        ] {
            assert_eq!(
                classify(line),
                Incoming::Malformed,
                "{}",
                String::from_utf8_lossy(line)
            );
        }
        assert_eq!(classify(b""), Incoming::Blank);
        assert_eq!(classify(b" \t\r"), Incoming::Blank);
    }

    #[test]
    fn replies_are_single_json_lines() {
        let mut out = Vec::new();
        write_result(&mut out, "\"a\"", "\"topology\"");
        write_error(&mut out, "null", PARSE_ERROR, "parse error");
        out.extend_from_slice(STRAY_LINE.as_bytes());
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            lines[0],
            serde_json::json!({"jsonrpc":"2.0","id":"a","result":{"ok":true,"method":"topology","fake_daemon":true}})
        );
        assert_eq!(
            lines[1],
            serde_json::json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}})
        );
        assert_eq!(lines[2]["id"], STRAY_ID);
    }

    #[test]
    fn padded_result_is_just_over_the_limit() {
        for min in [0, 10, 100, 101, 102, 1000] {
            let mut out = Vec::new();
            write_padded_result(&mut out, "12", "\"m\"", min);
            assert_eq!(out.last(), Some(&b'\n'));
            let line = &out[..out.len() - 1];
            assert!(line.len() > min);
            let value: serde_json::Value = serde_json::from_slice(line).unwrap();
            assert_eq!(value["id"], 12);
            let padding = value["result"]["padding"].as_str().unwrap();
            if !padding.is_empty() {
                assert_eq!(line.len(), min + 1);
            }
        }
    }

    #[test]
    fn status_lines_name_the_release_or_leave_it_out() {
        assert_eq!(
            status_line(Some("3.2.3")),
            b"{\"ok\":true,\"state\":\"WAKE\",\"version\":\"3.2.3\"}\n"
        );
        assert_eq!(status_line(None), b"{\"ok\":true,\"state\":\"WAKE\"}\n");
        // A release that needs escaping still makes one JSON line.
        let line = status_line(Some("a\"b\nc"));
        let value: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(value["version"], "a\"b\nc");
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
    }

    #[test]
    fn garbage_is_not_json() {
        let text = String::from_utf8(garbage_lines(3)).unwrap();
        assert_eq!(text, "garbage line 1\ngarbage line 2\ngarbage line 3\n");
        assert!(garbage_lines(0).is_empty());
    }
}
