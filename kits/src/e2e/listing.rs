//! Comparing the built-in tool table with an iai-mcp release's listing, by
//! interface: what `cargo xtask surface` reports when the built-in table
//! (served when no release can be read) is brought up to a release.
//! The end-to-end kit compares what is served exactly ([`super::fidelity`]).
//!
//! What must match is the interface a client or model relies on: the names
//! in order, and for each tool its annotations, its `required` list, and
//! every parameter's schema apart from its description (type, default,
//! enum, format, items, ...). Descriptions are each wrapper's own words.
//! Output schemas may differ, as long as every result field the release
//! lists is listed too.
//!
//! [`compare`] gives each difference as a [`Difference`] value, and
//! [`ListingDiff::lines`] says them in words naming the release (`cargo
//! xtask surface` prints them).
//! [`release_listing`] asks a release's own wrapper for its listing.

use std::fmt;
use std::path::Path;
use std::time::Duration;

use devkit::tempdir::short_tempdir;
use harness::daemon::DaemonEndpoint;
use harness::error::HarnessError;
use harness::wrapper::{WrapperCommand, WrapperOptions, WrapperProcess};
use serde_json::{Map, Value, json};

use super::pyenv::PyEnv;

/// The protocol revision the kit's MCP clients ask for (here, and in
/// the checks that speak to a wrapper).
pub(super) const PROTOCOL: &str = "2025-06-18";

/// Bound on the replies of a release's own wrapper ([`release_listing`]).
const RELEASE_REPLY: Duration = Duration::from_secs(30);

/// Every JSON type: an explicit spelling of "any value", equal to a
/// property with no type at all.
pub const ANY: [&str; 7] = [
    "string", "number", "integer", "boolean", "object", "array", "null",
];

/// The annotations compared, in the order they are reported.
pub const HINTS: [&str; 4] = [
    "readOnlyHint",
    "destructiveHint",
    "idempotentHint",
    "openWorldHint",
];

/// One way a release's listing differs from the wrapper's table. "Table"
/// is the wrapper's side, "release" the release's own wrapper's.
#[derive(Debug, Clone, PartialEq)]
pub enum Difference {
    /// A tool the release lists and the table does not.
    ToolAdded {
        /// The tool.
        tool: String,
    },
    /// A tool the table lists and the release does not.
    ToolLacked {
        /// The tool.
        tool: String,
    },
    /// The tools both list, in another order.
    ToolOrder {
        /// The table's order (of the tools both list).
        table: Vec<String>,
        /// The release's order.
        release: Vec<String>,
    },
    /// A parameter the release has and the table does not.
    ParamAdded {
        /// The tool.
        tool: String,
        /// The parameter.
        param: String,
        /// Its schema in the release.
        schema: Value,
    },
    /// A parameter the table has and the release does not.
    ParamLacked {
        /// The tool.
        tool: String,
        /// The parameter.
        param: String,
        /// Its schema in the table.
        schema: Value,
    },
    /// The parameters both have, in another order.
    ParamOrder {
        /// The tool.
        tool: String,
        /// The table's order (of the parameters both have).
        table: Vec<String>,
        /// The release's order.
        release: Vec<String>,
    },
    /// One keyword of a parameter's schema (`type`, `default`, `enum`,
    /// `items`, ...) differs; `None` where it is absent.
    Keyword {
        /// The tool.
        tool: String,
        /// The parameter.
        param: String,
        /// The keyword.
        keyword: String,
        /// Its value in the table.
        table: Option<Value>,
        /// Its value in the release.
        release: Option<Value>,
    },
    /// The `required` lists differ (as sets).
    Required {
        /// The tool.
        tool: String,
        /// The table's, sorted.
        table: Vec<String>,
        /// The release's, sorted.
        release: Vec<String>,
    },
    /// An annotation differs; `None` where it is absent.
    Annotation {
        /// The tool.
        tool: String,
        /// The annotation (`readOnlyHint`, ...).
        hint: String,
        /// Its value in the table.
        table: Option<Value>,
        /// Its value in the release.
        release: Option<Value>,
    },
    /// A result field the release's `outputSchema` lists and the table's
    /// does not.
    ResultField {
        /// The tool.
        tool: String,
        /// The field.
        field: String,
    },
}

/// The differences between the table and one release's listing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListingDiff {
    /// The release the listing came from (`3.3.0`), as messages name it.
    pub release: String,
    /// What differs, tools first, then tool by tool in the release's order.
    pub differences: Vec<Difference>,
}

impl ListingDiff {
    /// Whether the listings match.
    pub fn is_empty(&self) -> bool {
        self.differences.is_empty()
    }

    /// Every difference in words, one line each.
    pub fn lines(&self) -> Vec<String> {
        self.differences
            .iter()
            .map(|d| d.describe(&self.release))
            .collect()
    }
}

impl Difference {
    /// The difference in words, naming the release as `release`.
    pub fn describe(&self, release: &str) -> String {
        let list = |names: &[String]| names.join(", ");
        match self {
            Difference::ToolAdded { tool } => {
                format!("{release} adds tool {tool} (not in the table)")
            }
            Difference::ToolLacked { tool } => {
                format!("{release} lacks tool {tool} (in the table)")
            }
            Difference::ToolOrder {
                table,
                release: theirs,
            } => format!(
                "{release} lists the tools in another order: {} (the table: {})",
                list(theirs),
                list(table)
            ),
            Difference::ParamAdded {
                tool,
                param,
                schema,
            } => format!(
                "{tool}: {release} adds parameter {param} ({}) (not in the table)",
                type_of(schema)
            ),
            Difference::ParamLacked {
                tool,
                param,
                schema,
            } => format!(
                "{tool}: {release} lacks parameter {param} ({}) (in the table)",
                type_of(schema)
            ),
            Difference::ParamOrder {
                tool,
                table,
                release: theirs,
            } => format!(
                "{tool}: {release} orders the parameters {} (the table: {})",
                list(theirs),
                list(table)
            ),
            Difference::Keyword {
                tool,
                param,
                keyword,
                table,
                release: theirs,
            } => format!(
                "{tool}.{param}: {keyword} {} in {release}, {} in the table",
                shown(theirs.as_ref()),
                shown(table.as_ref())
            ),
            Difference::Required {
                tool,
                table,
                release: theirs,
            } => format!(
                "{tool}: required [{}] in {release}, [{}] in the table",
                list(theirs),
                list(table)
            ),
            Difference::Annotation {
                tool,
                hint,
                table,
                release: theirs,
            } => format!(
                "{tool}: {hint} {} in {release}, {} in the table",
                shown(theirs.as_ref()),
                shown(table.as_ref())
            ),
            Difference::ResultField { tool, field } => format!(
                "{tool}: {release} returns result field {field}, not in the table's outputSchema"
            ),
        }
    }
}

impl fmt::Display for ListingDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.lines().join("\n"))
    }
}

/// A parameter's type in words: `string`, `array of number`, `any`.
fn type_of(schema: &Value) -> String {
    let interface = interface(schema);
    match &interface["type"] {
        Value::Null => "any".to_owned(),
        Value::String(t) if t == "array" => match interface["items"]["type"].as_str() {
            Some(items) => format!("array of {items}"),
            None => "array".to_owned(),
        },
        Value::String(t) => t.clone(),
        other => other.to_string(),
    }
}

/// A keyword's value as JSON, or `none` when absent.
fn shown(value: Option<&Value>) -> String {
    value.map_or_else(|| "none".to_owned(), Value::to_string)
}

/// The `tools` array of `w`'s `tools/list` answer (empty when it has none).
pub fn listed_tools(w: &mut WrapperProcess, timeout: Duration) -> Result<Vec<Value>, HarnessError> {
    let list = w.request("tools/list", json!({}), timeout)?;
    Ok(list["result"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default())
}

/// The `tools` array the release's own bundled Node wrapper lists in `py`:
/// started with `node` in a scratch `HOME`, pointed at a socket no daemon
/// listens on and at CLIs that do not exist (so it starts nothing), then
/// initialize, `notifications/initialized`, `tools/list`. The process is
/// killed and reaped when this returns, on every path. `cargo xtask
/// surface` compares this listing with the wrapper's table.
pub fn release_listing(py: &PyEnv, node: &Path) -> Result<Vec<Value>, HarnessError> {
    let index = py.bundled_wrapper()?;
    let scratch = short_tempdir()?;
    let opts = WrapperOptions::at(DaemonEndpoint::Unix(scratch.path().join("none.sock")));
    let cmd = WrapperCommand {
        args: vec![index.into()],
        ..WrapperCommand::new(node)
    };
    let mut w = WrapperProcess::spawn(&cmd, &opts)?;
    w.initialize(PROTOCOL)?;
    let tools = listed_tools(&mut w, RELEASE_REPLY)?;
    if tools.is_empty() {
        return Err(HarnessError::Scenario(format!(
            "iai-pme {}'s wrapper listed no tools; its stderr: {}",
            py.release,
            w.stderr_tail(800)
        )));
    }
    Ok(tools)
}

/// The names of `tools` (a `tools` array), in order.
pub fn tool_names(tools: &[Value]) -> Vec<String> {
    tools
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

/// The differences between `table` (the wrapper's `tools` array) and
/// `theirs` (the release's), the release named `release` in messages.
pub fn compare(table: &[Value], theirs: &[Value], release: &str) -> ListingDiff {
    let ours_names = tool_names(table);
    let theirs_names = tool_names(theirs);
    let mut differences = Vec::new();
    for tool in theirs_names.iter().filter(|n| !ours_names.contains(n)) {
        differences.push(Difference::ToolAdded { tool: tool.clone() });
    }
    for tool in ours_names.iter().filter(|n| !theirs_names.contains(n)) {
        differences.push(Difference::ToolLacked { tool: tool.clone() });
    }
    let common_ours = common(&ours_names, &theirs_names);
    let common_theirs = common(&theirs_names, &ours_names);
    if common_ours != common_theirs {
        differences.push(Difference::ToolOrder {
            table: common_ours,
            release: common_theirs,
        });
    }
    for theirs in theirs {
        let Some(name) = theirs["name"].as_str() else {
            continue;
        };
        if let Some(ours) = table.iter().find(|t| t["name"] == name) {
            differences.extend(compare_tool(name, ours, theirs));
        }
    }
    ListingDiff {
        release: release.to_owned(),
        differences,
    }
}

/// The differences between one tool in the table and in the release.
pub fn compare_tool(name: &str, ours: &Value, theirs: &Value) -> Vec<Difference> {
    let tool = name.to_owned();
    let mut differences = Vec::new();
    for hint in HINTS {
        let (o, t) = (&ours["annotations"][hint], &theirs["annotations"][hint]);
        if o != t {
            differences.push(Difference::Annotation {
                tool: tool.clone(),
                hint: hint.to_owned(),
                table: present(o),
                release: present(t),
            });
        }
    }
    let ours_in = properties(&ours["inputSchema"]);
    let theirs_in = properties(&theirs["inputSchema"]);
    for (param, schema) in &theirs_in {
        if !ours_in.contains_key(param) {
            differences.push(Difference::ParamAdded {
                tool: tool.clone(),
                param: param.clone(),
                schema: schema.clone(),
            });
        }
    }
    for (param, schema) in &ours_in {
        if !theirs_in.contains_key(param) {
            differences.push(Difference::ParamLacked {
                tool: tool.clone(),
                param: param.clone(),
                schema: schema.clone(),
            });
        }
    }
    let keys = |m: &Map<String, Value>| m.keys().cloned().collect::<Vec<_>>();
    let (ours_keys, theirs_keys) = (keys(&ours_in), keys(&theirs_in));
    let common_ours = common(&ours_keys, &theirs_keys);
    let common_theirs = common(&theirs_keys, &ours_keys);
    if common_ours != common_theirs {
        differences.push(Difference::ParamOrder {
            tool: tool.clone(),
            table: common_ours,
            release: common_theirs,
        });
    }
    for (param, theirs_schema) in &theirs_in {
        let Some(ours_schema) = ours_in.get(param) else {
            continue;
        };
        let (o, t) = (interface(ours_schema), interface(theirs_schema));
        for keyword in union_keys(&t, &o) {
            if o.get(&keyword) != t.get(&keyword) {
                differences.push(Difference::Keyword {
                    tool: tool.clone(),
                    param: param.clone(),
                    table: o.get(&keyword).cloned(),
                    release: t.get(&keyword).cloned(),
                    keyword,
                });
            }
        }
    }
    if required(ours) != required(theirs) {
        differences.push(Difference::Required {
            tool: tool.clone(),
            table: required(ours),
            release: required(theirs),
        });
    }
    let ours_out = properties(&ours["outputSchema"]);
    for field in properties(&theirs["outputSchema"]).keys() {
        if !ours_out.contains_key(field) {
            differences.push(Difference::ResultField {
                tool: tool.clone(),
                field: field.clone(),
            });
        }
    }
    differences
}

/// The names of `names` that are also in `other`, in `names`' order.
fn common(names: &[String], other: &[String]) -> Vec<String> {
    names
        .iter()
        .filter(|n| other.contains(n))
        .cloned()
        .collect()
}

/// The keys of `first`, then those only in `second`.
fn union_keys(first: &Map<String, Value>, second: &Map<String, Value>) -> Vec<String> {
    let mut keys: Vec<String> = first.keys().cloned().collect();
    keys.extend(second.keys().filter(|k| !first.contains_key(*k)).cloned());
    keys
}

/// `None` for an absent value (`Null` from indexing), else the value.
fn present(value: &Value) -> Option<Value> {
    (!value.is_null()).then(|| value.clone())
}

/// A tool's `required` list, sorted.
pub fn required(tool: &Value) -> Vec<String> {
    required_names(&tool["inputSchema"])
}

/// An input schema's `required` list, sorted.
pub fn required_names(schema: &Value) -> Vec<String> {
    let mut names: Vec<String> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    names.sort();
    names
}

/// A schema's `properties`, or none.
pub fn properties(schema: &Value) -> Map<String, Value> {
    schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default()
}

/// A parameter schema without what is only prose, and with "any type"
/// spelled one way (no `type`).
pub fn interface(schema: &Value) -> Map<String, Value> {
    let mut schema = schema.as_object().cloned().unwrap_or_default();
    schema.remove("description");
    schema.remove("title");
    if schema.get("type") == Some(&Value::from(ANY.to_vec())) {
        schema.remove("type");
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, props: Value, required: Value) -> Value {
        json!({
            "name": name,
            "description": "x",
            "inputSchema": {"type": "object", "properties": props, "required": required},
            "outputSchema": {"type": "object", "properties": {"hits": {"type": "array"}}},
            "annotations": {"readOnlyHint": true, "destructiveHint": false,
                            "idempotentHint": true, "openWorldHint": false}
        })
    }

    #[test]
    fn descriptions_and_any_type_spellings_do_not_count() {
        let ours = [tool(
            "t",
            json!({"a": {"type": "integer", "default": 5, "description": "ours"},
                   "v": {"type": ANY, "description": "any"}}),
            json!(["a"]),
        )];
        let theirs = [tool(
            "t",
            json!({"a": {"type": "integer", "default": 5, "description": "theirs"},
                   "v": {"description": "anything"}}),
            json!(["a"]),
        )];
        let diff = compare(&ours, &theirs, "3.3.0");
        assert!(diff.is_empty(), "{diff}");
        assert_eq!(diff.release, "3.3.0");
    }

    #[test]
    fn every_interface_difference_is_named_with_the_release() {
        let ours = [
            tool(
                "t",
                json!({"a": {"type": "string", "minLength": 12},
                       "gone": {"type": "array", "items": {"type": "number"}}}),
                json!([]),
            ),
            tool("lacked", json!({}), json!([])),
        ];
        let mut theirs = tool(
            "t",
            json!({"a": {"type": "string", "enum": ["x"]}, "b": {"type": "integer"}}),
            json!(["a"]),
        );
        theirs["annotations"]["readOnlyHint"] = json!(false);
        theirs["outputSchema"]["properties"]["total"] = json!({"type": "integer"});
        let diff = compare(&ours, &[theirs, tool("u", json!({}), json!([]))], "3.0.0");
        let text = diff.lines().join("\n");
        for expected in [
            "3.0.0 adds tool u (not in the table)",
            "3.0.0 lacks tool lacked (in the table)",
            "t: readOnlyHint false in 3.0.0, true in the table",
            "t: 3.0.0 adds parameter b (integer) (not in the table)",
            "t: 3.0.0 lacks parameter gone (array of number) (in the table)",
            "t.a: enum [\"x\"] in 3.0.0, none in the table",
            "t.a: minLength none in 3.0.0, 12 in the table",
            "t: required [a] in 3.0.0, [] in the table",
            "t: 3.0.0 returns result field total, not in the table's outputSchema",
        ] {
            assert!(text.contains(expected), "{expected} missing from:\n{text}");
        }
        assert!(!text.contains("3.3.0"), "{text}");
    }

    #[test]
    fn reordering_is_reported_once_for_tools_and_for_parameters() {
        let props = json!({"a": {"type": "string"}, "b": {"type": "string"}});
        let swapped = json!({"b": {"type": "string"}, "a": {"type": "string"}});
        let ours = [tool("t", props, json!([])), tool("u", json!({}), json!([]))];
        let theirs = [
            tool("u", json!({}), json!([])),
            tool("t", swapped, json!([])),
        ];
        let diff = compare(&ours, &theirs, "9.9");
        assert_eq!(
            diff.differences,
            [
                Difference::ToolOrder {
                    table: vec!["t".into(), "u".into()],
                    release: vec!["u".into(), "t".into()],
                },
                Difference::ParamOrder {
                    tool: "t".into(),
                    table: vec!["a".into(), "b".into()],
                    release: vec!["b".into(), "a".into()],
                },
            ]
        );
        assert_eq!(
            diff.lines()[0],
            "9.9 lists the tools in another order: u, t (the table: t, u)"
        );
    }
}
