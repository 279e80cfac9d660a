//! Release bundles: arbitrary text as an installed release's bundled Node
//! wrapper, through the reader of its tool surface and into the surface
//! served.
//!
//! Checked, for every input: nothing panics (and libFuzzer's time limit
//! catches a reader that would not end); what is read as a surface has
//! between 1 and `MAX_TOOLS` tools, each an object whose `name` is unique
//! and whose `inputSchema` is an object; the surface served from it lists
//! those tools in that order, with their names and every member but the
//! output schema unchanged, and an output schema only ever gains members.

use iai_mcp_wrapper::surface::Surface;
use iai_mcp_wrapper::surface::bundle::{self, MAX_TOOLS};
use iai_mcp_wrapper::surface::release::Release;
use serde_json::Value;

/// Runs one input, read as text (bytes that are not UTF-8 replaced).
pub fn check(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Ok(read) = bundle::read(&text) else {
        return;
    };
    assert!(
        (1..=MAX_TOOLS).contains(&read.tools.len()),
        "{} tools",
        read.tools.len()
    );
    let mut names = std::collections::HashSet::new();
    for tool in &read.tools {
        let name = tool["name"].as_str().expect("every tool is named");
        assert!(names.insert(name), "{name} listed twice");
        assert!(
            tool["inputSchema"].is_object(),
            "{name} has an input schema"
        );
    }
    let served = Surface::from_release(&Release {
        version: "0.0.0".into(),
        bundle: "/fuzz/index.js".into(),
        surface: read.clone(),
        cached: false,
    });
    assert_eq!(served.instructions(), read.instructions);
    let listing = served.listing().as_array().expect("a listing");
    assert_eq!(listing.len(), read.tools.len());
    for (served_tool, read_tool) in listing.iter().zip(&read.tools) {
        assert_same_but_output_schema(served_tool, read_tool);
        assert_only_gains(&served_tool["outputSchema"], &read_tool["outputSchema"]);
    }
    let routed: Vec<&str> = served.tools().iter().map(|t| t.name.as_str()).collect();
    let listed: Vec<&str> = read
        .tools
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(routed, listed, "every tool listed is routed, in order");
}

fn assert_same_but_output_schema(served: &Value, read: &Value) {
    let (Value::Object(served), Value::Object(read)) = (served, read) else {
        panic!("a tool is an object");
    };
    let keys = |m: &serde_json::Map<String, Value>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(served), keys(read), "the same members, in order");
    for (key, value) in read {
        if key != "outputSchema" {
            assert_eq!(&served[key], value, "{key} as the release gives it");
        }
    }
}

/// Every member of `read` is in `served` (recursively for objects); what
/// was a type name may have become a list with `null` added.
fn assert_only_gains(served: &Value, read: &Value) {
    match (served, read) {
        (Value::Object(served), Value::Object(read)) => {
            for (key, value) in read {
                let kept = served.get(key).unwrap_or_else(|| panic!("{key} dropped"));
                assert_only_gains(kept, value);
            }
        }
        (Value::Array(served), Value::Array(read)) => {
            assert!(
                read.iter().all(|item| served.contains(item)),
                "{read:?} narrowed to {served:?}"
            );
        }
        (Value::Array(served), Value::String(kind)) => {
            assert!(
                served.contains(&Value::String(kind.clone())),
                "{kind} dropped"
            );
        }
        (served, read) => assert_eq!(served, read),
    }
}
