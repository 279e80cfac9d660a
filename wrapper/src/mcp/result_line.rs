//! The response line of a `tools/call` that succeeded, written straight
//! from the daemon's JSON text.
//!
//! The result is both the text content (as JSON text) and the
//! `structuredContent` of the MCP result. Neither needs a tree: the text is
//! the result's compact JSON (as the bridge keeps it), escaped once as a
//! JSON string, and the same text is the structured content (wrapped as
//! `{"value": ...}` when it is not an object). The members come in the order the tree-built response
//! had: `jsonrpc`, `id`, `result`; `content`, `structuredContent`, then the
//! modern era's `resultType` and `_meta`.

use serde::Serialize;
use serde_json::Value;

use super::protocol::{self, Era};
use crate::bridge::DaemonResult;

/// The whole response line (newline included) answering request `id`,
/// made in `era`, with the daemon's `result`.
pub fn success(id: &Value, era: Era, result: &DaemonResult) -> Vec<u8> {
    let json = result.json();
    let mut line = Vec::with_capacity(2 * json.len() + 160);
    line.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    push_json(&mut line, id);
    line.extend_from_slice(br#","result":{"content":[{"type":"text","text":"#);
    push_json(&mut line, json);
    line.extend_from_slice(br#"}],"structuredContent":"#);
    if json.starts_with('{') {
        line.extend_from_slice(json.as_bytes());
    } else {
        line.extend_from_slice(br#"{"value":"#);
        line.extend_from_slice(json.as_bytes());
        line.push(b'}');
    }
    if era == Era::Modern {
        line.extend_from_slice(br#","resultType":"complete","_meta":{"#);
        push_json(&mut line, protocol::SERVER_INFO_KEY);
        line.push(b':');
        push_json(&mut line, &protocol::server_info());
        line.push(b'}');
    }
    line.extend_from_slice(b"}}\n");
    line
}

/// Appends `value` as JSON (strings, numbers and `Value`s always
/// serialise into a `Vec`).
fn push_json<T: Serialize + ?Sized>(line: &mut Vec<u8>, value: &T) {
    let _ = serde_json::to_writer(line, value);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The response as it was built before: a tree, serialised.
    fn built(id: &Value, era: Era, result: &Value) -> Vec<u8> {
        let structured = match result {
            Value::Object(_) => result.clone(),
            other => json!({ "value": other }),
        };
        let tool = json!({
            "content": [{ "type": "text", "text": result.to_string() }],
            "structuredContent": structured,
        });
        protocol::encode(&protocol::response(
            id.clone(),
            protocol::finish_result(era, tool),
        ))
    }

    #[test]
    fn matches_the_tree_built_response_byte_for_byte() {
        let results = [
            json!({"ok": true, "method": "topology", "fake_daemon": true}),
            json!({"hits": [{"text": "a \"quoted\"\nline", "score": 0.5}], "n": null}),
            json!([1, 2, 3]),
            json!("plain"),
            json!(null),
            json!({}),
        ];
        for result in &results {
            for era in [Era::Legacy, Era::Modern] {
                for id in [json!(7), json!("req-1")] {
                    let daemon = DaemonResult::from_value(result);
                    assert_eq!(
                        String::from_utf8(success(&id, era, &daemon)).unwrap(),
                        String::from_utf8(built(&id, era, result)).unwrap(),
                    );
                }
            }
        }
    }
}
