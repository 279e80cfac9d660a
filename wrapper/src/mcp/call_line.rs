//! The everyday line, a legacy-era `tools/call` of a known tool, read
//! without building a tree of the whole request.
//!
//! Only what routing needs is taken from the line: the id, the method, the
//! tool name and the arguments object; `jsonrpc`, `method` and `name` are
//! borrowed from the line, and other members are skipped. Anything this
//! reader is not sure of (another method, a string with escapes, members
//! given twice, `_meta`, an unknown tool, arguments that are not an
//! object) makes it step aside, and the dispatcher judges the line by the
//! full rules, so no answer differs from theirs.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::tools::{self, Tool};

#[derive(Deserialize)]
struct Envelope<'a> {
    jsonrpc: &'a str,
    id: Value,
    method: &'a str,
    #[serde(borrow)]
    params: Params<'a>,
}

#[derive(Deserialize)]
struct Params<'a> {
    name: &'a str,
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(default, rename = "_meta", borrow)]
    meta: Option<&'a RawValue>,
}

/// A legacy-era `tools/call` of a known tool, as read by [`tool_call`].
#[derive(Debug)]
pub struct QuickCall {
    /// The request id (a string or a number).
    pub id: Value,
    /// The tool called.
    pub tool: &'static Tool,
    /// The call's arguments (empty when none were given).
    pub arguments: Map<String, Value>,
}

/// The tool call on `line`, when it is an ordinary legacy `tools/call` of
/// a known tool; `None` when the full rules must decide.
pub fn tool_call(line: &[u8]) -> Option<QuickCall> {
    // serde would also read an array as a struct (members in order).
    if line.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return None;
    }
    let envelope: Envelope<'_> = serde_json::from_slice(line).ok()?;
    let params = envelope.params;
    let usable = envelope.jsonrpc == "2.0"
        && envelope.method == "tools/call"
        && matches!(envelope.id, Value::String(_) | Value::Number(_))
        && params.meta.is_none();
    if !usable {
        return None;
    }
    let tool = tools::find(params.name)?;
    let arguments = match params.arguments.map(RawValue::get) {
        None | Some("null") => Map::new(),
        Some(text) if text.starts_with('{') => serde_json::from_str(text).ok()?,
        Some(_) => return None,
    };
    Some(QuickCall {
        id: envelope.id,
        tool,
        arguments,
    })
}
