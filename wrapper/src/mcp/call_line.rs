//! The everyday line, a legacy-era `tools/call` of a known tool, read
//! without building a tree of the whole request.
//!
//! Only what routing needs is taken from the line: the id, the method, the
//! tool name, the arguments object and `_meta`; `jsonrpc`, `method` and
//! `name` are borrowed from the line. Anything this reader is not sure of
//! (another method, a string with escapes, members given twice, any other
//! member, a modern-era `_meta`, an unknown tool, params or arguments that
//! are not an object) makes it step aside, and the dispatcher judges the line by the
//! full rules, so no answer differs from theirs. Every value it keeps is
//! read in place, never skipped, so nesting counts against serde_json's
//! depth limit exactly as in a tree of the whole line.

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::protocol::PROTOCOL_VERSION_KEY;
use crate::tools::{self, Tool};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope<'a> {
    jsonrpc: &'a str,
    id: Value,
    method: &'a str,
    #[serde(borrow, deserialize_with = "object")]
    params: Params<'a>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params<'a> {
    name: &'a str,
    #[serde(default)]
    arguments: Option<Map<String, Value>>,
    #[serde(default, rename = "_meta")]
    meta: Option<Map<String, Value>>,
}

/// `params`, taken only from an object: serde reads a struct from an array
/// too (members in order), where the full rules refuse one.
fn object<'de: 'a, 'a, D: Deserializer<'de>>(deserializer: D) -> Result<Params<'a>, D::Error> {
    struct Members<'a>(PhantomData<Params<'a>>);
    impl<'de: 'a, 'a> Visitor<'de> for Members<'a> {
        type Value = Params<'a>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, members: A) -> Result<Params<'a>, A::Error> {
            Params::deserialize(MapAccessDeserializer::new(members))
        }
    }
    deserializer.deserialize_map(Members(PhantomData))
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
        && !params
            .meta
            .is_some_and(|meta| meta.contains_key(PROTOCOL_VERSION_KEY));
    if !usable {
        return None;
    }
    let tool = tools::find(params.name)?;
    Some(QuickCall {
        id: envelope.id,
        tool,
        arguments: params.arguments.unwrap_or_default(),
    })
}
