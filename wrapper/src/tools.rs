//! The static registry of the 12 iai-mcp tools.
//!
//! Every tool the wrapper exposes is one row of data in [`all`]: its name,
//! title, description, parameters, result fields, hints and daemon routing.
//! Both halves of the MCP tool surface read that one table, so they cannot
//! drift apart:
//!
//! - `tools/list` serves [`list_json`], built once from the table and never
//!   touching the daemon;
//! - `tools/call` looks the tool up with [`find`], turns the MCP `arguments`
//!   into a daemon JSON-RPC request with [`Tool::daemon_request`], and uses
//!   [`Tool::replay_safe`] to decide whether a call may be re-sent after a
//!   lost daemon connection.
//!
//! Output schemas are deliberately permissive: clients validate
//! `structuredContent` against them and reject the whole result on a
//! mismatch, while the daemon owns the result shape and may add fields. So
//! no result field is required, additional properties are allowed, every
//! schema has a `value` property (the wrapper wraps a non-object result as
//! `{"value": ...}`), and fields the daemon can report as `null` (such as
//! `sigma` on an empty memory graph) accept `null`.

use std::sync::OnceLock;

use serde_json::{Map, Value, json};

/// One MCP tool: what `tools/list` shows for it and how `tools/call` routes
/// it to the daemon.
///
/// Instances exist only in the static table behind [`all`]; the private
/// fields hold the descriptive data the listing is built from.
#[derive(Debug)]
pub struct Tool {
    /// The MCP tool name, as clients call it.
    pub name: &'static str,
    /// The tool only reads daemon state (`readOnlyHint`).
    pub read_only: bool,
    /// Repeating a call with the same arguments has no further effect
    /// (`idempotentHint`).
    pub idempotent: bool,
    /// Short human-readable name (`title`).
    title: &'static str,
    /// One task-oriented sentence: what the assistant uses the tool for.
    description: &'static str,
    /// The input parameters, in contract order.
    params: &'static [Param],
    /// The result fields the daemon reports, in contract order.
    results: &'static [Field],
    /// How the MCP arguments become a daemon request.
    route: Route,
}

/// Every JSON type: the explicit spelling of "any value".
const ANY_JSON_TYPES: [&str; 7] = [
    "string", "number", "integer", "boolean", "object", "array", "null",
];

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

/// One input parameter of a tool.
#[derive(Debug)]
struct Param {
    name: &'static str,
    required: bool,
    ty: Ty,
    description: &'static str,
}

/// The JSON Schema shape of an input parameter.
#[derive(Debug, Clone, Copy)]
enum Ty {
    /// Any string.
    Str,
    /// A string of `min..=max` characters.
    Text { min: u64, max: u64 },
    /// A UUID string.
    Uuid,
    /// An array of UUID strings.
    Uuids,
    /// One of a fixed set of strings.
    Choice {
        values: &'static [&'static str],
        default: Option<&'static str>,
    },
    /// An integer.
    Int {
        default: Option<i64>,
        max: Option<i64>,
    },
    /// A number.
    Num { default: Option<f64> },
    /// An array of numbers, of exactly `len` items when given.
    Numbers { len: Option<u64> },
    /// An object whose values are all strings.
    StrMap,
    /// Any JSON value.
    Any,
}

/// One result field a tool reports, for its output schema.
#[derive(Debug)]
struct Field {
    name: &'static str,
    ty: Out,
    /// The daemon may report the field as `null`.
    nullable: bool,
}

/// The JSON type of a result field.
#[derive(Debug, Clone, Copy)]
enum Out {
    Array,
    Object,
    Integer,
    Number,
    Str,
    Bool,
    /// A string from a fixed set.
    Choice(&'static [&'static str]),
}

/// A required parameter.
const fn req(name: &'static str, ty: Ty, description: &'static str) -> Param {
    Param {
        name,
        required: true,
        ty,
        description,
    }
}

/// An optional parameter.
const fn opt(name: &'static str, ty: Ty, description: &'static str) -> Param {
    Param {
        name,
        required: false,
        ty,
        description,
    }
}

/// A result field that always has a value of its type.
const fn out(name: &'static str, ty: Out) -> Field {
    Field {
        name,
        ty,
        nullable: false,
    }
}

/// A result field the daemon may report as `null`.
const fn out_or_null(name: &'static str, ty: Out) -> Field {
    Field {
        name,
        ty,
        nullable: true,
    }
}

/// Length of a cue embedding, in floats.
const EMBEDDING_LEN: u64 = 384;
/// ISO-639-1 codes of the languages `memory_recall` accepts.
const LANGUAGES: &[&str] = &["en", "ru", "ja", "ar", "de", "fr", "es", "zh"];
/// Memory tiers `memory_capture` can file text under.
const TIERS: &[&str] = &[
    "working",
    "episodic",
    "semantic",
    "procedural",
    "parametric",
];
/// Conversation roles `memory_capture` accepts.
const ROLES: &[&str] = &["user", "assistant", "system"];
/// Event severities `events_query` filters on.
const SEVERITIES: &[&str] = &["info", "warning", "critical"];
/// `profile_get_set` operations.
const OPERATIONS: &[&str] = &["get", "set"];

/// Parameter shared by the two recall tools.
const fn budget_tokens(default: i64) -> Param {
    opt(
        "budget_tokens",
        Ty::Int {
            default: Some(default),
            max: None,
        },
        "Most tokens the returned memories may take up.",
    )
}

/// The registry, in contract order.
static TOOLS: [Tool; 12] = [
    Tool {
        name: "memory_recall",
        title: "Recall memories",
        read_only: true,
        idempotent: true,
        route: Route::Forward,
        description: "Retrieve memories relevant to a cue within a token budget, to build on \
            what was said or decided before.",
        params: &[
            req(
                "cue",
                Ty::Str,
                "What to look for: a question, topic or phrase to match stored memories against.",
            ),
            budget_tokens(1500),
            opt("session_id", Ty::Str, "Id of the current session."),
            opt(
                "cue_embedding",
                Ty::Numbers {
                    len: Some(EMBEDDING_LEN),
                },
                "Precomputed embedding of the cue (384 floats), when one is already at hand.",
            ),
            opt(
                "language",
                Ty::Choice {
                    values: LANGUAGES,
                    default: Some("en"),
                },
                "ISO-639-1 code of the cue's language.",
            ),
        ],
        results: &[
            out("hits", Out::Array),
            out("anti_hits", Out::Array),
            out("activation_trace", Out::Array),
            out("budget_used", Out::Integer),
            out("hints", Out::Array),
            out("cue_mode", Out::Choice(&["verbatim", "concept"])),
            out("patterns_observed", Out::Array),
        ],
    },
    Tool {
        name: "memory_recall_structural",
        title: "Recall memories by structure",
        read_only: true,
        idempotent: true,
        route: Route::Forward,
        description: "Retrieve memories that match a structural query of keys and values rather \
            than a text cue, within a token budget.",
        params: &[
            opt(
                "structure_query",
                Ty::StrMap,
                "Keys mapped to the string values the memories should match, e.g. {\"agent\": \
                    \"alice\"}.",
            ),
            budget_tokens(2000),
            opt(
                "max_records",
                Ty::Int {
                    default: Some(5000),
                    max: Some(50000),
                },
                "Most stored records to examine for the query.",
            ),
        ],
        results: &[
            out("hits", Out::Array),
            out("anti_hits", Out::Array),
            out("activation_trace", Out::Array),
            out("budget_used", Out::Integer),
            out("structural_query_size", Out::Integer),
        ],
    },
    Tool {
        name: "memory_reinforce",
        title: "Reinforce memories",
        read_only: false,
        idempotent: true,
        route: Route::Forward,
        description: "Strengthen the links between memories that proved useful together, so they \
            come back together more readily.",
        params: &[req(
            "ids",
            Ty::Uuids,
            "Ids (UUIDs) of the memories to reinforce.",
        )],
        results: &[
            out("edges_boosted", Out::Integer),
            out("new_weights", Out::Object),
        ],
    },
    Tool {
        name: "memory_contradict",
        title: "Contradict a memory",
        read_only: false,
        idempotent: false,
        route: Route::Forward,
        description: "Correct a stored memory by recording the fact that now holds, linked to \
            the memory it contradicts.",
        params: &[
            req(
                "id",
                Ty::Uuid,
                "Id (UUID) of the memory that is no longer right.",
            ),
            req("new_fact", Ty::Str, "The fact that holds instead."),
            opt(
                "cue_embedding",
                Ty::Numbers { len: None },
                "Precomputed embedding for the new fact, when one is already at hand.",
            ),
        ],
        results: &[
            out("original_id", Out::Str),
            out("new_record_id", Out::Str),
            out("edge_type", Out::Str),
            out("ts", Out::Str),
        ],
    },
    Tool {
        name: "memory_capture",
        title: "Capture a memory",
        read_only: false,
        idempotent: false,
        route: Route::Forward,
        description: "Save text worth remembering, such as a decision or a correction, as a \
            memory for later sessions.",
        params: &[
            req(
                "text",
                Ty::Text { min: 12, max: 8000 },
                "The text to remember, 12 to 8000 characters.",
            ),
            opt(
                "cue",
                Ty::Str,
                "Short cue the memory should later be found by.",
            ),
            opt(
                "tier",
                Ty::Choice {
                    values: TIERS,
                    default: Some("episodic"),
                },
                "Memory tier to file the text under.",
            ),
            opt(
                "session_id",
                Ty::Str,
                "Id of the session the text comes from.",
            ),
            opt(
                "role",
                Ty::Choice {
                    values: ROLES,
                    default: Some("user"),
                },
                "Who said the text in the conversation.",
            ),
        ],
        results: &[
            out(
                "status",
                Out::Choice(&["inserted", "reinforced", "skipped"]),
            ),
            out_or_null("record_id", Out::Str),
            out_or_null("reason", Out::Str),
        ],
    },
    Tool {
        name: "memory_consolidate",
        title: "Consolidate memories",
        read_only: false,
        idempotent: true,
        route: Route::Forward,
        description: "Consolidate stored memories into summaries and candidate schemas.",
        params: &[opt(
            "session_id",
            Ty::Str,
            "Id of the session the consolidation runs for.",
        )],
        results: &[
            out("mode", Out::Str),
            out("tier", Out::Str),
            out("summaries_created", Out::Integer),
            out("decay_result", Out::Object),
            out("schema_candidates", Out::Array),
        ],
    },
    Tool {
        name: "profile_get_set",
        title: "Get or set a profile knob",
        read_only: false,
        idempotent: true,
        route: Route::ProfileGetSet,
        description: "Read the memory profile's knobs, or change one of them.",
        params: &[
            req(
                "operation",
                Ty::Choice {
                    values: OPERATIONS,
                    default: None,
                },
                "Whether to read (get) or change (set) a knob.",
            ),
            opt("knob", Ty::Str, "Name of the knob to read or change."),
            opt(
                "value",
                Ty::Any,
                "New value of the knob when setting it, as any JSON value.",
            ),
        ],
        // The knob value(s): an open object, described by `value` only.
        results: &[],
    },
    Tool {
        name: "curiosity_pending",
        title: "Pending curiosity questions",
        read_only: true,
        idempotent: true,
        route: Route::Forward,
        description: "List the open questions the memory system would like answered, to raise \
            them when they fit the conversation.",
        params: &[opt(
            "session_id",
            Ty::Str,
            "Id of the session to list questions for.",
        )],
        results: &[out("questions", Out::Array), out("count", Out::Integer)],
    },
    Tool {
        name: "schema_list",
        title: "List schemas",
        read_only: true,
        idempotent: true,
        route: Route::Forward,
        description: "List the schemas (recurring patterns) learned from stored memories, \
            optionally by domain and minimum confidence.",
        params: &[
            opt("domain", Ty::Str, "Only list schemas from this domain."),
            opt(
                "confidence_min",
                Ty::Num { default: Some(0.0) },
                "Only list schemas with at least this confidence.",
            ),
        ],
        results: &[out("schemas", Out::Array)],
    },
    Tool {
        name: "events_query",
        title: "Query events",
        read_only: true,
        idempotent: true,
        route: Route::Forward,
        description: "Look up events the memory system has logged, by kind, time and severity.",
        params: &[
            req("kind", Ty::Str, "Kind of event to look up."),
            opt(
                "since",
                Ty::Str,
                "Only events at or after this ISO-8601 time.",
            ),
            opt(
                "severity",
                Ty::Choice {
                    values: SEVERITIES,
                    default: None,
                },
                "Only events of this severity.",
            ),
            opt(
                "limit",
                Ty::Int {
                    default: Some(100),
                    max: Some(1000),
                },
                "Most events to return.",
            ),
        ],
        results: &[out("events", Out::Array), out("count", Out::Integer)],
    },
    Tool {
        name: "topology",
        title: "Memory graph topology",
        read_only: true,
        idempotent: true,
        route: Route::Forward,
        description: "Report the shape of the memory graph: size, clustering, path length, \
            small-world sigma, communities and regime.",
        params: &[],
        results: &[
            out("N", Out::Integer),
            out("C", Out::Number),
            out("L", Out::Number),
            out_or_null("sigma", Out::Number),
            out("community_count", Out::Integer),
            out("rich_club_ratio", Out::Number),
            out("regime", Out::Str),
        ],
    },
    Tool {
        name: "camouflaging_status",
        title: "Camouflaging status",
        read_only: true,
        idempotent: true,
        route: Route::Forward,
        description: "Check whether recent samples show a camouflaging (masking) trend, with its \
            slope, mean and current relaxation level.",
        params: &[opt(
            "window_size",
            Ty::Int {
                default: Some(5),
                max: None,
            },
            "Number of most recent samples to examine.",
        )],
        results: &[
            out("detected", Out::Bool),
            out("trajectory_slope", Out::Number),
            out("current_mean", Out::Number),
            out("sample_count", Out::Integer),
            out("camouflaging_relaxation", Out::Number),
        ],
    },
];

impl Tool {
    /// True when a call may be re-sent after a lost daemon connection: the
    /// tool is both read-only and idempotent, so a duplicate delivery can
    /// change nothing.
    pub fn replay_safe(&self) -> bool {
        self.read_only && self.idempotent
    }

    /// Maps MCP `arguments` to the daemon JSON-RPC `(method, params)`.
    ///
    /// Every tool but `profile_get_set` forwards the arguments object
    /// unchanged as `params`, with the tool name as method. For
    /// `profile_get_set`, operation `get` becomes `profile_get
    /// {"knob": <knob or null>}` and `set` becomes `profile_set
    /// {"knob": <knob or null>, "value": <value or null>}`; any other
    /// operation, a non-string one or a missing one is
    /// [`ToolError::UnknownOperation`]. An absent `arguments` is passed as
    /// an empty map.
    pub fn daemon_request(
        &self,
        arguments: Map<String, Value>,
    ) -> Result<(&'static str, Value), ToolError> {
        match self.route {
            Route::Forward => Ok((self.name, Value::Object(arguments))),
            Route::ProfileGetSet => profile_request(arguments),
        }
    }

    /// The tool's `inputSchema`: an object schema of its parameters.
    fn input_schema(&self) -> Value {
        let properties: Map<String, Value> = self
            .params
            .iter()
            .map(|p| (p.name.to_owned(), p.schema()))
            .collect();
        let mut schema = Map::new();
        schema.insert("type".into(), "object".into());
        schema.insert("properties".into(), Value::Object(properties));
        let required: Vec<Value> = self
            .params
            .iter()
            .filter(|p| p.required)
            .map(|p| p.name.into())
            .collect();
        // An empty `required` is omitted: older validators reject it.
        if !required.is_empty() {
            schema.insert("required".into(), Value::Array(required));
        }
        Value::Object(schema)
    }

    /// The tool's `outputSchema`: an open object schema of its result
    /// fields plus `value`, none of them required.
    fn output_schema(&self) -> Value {
        let mut properties: Map<String, Value> = self
            .results
            .iter()
            .map(|f| (f.name.to_owned(), f.schema()))
            .collect();
        properties.insert(
            "value".into(),
            json!({
                "type": ANY_JSON_TYPES,
                "description": "The daemon's result when it is not a JSON object.",
            }),
        );
        json!({
            "type": "object",
            "properties": properties,
            "additionalProperties": true,
        })
    }

    /// The tool's entry in the `tools/list` result.
    fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.input_schema(),
            "outputSchema": self.output_schema(),
            "annotations": {
                "readOnlyHint": self.read_only,
                "destructiveHint": false,
                "idempotentHint": self.idempotent,
                "openWorldHint": false,
            },
        })
    }
}

/// Routes a `profile_get_set` call by its `operation` argument.
fn profile_request(mut arguments: Map<String, Value>) -> Result<(&'static str, Value), ToolError> {
    let knob = arguments.remove("knob").unwrap_or(Value::Null);
    match arguments.get("operation") {
        Some(Value::String(op)) if op == "get" => Ok(("profile_get", json!({ "knob": knob }))),
        Some(Value::String(op)) if op == "set" => {
            let value = arguments.remove("value").unwrap_or(Value::Null);
            Ok(("profile_set", json!({ "knob": knob, "value": value })))
        }
        Some(Value::String(op)) => Err(ToolError::UnknownOperation(op.clone())),
        Some(other) => Err(ToolError::UnknownOperation(other.to_string())),
        None => Err(ToolError::UnknownOperation(Value::Null.to_string())),
    }
}

impl Param {
    /// The parameter's property schema, with its description.
    fn schema(&self) -> Value {
        let mut schema = match self.ty {
            Ty::Str => json!({ "type": "string" }),
            Ty::Text { min, max } => {
                json!({ "type": "string", "minLength": min, "maxLength": max })
            }
            Ty::Uuid => json!({ "type": "string", "format": "uuid" }),
            Ty::Uuids => json!({
                "type": "array",
                "items": { "type": "string", "format": "uuid" },
            }),
            Ty::Choice { values, default } => {
                let mut s = json!({ "type": "string", "enum": values });
                if let Some(d) = default {
                    s["default"] = d.into();
                }
                s
            }
            Ty::Int { default, max } => {
                let mut s = json!({ "type": "integer" });
                if let Some(d) = default {
                    s["default"] = d.into();
                }
                if let Some(m) = max {
                    s["maximum"] = m.into();
                }
                s
            }
            Ty::Num { default } => {
                let mut s = json!({ "type": "number" });
                if let Some(d) = default {
                    s["default"] = d.into();
                }
                s
            }
            Ty::Numbers { len } => {
                let mut s = json!({ "type": "array", "items": { "type": "number" } });
                if let Some(n) = len {
                    s["minItems"] = n.into();
                    s["maxItems"] = n.into();
                }
                s
            }
            Ty::StrMap => json!({
                "type": "object",
                "additionalProperties": { "type": "string" },
            }),
            // Spelled out rather than left untyped: some clients (Codex)
            // rewrite a property with no "type" to a string.
            Ty::Any => json!({ "type": ANY_JSON_TYPES }),
        };
        schema["description"] = self.description.into();
        schema
    }
}

impl Field {
    /// The result field's property schema.
    fn schema(&self) -> Value {
        let (ty, choices) = match self.ty {
            Out::Array => ("array", None),
            Out::Object => ("object", None),
            Out::Integer => ("integer", None),
            Out::Number => ("number", None),
            Out::Str => ("string", None),
            Out::Bool => ("boolean", None),
            Out::Choice(values) => ("string", Some(values)),
        };
        let mut schema = if self.nullable {
            json!({ "type": [ty, "null"] })
        } else {
            json!({ "type": ty })
        };
        if let Some(values) = choices {
            schema["enum"] = values.into();
        }
        schema
    }
}

/// The 12 tools, in contract order.
pub fn all() -> &'static [Tool] {
    &TOOLS
}

/// The tool called `name`, or `None` for an unknown name (which `tools/call`
/// answers with an `unknown tool` error result).
pub fn find(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.name == name)
}

/// The `tools` array of the `tools/list` result.
///
/// Built from the registry on first use and shared afterwards, so listing
/// costs nothing per request and never waits on the daemon.
pub fn list_json() -> &'static Value {
    static LIST: OnceLock<Value> = OnceLock::new();
    LIST.get_or_init(|| Value::Array(TOOLS.iter().map(Tool::to_json).collect()))
}

/// The 12 tool names in contract order, for the `hot_tools` list in the
/// `initialize` instructions.
pub fn names() -> impl Iterator<Item = &'static str> {
    TOOLS.iter().map(|t| t.name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    const CONTRACT_ORDER: [&str; 12] = [
        "memory_recall",
        "memory_recall_structural",
        "memory_reinforce",
        "memory_contradict",
        "memory_capture",
        "memory_consolidate",
        "profile_get_set",
        "curiosity_pending",
        "schema_list",
        "events_query",
        "topology",
        "camouflaging_status",
    ];

    const REPLAY_SAFE: [&str; 7] = [
        "memory_recall",
        "memory_recall_structural",
        "curiosity_pending",
        "schema_list",
        "events_query",
        "topology",
        "camouflaging_status",
    ];

    fn tool(name: &str) -> &'static Tool {
        find(name).unwrap_or_else(|| panic!("{name} is registered"))
    }

    fn listed(name: &str) -> &'static Value {
        list_json()
            .as_array()
            .expect("tools array")
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} is listed"))
    }

    fn args(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    fn profile(arguments: Value) -> Result<(&'static str, Value), ToolError> {
        tool("profile_get_set").daemon_request(args(arguments))
    }

    fn required(schema: &Value) -> Vec<&str> {
        schema
            .get("required")
            .map(|r| {
                r.as_array()
                    .expect("required is an array")
                    .iter()
                    .map(|v| v.as_str().expect("required names are strings"))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn property_names(schema: &Value) -> Vec<&str> {
        schema["properties"]
            .as_object()
            .expect("properties object")
            .keys()
            .map(String::as_str)
            .collect()
    }

    #[test]
    fn twelve_tools_in_contract_order() {
        assert_eq!(all().len(), 12);
        let from_all: Vec<_> = all().iter().map(|t| t.name).collect();
        assert_eq!(from_all, CONTRACT_ORDER);
        assert_eq!(names().collect::<Vec<_>>(), CONTRACT_ORDER);
        let listed: Vec<_> = list_json()
            .as_array()
            .expect("tools array")
            .iter()
            .map(|t| t["name"].as_str().expect("name"))
            .collect();
        assert_eq!(listed, CONTRACT_ORDER);
    }

    #[test]
    fn names_are_unique() {
        let unique: HashSet<_> = names().collect();
        assert_eq!(unique.len(), 12);
    }

    #[test]
    fn find_hits_every_tool_and_misses_unknown_names() {
        for name in CONTRACT_ORDER {
            assert_eq!(tool(name).name, name);
        }
        assert!(find("no_such_tool").is_none());
        assert!(find("").is_none());
        assert!(find("profile_get").is_none());
        assert!(find("Memory_Recall").is_none());
    }

    #[test]
    fn every_schema_is_an_object_schema() {
        for t in list_json().as_array().expect("tools array") {
            for key in ["inputSchema", "outputSchema"] {
                let schema = &t[key];
                assert_eq!(schema["type"], "object", "{} {key}", t["name"]);
                assert!(schema["properties"].is_object(), "{} {key}", t["name"]);
            }
        }
    }

    #[test]
    fn required_lists_match_the_contract() {
        let expected: [(&str, &[&str]); 12] = [
            ("memory_recall", &["cue"]),
            ("memory_recall_structural", &[]),
            ("memory_reinforce", &["ids"]),
            ("memory_contradict", &["id", "new_fact"]),
            ("memory_capture", &["text"]),
            ("memory_consolidate", &[]),
            ("profile_get_set", &["operation"]),
            ("curiosity_pending", &[]),
            ("schema_list", &[]),
            ("events_query", &["kind"]),
            ("topology", &[]),
            ("camouflaging_status", &[]),
        ];
        for (name, want) in expected {
            let schema = &listed(name)["inputSchema"];
            assert_eq!(required(schema), want, "{name}");
            for r in required(schema) {
                assert!(schema["properties"].get(r).is_some(), "{name}.{r}");
            }
        }
    }

    #[test]
    fn parameters_match_the_contract() {
        let expected: [(&str, &[&str]); 12] = [
            (
                "memory_recall",
                &[
                    "cue",
                    "budget_tokens",
                    "session_id",
                    "cue_embedding",
                    "language",
                ],
            ),
            (
                "memory_recall_structural",
                &["structure_query", "budget_tokens", "max_records"],
            ),
            ("memory_reinforce", &["ids"]),
            ("memory_contradict", &["id", "new_fact", "cue_embedding"]),
            (
                "memory_capture",
                &["text", "cue", "tier", "session_id", "role"],
            ),
            ("memory_consolidate", &["session_id"]),
            ("profile_get_set", &["operation", "knob", "value"]),
            ("curiosity_pending", &["session_id"]),
            ("schema_list", &["domain", "confidence_min"]),
            ("events_query", &["kind", "since", "severity", "limit"]),
            ("topology", &[]),
            ("camouflaging_status", &["window_size"]),
        ];
        for (name, want) in expected {
            let declared: Vec<_> = tool(name).params.iter().map(|p| p.name).collect();
            assert_eq!(declared, want, "{name}");
            let mut listed_names = property_names(&listed(name)["inputSchema"]);
            let mut want = want.to_vec();
            listed_names.sort_unstable();
            want.sort_unstable();
            assert_eq!(listed_names, want, "{name}");
        }
    }

    #[test]
    fn parameter_schemas_carry_the_contract_details() {
        let p = |tool: &str, param: &str| listed(tool)["inputSchema"]["properties"][param].clone();

        assert_eq!(p("memory_recall", "cue")["type"], "string");
        assert_eq!(p("memory_recall", "budget_tokens")["type"], "integer");
        assert_eq!(p("memory_recall", "budget_tokens")["default"], 1500);
        let embedding = p("memory_recall", "cue_embedding");
        assert_eq!(embedding["type"], "array");
        assert_eq!(embedding["items"]["type"], "number");
        assert_eq!(embedding["minItems"], 384);
        assert_eq!(embedding["maxItems"], 384);
        let language = p("memory_recall", "language");
        assert_eq!(
            language["enum"],
            json!(["en", "ru", "ja", "ar", "de", "fr", "es", "zh"])
        );
        assert_eq!(language["default"], "en");

        let query = p("memory_recall_structural", "structure_query");
        assert_eq!(query["type"], "object");
        assert_eq!(query["additionalProperties"], json!({ "type": "string" }));
        assert_eq!(
            p("memory_recall_structural", "budget_tokens")["default"],
            2000
        );
        let max_records = p("memory_recall_structural", "max_records");
        assert_eq!(max_records["type"], "integer");
        assert_eq!(max_records["default"], 5000);
        assert_eq!(max_records["maximum"], 50000);

        let ids = p("memory_reinforce", "ids");
        assert_eq!(ids["type"], "array");
        assert_eq!(ids["items"], json!({ "type": "string", "format": "uuid" }));

        assert_eq!(p("memory_contradict", "id")["format"], "uuid");
        assert_eq!(p("memory_contradict", "new_fact")["type"], "string");
        assert_eq!(p("memory_contradict", "cue_embedding")["type"], "array");

        let text = p("memory_capture", "text");
        assert_eq!(text["minLength"], 12);
        assert_eq!(text["maxLength"], 8000);
        let tier = p("memory_capture", "tier");
        assert_eq!(
            tier["enum"],
            json!([
                "working",
                "episodic",
                "semantic",
                "procedural",
                "parametric"
            ])
        );
        assert_eq!(tier["default"], "episodic");
        let role = p("memory_capture", "role");
        assert_eq!(role["enum"], json!(["user", "assistant", "system"]));
        assert_eq!(role["default"], "user");

        let operation = p("profile_get_set", "operation");
        assert_eq!(operation["enum"], json!(["get", "set"]));
        assert!(operation.get("default").is_none());
        let value = p("profile_get_set", "value");
        assert_eq!(
            value["type"],
            json!(ANY_JSON_TYPES),
            "value accepts any JSON"
        );

        let confidence = p("schema_list", "confidence_min");
        assert_eq!(confidence["type"], "number");
        assert_eq!(confidence["default"], 0.0);

        let severity = p("events_query", "severity");
        assert_eq!(severity["enum"], json!(["info", "warning", "critical"]));
        assert_eq!(p("events_query", "since")["type"], "string");
        let limit = p("events_query", "limit");
        assert_eq!(limit["default"], 100);
        assert_eq!(limit["maximum"], 1000);

        assert_eq!(
            listed("topology")["inputSchema"],
            json!({ "type": "object", "properties": {} })
        );
        assert_eq!(p("camouflaging_status", "window_size")["default"], 5);
    }

    #[test]
    fn output_schemas_list_the_result_fields_openly() {
        let expected: [(&str, &[&str]); 12] = [
            (
                "memory_recall",
                &[
                    "hits",
                    "anti_hits",
                    "activation_trace",
                    "budget_used",
                    "hints",
                    "cue_mode",
                    "patterns_observed",
                ],
            ),
            (
                "memory_recall_structural",
                &[
                    "hits",
                    "anti_hits",
                    "activation_trace",
                    "budget_used",
                    "structural_query_size",
                ],
            ),
            ("memory_reinforce", &["edges_boosted", "new_weights"]),
            (
                "memory_contradict",
                &["original_id", "new_record_id", "edge_type", "ts"],
            ),
            ("memory_capture", &["status", "record_id", "reason"]),
            (
                "memory_consolidate",
                &[
                    "mode",
                    "tier",
                    "summaries_created",
                    "decay_result",
                    "schema_candidates",
                ],
            ),
            ("profile_get_set", &[]),
            ("curiosity_pending", &["questions", "count"]),
            ("schema_list", &["schemas"]),
            ("events_query", &["events", "count"]),
            (
                "topology",
                &[
                    "N",
                    "C",
                    "L",
                    "sigma",
                    "community_count",
                    "rich_club_ratio",
                    "regime",
                ],
            ),
            (
                "camouflaging_status",
                &[
                    "detected",
                    "trajectory_slope",
                    "current_mean",
                    "sample_count",
                    "camouflaging_relaxation",
                ],
            ),
        ];
        for (name, fields) in expected {
            let schema = &listed(name)["outputSchema"];
            assert!(schema.get("required").is_none(), "{name}");
            assert_eq!(schema["additionalProperties"], true, "{name}");
            let mut got = property_names(schema);
            let mut want = fields.to_vec();
            want.push("value");
            got.sort_unstable();
            want.sort_unstable();
            assert_eq!(got, want, "{name}");
            let props = &schema["properties"];
            assert_eq!(
                props["value"]["type"],
                json!(ANY_JSON_TYPES),
                "{name}.value is any"
            );
            for field in fields {
                assert!(props[*field]["type"].is_string() || props[*field]["type"].is_array());
            }
        }
        let recall = &listed("memory_recall")["outputSchema"]["properties"];
        assert_eq!(recall["cue_mode"]["enum"], json!(["verbatim", "concept"]));
        let capture = &listed("memory_capture")["outputSchema"]["properties"];
        assert_eq!(
            capture["status"]["enum"],
            json!(["inserted", "reinforced", "skipped"])
        );
        let topology = &listed("topology")["outputSchema"]["properties"];
        assert_eq!(topology["sigma"]["type"], json!(["number", "null"]));
    }

    #[test]
    fn replay_safe_exactly_for_read_only_idempotent_tools() {
        for t in all() {
            assert_eq!(t.replay_safe(), REPLAY_SAFE.contains(&t.name), "{}", t.name);
        }
    }

    #[test]
    fn hints_match_the_contract() {
        let not_read_only_but_idempotent =
            ["memory_reinforce", "memory_consolidate", "profile_get_set"];
        let neither = ["memory_contradict", "memory_capture"];
        for t in all() {
            if REPLAY_SAFE.contains(&t.name) {
                assert!(t.read_only && t.idempotent, "{}", t.name);
            } else if not_read_only_but_idempotent.contains(&t.name) {
                assert!(!t.read_only && t.idempotent, "{}", t.name);
            } else {
                assert!(neither.contains(&t.name), "{}", t.name);
                assert!(!t.read_only && !t.idempotent, "{}", t.name);
            }
        }
    }

    #[test]
    fn list_json_has_all_four_annotations() {
        for t in all() {
            let entry = listed(t.name);
            let annotations = entry["annotations"].as_object().expect("annotations");
            assert_eq!(annotations.len(), 4, "{}", t.name);
            assert_eq!(annotations["readOnlyHint"], t.read_only, "{}", t.name);
            assert_eq!(annotations["destructiveHint"], false, "{}", t.name);
            assert_eq!(annotations["idempotentHint"], t.idempotent, "{}", t.name);
            assert_eq!(annotations["openWorldHint"], false, "{}", t.name);
        }
    }

    #[test]
    fn list_json_entries_are_complete_and_built_once() {
        assert!(std::ptr::eq(list_json(), list_json()));
        for entry in list_json().as_array().expect("tools array") {
            let keys: HashSet<_> = entry
                .as_object()
                .expect("entry object")
                .keys()
                .map(String::as_str)
                .collect();
            let want: HashSet<_> = [
                "name",
                "title",
                "description",
                "inputSchema",
                "outputSchema",
                "annotations",
            ]
            .into();
            assert_eq!(keys, want);
        }
    }

    #[test]
    fn descriptions_are_short_sentences() {
        let check = |what: &str, text: &str| {
            assert!(!text.is_empty(), "{what}");
            assert!(text.ends_with('.'), "{what}: {text}");
            assert!(text.len() <= 140, "{what} is too long: {text}");
            assert!(!text.contains('\n'), "{what}");
        };
        for t in all() {
            check(t.name, t.description);
            assert!(!t.title.is_empty(), "{}", t.name);
            for p in t.params {
                check(&format!("{}.{}", t.name, p.name), p.description);
            }
            let props = &listed(t.name)["inputSchema"]["properties"];
            for p in t.params {
                assert_eq!(props[p.name]["description"], p.description);
            }
        }
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
        assert_eq!(got, Ok(("profile_get", json!({ "knob": "wake_depth" }))));
    }

    #[test]
    fn profile_get_without_knob_sends_null() {
        let got = profile(json!({ "operation": "get" }));
        assert_eq!(got, Ok(("profile_get", json!({ "knob": null }))));
    }

    #[test]
    fn profile_get_ignores_value_and_other_arguments() {
        let got = profile(json!({ "operation": "get", "knob": "k", "value": 3, "x": 1 }));
        assert_eq!(got, Ok(("profile_get", json!({ "knob": "k" }))));
    }

    #[test]
    fn profile_set_sends_knob_and_value() {
        let got = profile(json!({ "operation": "set", "knob": "wake_depth", "value": {"a": [1]} }));
        assert_eq!(
            got,
            Ok((
                "profile_set",
                json!({ "knob": "wake_depth", "value": { "a": [1] } })
            ))
        );
    }

    #[test]
    fn profile_set_fills_missing_knob_and_value_with_null() {
        let got = profile(json!({ "operation": "set" }));
        assert_eq!(
            got,
            Ok(("profile_set", json!({ "knob": null, "value": null })))
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
