//! The tool surface: the 15 tools of iai-mcp 3.3.0.
//!
//! The surface is stated once, as data: [`surface.json`](surface.json)
//! holds each tool's `tools/list` entry (name, title, description, JSON
//! Schema input and output, annotations) in the order 3.3.0 lists them.
//! Everything else is derived from it:
//!
//! - `tools/list` serves [`list_json`], parsed once and never touching the
//!   daemon;
//! - `tools/call` looks the tool up with [`find`] and turns its MCP
//!   `arguments` into a daemon request with [`Tool::daemon_request`]: every
//!   tool is forwarded by name, except `profile_get_set`, which `operation`
//!   splits into `profile_get` and `profile_set`;
//! - the annotations decide how a call is treated when its daemon
//!   connection is lost ([`Tool::access`]).
//!
//! The table is checked against the real 3.3.0 daemon and 3.3.0's own
//! listing by the end-to-end kit (`cargo xtask e2e`), not restated in unit
//! tests. `cargo xtask surface --iai-pme VERSION` shows how another
//! release's listing differs; with `--write` it rewrites the table (and
//! [`SURFACE_RELEASE`]) to that release, marking every description it
//! cannot take from here `TODO(surface):`, which a unit test refuses. Output schemas are open: the daemon owns the result shape and
//! adds fields over time, clients reject a result that does not validate,
//! so no field is required and every field the daemon may report as `null`
//! accepts `null`.

use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use crate::bridge::Access;

/// The iai-mcp release whose tool surface the table is: this wrapper is a
/// drop-in for that release's own wrapper.
pub const SURFACE_RELEASE: &str = "3.3.0";

/// The table, as served.
const SURFACE: &str = include_str!("surface.json");

/// One MCP tool: what `tools/call` needs to route it.
#[derive(Debug)]
pub struct Tool {
    /// The MCP tool name, as clients call it.
    pub name: String,
    /// The tool only reads daemon state (`readOnlyHint`).
    pub read_only: bool,
    /// Repeating a call with the same arguments has no further effect
    /// (`idempotentHint`).
    pub idempotent: bool,
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

/// The parsed table.
struct Registry {
    tools: Vec<Tool>,
    listing: Value,
}

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        // The table is part of the binary; its shape is checked by the
        // unit tests below, so a malformed table cannot ship.
        let listing: Value = serde_json::from_str(SURFACE).expect("surface.json is valid JSON");
        let tools = listing
            .as_array()
            .expect("surface.json is an array")
            .iter()
            .map(|entry| {
                let name = entry["name"].as_str().expect("every tool has a name");
                let hint = |key: &str| entry["annotations"][key].as_bool() == Some(true);
                Tool {
                    name: name.to_owned(),
                    read_only: hint("readOnlyHint"),
                    idempotent: hint("idempotentHint"),
                    route: if name == "profile_get_set" {
                        Route::ProfileGetSet
                    } else {
                        Route::Forward
                    },
                }
            })
            .collect();
        Registry { tools, listing }
    })
}

impl Tool {
    /// How the bridge may treat a call of this tool when its connection is
    /// lost: a tool that is both read-only and idempotent is a read (it may
    /// be re-sent, or answered another way, because running it twice
    /// changes nothing); anything else is a write, which must never run
    /// twice.
    pub fn access(&self) -> Access {
        if self.read_only && self.idempotent {
            Access::Read
        } else {
            Access::Write
        }
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

/// Every tool, in listing order.
pub fn all() -> &'static [Tool] {
    &registry().tools
}

/// The tool called `name`, or `None` for an unknown name (which `tools/call`
/// answers with an `unknown tool` error result).
pub fn find(name: &str) -> Option<&'static Tool> {
    all().iter().find(|t| t.name == name)
}

/// The `tools` array of the `tools/list` result: the table itself.
pub fn list_json() -> &'static Value {
    &registry().listing
}

/// The tool names in listing order, for the `hot_tools` list in the
/// server instructions.
pub fn names() -> impl Iterator<Item = &'static str> {
    all().iter().map(|t| t.name.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn tool(name: &str) -> &'static Tool {
        find(name).unwrap_or_else(|| panic!("{name} is registered"))
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
        let listing = list_json().as_array().expect("array");
        assert_eq!(listing.len(), all().len());
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
        unwritten(list_json(), "", &mut found);
        assert!(
            found.is_empty() && !SURFACE.contains("TODO(surface)"),
            "surface.json has text still to write:\n{}",
            found.join("\n")
        );
    }

    #[test]
    fn reads_are_exactly_the_read_only_idempotent_tools() {
        for t in all() {
            let entry = list_json()
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
        assert!(find("camouflaging_status").is_none());
        assert!(find("").is_none());
    }
    #[test]
    fn plain_tools_forward_arguments_unchanged() {
        let arguments = json!({ "cue": "what did we pick", "budget_tokens": 800, "extra": [1, 2] });
        for t in all().iter().filter(|t| t.name != "profile_get_set") {
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
