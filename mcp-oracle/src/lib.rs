//! What an MCP wrapper owes each line its client sends, judged from the
//! line's bytes alone: the oracle of the hostile client.
//!
//! [`expected_reply`] reads a line as the contract says a wrapper reads it
//! (UTF-8 JSON whose top level is an object, each member's value checked
//! for syntax only; a line over the cap scanned for its top-level id, as
//! the wrapper's codec does while it discards it) and says what the line
//! is owed: exactly one answer with its id, at most one, or at most an
//! error with `id: null`. The harness's hostile scenario holds a wrapper
//! process to it and the `mcp_stream` fuzz check the wrapper's own stdio
//! loop; it is a crate of its own, on `serde_json` alone, so that neither
//! builds the other, and the fuzz build compiles nothing else.

use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

/// The id of a line longer than the cap is recovered only when its JSON
/// text (with any whitespace around it) is shorter than this: the most the
/// wrapper's codec keeps of it (`MAX_ID_BYTES`) while it discards the line.
pub const MAX_OVERSIZED_ID_BYTES: usize = 256;

/// What the wrapper owes one line, judged from its bytes alone.
#[derive(Debug, Clone, PartialEq)]
pub enum Expect {
    /// Exactly one response carrying this id.
    Exactly(Value),
    /// At most one response carrying this id: the line is a client response
    /// (id, `result` or `error`, no `method`), which needs no answer.
    AtMostOnce(Value),
    /// No recoverable id: at most one error with `id: null`.
    NoId,
}

impl Expect {
    /// The id a response to this line must carry, if any.
    pub fn id(&self) -> Option<&Value> {
        match self {
            Self::Exactly(id) | Self::AtMostOnce(id) => Some(id),
            Self::NoId => None,
        }
    }
}

/// The oracle: what the wrapper owes `line` (without its newline) when it
/// caps lines at `max_line_bytes`.
///
/// - A line of at most `max_line_bytes` bytes is read as the contract says
///   a wrapper reads it: UTF-8 JSON whose top level is an object, each
///   member's value checked for syntax only (nested as deep as it likes).
///   If one of the members that make a JSON-RPC envelope (`jsonrpc`, `id`,
///   `method`, `params`, `result`, `error`) is given twice, the line is an
///   invalid request whose id cannot be known: [`Expect::NoId`]. Otherwise
///   an `id` whose value is a string or a number (and decodes as one) is
///   recoverable: [`Expect::AtMostOnce`] if the object is response-shaped
///   (`result` or `error`, no `method`), else [`Expect::Exactly`]. Anything
///   else (not UTF-8, not JSON, not an object, an id of another type or
///   none) is [`Expect::NoId`].
/// - A longer line cannot be parsed whole: the wrapper discards it as it
///   streams in, scanning it for the top-level id. Its id counts as
///   recoverable when the line starts (after whitespace) with `{` and the
///   first key `"id"` of that object (a first-level string, written
///   exactly so, right after the `{` or a `,`, followed by `:`), wherever
///   it stands, has a string or
///   number value whose text (up to the next `,` or `}`) is shorter than
///   [`MAX_OVERSIZED_ID_BYTES`]; otherwise it is [`Expect::NoId`]. (The line
///   is not parsed, so it need not be valid JSON after the id.)
pub fn expected_reply(line: &[u8], max_line_bytes: usize) -> Expect {
    if line.len() > max_line_bytes {
        return oversized_expect(line);
    }
    let Ok(text) = std::str::from_utf8(line) else {
        return Expect::NoId;
    };
    let Ok(TopLevel(members)) = serde_json::from_str::<TopLevel>(text) else {
        return Expect::NoId;
    };
    let named = |name: &str| members.iter().filter(|(key, _)| key == name).count();
    if ENVELOPE_MEMBERS.iter().any(|name| named(name) > 1) {
        return Expect::NoId;
    }
    let id = members
        .iter()
        .find(|(key, _)| key == "id")
        .and_then(|(_, raw)| serde_json::from_str::<Value>(raw.get()).ok());
    match id {
        Some(id @ (Value::String(_) | Value::Number(_))) => {
            let response_shaped =
                named("method") == 0 && (named("result") > 0 || named("error") > 0);
            if response_shaped {
                Expect::AtMostOnce(id)
            } else {
                Expect::Exactly(id)
            }
        }
        _ => Expect::NoId,
    }
}

/// The members a wrapper reads to know what a message is.
const ENVELOPE_MEMBERS: [&str; 6] = ["jsonrpc", "id", "method", "params", "result", "error"];

/// A JSON object's top-level members in order, their values unread.
struct TopLevel(Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for TopLevel {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> Visitor<'de> for Members {
            type Value = TopLevel;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TopLevel, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry::<String, Box<RawValue>>()? {
                    members.push(member);
                }
                Ok(TopLevel(members))
            }
        }
        deserializer.deserialize_map(Members)
    }
}

/// The oracle for a line longer than the cap (see [`expected_reply`]).
fn oversized_expect(line: &[u8]) -> Expect {
    let start = line.len() - line.trim_ascii_start().len();
    if line.get(start) != Some(&b'{') {
        return Expect::NoId;
    }
    let mut depth = 0usize;
    // Whether the next first-level string stands where a key does: right
    // after the object's `{` or a `,` (whitespace aside).
    let mut key_next = false;
    let mut i = start;
    while i < line.len() {
        match line[i] {
            b'"' => {
                let Some(end) = string_end(line, i) else {
                    return Expect::NoId;
                };
                if depth == 1 && key_next && &line[i..=end] == b"\"id\"" {
                    let rest = line[end + 1..].trim_ascii_start();
                    if let Some(value) = rest.strip_prefix(b":") {
                        return oversized_id(value);
                    }
                }
                if depth == 1 {
                    key_next = false;
                }
                i = end + 1;
            }
            b'{' | b'[' => {
                depth += 1;
                key_next = depth == 1;
                i += 1;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Expect::NoId;
                }
                key_next = false;
                i += 1;
            }
            b',' if depth == 1 => {
                key_next = true;
                i += 1;
            }
            b if depth == 1 && !b.is_ascii_whitespace() => {
                key_next = false;
                i += 1;
            }
            _ => i += 1,
        }
    }
    Expect::NoId
}

/// The id whose value text starts `s` (right after the `:`) and runs to the
/// next `,` or `}` outside a string.
fn oversized_id(s: &[u8]) -> Expect {
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'"' => match string_end(s, i) {
                Some(end) => i = end + 1,
                None => return Expect::NoId,
            },
            b',' | b'}' => break,
            b'{' | b'[' => return Expect::NoId,
            _ => i += 1,
        }
    }
    let text = &s[..i];
    if text.len() >= MAX_OVERSIZED_ID_BYTES {
        return Expect::NoId;
    }
    match serde_json::from_slice::<Value>(text) {
        Ok(id @ (Value::String(_) | Value::Number(_))) => Expect::Exactly(id),
        _ => Expect::NoId,
    }
}

/// Index of the quote closing the JSON string that opens at `start`.
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn expect(line: &str) -> Expect {
        expected_reply(line.as_bytes(), 100)
    }

    #[test]
    fn recoverable_ids_are_top_level_strings_and_numbers_of_objects() {
        use Expect::{AtMostOnce, Exactly, NoId};
        let cases: &[(&str, Expect)] = &[
            (
                r#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#,
                Exactly(json!("a")),
            ),
            (r#"{"id":7}"#, Exactly(json!(7))),
            (r#"{"id":-3,"method":5}"#, Exactly(json!(-3))),
            (r#"{"id":1.5}"#, Exactly(json!(1.5))),
            (r#"{"id":1,"id":"last"}"#, NoId),
            (r#"{"id":"first","id":null}"#, NoId),
            (r#"{"id":1,"x":1,"x":2}"#, Exactly(json!(1))),
            (r#"{"id":1,"method":"a","method":"b"}"#, NoId),
            (r#"{"id":1,"method":"\ud800"}"#, Exactly(json!(1))),
            (r#"{"id":"\ud800"}"#, NoId),
            (r#"{"id":true,"method":"ping"}"#, NoId),
            (r#"{"id":[1],"method":"ping"}"#, NoId),
            (r#"{"params":{"id":4},"method":"ping"}"#, NoId),
            (r#"[{"jsonrpc":"2.0","id":9,"method":"ping"}]"#, NoId),
            (r#"{"jsonrpc":"2.0","id":9,"method":"pi"#, NoId),
            (
                r#"{"jsonrpc":"2.0","id":9,"result":{}}"#,
                AtMostOnce(json!(9)),
            ),
            (r#"{"id":"r","error":{"code":1}}"#, AtMostOnce(json!("r"))),
            (r#"{"id":"m","result":1,"method":"x"}"#, Exactly(json!("m"))),
            (r#"{"id":1e999}"#, NoId),
            ("   ", NoId),
            ("", NoId),
            ("42", NoId),
        ];
        for (line, expected) in cases {
            assert_eq!(&expect(line), expected, "{line}");
        }
        assert_eq!(
            expected_reply(b"{\"id\":\"\xff\"}", 100),
            NoId,
            "invalid UTF-8"
        );
        let deep = format!(r#"{{"id":1,"x":{}{}}}"#, "[".repeat(500), "]".repeat(500));
        assert_eq!(
            expected_reply(deep.as_bytes(), deep.len()),
            Exactly(json!(1)),
            "values are not read, so their depth does not matter"
        );
    }

    #[test]
    fn oversized_lines_keep_their_first_top_level_id_wherever_it_stands() {
        let pad = "x".repeat(200);
        let id_first = format!(r#"{{"jsonrpc":"2.0","id":"big","method":"ping","pad":"{pad}"}}"#);
        assert_eq!(expect(&id_first), Expect::Exactly(json!("big")));
        let number = format!(r#"{{"id":12,"pad":"{pad}"}}"#);
        assert_eq!(expect(&number), Expect::Exactly(json!(12)));
        let id_last = format!(r#"{{"jsonrpc":"2.0","method":"ping","pad":"{pad}","id":3}}"#);
        assert_eq!(expect(&id_last), Expect::Exactly(json!(3)));
        let spaced = format!(r#" {{ "params" : {{"id":1}}, "id" : 5 , "x":"{pad}"}}"#);
        assert_eq!(
            expect(&spaced),
            Expect::Exactly(json!(5)),
            "first top-level id"
        );
        let nested = format!(r#"{{"params":{{"id":1,"pad":"{pad}"}},"id":"top"}}"#);
        assert_eq!(expect(&nested), Expect::Exactly(json!("top")));
        let unclosed = format!(r#"{{"params":{{"pad":"{pad}","id":4}}"#);
        assert_eq!(expect(&unclosed), Expect::NoId, "the id is nested");
        let dup = format!(r#"{{"id":"first","x":"{pad}","id":"last"}}"#);
        assert_eq!(expect(&dup), Expect::Exactly(json!("first")));
        let at_limit = format!(
            r#"{{"x":"{pad}","id":"{}"}}"#,
            "i".repeat(MAX_OVERSIZED_ID_BYTES - 3)
        );
        assert!(matches!(expect(&at_limit), Expect::Exactly(_)));
        let too_long = format!(
            r#"{{"id":"{}","x":"{pad}"}}"#,
            "i".repeat(MAX_OVERSIZED_ID_BYTES - 2)
        );
        assert_eq!(expect(&too_long), Expect::NoId, "id too long to keep");
        let escaped = format!(r#"{{"id":"a\"b","x":"{pad}"}}"#);
        assert_eq!(expect(&escaped), Expect::Exactly(json!("a\"b")));
        for no_id in [
            format!(r#"{{"id":null,"x":"{pad}"}}"#),
            format!(r#"{{"id":{{"a":1}},"x":"{pad}"}}"#),
            format!(r#"[{{"id":5,"x":"{pad}"}}]"#),
            format!(r#"{{"id":12{pad}"#),
            format!(r#"x{{"id":5,"x":"{pad}"}}"#),
            format!(r#"{{"x":"{pad}"}}"#),
        ] {
            assert_eq!(expect(&no_id), Expect::NoId, "{no_id}");
        }
        assert_eq!(
            expected_reply(id_last.as_bytes(), id_last.len()),
            Expect::Exactly(json!(3)),
            "at the cap the line is parsed whole"
        );
    }
}
