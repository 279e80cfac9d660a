//! The tool table rewritten to a release's listing, in the table's layout.
//!
//! [`rewrite`] makes the release's interface the table's (tools and their
//! order, every parameter's schema apart from its description, `required`,
//! annotations, result fields) and keeps this project's own words: titles
//! and descriptions of tools and parameters the table already has. A tool
//! or parameter new to the table gets a description starting with
//! [`PLACEHOLDER`], which the wrapper's unit tests refuse, so a table with
//! one cannot ship. [`format_table`] writes it the way
//! `wrapper/src/tools/surface.json` is written, so that a rewrite changes
//! only the lines it must.

use serde_json::{Map, Value, json};

use kits::e2e::listing::{self, HINTS};

/// How every title and description `--write` could not take from the
/// table begins.
pub const PLACEHOLDER: &str = "TODO(surface):";

/// The longest line the table's layout puts an object on.
const WIDTH: usize = 100;
/// The open result field every table entry has (see `wrapper/src/tools`).
const VALUE_FIELD: &str = "The daemon's result when it is not a JSON object.";

/// How many strings of `value` start with [`PLACEHOLDER`].
pub fn placeholders(value: &Value) -> usize {
    match value {
        Value::String(s) => usize::from(s.starts_with(PLACEHOLDER)),
        Value::Array(items) => items.iter().map(placeholders).sum(),
        Value::Object(map) => map.values().map(placeholders).sum(),
        _ => 0,
    }
}

/// A placeholder description for something `release` describes as
/// `theirs` (kept after the marker, on one line, as a starting point).
fn placeholder(what: &str, release: &str, theirs: &Value) -> Value {
    let said = theirs
        .as_str()
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|s| !s.is_empty());
    Value::String(match said {
        Some(said) => format!("{PLACEHOLDER} describe {what}; {release} says: {said}"),
        None => format!("{PLACEHOLDER} describe {what}"),
    })
}

/// The table with `theirs`' interface and the table's own words.
///
/// Tools come in the release's order; a tool the release lacks is dropped.
/// A tool whose interface is unchanged is kept as it is. Otherwise its
/// annotations and `required` list become the release's, its parameters
/// the release's in the release's order (a parameter whose interface is
/// unchanged kept as it is, a changed one the release's schema with the
/// table's description), and result fields the release lists are added to
/// its open `outputSchema`. A new tool or parameter gets a [`PLACEHOLDER`]
/// description; a new tool also a placeholder title and an open
/// `outputSchema` with the release's fields.
pub fn rewrite(table: &[Value], theirs: &[Value], release: &str) -> Vec<Value> {
    theirs
        .iter()
        .map(|tool| {
            let ours = table.iter().find(|t| t["name"] == tool["name"]);
            match ours {
                Some(ours) => {
                    let name = tool["name"].as_str().unwrap_or("?");
                    if listing::compare_tool(name, ours, tool).is_empty() {
                        ours.clone()
                    } else {
                        rewrite_tool(ours, tool, release)
                    }
                }
                None => new_tool(tool, release),
            }
        })
        .collect()
}

/// A tool both list, with the release's interface and the table's words.
fn rewrite_tool(ours: &Value, theirs: &Value, release: &str) -> Value {
    let mut tool = ours.clone();
    let name = theirs["name"].as_str().unwrap_or("?");
    tool["inputSchema"] = input_schema(Some(&ours["inputSchema"]), theirs, name, release);
    let mut output = ours["outputSchema"].clone();
    if !output["properties"].is_object() {
        output["properties"] = json!({});
    }
    for (field, schema) in listing::properties(&theirs["outputSchema"]) {
        if output["properties"].get(&field).is_none() {
            output["properties"][&field] = schema;
        }
    }
    tool["outputSchema"] = output;
    tool["annotations"] = annotations(Some(&ours["annotations"]), theirs);
    tool
}

/// A tool new to the table.
fn new_tool(theirs: &Value, release: &str) -> Value {
    let name = theirs["name"].as_str().unwrap_or("?");
    let mut output = Map::new();
    for (field, schema) in listing::properties(&theirs["outputSchema"]) {
        output.insert(field, schema);
    }
    output.insert("value".into(), json!({ "description": VALUE_FIELD }));
    json!({
        "name": name,
        "title": format!("{PLACEHOLDER} title {name}"),
        "description": placeholder(&format!("tool {name}"), release, &theirs["description"]),
        "inputSchema": input_schema(None, theirs, name, release),
        "outputSchema": { "type": "object", "properties": output },
        "annotations": annotations(None, theirs),
    })
}

/// The release's annotations; the table's object (and key order) kept
/// where it has one.
fn annotations(ours: Option<&Value>, theirs: &Value) -> Value {
    let mut out = ours.and_then(Value::as_object).cloned().unwrap_or_default();
    for hint in HINTS {
        match &theirs["annotations"][hint] {
            Value::Null => {
                out.remove(hint);
            }
            value => {
                out.insert(hint.to_owned(), value.clone());
            }
        }
    }
    Value::Object(out)
}

/// The input schema of tool `name`: the release's parameters with the
/// table's descriptions, and the release's `required` list unless the
/// table's is the same set.
fn input_schema(ours: Option<&Value>, theirs: &Value, name: &str, release: &str) -> Value {
    let ours_props = ours.map(listing::properties).unwrap_or_default();
    let mut props = Map::new();
    for (param, schema) in listing::properties(&theirs["inputSchema"]) {
        let kept = ours_props.get(&param);
        let value = match kept {
            Some(kept) if listing::interface(kept) == listing::interface(&schema) => kept.clone(),
            _ => {
                let mut value = listing::interface(&schema);
                if value.get("type").is_none() {
                    // Every parameter states its type (some clients rewrite
                    // an untyped one to a string).
                    value.insert("type".into(), json!(listing::ANY));
                }
                let description = match kept {
                    Some(kept) => kept["description"].clone(),
                    None => placeholder(
                        &format!("parameter {name}.{param}"),
                        release,
                        &schema["description"],
                    ),
                };
                value.insert("description".into(), description);
                Value::Object(value)
            }
        };
        props.insert(param, value);
    }
    let base = ours.unwrap_or(&theirs["inputSchema"]);
    let mut schema = base.as_object().cloned().unwrap_or_default();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Value::Object(props));
    let same = ours.is_some_and(|o| listing::required_names(o) == listing::required(theirs));
    let required = match &theirs["inputSchema"]["required"] {
        _ if same => base["required"].clone(),
        Value::Array(names) => Value::Array(names.clone()),
        _ => json!([]),
    };
    schema.insert("required".into(), required);
    Value::Object(schema)
}

/// `table` in the table's layout: two-space indentation; an array of
/// scalars on one line; an object on one line (`{ "k": v, ... }`) when it
/// holds no arrays of objects, is not a description beside other keys,
/// and its line stays within 100 characters; anything else one member a
/// line. Ends with a newline.
pub fn format_table(table: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, table, 0, 0);
    out.push('\n');
    out
}

/// Writes `value` at `indent`, on a line that already holds `prefix`
/// characters.
fn write_value(out: &mut String, value: &Value, indent: usize, prefix: usize) {
    match value {
        Value::Array(items) if !items.iter().all(is_scalar) => {
            out.push_str("[\n");
            for (i, item) in items.iter().enumerate() {
                out.push_str(&" ".repeat(indent + 2));
                write_value(out, item, indent + 2, indent + 2);
                out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
            }
            out.push_str(&" ".repeat(indent));
            out.push(']');
        }
        Value::Object(map) if !map.is_empty() && !fits_on_a_line(map, prefix) => {
            out.push_str("{\n");
            for (i, (key, item)) in map.iter().enumerate() {
                let head = format!("{}{}: ", " ".repeat(indent + 2), Value::from(key.as_str()));
                out.push_str(&head);
                write_value(out, item, indent + 2, head.chars().count());
                out.push_str(if i + 1 < map.len() { ",\n" } else { "\n" });
            }
            out.push_str(&" ".repeat(indent));
            out.push('}');
        }
        other => out.push_str(&inline(other)),
    }
}

/// Whether `map` goes on one line after `prefix` characters (and a comma).
fn fits_on_a_line(map: &Map<String, Value>, prefix: usize) -> bool {
    let described = map.contains_key("description") && map.len() > 1;
    let nested_rows = map
        .values()
        .any(|v| matches!(v, Value::Array(items) if !items.iter().all(is_scalar)));
    !described
        && !nested_rows
        && prefix + inline(&Value::Object(map.clone())).chars().count() < WIDTH
}

fn is_scalar(value: &Value) -> bool {
    !matches!(value, Value::Array(_) | Value::Object(_))
}

/// `value` on one line: `{ "k": v }`, `[a, b]`, `{}`.
fn inline(value: &Value) -> String {
    match value {
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(inline).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(map) if map.is_empty() => "{}".to_owned(),
        Value::Object(map) => {
            let members: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", Value::from(k.as_str()), inline(v)))
                .collect();
            format!("{{ {} }}", members.join(", "))
        }
        scalar => scalar.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REAL_TABLE: &str = include_str!("../../../wrapper/src/tools/surface.json");
    /// What iai-pme 3.3.0's own wrapper lists, recorded (2026-12-02) with
    /// the same requests `kits::e2e::listing::release_listing` makes.
    /// A listing of the shape a release's own wrapper gives, with the
    /// interface of the built-in table and this project's own synthetic
    /// words: no titles, other descriptions, no output-schema extensions.
    const SYNTHETIC_LISTING: &str = include_str!("../../fixtures/listing-synthetic.json");

    fn table(text: &str) -> Vec<Value> {
        match serde_json::from_str(text) {
            Ok(Value::Array(tools)) => tools,
            other => panic!("not a table: {other:?}"),
        }
    }

    fn hints(read: bool) -> Value {
        json!({"readOnlyHint": read, "destructiveHint": false,
               "idempotentHint": read, "openWorldHint": false})
    }

    /// A table entry: our words, an open output schema.
    fn ours(name: &str, props: Value, required: Value) -> Value {
        json!({
            "name": name,
            "title": format!("Our {name}"),
            "description": format!("Our words for {name}."),
            "inputSchema": {"type": "object", "properties": props, "required": required},
            "outputSchema": {"type": "object", "properties": {
                "hits": {"type": "array"},
                "value": {"description": VALUE_FIELD}}},
            "annotations": hints(true),
        })
    }

    /// A release's listing entry: its words, no title.
    fn theirs(name: &str, props: Value, required: Value) -> Value {
        json!({
            "name": name,
            "description": format!("Their words for {name}."),
            "inputSchema": {"type": "object", "properties": props, "required": required},
            "outputSchema": {"type": "object", "properties": {"hits": {"type": "array"}}},
            "annotations": hints(true),
        })
    }

    #[test]
    fn the_layout_reproduces_the_real_table_byte_for_byte() {
        let parsed: Value = serde_json::from_str(REAL_TABLE).expect("JSON");
        assert_eq!(format_table(&parsed), REAL_TABLE);
    }

    #[test]
    fn rewriting_to_a_listing_of_the_same_interface_leaves_the_table_byte_for_byte() {
        let table = table(REAL_TABLE);
        let listing = self::table(SYNTHETIC_LISTING);
        let diff = listing::compare(&table, &listing, "3.3.0");
        assert!(diff.is_empty(), "{diff}");
        let rewritten = rewrite(&table, &listing, "3.3.0");
        assert_eq!(format_table(&Value::Array(rewritten)), REAL_TABLE);
    }

    #[test]
    fn rewriting_to_an_equal_listing_changes_nothing() {
        let table = table(REAL_TABLE);
        // The release's own words and layout: descriptions differ, no
        // titles, "any" spelled as no type.
        let listing: Vec<Value> = table
            .iter()
            .map(|tool| {
                let mut tool = tool.clone();
                let tool_map = tool.as_object_mut().expect("object");
                tool_map.remove("title");
                tool_map.insert("description".into(), json!("theirs"));
                if let Some(props) = tool["inputSchema"]["properties"].as_object_mut() {
                    for schema in props.values_mut() {
                        schema["description"] = json!("theirs");
                        if schema["type"] == json!(listing::ANY) {
                            schema.as_object_mut().expect("object").remove("type");
                        }
                    }
                }
                tool
            })
            .collect();
        assert!(listing::compare(&table, &listing, "3.3.0").is_empty());
        let rewritten = rewrite(&table, &listing, "3.3.0");
        assert_eq!(rewritten, table);
        assert_eq!(format_table(&Value::Array(rewritten)), REAL_TABLE);
    }

    #[test]
    fn rewriting_takes_the_interface_and_keeps_our_words() {
        let table = [
            ours("gone", json!({}), json!([])),
            ours(
                "kept",
                json!({
                    "cue": {"type": "string", "description": "Our cue."},
                    "k": {"type": "integer", "default": 8, "description": "Our k."},
                    "old": {"type": "string", "description": "Our old."}
                }),
                json!(["cue"]),
            ),
        ];
        let mut changed = theirs(
            "kept",
            json!({
                "k": {"type": "integer", "default": 5, "description": "Their k."},
                "cue": {"type": "string", "description": "Their cue."},
                "level": {"type": "string", "enum": ["a", "b"], "description": "Their\nlevel."},
                "v": {"description": "Anything."}
            }),
            json!(["cue", "level"]),
        );
        changed["annotations"] = hints(false);
        changed["outputSchema"]["properties"]["total"] = json!({"type": "integer"});
        let listing = [
            theirs("new_tool", json!({"q": {"type": "string"}}), json!(["q"])),
            changed,
        ];

        let rewritten = rewrite(&table, &listing, "3.0.0");
        assert!(listing::compare(&rewritten, &listing, "3.0.0").is_empty());
        let names = listing::tool_names(&rewritten);
        assert_eq!(names, ["new_tool", "kept"]);

        let kept = &rewritten[1];
        assert_eq!(kept["title"], "Our kept");
        assert_eq!(kept["description"], "Our words for kept.");
        let props = kept["inputSchema"]["properties"]
            .as_object()
            .expect("props");
        let keys: Vec<&str> = props.keys().map(String::as_str).collect();
        assert_eq!(keys, ["k", "cue", "level", "v"]);
        assert_eq!(
            props["cue"],
            json!({"type": "string", "description": "Our cue."})
        );
        assert_eq!(
            props["k"],
            json!({"type": "integer", "default": 5, "description": "Our k."})
        );
        assert_eq!(
            props["level"]["description"],
            "TODO(surface): describe parameter kept.level; 3.0.0 says: Their level."
        );
        assert_eq!(props["v"]["type"], json!(listing::ANY));
        assert_eq!(kept["inputSchema"]["required"], json!(["cue", "level"]));
        assert_eq!(kept["annotations"], hints(false));
        let out = kept["outputSchema"]["properties"].as_object().expect("out");
        assert!(out.contains_key("total") && out.contains_key("value"));

        let new = &rewritten[0];
        assert!(
            new["title"]
                .as_str()
                .expect("title")
                .starts_with(PLACEHOLDER)
        );
        assert_eq!(
            new["description"],
            "TODO(surface): describe tool new_tool; 3.0.0 says: Their words for new_tool."
        );
        assert!(new["outputSchema"]["properties"]["value"].is_object());
        assert_eq!(placeholders(&Value::Array(rewritten.clone())), 5);
        assert_eq!(
            format_table(&Value::Array(rewritten.clone()))
                .parse::<Value>()
                .ok(),
            Some(Value::Array(rewritten))
        );
    }

    #[test]
    fn a_required_list_in_another_order_is_kept() {
        let table = [ours(
            "t",
            json!({"a": {"type": "string", "description": "A."},
                   "b": {"type": "string", "description": "B."}}),
            json!(["b", "a"]),
        )];
        let mut listing = [theirs(
            "t",
            json!({"a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "number"}}),
            json!(["a", "b"]),
        )];
        let rewritten = rewrite(&table, &listing, "1.0");
        assert_eq!(rewritten[0]["inputSchema"]["required"], json!(["b", "a"]));
        listing[0]["inputSchema"]
            .as_object_mut()
            .expect("schema")
            .remove("required");
        let rewritten = rewrite(&table, &listing, "1.0");
        assert_eq!(rewritten[0]["inputSchema"]["required"], json!([]));
    }
}
