//! What the model reads, compared exactly: the wrapper's `initialize`
//! answer and `tools/list` against the installed release's own wrapper's,
//! field by field.
//!
//! Everything must be equal (the server's name, the instructions, the
//! tools in order, every member of every tool) but for two things this
//! wrapper does on purpose (docs/CONTRACT.md sections 3 and 3.1):
//!
//! - the server's version is the installed release's, from its package
//!   metadata, where a release's bundle may give another (3.0.0's calls
//!   itself 0.1.0);
//! - an output schema may carry the extensions of [`EXTENSIONS`] and
//!   nothing else: a `value` property for a result that is not an object,
//!   a `_source` property on the tools degraded mode answers, and `null`
//!   accepted by `memory_capture`'s `record_id`.
//!
//! The extensions are declared here from the contract, not taken from the
//! wrapper's code, so that a wrapper that adds anything else fails.

use std::fmt;

use serde_json::{Map, Value};

/// The tools degraded mode answers from the CLI, whose results carry
/// `_source` (CONTRACT.md section 7).
pub const DEGRADED_TOOLS: [&str; 5] = [
    "memory_recall",
    "memory_search",
    "episodes_recent",
    "memory_temporal_recall",
    "memory_capture",
];

/// One permitted addition to a release's output schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extension {
    /// A property the release does not declare, added to every tool's
    /// output schema (`None`) or only to the tools named.
    Property {
        /// The property.
        name: &'static str,
        /// The tools it is added to; `None` for every tool.
        tools: Option<&'static [&'static str]>,
    },
    /// `null` added to the types (and `enum`, if any) of a property the
    /// release declares.
    AcceptsNull {
        /// The tool.
        tool: &'static str,
        /// The property.
        property: &'static str,
    },
}

/// Every extension the contract names (section 3.1).
pub const EXTENSIONS: [Extension; 3] = [
    Extension::Property {
        name: "value",
        tools: None,
    },
    Extension::Property {
        name: "_source",
        tools: Some(&DEGRADED_TOOLS),
    },
    Extension::AcceptsNull {
        tool: "memory_capture",
        property: "record_id",
    },
];

/// What a wrapper presents to a host: its `initialize` result and its
/// `tools/list` tools.
#[derive(Debug, Clone, PartialEq)]
pub struct Presented {
    /// `serverInfo.name`.
    pub server_name: Value,
    /// `serverInfo.version`.
    pub server_version: Value,
    /// `instructions` (`Null` when absent).
    pub instructions: Value,
    /// The `tools` array of `tools/list`.
    pub tools: Vec<Value>,
}

impl Presented {
    /// From an `initialize` response (the whole message) and a `tools`
    /// array.
    pub fn from_replies(initialize: &Value, tools: Vec<Value>) -> Self {
        let result = &initialize["result"];
        Presented {
            server_name: result["serverInfo"]["name"].clone(),
            server_version: result["serverInfo"]["version"].clone(),
            instructions: result["instructions"].clone(),
            tools,
        }
    }
}

/// One place where the wrapper's presentation differs from the release's
/// own beyond what the contract permits.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    /// Where: `instructions`, `serverInfo.version`, `tools`,
    /// `tools[memory_recall].inputSchema.properties.cue.description`.
    pub at: String,
    /// The wrapper's value there (`None`: absent).
    pub ours: Option<Value>,
    /// The release's own wrapper's (`None`: absent).
    pub theirs: Option<Value>,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: wrapper {}, release {}",
            self.at,
            shown(self.ours.as_ref()),
            shown(self.theirs.as_ref())
        )
    }
}

/// A value for a message, cut short if long.
fn shown(value: Option<&Value>) -> String {
    let Some(value) = value else {
        return "absent".to_owned();
    };
    let text = value.to_string();
    match text.char_indices().nth(80) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

/// Every mismatch between `ours` and `theirs`, the release's own
/// wrapper's presentation; `release` is the installed release's version,
/// which `ours` must give as the server's version. Empty when the wrapper
/// presents exactly what the contract says.
pub fn compare(ours: &Presented, theirs: &Presented, release: &str) -> Vec<Mismatch> {
    let mut found = Vec::new();
    differences(
        "serverInfo.name",
        &ours.server_name,
        &theirs.server_name,
        &mut found,
    );
    let version = Value::String(release.to_owned());
    differences(
        "serverInfo.version",
        &ours.server_version,
        &version,
        &mut found,
    );
    differences(
        "instructions",
        &ours.instructions,
        &theirs.instructions,
        &mut found,
    );
    let names =
        |tools: &[Value]| -> Vec<Value> { tools.iter().map(|t| t["name"].clone()).collect() };
    let (our_names, their_names) = (names(&ours.tools), names(&theirs.tools));
    if our_names != their_names {
        found.push(Mismatch {
            at: "tools (names, in order)".to_owned(),
            ours: Some(Value::Array(our_names)),
            theirs: Some(Value::Array(their_names)),
        });
        return found;
    }
    for (our_tool, their_tool) in ours.tools.iter().zip(&theirs.tools) {
        let name = their_tool["name"].as_str().unwrap_or("?");
        compare_tool(name, our_tool, their_tool, &mut found);
    }
    found
}

/// One tool: every member equal, the output schema once the contract's
/// extensions are taken back out of the wrapper's.
fn compare_tool(name: &str, ours: &Value, theirs: &Value, found: &mut Vec<Mismatch>) {
    let at = format!("tools[{name}]");
    let (Value::Object(ours), Value::Object(theirs)) = (ours, theirs) else {
        differences(&at, ours, theirs, found);
        return;
    };
    for key in union_keys(ours, theirs) {
        let place = format!("{at}.{key}");
        match (ours.get(&key), theirs.get(&key)) {
            (Some(our_schema), Some(their_schema)) if key == "outputSchema" => {
                let unextended = without_extensions(name, our_schema, their_schema);
                differences(&place, &unextended, their_schema, found);
            }
            (Some(o), Some(t)) => differences(&place, o, t, found),
            (o, t) => found.push(Mismatch {
                at: place,
                ours: o.cloned(),
                theirs: t.cloned(),
            }),
        }
    }
}

/// `ours`, an output schema, with each of [`EXTENSIONS`] that applies to
/// `tool` undone where `theirs` does not have it already.
pub fn without_extensions(tool: &str, ours: &Value, theirs: &Value) -> Value {
    let mut undone = ours.clone();
    let their_properties = theirs["properties"].as_object();
    let Some(properties) = undone.get_mut("properties").and_then(Value::as_object_mut) else {
        return undone;
    };
    for extension in EXTENSIONS {
        match extension {
            Extension::Property { name, tools } => {
                let applies = tools.is_none_or(|tools| tools.contains(&tool));
                let theirs_has = their_properties.is_some_and(|p| p.contains_key(name));
                if applies && !theirs_has {
                    properties.remove(name);
                }
            }
            Extension::AcceptsNull {
                tool: extended,
                property,
            } if extended == tool => {
                let their_property = their_properties.and_then(|p| p.get(property));
                if let (Some(Value::Object(ours)), Some(Value::Object(theirs))) =
                    (properties.get_mut(property), their_property)
                {
                    undo_null(ours, theirs);
                }
            }
            Extension::AcceptsNull { .. } => {}
        }
    }
    // The `properties` object the wrapper made to hold an extension, where
    // the release declares none (`{"type": "object"}` alone).
    if properties.is_empty()
        && their_properties.is_none()
        && let Some(schema) = undone.as_object_mut()
    {
        schema.remove("properties");
    }
    undone
}

/// Takes back a `null` added to `ours`' `type` and `enum` where `theirs`
/// has none: `["string", "null"]` becomes `"string"` again when the
/// release wrote `"string"`.
fn undo_null(ours: &mut Map<String, Value>, theirs: &Map<String, Value>) {
    let null = Value::String("null".to_owned());
    if let (Some(Value::Array(kinds)), Some(their_kind)) = (ours.get("type"), theirs.get("type")) {
        let without: Vec<Value> = kinds.iter().filter(|k| **k != null).cloned().collect();
        let restored = match (&without[..], their_kind) {
            ([single], Value::String(_)) => single.clone(),
            _ => Value::Array(without),
        };
        if kinds.contains(&null) && !their_has(their_kind, &null) {
            ours.insert("type".to_owned(), restored);
        }
    }
    if let (Some(Value::Array(allowed)), Some(Value::Array(their_allowed))) =
        (ours.get_mut("enum"), theirs.get("enum"))
        && !their_allowed.contains(&Value::Null)
    {
        allowed.retain(|v| !v.is_null());
    }
}

/// Whether a `type` (a name or a list of names) includes `kind`.
fn their_has(kind_or_kinds: &Value, kind: &Value) -> bool {
    match kind_or_kinds {
        Value::Array(kinds) => kinds.contains(kind),
        single => single == kind,
    }
}

/// Pushes a mismatch for every place `ours` and `theirs` differ, going
/// into objects member by member (arrays are compared whole).
fn differences(at: &str, ours: &Value, theirs: &Value, found: &mut Vec<Mismatch>) {
    match (ours, theirs) {
        (Value::Object(o), Value::Object(t)) => {
            for key in union_keys(o, t) {
                let place = format!("{at}.{key}");
                match (o.get(&key), t.get(&key)) {
                    (Some(ov), Some(tv)) => differences(&place, ov, tv, found),
                    (ov, tv) => found.push(Mismatch {
                        at: place,
                        ours: ov.cloned(),
                        theirs: tv.cloned(),
                    }),
                }
            }
        }
        (o, t) if o == t => {}
        (o, t) => found.push(Mismatch {
            at: at.to_owned(),
            ours: (!o.is_null()).then(|| o.clone()),
            theirs: (!t.is_null()).then(|| t.clone()),
        }),
    }
}

/// The keys of `first`, then those only in `second`.
fn union_keys(first: &Map<String, Value>, second: &Map<String, Value>) -> Vec<String> {
    let mut keys: Vec<String> = first.keys().cloned().collect();
    keys.extend(second.keys().filter(|k| !first.contains_key(*k)).cloned());
    keys
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn capture(record_id_type: Value, extra: Option<(&str, Value)>) -> Value {
        let mut properties = json!({
            "status": {"type": "string"},
            "record_id": {"type": record_id_type, "format": "uuid"}
        });
        if let Some((name, schema)) = extra {
            properties[name] = schema;
        }
        json!({
            "name": "memory_capture",
            "description": "Keeps a note.",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
            "outputSchema": {"type": "object", "properties": properties}
        })
    }

    fn presented(version: &str, tools: Vec<Value>) -> Presented {
        Presented {
            server_name: json!("iai-mcp"),
            server_version: json!(version),
            instructions: json!("Read first."),
            tools,
        }
    }

    #[test]
    fn the_contracts_extensions_and_the_release_version_are_accepted() {
        let theirs = presented("0.1.0", vec![capture(json!("string"), None)]);
        let mut extended = capture(
            json!(["string", "null"]),
            Some(("_source", json!({"type": "string"}))),
        );
        extended["outputSchema"]["properties"]["value"] = json!({"description": "wrapped"});
        let ours = presented("3.0.0", vec![extended]);
        assert_eq!(compare(&ours, &theirs, "3.0.0"), Vec::<Mismatch>::new());
    }

    #[test]
    fn anything_else_is_a_mismatch_named_by_its_place() {
        let theirs = presented("3.3.0", vec![capture(json!("string"), None)]);
        let cases: Vec<(Presented, &str)> = vec![
            (
                presented("1.0.0", theirs.tools.clone()),
                "serverInfo.version",
            ),
            (
                Presented {
                    instructions: json!("Paraphrased."),
                    ..theirs.clone()
                },
                "instructions",
            ),
            (
                presented(
                    "3.3.0",
                    vec![{
                        let mut t = capture(json!("string"), None);
                        t["title"] = json!("Capture");
                        t
                    }],
                ),
                "tools[memory_capture].title",
            ),
            (
                presented(
                    "3.3.0",
                    vec![{
                        let mut t = capture(json!("string"), None);
                        t["inputSchema"]["properties"]["text"]["description"] = json!("words");
                        t
                    }],
                ),
                "tools[memory_capture].inputSchema.properties.text.description",
            ),
            (
                presented(
                    "3.3.0",
                    vec![capture(
                        json!("string"),
                        Some(("extra", json!({"type": "string"}))),
                    )],
                ),
                "tools[memory_capture].outputSchema.properties.extra",
            ),
            (
                presented("3.3.0", vec![capture(json!(["string", "integer"]), None)]),
                "tools[memory_capture].outputSchema.properties.record_id.type",
            ),
            (presented("3.3.0", vec![]), "tools (names, in order)"),
        ];
        for (ours, place) in cases {
            let found = compare(&ours, &theirs, "3.3.0");
            assert_eq!(found.len(), 1, "{place}: {found:?}");
            assert_eq!(found[0].at, place);
        }
    }

    #[test]
    fn a_properties_object_made_for_an_extension_alone_is_accepted() {
        let tool = |output: Value| json!({"name": "profile_get_set", "inputSchema": {"type": "object"}, "outputSchema": output});
        let theirs = presented("3.3.0", vec![tool(json!({"type": "object"}))]);
        let ours = presented(
            "3.3.0",
            vec![tool(json!({"type": "object", "properties": {"value": {}}}))],
        );
        assert_eq!(compare(&ours, &theirs, "3.3.0"), Vec::<Mismatch>::new());
        let more = presented(
            "3.3.0",
            vec![tool(
                json!({"type": "object", "properties": {"value": {}, "x": {}}}),
            )],
        );
        assert_eq!(compare(&more, &theirs, "3.3.0").len(), 1);
    }

    #[test]
    fn source_on_a_tool_degraded_mode_does_not_answer_is_a_mismatch() {
        let tool = |properties: Value| {
            json!({"name": "topology", "inputSchema": {"type": "object"},
                   "outputSchema": {"type": "object", "properties": properties}})
        };
        let theirs = presented("3.3.0", vec![tool(json!({"nodes": {"type": "integer"}}))]);
        let ours = presented(
            "3.3.0",
            vec![tool(
                json!({"nodes": {"type": "integer"}, "_source": {"type": "string"}}),
            )],
        );
        let found = compare(&ours, &theirs, "3.3.0");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            found[0].at,
            "tools[topology].outputSchema.properties._source"
        );
    }
}
