//! The tools' routing: how a tool call becomes a daemon request, and
//! whether a call may be sent again after its connection was lost.
//!
//! The built-in table [`surface.json`](surface.json) holds the `tools/list`
//! entries of iai-mcp 3.3.0's fifteen tools in this project's own words
//! (name, title, description, JSON Schema input and output, annotations),
//! in the order 3.3.0 lists them. The wrapper serves it when no release is
//! installed beside it or its bundle cannot be read
//! ([`crate::surface`]); what a release defines is served instead when it
//! can be.
//!
//! Routing is this wrapper's, whatever the surface: every tool is
//! forwarded by name with its arguments as params, except
//! `profile_get_set`, which `operation` splits into `profile_get` and
//! `profile_set` (every 3.x release routes the same way). Whether a call
//! reads or writes is decided here too, never by text this project does
//! not control: a tool the built-in table knows as read-only and
//! idempotent is a read, as long as the surface served gives it the same
//! annotations; any other tool is a write, which is never sent twice.

use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use crate::bridge::Access;

/// The iai-mcp release whose tools the built-in table describes.
pub const SURFACE_RELEASE: &str = "3.3.0";

/// The built-in table, as written.
const SURFACE: &str = include_str!("surface.json");

/// One MCP tool: what `tools/call` needs to route it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tool {
    /// The MCP tool name, as clients call it.
    pub name: String,
    access: Access,
    route: Route,
}

/// Why a tool call could not be turned into a daemon request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// `profile_get_set` was called with an `operation` other than `get` or
    /// `set`. Holds the operation as given: the string itself, or the JSON
    /// text of a non-string value (`null` when it was missing).
    #[error("unknown operation {0}")]
    UnknownOperation(String),
}

/// How a tool's MCP arguments map onto the daemon's JSON-RPC methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    /// Method = tool name, params = the arguments object unchanged.
    Forward,
    /// `operation` selects `profile_get` or `profile_set`.
    ProfileGetSet,
}

/// The built-in table: its entries as served, and its tools.
struct Builtin {
    listing: Value,
    tools: Vec<Tool>,
}

fn builtin() -> &'static Builtin {
    static BUILTIN: OnceLock<Builtin> = OnceLock::new();
    BUILTIN.get_or_init(|| {
        // The table is part of the binary; its shape is checked by the
        // unit tests below, so a malformed table cannot ship.
        let listing: Value = serde_json::from_str(SURFACE).expect("surface.json is valid JSON");
        let tools = listing
            .as_array()
            .expect("surface.json is an array")
            .iter()
            .map(|entry| {
                let name = entry["name"].as_str().expect("every tool has a name");
                Tool {
                    name: name.to_owned(),
                    access: access_of(entry.get("annotations")),
                    route: route_of(name),
                }
            })
            .collect();
        Builtin { listing, tools }
    })
}

/// Read or write, from a tool's annotations: a tool that is both
/// read-only and idempotent is a read (it may be re-sent, or answered
/// another way, because running it twice changes nothing); anything else
/// is a write, which must never run twice.
fn access_of(annotations: Option<&Value>) -> Access {
    let hint = |key: &str| annotations.and_then(|a| a.get(key)) == Some(&Value::Bool(true));
    if hint("readOnlyHint") && hint("idempotentHint") {
        Access::Read
    } else {
        Access::Write
    }
}

fn route_of(name: &str) -> Route {
    if name == "profile_get_set" {
        Route::ProfileGetSet
    } else {
        Route::Forward
    }
}

/// The hints that decide whether a call reads, as a release gives them.
const ACCESS_HINTS: [&str; 2] = ["readOnlyHint", "idempotentHint"];

impl Tool {
    /// The tool `name` as a release defines it, with `annotations`: routed
    /// as this wrapper routes it, and a read only when the built-in table
    /// knows it as one and the release's access hints say the same. A tool
    /// the table does not know, or whose hints differ from it, is a write:
    /// "a write never runs twice" is not left to text this project does
    /// not control.
    pub fn for_release(name: &str, annotations: Option<&Value>) -> Tool {
        let known = builtin_tool(name);
        let same_hints = known.is_some_and(|_| {
            let theirs = |key: &str| annotations.and_then(|a| a.get(key));
            let ours = builtin_entry(name).and_then(|e| e.get("annotations"));
            ACCESS_HINTS
                .iter()
                .all(|key| theirs(key) == ours.and_then(|a| a.get(*key)))
        });
        let access = match known {
            Some(tool) if same_hints => tool.access,
            _ => Access::Write,
        };
        Tool {
            name: name.to_owned(),
            access,
            route: route_of(name),
        }
    }

    /// How the bridge may treat a call of this tool when its connection is
    /// lost: a read may be re-sent or answered another way; a write must
    /// never run twice.
    pub fn access(&self) -> Access {
        self.access
    }

    /// Maps MCP `arguments` to the daemon JSON-RPC `(method, params)`.
    ///
    /// Every tool but `profile_get_set` forwards the arguments object
    /// unchanged as `params`, with the tool name as method. For
    /// `profile_get_set`, operation `get` becomes `profile_get
    /// {"knob": <knob or null>}` and `set` becomes `profile_set
    /// {"knob": <knob or null>, "value": <value or null>}`; any other
    /// operation, a non-string one or a missing one is
    /// [`ToolError::UnknownOperation`].
    pub fn daemon_request(
        &self,
        arguments: Map<String, Value>,
    ) -> Result<(String, Value), ToolError> {
        match self.route {
            Route::Forward => Ok((self.name.clone(), Value::Object(arguments))),
            Route::ProfileGetSet => profile_request(arguments),
        }
    }
}

/// The built-in table's tools, in listing order.
pub fn builtin_tools() -> &'static [Tool] {
    &builtin().tools
}

/// The built-in table's `tools/list` entries.
pub fn builtin_listing() -> &'static Value {
    &builtin().listing
}

fn builtin_tool(name: &str) -> Option<&'static Tool> {
    builtin_tools().iter().find(|t| t.name == name)
}

fn builtin_entry(name: &str) -> Option<&'static Value> {
    builtin_listing()
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)
}

/// Routes a `profile_get_set` call by its `operation` argument.
fn profile_request(mut arguments: Map<String, Value>) -> Result<(String, Value), ToolError> {
    let knob = arguments.remove("knob").unwrap_or(Value::Null);
    match arguments.get("operation") {
        Some(Value::String(op)) if op == "get" => {
            Ok(("profile_get".into(), json!({ "knob": knob })))
        }
        Some(Value::String(op)) if op == "set" => {
            let value = arguments.remove("value").unwrap_or(Value::Null);
            Ok((
                "profile_set".into(),
                json!({ "knob": knob, "value": value }),
            ))
        }
        Some(Value::String(op)) => Err(ToolError::UnknownOperation(op.clone())),
        Some(other) => Err(ToolError::UnknownOperation(other.to_string())),
        None => Err(ToolError::UnknownOperation(Value::Null.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn tool(name: &str) -> &'static Tool {
        builtin_tool(name).unwrap_or_else(|| panic!("{name} is registered"))
    }

    fn args(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    fn profile(arguments: Value) -> Result<(String, Value), ToolError> {
        tool("profile_get_set").daemon_request(args(arguments))
    }

    fn profile_ok(method: &str, params: Value) -> Result<(String, Value), ToolError> {
        Ok((method.to_owned(), params))
    }

    /// The shape every entry must have for clients to accept the listing;
    /// the content is checked against 3.3.0 by the end-to-end kit.
    #[test]
    fn every_entry_is_a_complete_tool_definition() {
        let listing = builtin_listing().as_array().expect("array");
        assert_eq!(listing.len(), builtin_tools().len());
        let mut names = HashSet::new();
        for entry in listing {
            let name = entry["name"].as_str().expect("name");
            assert!(names.insert(name), "{name} listed twice");
            let keys: Vec<&str> = entry
                .as_object()
                .expect("object")
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(
                keys,
                [
                    "name",
                    "title",
                    "description",
                    "inputSchema",
                    "outputSchema",
                    "annotations"
                ],
                "{name}"
            );
            for text in [&entry["title"], &entry["description"]] {
                let text = text.as_str().expect("text");
                assert!(!text.is_empty() && !text.contains('\n'), "{name}: {text}");
            }
            for schema in ["inputSchema", "outputSchema"] {
                assert_eq!(entry[schema]["type"], "object", "{name} {schema}");
                assert!(entry[schema]["properties"].is_object(), "{name} {schema}");
            }
            let properties = entry["inputSchema"]["properties"]
                .as_object()
                .expect("props");
            for (param, schema) in properties {
                // Some clients (Codex) rewrite an untyped property to a
                // string: every parameter states its type.
                assert!(schema.get("type").is_some(), "{name}.{param} has no type");
                assert!(schema["description"].is_string(), "{name}.{param}");
            }
            for required in entry["inputSchema"]["required"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let required = required.as_str().expect("string");
                assert!(properties.contains_key(required), "{name}: {required}");
            }
            // A non-object daemon result is wrapped as {"value": ...}.
            assert!(
                entry["outputSchema"]["properties"]["value"].is_object(),
                "{name}"
            );
            assert!(entry["outputSchema"].get("required").is_none(), "{name}");
            let annotations = entry["annotations"].as_object().expect("annotations");
            for hint in [
                "readOnlyHint",
                "destructiveHint",
                "idempotentHint",
                "openWorldHint",
            ] {
                assert!(annotations[hint].is_boolean(), "{name} {hint}");
            }
        }
    }

    /// `cargo xtask surface --write` starts every title and description it
    /// could not take from this table with this marker: a person writes
    /// them before the table ships.
    #[test]
    fn no_title_or_description_is_left_to_write() {
        fn unwritten(value: &Value, at: &str, found: &mut Vec<String>) {
            match value {
                Value::String(text) if text.starts_with("TODO(surface):") => {
                    found.push(format!("{at}: {text}"));
                }
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        let name = item["name"].as_str().map_or(i.to_string(), str::to_owned);
                        unwritten(item, &format!("{at}{name}"), found);
                    }
                }
                Value::Object(map) => {
                    for (key, item) in map {
                        unwritten(item, &format!("{at}.{key}"), found);
                    }
                }
                _ => {}
            }
        }
        let mut found = Vec::new();
        unwritten(builtin_listing(), "", &mut found);
        assert!(
            found.is_empty() && !SURFACE.contains("TODO(surface)"),
            "surface.json has text still to write:\n{}",
            found.join("\n")
        );
    }

    #[test]
    fn reads_are_exactly_the_read_only_idempotent_tools() {
        for t in builtin_tools() {
            let entry = builtin_listing()
                .as_array()
                .expect("array")
                .iter()
                .find(|e| e["name"] == t.name.as_str())
                .expect("listed");
            let read = entry["annotations"]["readOnlyHint"] == true
                && entry["annotations"]["idempotentHint"] == true;
            assert_eq!(t.access() == Access::Read, read, "{}", t.name);
        }
        assert_eq!(tool("memory_capture").access(), Access::Write);
        assert_eq!(tool("memory_recall").access(), Access::Read);
        assert!(builtin_tool("camouflaging_status").is_none());
        assert!(builtin_tool("").is_none());
    }

    #[test]
    fn a_release_tool_reads_only_when_the_table_knows_it_as_a_read() {
        let read = json!({"readOnlyHint": true, "idempotentHint": true});
        assert_eq!(
            Tool::for_release("memory_recall", Some(&read)).access(),
            Access::Read
        );
        // Unknown to the table: a write, whatever it claims.
        assert_eq!(
            Tool::for_release("camouflaging_status", Some(&read)).access(),
            Access::Write
        );
        // Known, but its hints differ from the table's: a write.
        let changed = json!({"readOnlyHint": true, "idempotentHint": false});
        assert_eq!(
            Tool::for_release("memory_recall", Some(&changed)).access(),
            Access::Write
        );
        assert_eq!(
            Tool::for_release("memory_recall", None).access(),
            Access::Write
        );
        // A write the release calls a read stays a write.
        assert_eq!(
            Tool::for_release("memory_capture", Some(&read)).access(),
            Access::Write
        );
        // Other hints (destructive, open world) do not decide it.
        let read_and_more = json!({"readOnlyHint": true, "idempotentHint": true, "openWorldHint": true, "title": "x"});
        assert_eq!(
            Tool::for_release("topology", Some(&read_and_more)).access(),
            Access::Read
        );
        // Routing is this wrapper's for every surface.
        let profile = Tool::for_release("profile_get_set", None);
        assert_eq!(
            profile
                .daemon_request(args(json!({"operation": "get"})))
                .map(|(method, _)| method),
            Ok("profile_get".to_owned())
        );
    }
    #[test]
    fn plain_tools_forward_arguments_unchanged() {
        let arguments = json!({ "cue": "what did we pick", "budget_tokens": 800, "extra": [1, 2] });
        for t in builtin_tools()
            .iter()
            .filter(|t| t.name != "profile_get_set")
        {
            let (method, params) = t
                .daemon_request(args(arguments.clone()))
                .expect("forwarded");
            assert_eq!(method, t.name);
            assert_eq!(params, arguments, "{}", t.name);
        }
    }

    #[test]
    fn plain_tools_forward_empty_arguments_as_empty_object() {
        let (method, params) = tool("topology")
            .daemon_request(Map::new())
            .expect("forwarded");
        assert_eq!(method, "topology");
        assert_eq!(params, json!({}));
    }

    #[test]
    fn profile_get_with_knob() {
        let got = profile(json!({ "operation": "get", "knob": "wake_depth" }));
        assert_eq!(
            got,
            profile_ok("profile_get", json!({ "knob": "wake_depth" }))
        );
    }

    #[test]
    fn profile_get_without_knob_sends_null() {
        let got = profile(json!({ "operation": "get" }));
        assert_eq!(got, profile_ok("profile_get", json!({ "knob": null })));
    }

    #[test]
    fn profile_get_ignores_value_and_other_arguments() {
        let got = profile(json!({ "operation": "get", "knob": "k", "value": 3, "x": 1 }));
        assert_eq!(got, profile_ok("profile_get", json!({ "knob": "k" })));
    }

    #[test]
    fn profile_set_sends_knob_and_value() {
        let got = profile(json!({ "operation": "set", "knob": "wake_depth", "value": {"a": [1]} }));
        assert_eq!(
            got,
            profile_ok(
                "profile_set",
                json!({ "knob": "wake_depth", "value": { "a": [1] } })
            )
        );
    }

    #[test]
    fn profile_set_fills_missing_knob_and_value_with_null() {
        let got = profile(json!({ "operation": "set" }));
        assert_eq!(
            got,
            profile_ok("profile_set", json!({ "knob": null, "value": null }))
        );
    }

    #[test]
    fn profile_bad_operation_string() {
        let err = profile(json!({ "operation": "delete", "knob": "k" })).unwrap_err();
        assert_eq!(err, ToolError::UnknownOperation("delete".into()));
        assert_eq!(err.to_string(), "unknown operation delete");
        let err = profile(json!({ "operation": "GET" })).unwrap_err();
        assert_eq!(err.to_string(), "unknown operation GET");
    }

    #[test]
    fn profile_missing_operation() {
        let err = profile(json!({ "knob": "k" })).unwrap_err();
        assert_eq!(err.to_string(), "unknown operation null");
        let err = tool("profile_get_set")
            .daemon_request(Map::new())
            .unwrap_err();
        assert_eq!(err.to_string(), "unknown operation null");
    }

    #[test]
    fn profile_non_string_operation_uses_json_text() {
        let err = profile(json!({ "operation": 7 })).unwrap_err();
        assert_eq!(err.to_string(), "unknown operation 7");
        let err = profile(json!({ "operation": null })).unwrap_err();
        assert_eq!(err.to_string(), "unknown operation null");
        let err = profile(json!({ "operation": ["get"] })).unwrap_err();
        assert_eq!(err.to_string(), "unknown operation [\"get\"]");
        let err = profile(json!({ "operation": { "op": "set" } })).unwrap_err();
        assert_eq!(err.to_string(), "unknown operation {\"op\":\"set\"}");
    }
}
