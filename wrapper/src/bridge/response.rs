//! Reading a daemon line: the envelope the bridge routes on, with the
//! result kept as the JSON text the daemon sent.
//!
//! Only `id`, `result` and `error` are looked at; the result is not parsed
//! into a tree (it is passed on to the client as compact JSON text, see
//! [`DaemonResult`]), and any other member is skipped without allocating.
//! A line that is not an ordinary response object (not an object, members
//! given twice, not JSON) is judged by a full parse instead, so unusual input is treated exactly as
//! a `Value` would have it (the last of repeated members wins).

use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_json::value::RawValue;

use super::error::BridgeError;

/// A daemon result: its JSON text, compact (no whitespace between tokens),
/// passed on to the client without being parsed into a tree. Two results
/// are equal when their texts are.
///
/// The text is the daemon's own when it needs nothing else; a result that
/// spells a character as a `\uXXXX` escape (a daemon writing ASCII only) or
/// a number with an exponent is written anew from a tree, as a serialiser
/// writes it: the text content the model reads then shows characters, not
/// escapes, and what a strict client refuses (a lone surrogate, a number
/// with an exponent beyond the range of a double) becomes an error here
/// instead. Otherwise the daemon's text is kept, including members given
/// twice in one object and integers too long for 64 bits (a tree would
/// keep the last member, and turn such integers into doubles).
#[derive(Debug, Clone)]
pub struct DaemonResult(String);

impl DaemonResult {
    /// The result's JSON text.
    pub fn json(&self) -> &str {
        &self.0
    }

    /// A result made here rather than by the daemon (the CLI's answers in
    /// degraded mode, tests).
    pub fn from_value(value: &Value) -> Self {
        Self(value.to_string())
    }

    /// The daemon's `result` text, made ready to pass on.
    fn from_daemon(raw: Box<RawValue>) -> Result<Self, BridgeError> {
        match read(raw.get()) {
            // The daemon's own text, not copied.
            Text::Compact => Ok(Self(Box::<str>::from(raw).into_string())),
            Text::Spaced(compact) => Ok(Self(compact)),
            Text::NeedsTree => Self::rewritten(raw.get()),
        }
    }

    /// `json` read into a tree and written anew.
    fn rewritten(json: &str) -> Result<Self, BridgeError> {
        match serde_json::from_str::<Value>(json) {
            Ok(value) => Ok(Self::from_value(&value)),
            Err(e) => Err(BridgeError::Daemon {
                code: -32603,
                message: format!("the daemon's result cannot be passed on: {e}"),
            }),
        }
    }
}

/// What a result's text needs before it is passed on.
enum Text {
    /// Nothing: it is compact.
    Compact,
    /// It had whitespace between tokens: the text without it.
    Spaced(String),
    /// A tree (see [`DaemonResult`]): it holds a `\uXXXX` escape or a
    /// number with an exponent.
    NeedsTree,
}

/// Reads `json` (valid JSON text) for what it needs.
fn read(json: &str) -> Text {
    let mut compact: Option<String> = None;
    let (mut start, mut in_string, mut escaped, mut previous) = (0, false, false, 0u8);
    for (i, b) in json.bytes().enumerate() {
        if in_string {
            if escaped {
                if b == b'u' {
                    return Text::NeedsTree;
                }
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else {
            match b {
                b'"' => in_string = true,
                b'e' | b'E' if previous.is_ascii_digit() => return Text::NeedsTree,
                // ASCII bytes: slicing next to them stays on char boundaries.
                b' ' | b'\t' | b'\n' | b'\r' => {
                    let out = compact.get_or_insert_with(|| String::with_capacity(json.len()));
                    out.push_str(&json[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        previous = b;
    }
    match compact {
        None => Text::Compact,
        Some(mut out) => {
            out.push_str(&json[start..]);
            Text::Spaced(out)
        }
    }
}

impl PartialEq for DaemonResult {
    fn eq(&self, other: &Self) -> bool {
        self.json() == other.json()
    }
}

/// What a daemon line turned out to be.
#[derive(Debug)]
pub(super) enum Line {
    /// Not JSON: a stray print.
    NotJson,
    /// JSON, but not an object: nothing to route.
    NotObject,
    /// An object: a response for `id` (or an unmatched message).
    Message {
        /// The `id` member as given, if present.
        id: Option<Value>,
        /// The result (as sent), or the error the daemon reported, or the
        /// error for a message carrying neither.
        outcome: Result<DaemonResult, BridgeError>,
    },
}

#[derive(Deserialize)]
struct Envelope {
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    result: Option<Box<RawValue>>,
    #[serde(default, deserialize_with = "present")]
    error: Option<Value>,
}

/// A present member is `Some`, `null` included (`"result": null` is a
/// result).
fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

/// Reads one daemon line (without its newline).
pub(super) fn parse(line: &[u8]) -> Line {
    // serde would also read an array as a struct (members in order).
    let object = line.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    if object && let Ok(envelope) = serde_json::from_slice::<Envelope>(line) {
        return Line::Message {
            id: envelope.id,
            outcome: outcome(envelope.result, envelope.error),
        };
    }
    match serde_json::from_slice::<Value>(line) {
        Err(_) => Line::NotJson,
        Ok(Value::Object(mut message)) => {
            let result = message
                .remove("result")
                .and_then(|r| serde_json::value::to_raw_value(&r).ok());
            Line::Message {
                id: message.remove("id"),
                outcome: outcome(result, message.remove("error")),
            }
        }
        Ok(_) => Line::NotObject,
    }
}

fn outcome(
    result: Option<Box<RawValue>>,
    error: Option<Value>,
) -> Result<DaemonResult, BridgeError> {
    match (result, error) {
        (Some(result), _) => DaemonResult::from_daemon(result),
        (None, Some(error)) => Err(daemon_error(&error)),
        (None, None) => Err(BridgeError::Daemon {
            code: -32603,
            message: "daemon response carried neither result nor error".into(),
        }),
    }
}

fn daemon_error(error: &Value) -> BridgeError {
    let code = error.get("code").and_then(Value::as_i64).unwrap_or(-32001);
    let message = match error.get("message") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => "daemon error".to_owned(),
    };
    BridgeError::Daemon { code, message }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(line: &str) -> (Option<Value>, Result<String, BridgeError>) {
        match parse(line.as_bytes()) {
            Line::Message { id, outcome } => (id, outcome.map(|r| r.json().to_owned())),
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn keeps_the_result_text_as_sent_without_whitespace() {
        let (id, outcome) = message(r#"{"jsonrpc": "2.0", "id": 7, "result": {"a": [1, 2.50]}}"#);
        assert_eq!(id, Some(Value::from(7)));
        assert_eq!(outcome.expect("a result"), r#"{"a":[1,2.50]}"#);
        let (_, outcome) = message(
            "{\"id\":1,\"result\":{ \"a b\" : [1, 2],\n\t\"c\": \"x \\\" y\", \"d\": \"é\" }}",
        );
        assert_eq!(
            outcome.expect("a result"),
            r#"{"a b":[1,2],"c":"x \" y","d":"é"}"#
        );
        let (_, outcome) = message(r#"{"id":1,"result":{"a":[true,false,1]}}"#);
        assert_eq!(outcome.expect("a result"), r#"{"a":[true,false,1]}"#);
        let (_, outcome) = message(r#"{"id":1,"result":null,"error":{"code":1}}"#);
        assert_eq!(outcome.expect("null is a result"), "null");
    }

    #[test]
    fn escapes_and_exponents_are_written_anew() {
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
        let (id, outcome) = message(r#"{"id":null}"#);
        assert_eq!(id, Some(Value::Null));
        assert!(matches!(
            outcome,
            Err(BridgeError::Daemon { code: -32603, .. })
        ));
    }

    #[test]
    fn unusual_lines_are_judged_as_a_tree_would() {
        // Repeated members: the last one wins.
        let (id, outcome) = message(r#"{"id":1,"id":2,"result":1,"result":{"b":true}}"#);
        assert_eq!(id, Some(Value::from(2)));
        assert_eq!(outcome.expect("a result"), r#"{"b":true}"#);
        assert!(matches!(parse(b"[1,2]"), Line::NotObject));
        assert!(matches!(parse(b"7"), Line::NotObject));
        assert!(matches!(
            parse(b"Traceback (most recent call last):"),
            Line::NotJson
        ));
        assert!(matches!(parse(b"{\"id\":1,"), Line::NotJson));
    }
}
