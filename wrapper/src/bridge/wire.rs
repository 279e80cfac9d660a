//! The daemon's side of the wire: the request line the bridge writes and
//! the reply lines it reads, each through serde once.
//!
//! A reply is read into an envelope of `id`, `result` and `error`; the
//! result stays raw JSON until it is made ready to pass on
//! ([`DaemonResult`]), and every other member is skipped unread.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use super::error::BridgeError;
use crate::json::{self, Shape, present};

/// JSON-RPC's code for an internal error: what a call fails with when the
/// daemon's answer cannot be passed on (the same code the MCP side uses for
/// its own internal errors).
const INTERNAL_ERROR: i64 = -32603;

/// The daemon's code for "internal error", assumed when its error object
/// names none.
const DAEMON_INTERNAL_ERROR: i64 = -32001;

/// The control message asking the daemon about itself (docs/CONTRACT.md
/// section 4), newline included: the first line the bridge writes on every
/// connection, and the question `--check` asks on a connection of its own.
pub const STATUS_REQUEST: &[u8] = b"{\"type\":\"status\"}\n";

/// Longest release name taken as one (PEP 440 versions are short).
const MAX_RELEASE_LEN: usize = 64;

/// A request line as the daemon reads it.
#[derive(Serialize)]
struct RequestLine<'a> {
    jsonrpc: &'static str,
    id: u64,
    method: &'a str,
    params: &'a Value,
}

/// The line (newline included) asking the daemon to run `method` with
/// `params` as daemon request `wire`.
pub(crate) fn request_line(wire: u64, method: &str, params: &Value) -> Vec<u8> {
    let message = RequestLine {
        jsonrpc: "2.0",
        id: wire,
        method,
        params,
    };
    // A string and a `Value` always serialise.
    let mut line = serde_json::to_vec(&message).unwrap_or_default();
    line.push(b'\n');
    line
}

/// A daemon result, made ready to pass on: compact JSON text (no
/// whitespace between tokens) in which every character is itself, not a
/// `\uXXXX` escape. Two results are equal when their texts are.
///
/// The daemon of iai-mcp 3.3.0 writes `json.dumps` output: ASCII only,
/// with an escape for every other character. The text content the model
/// reads is this JSON text, so the result is written anew once, as
/// serde_json writes it: characters as characters, numbers in their
/// shortest form. What a strict client would refuse (a lone surrogate, a
/// number beyond the range of a double) is refused here instead, as is a
/// result nested deeper than serde_json's limit of 128; integers beyond 64
/// bits become doubles, as a JavaScript client would read them anyway.
#[derive(Debug, Clone)]
pub struct DaemonResult(Box<RawValue>);

impl DaemonResult {
    /// The result's JSON text.
    pub fn json(&self) -> &str {
        self.0.get()
    }

    /// The result as raw JSON, to write as a value of its own.
    pub fn as_raw(&self) -> &RawValue {
        &self.0
    }

    /// Whether the result is a JSON object (else a client's
    /// `structuredContent` holds it wrapped).
    pub fn is_object(&self) -> bool {
        self.json().starts_with('{')
    }

    /// A result made here rather than by the daemon (the CLI's answers in
    /// degraded mode, tests).
    pub fn from_value(value: &Value) -> Self {
        // A `Value` always serialises.
        let raw =
            serde_json::value::to_raw_value(value).unwrap_or_else(|_| RawValue::NULL.to_owned());
        DaemonResult(raw)
    }

    /// The daemon's `result`, written anew (see the type's documentation)
    /// in one pass from its text.
    fn from_daemon(raw: &RawValue) -> Result<Self, BridgeError> {
        let mut reader = serde_json::Deserializer::from_str(raw.get());
        serde_json::value::to_raw_value(&serde_transcode::Transcoder::new(&mut reader))
            .map(DaemonResult)
            .map_err(|e| BridgeError::Daemon {
                code: INTERNAL_ERROR,
                message: format!("the daemon's result cannot be passed on: {e}"),
            })
    }
}

impl PartialEq for DaemonResult {
    fn eq(&self, other: &Self) -> bool {
        self.json() == other.json()
    }
}

/// What a daemon line turned out to be.
#[derive(Debug)]
pub(crate) enum Reply {
    /// Not JSON (or not UTF-8): a stray print.
    NotJson,
    /// JSON, but nothing to route: not an object, or an object whose
    /// members cannot be read as a reply.
    Unroutable,
    /// An object with no `id`, `result` or `error`: how the daemon answers
    /// a control message such as `status`.
    Control,
    /// A response for `id` (or a message the bridge did not ask for).
    Message {
        /// The `id` member as given, if present.
        id: Option<Value>,
        /// The result, or the error the daemon reported, or the error for
        /// a message carrying neither.
        outcome: Result<DaemonResult, BridgeError>,
    },
}

/// The members of a reply the bridge reads; `error` stays raw, so that an
/// error of any shape (or `null` beside a result) is still an answer.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// Just the `id` of a line whose other members cannot be read as a reply
/// (one of them given twice): enough to fail the call it answers at once.
#[derive(Deserialize)]
struct IdOnly {
    #[serde(default)]
    id: Option<Value>,
}

/// Reads one daemon line (without its newline).
pub(crate) fn read_reply(line: &[u8]) -> Reply {
    let Ok(text) = std::str::from_utf8(line) else {
        return Reply::NotJson;
    };
    match json::read_object::<Envelope<'_>>(text) {
        Ok(Shape::Object(Envelope {
            id: None,
            result: None,
            error: None,
        })) => Reply::Control,
        Ok(Shape::Object(envelope)) => Reply::Message {
            id: envelope.id,
            outcome: outcome(envelope.result, envelope.error),
        },
        Ok(Shape::Array | Shape::Null | Shape::Scalar) => Reply::Unroutable,
        // JSON whose members cannot be read as a reply (a member given
        // twice, an id too large for any number type) is still JSON, not a
        // stray print.
        Err(e) if e.is_data() || json::is_json(text) => match json::read_object::<IdOnly>(text) {
            Ok(Shape::Object(IdOnly { id: Some(id) })) => Reply::Message {
                id: Some(id),
                outcome: Err(BridgeError::Daemon {
                    code: INTERNAL_ERROR,
                    message: format!("the daemon's reply is not a JSON-RPC response: {e}"),
                }),
            },
            _ => Reply::Unroutable,
        },
        Err(_) => Reply::NotJson,
    }
}

/// What the daemon says about itself in answer to [`STATUS_REQUEST`]: the
/// members the wrapper reads (every other member is skipped).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct DaemonStatus {
    /// The daemon's release (`3.3.0`), if it reports one.
    #[serde(default)]
    pub version: Option<String>,
    /// When this run of the daemon started (ISO-8601), if it reports it.
    #[serde(default)]
    pub daemon_started_at: Option<String>,
}

/// Why a status answer names no release.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StatusError {
    /// The answer is not a JSON object whose `version`, if any, is a
    /// string, or its `version` is no plausible release name.
    #[error("the answer is not a status reply the wrapper can read")]
    Unreadable,
    /// The answer has no `version` (a daemon that does not report it, or
    /// one that refused the question).
    #[error("the daemon does not report its release")]
    NoRelease,
}

impl DaemonStatus {
    /// Reads one status answer line (without its newline).
    pub fn read(line: &[u8]) -> Result<DaemonStatus, StatusError> {
        match json::read_object::<DaemonStatus>(std::str::from_utf8(line).unwrap_or("")) {
            Ok(Shape::Object(status)) => Ok(status),
            _ => Err(StatusError::Unreadable),
        }
    }

    /// The release the answer names.
    pub fn release(&self) -> Result<&str, StatusError> {
        match self.version.as_deref() {
            None | Some("") => Err(StatusError::NoRelease),
            Some(v) if v.len() > MAX_RELEASE_LEN || v.chars().any(char::is_control) => {
                Err(StatusError::Unreadable)
            }
            Some(v) => Ok(v),
        }
    }
}

fn outcome(
    result: Option<&RawValue>,
    error: Option<&RawValue>,
) -> Result<DaemonResult, BridgeError> {
    match (result, error) {
        (Some(result), _) => DaemonResult::from_daemon(result),
        (None, Some(error)) => Err(daemon_error(error)),
        (None, None) => Err(BridgeError::Daemon {
            code: INTERNAL_ERROR,
            message: "daemon response carried neither result nor error".into(),
        }),
    }
}

/// The daemon's error, whatever its shape: an object's `code` (the daemon's
/// internal error when it is not an integer) and `message` (as given, or
/// its JSON text); any other value is the message itself.
fn daemon_error(error: &RawValue) -> BridgeError {
    let value: Value = serde_json::from_str(error.get()).unwrap_or(Value::Null);
    let code = value
        .get("code")
        .and_then(Value::as_i64)
        .unwrap_or(DAEMON_INTERNAL_ERROR);
    let message = match &value {
        Value::Object(members) => match members.get("message") {
            Some(Value::String(text)) => text.clone(),
            Some(other) => other.to_string(),
            None => "daemon error".to_owned(),
        },
        Value::String(text) => text.clone(),
        Value::Null => "daemon error".to_owned(),
        other => other.to_string(),
    };
    BridgeError::Daemon { code, message }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn message(line: &str) -> (Option<Value>, Result<String, BridgeError>) {
        match read_reply(line.as_bytes()) {
            Reply::Message { id, outcome } => (id, outcome.map(|r| r.json().to_owned())),
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn json_that_cannot_be_read_as_a_reply_is_not_a_stray_print() {
        assert!(matches!(
            read_reply(br#"{"id": 1e400, "result": {}}"#),
            Reply::Unroutable
        ));
        assert!(matches!(read_reply(b"{\"id\": 1, oops}"), Reply::NotJson));
    }

    #[test]
    fn results_are_written_compact() {
        let (id, outcome) = message(r#"{"jsonrpc": "2.0", "id": 7, "result": {"a": [1, 2.50]}}"#);
        assert_eq!(id, Some(Value::from(7)));
        assert_eq!(outcome.expect("a result"), r#"{"a":[1,2.5]}"#);
        let (_, outcome) = message(
            "{\"id\":1,\"result\":{ \"a b\" : [1, 2],\n\t\"c\": \"x \\\" y\", \"d\": \"é\" }}",
        );
        assert_eq!(
            outcome.expect("a result"),
            r#"{"a b":[1,2],"c":"x \" y","d":"é"}"#
        );
        let (_, outcome) = message(r#"{"id":1,"result":null,"error":{"code":1}}"#);
        assert_eq!(outcome.expect("null is a result"), "null");
    }

    #[test]
    fn escapes_become_characters_and_what_a_client_refuses_is_an_error() {
        let (_, outcome) =
            message(r#"{"id":1,"result":{"t": "caf\u00e9 \ud83d\ude00", "n": 1.5E3}}"#);
        assert_eq!(outcome.expect("a result"), r#"{"t":"café 😀","n":1500.0}"#);
        let (_, outcome) = message(r#"{"id":1,"result":["\\u00e9", 10e-1]}"#);
        assert_eq!(outcome.expect("a result"), r#"["\\u00e9",1.0]"#);
        for refused in [r#"{"t":"\ud800"}"#, r#"[1e400]"#] {
            let (_, outcome) = message(&format!(r#"{{"id":1,"result":{refused}}}"#));
            assert!(
                matches!(outcome, Err(BridgeError::Daemon { code: -32603, .. })),
                "{refused}: {outcome:?}"
            );
        }
    }

    #[test]
    fn errors_and_empty_responses() {
        let (_, outcome) = message(r#"{"id":1,"error":{"code":-32602,"message":"bad"}}"#);
        assert_eq!(
            outcome,
            Err(BridgeError::Daemon {
                code: -32602,
                message: "bad".into()
            })
        );
        let (_, outcome) = message(r#"{"id":1,"error":{"code":"x","message":{"why":1}}}"#);
        assert_eq!(
            outcome,
            Err(BridgeError::Daemon {
                code: -32001,
                message: r#"{"why":1}"#.into()
            })
        );
        // Errors of other shapes, and null beside a result.
        let (_, outcome) = message(r#"{"id":1,"result":{"ok":true},"error":null}"#);
        assert_eq!(outcome.expect("a result"), r#"{"ok":true}"#);
        let (_, outcome) = message(r#"{"id":1,"error":"boom"}"#);
        assert_eq!(
            outcome,
            Err(BridgeError::Daemon {
                code: -32001,
                message: "boom".into()
            })
        );
        let (_, outcome) = message(r#"{"id":1,"error":[-32000,"x"]}"#);
        assert_eq!(
            outcome,
            Err(BridgeError::Daemon {
                code: -32001,
                message: r#"[-32000,"x"]"#.into()
            })
        );
        let (_, outcome) = message(r#"{"id":1,"error":null}"#);
        assert_eq!(
            outcome,
            Err(BridgeError::Daemon {
                code: -32001,
                message: "daemon error".into()
            })
        );
        let (id, outcome) = message(r#"{"id":null}"#);
        assert_eq!(id, Some(Value::Null));
        assert!(matches!(
            outcome,
            Err(BridgeError::Daemon { code: -32603, .. })
        ));
    }

    #[test]
    fn lines_that_are_not_replies() {
        assert!(matches!(read_reply(b"[1,2]"), Reply::Unroutable));
        assert!(matches!(read_reply(b"7"), Reply::Unroutable));
        assert!(matches!(
            read_reply(br#"{"id":1,"id":2,"result":1}"#),
            Reply::Unroutable
        ));
        // A result given twice still fails the call it answers, at once.
        let (id, outcome) = message(r#"{"id":3,"result":1,"result":2}"#);
        assert_eq!(id, Some(Value::from(3)));
        assert!(
            matches!(&outcome, Err(BridgeError::Daemon { code: -32603, message }) if message.contains("duplicate")),
            "{outcome:?}"
        );
        assert!(matches!(
            read_reply(b"Traceback (most recent call last):"),
            Reply::NotJson
        ));
        assert!(matches!(read_reply(b"{\"id\":1,"), Reply::NotJson));
        assert!(matches!(read_reply(b"{\"id\":\xff}"), Reply::NotJson));
    }

    #[test]
    fn requests_are_single_json_lines() {
        let line = request_line(5, "memory_capture", &json!({"text": "a\nb"}));
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        let v: Value = serde_json::from_slice(&line).expect("json");
        assert_eq!(
            v,
            json!({"jsonrpc":"2.0","id":5,"method":"memory_capture","params":{"text":"a\nb"}})
        );
    }
}
