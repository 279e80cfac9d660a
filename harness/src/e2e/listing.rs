//! Comparing a wrapper's tool listing with iai-mcp 3.3.0's own.
//!
//! What must match is the interface a client or model relies on: the names
//! in order, and for each tool its annotations, its `required` list, and
//! every parameter's schema apart from its description (type, default,
//! enum, format, items, ...). Descriptions are each wrapper's own words.
//! Output schemas may differ, as long as every result field 3.3.0 lists is
//! listed too.

use serde_json::{Map, Value};

/// Every JSON type: an explicit spelling of "any value", equal to a
/// property with no type at all.
const ANY: [&str; 7] = [
    "string", "number", "integer", "boolean", "object", "array", "null",
];

/// The differences between `ours` and `theirs` (two `tools` arrays), in
/// words; empty when they match.
pub fn compare(ours: &[Value], theirs: &[Value]) -> Vec<String> {
    let names = |tools: &[Value]| -> Vec<String> {
        tools
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    };
    let mut diffs = Vec::new();
    if names(ours) != names(theirs) {
        diffs.push(format!(
            "names differ: ours {:?}, 3.3.0 {:?}",
            names(ours),
            names(theirs)
        ));
    }
    for theirs in theirs {
        let name = theirs["name"].as_str().unwrap_or("?");
        let Some(ours) = ours.iter().find(|t| t["name"] == theirs["name"]) else {
            continue;
        };
        for hint in [
            "readOnlyHint",
            "destructiveHint",
            "idempotentHint",
            "openWorldHint",
        ] {
            if ours["annotations"][hint] != theirs["annotations"][hint] {
                diffs.push(format!("{name}: {hint} differs"));
            }
        }
        if required(ours) != required(theirs) {
            diffs.push(format!(
                "{name}: required {:?} vs 3.3.0 {:?}",
                required(ours),
                required(theirs)
            ));
        }
        let ours_in = properties(&ours["inputSchema"]);
        let theirs_in = properties(&theirs["inputSchema"]);
        let keys = |m: &Map<String, Value>| m.keys().cloned().collect::<Vec<_>>();
        if keys(&ours_in) != keys(&theirs_in) {
            diffs.push(format!(
                "{name}: parameters {:?} vs 3.3.0 {:?}",
                keys(&ours_in),
                keys(&theirs_in)
            ));
        }
        for (param, theirs_schema) in &theirs_in {
            if let Some(ours_schema) = ours_in.get(param)
                && interface(ours_schema) != interface(theirs_schema)
            {
                diffs.push(format!(
                    "{name}.{param}: {} vs 3.3.0 {}",
                    interface(ours_schema),
                    interface(theirs_schema)
                ));
            }
        }
        let ours_out = properties(&ours["outputSchema"]);
        for field in properties(&theirs["outputSchema"]).keys() {
            if !ours_out.contains_key(field) {
                diffs.push(format!(
                    "{name}: result field {field} not in our outputSchema"
                ));
            }
        }
    }
    diffs
}

fn required(tool: &Value) -> Vec<String> {
    let mut names: Vec<String> = tool["inputSchema"]["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    names.sort();
    names
}

fn properties(schema: &Value) -> Map<String, Value> {
    schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default()
}

/// A parameter schema without what is only prose, and with "any type"
/// spelled one way.
fn interface(schema: &Value) -> Value {
    let mut schema = schema.as_object().cloned().unwrap_or_default();
    schema.remove("description");
    schema.remove("title");
    if schema.get("type") == Some(&Value::from(ANY.to_vec())) {
        schema.remove("type");
    }
    Value::Object(schema)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        assert!(compare(&ours, &theirs).is_empty());
    }

    #[test]
    fn every_interface_difference_is_named() {
        let ours = [tool(
            "t",
            json!({"a": {"type": "string", "minLength": 12}}),
            json!([]),
        )];
        let mut theirs = tool(
            "t",
            json!({"a": {"type": "string"}, "b": {"type": "integer"}}),
            json!(["a"]),
        );
        theirs["annotations"]["readOnlyHint"] = json!(false);
        theirs["outputSchema"]["properties"]["total"] = json!({"type": "integer"});
        let diffs = compare(&ours, &[theirs, tool("u", json!({}), json!([]))]);
        let text = diffs.join("\n");
        for expected in [
            "names differ",
            "readOnlyHint",
            "required",
            "parameters",
            "t.a:",
            "result field total",
        ] {
            assert!(text.contains(expected), "{expected} missing from:\n{text}");
        }
    }
}
