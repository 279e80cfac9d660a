//! What this wrapper adds to a release's output schemas, and only where
//! its own answers need it (docs/CONTRACT.md section 3.1 names each, with
//! the answer that needs it).
//!
//! Every extension widens what a schema accepts and changes nothing else:
//! a property declared where the release declares none, `null` added to a
//! property's types. A result the release's schema accepts is accepted by
//! the extended one.

use serde_json::{Map, Value, json};

use crate::degraded;

/// The `value` property: a daemon result that is not a JSON object is
/// passed on as `{"value": <result>}` (`structuredContent` must be an
/// object).
const WRAPPED_VALUE: &str = "value";

/// The `_source` property: degraded mode's answers say which CLI gave them
/// (`direct-store`, `bank-fallback`).
const SOURCE: &str = "_source";

/// Properties that may be `null` in an answer although a release's schema
/// says otherwise, per tool: `memory_capture`'s `record_id`, which the
/// daemon reports as `null` for a capture it skipped (too short, noise)
/// and degraded mode for a capture whose id the CLI did not print.
const NULLABLE: [(&str, &[&str]); 1] = [("memory_capture", &["record_id"])];

/// Extends the output schema of `tool` in place. A schema that is not an
/// object schema is left as it is (there is nothing to add a property to).
pub fn output_schema(tool: &str, schema: &mut Value) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    if object.get("type").and_then(Value::as_str) != Some("object") {
        return;
    }
    let Some(properties) = object
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
    else {
        return;
    };
    properties.entry(WRAPPED_VALUE).or_insert_with(
        || json!({"description": "The daemon's result, when it is not a JSON object."}),
    );
    if degraded::has_plan_for(tool) {
        properties
            .entry(SOURCE)
            .or_insert_with(|| json!({"type": "string"}));
    }
    let nullable = NULLABLE
        .iter()
        .find(|(name, _)| *name == tool)
        .map_or(&[][..], |(_, fields)| fields);
    for field in nullable {
        if let Some(Value::Object(property)) = properties.get_mut(*field) {
            accept_null(property);
        }
    }
}

/// Adds `null` to a property's `type` (a name or a list of names); a
/// property with no `type` accepts `null` already. A `format` or `enum`
/// the property has is kept: JSON Schema applies them to strings only,
/// and an `enum` is given `null` too.
fn accept_null(property: &mut Map<String, Value>) {
    match property.get_mut("type") {
        Some(Value::String(kind)) if kind != "null" => {
            let kind = std::mem::take(kind);
            property.insert("type".to_owned(), json!([kind, "null"]));
        }
        Some(Value::Array(kinds)) if !kinds.contains(&json!("null")) => {
            kinds.push(json!("null"));
        }
        _ => {}
    }
    if let Some(Value::Array(allowed)) = property.get_mut("enum")
        && !allowed.contains(&Value::Null)
    {
        allowed.push(Value::Null);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_extension_adds_and_removes_nothing() {
        let mut capture = json!({
            "type": "object",
            "properties": {
                "status": {"type": "string", "enum": ["inserted", "skipped"]},
                "record_id": {"type": "string", "format": "uuid"},
                "reason": {"type": "string"}
            }
        });
        output_schema("memory_capture", &mut capture);
        assert_eq!(
            capture,
            json!({
                "type": "object",
                "properties": {
                    "status": {"type": "string", "enum": ["inserted", "skipped"]},
                    "record_id": {"type": ["string", "null"], "format": "uuid"},
                    "reason": {"type": "string"},
                    "value": {"description": "The daemon's result, when it is not a JSON object."},
                    "_source": {"type": "string"}
                }
            })
        );
        let again = capture.clone();
        output_schema("memory_capture", &mut capture);
        assert_eq!(capture, again, "extending twice changes nothing");

        // A tool degraded mode does not answer gets the wrapping only, and
        // a property the release declares is never replaced.
        let mut topology = json!({"type": "object", "properties": {"value": {"type": "integer"}}});
        output_schema("topology", &mut topology);
        assert_eq!(
            topology,
            json!({"type": "object", "properties": {"value": {"type": "integer"}}})
        );
        let mut bare = json!({"type": "object"});
        output_schema("profile_get_set", &mut bare);
        assert!(bare["properties"]["value"].is_object());

        for mut odd in [json!({"type": "array"}), json!("text"), json!(null)] {
            let before = odd.clone();
            output_schema("memory_capture", &mut odd);
            assert_eq!(odd, before);
        }
    }
}
