//! One line from the MCP client, read once.
//!
//! The line is deserialised into an [`Envelope`]: the members that decide
//! what the message is (`jsonrpc`, `id`, `method`, `params`, and whether
//! it carries a `result` or an `error`), each kept as the raw JSON it was
//! given and read into its type only when the rules need it: a member of
//! the wrong type, or a member's string with a broken escape, is then
//! answered precisely and with the request's id whenever the id itself is
//! sound (a broken escape in a member's *name* spoils the whole line).
//! `params` waits until the method says what it should hold ([`params`]).
//! Members the envelope does not use are skipped, checked for syntax only.
//! An envelope member given twice makes the line an invalid request:
//! which of the two was meant cannot be known.

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;
use serde_json::value::RawValue;
use thiserror::Error;

use crate::json::{self, Shape, Text, object, present};

/// What one line holds.
#[derive(Debug)]
pub enum Line<'a> {
    /// Nothing but whitespace (tolerated between messages).
    Blank,
    /// A JSON object: a request, a notification or a response.
    Message(Envelope<'a>),
    /// A JSON array: a batch, which MCP does not have.
    Batch,
    /// Any other JSON value.
    NotObject,
}

/// Why a line is not JSON at all.
#[derive(Debug, Error)]
pub enum LineError {
    /// The bytes are not UTF-8 (MCP messages are UTF-8 JSON).
    #[error("the line is not UTF-8: {0}")]
    NotUtf8(#[from] std::str::Utf8Error),
    /// The text is not one JSON value, or a member of the envelope is given
    /// twice.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
}

impl LineError {
    /// Whether the text is JSON but not a usable message (JSON-RPC's
    /// "invalid request"), rather than not JSON (a parse error).
    pub fn is_invalid_message(&self) -> bool {
        matches!(self, LineError::Json(e) if e.is_data())
    }
}

/// The members of a JSON-RPC message that decide what it is, as raw JSON
/// (`null` included: a member given as `null` is not a member left out).
#[derive(Debug, Deserialize)]
pub struct Envelope<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(default, deserialize_with = "present")]
    result: Option<IgnoredAny>,
    #[serde(default, deserialize_with = "present")]
    error: Option<IgnoredAny>,
}

/// A message's `id`.
#[derive(Debug, Clone, PartialEq)]
pub enum Id {
    /// No `id` member: a notification (or a malformed response).
    Absent,
    /// A string or a number, which a request may carry.
    Valid(Value),
    /// Anything else (`null`, an object, a string that does not decode).
    Invalid,
}

impl<'a> Envelope<'a> {
    /// Whether `jsonrpc` is the string `"2.0"`.
    pub fn is_jsonrpc_2(&self) -> bool {
        self.jsonrpc.map(text).as_ref().and_then(Text::as_str) == Some("2.0")
    }

    /// The `id`.
    pub fn id(&self) -> Id {
        match self.id.map(|raw| serde_json::from_str::<Value>(raw.get())) {
            None => Id::Absent,
            Some(Ok(id @ (Value::String(_) | Value::Number(_)))) => Id::Valid(id),
            Some(_) => Id::Invalid,
        }
    }

    /// The `method`: `None` when absent, [`Text::NotStr`] when it is not
    /// a string (or not one that decodes).
    pub fn method(&self) -> Option<Text<'a>> {
        self.method.map(text)
    }

    /// `params`, unread (`None` when absent).
    pub fn params(&self) -> Option<&'a RawValue> {
        self.params
    }

    /// Whether the message carries a `result` or an `error`: a response
    /// (the client answering a request), when it has no `method`.
    pub fn answers(&self) -> bool {
        self.result.is_some() || self.error.is_some()
    }
}

/// A raw member read as text.
fn text(raw: &RawValue) -> Text<'_> {
    serde_json::from_str(raw.get()).unwrap_or(Text::NotStr)
}

/// Reads one line (without its newline).
pub fn read(line: &[u8]) -> Result<Line<'_>, LineError> {
    let text = std::str::from_utf8(line)?;
    if text.trim_ascii().is_empty() {
        return Ok(Line::Blank);
    }
    Ok(match json::read_object(text)? {
        Shape::Object(envelope) => Line::Message(envelope),
        Shape::Array => Line::Batch,
        Shape::Null | Shape::Scalar => Line::NotObject,
    })
}

/// Why a request's `params` cannot be used.
#[derive(Debug, Error)]
pub enum ParamsError {
    /// `params` is present and neither an object nor `null`.
    #[error("params must be an object")]
    NotObject,
    /// A member the method reads is invalid.
    #[error("invalid params: {}", without_position(.0))]
    Invalid(#[from] serde_json::Error),
}

/// A request's `params` read as `T`: absent or `null` gives
/// `T::default()`; members the method does not read are skipped.
pub fn params<'a, T: Deserialize<'a> + Default>(
    raw: Option<&'a RawValue>,
) -> Result<T, ParamsError> {
    let Some(raw) = raw else {
        return Ok(T::default());
    };
    match json::read_object(raw.get())? {
        Shape::Object(params) => Ok(params),
        Shape::Null => Ok(T::default()),
        Shape::Array | Shape::Scalar => Err(ParamsError::NotObject),
    }
}

/// serde_json's message without the position it adds: a position within
/// `params` would read as one within the client's line.
fn without_position(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let position = format!(" at line {} column {}", error.line(), error.column());
    text.strip_suffix(&position).unwrap_or(&text).to_owned()
}

/// `_meta`, which every request may carry: in the modern era it names the
/// request's protocol version.
#[derive(Debug, Default, Deserialize)]
pub struct RequestMeta {
    /// `io.modelcontextprotocol/protocolVersion`, as given.
    #[serde(
        rename = "io.modelcontextprotocol/protocolVersion",
        default,
        deserialize_with = "present"
    )]
    pub protocol_version: Option<Value>,
}

/// The params of a request that reads nothing but `_meta` (`ping`,
/// `tools/list`, `server/discover`, and any method the wrapper lacks).
#[derive(Debug, Default, Deserialize)]
pub struct PlainParams {
    /// `_meta`.
    #[serde(rename = "_meta", default, deserialize_with = "object")]
    pub meta: Option<RequestMeta>,
}

/// The params of `subscriptions/listen` (2026-07-28): which notifications
/// the client wants on the stream it opens.
#[derive(Debug, Default, Deserialize)]
pub struct ListenParams {
    /// `_meta`.
    #[serde(rename = "_meta", default, deserialize_with = "object")]
    pub meta: Option<RequestMeta>,
    /// The notification filter.
    #[serde(default, deserialize_with = "object")]
    pub notifications: Option<NotificationFilter>,
}

/// What a `subscriptions/listen` asks to hear of; only the tool list's
/// changes are read (the wrapper has no prompts or resources).
#[derive(Debug, Default, Deserialize)]
pub struct NotificationFilter {
    /// `toolsListChanged`.
    #[serde(rename = "toolsListChanged", default)]
    pub tools_list_changed: Option<bool>,
}

/// The params of `initialize`.
#[derive(Debug, Default, Deserialize)]
pub struct InitializeParams {
    /// The revision the client asks for (any JSON; only a string that names
    /// a served revision is echoed).
    #[serde(rename = "protocolVersion", default)]
    pub protocol_version: Option<Value>,
    /// `_meta`.
    #[serde(rename = "_meta", default, deserialize_with = "object")]
    pub meta: Option<RequestMeta>,
}

/// The params of `tools/call`.
#[derive(Debug, Default, Deserialize)]
pub struct CallParams<'a> {
    /// The tool's name, which must be a string.
    #[serde(default, borrow)]
    pub name: Option<Text<'a>>,
    /// The arguments, which must be an object (or `null`).
    #[serde(default)]
    pub arguments: Option<Value>,
    /// `_meta`.
    #[serde(rename = "_meta", default, deserialize_with = "object")]
    pub meta: Option<RequestMeta>,
}

/// The params of `notifications/cancelled`.
#[derive(Debug, Default, Deserialize)]
pub struct CancelParams {
    /// The id of the request to answer no more.
    #[serde(rename = "requestId", default)]
    pub request_id: Option<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(line: &str) -> Envelope<'_> {
        match read(line.as_bytes()).expect("readable") {
            Line::Message(envelope) => envelope,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn the_meta_key_is_the_protocol_constant() {
        let line = format!(
            r#"{{"_meta":{{"{}":"2026-07-28"}}}}"#,
            "io.modelcontextprotocol/protocolVersion"
        );
        let raw: Box<RawValue> = serde_json::from_str(&line).expect("json");
        let plain: PlainParams = params(Some(&raw)).expect("params");
        assert_eq!(
            plain.meta.and_then(|m| m.protocol_version),
            Some(Value::from("2026-07-28"))
        );
    }

    #[test]
    fn lines_are_told_apart() {
        assert!(matches!(read(b"  \t"), Ok(Line::Blank)));
        assert!(matches!(read(b"[1]"), Ok(Line::Batch)));
        assert!(matches!(read(b"42"), Ok(Line::NotObject)));
        assert!(matches!(read(b"\xff"), Err(LineError::NotUtf8(_))));
        let e = read(br#"{"id":1,"id":2}"#).expect_err("twice");
        assert!(e.is_invalid_message(), "{e}");
        let e = read(b"{not json").expect_err("syntax");
        assert!(!e.is_invalid_message(), "{e}");
    }

    #[test]
    fn the_envelope_reads_members_when_asked() {
        let e = envelope(r#"{"jsonrpc":"2.0","id":null,"method":17,"result":null}"#);
        assert!(e.is_jsonrpc_2());
        assert_eq!(e.id(), Id::Invalid);
        assert_eq!(e.method(), Some(Text::NotStr));
        assert!(e.answers());
        let e = envelope(r#"{"method":"ping","params":{"a": [1]},"x":[[[]]]}"#);
        assert_eq!(e.params().map(RawValue::get), Some(r#"{"a": [1]}"#));
        assert!(e.id() == Id::Absent && !e.answers() && !e.is_jsonrpc_2());
        let e = envelope(r#"{"jsonrpc":"2\u002e0","id":"a\u00e9","method":"tools\/call"}"#);
        assert!(e.is_jsonrpc_2());
        assert_eq!(e.id(), Id::Valid(Value::from("aé")));
        assert_eq!(
            e.method().as_ref().and_then(Text::as_str),
            Some("tools/call")
        );
        // A broken escape spoils only its own member.
        let e = envelope(r#"{"id":7,"method":"\ud800"}"#);
        assert_eq!(
            (e.id(), e.method()),
            (Id::Valid(Value::from(7)), Some(Text::NotStr))
        );
        let deep = format!(r#"{{"id":{}{}}}"#, "[".repeat(300), "]".repeat(300));
        assert_eq!(envelope(&deep).id(), Id::Invalid);
    }

    #[test]
    fn params_must_be_objects_and_keep_their_types_loose() {
        let raw = |text: &str| serde_json::from_str::<Box<RawValue>>(text).expect("json");
        let given = raw(r#"{"name":5,"arguments":[1]}"#);
        let call: CallParams<'_> = params(Some(&given)).expect("read");
        assert_eq!(call.name, Some(Text::NotStr));
        assert_eq!(call.arguments, Some(serde_json::json!([1])));
        assert!(matches!(
            params::<CallParams<'_>>(Some(&raw(r#"["topology"]"#))),
            Err(ParamsError::NotObject)
        ));
        assert!(matches!(
            params::<PlainParams>(Some(&raw(r#"{"_meta":["2026-07-28"]}"#))),
            Err(ParamsError::Invalid(_))
        ));
        let plain: PlainParams = params(Some(&raw("null"))).expect("null is none");
        assert!(plain.meta.is_none());
        let plain: PlainParams = params(Some(&raw(r#"{"_meta":null}"#))).expect("read");
        assert!(plain.meta.is_none());
    }
}
