//! What the stand-in model asks each host to do, one tool call a turn:
//! a capture then a search for its text, a daemon restart before the next
//! call, every other tool once, then a call the daemon refuses.

use serde_json::{Value, json};

/// The tools of iai-mcp 3.3.0, the wrapper's table.
pub const TOOLS: [&str; 15] = [
    "memory_recall",
    "memory_search",
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
    "episodes_recent",
    "memory_temporal_recall",
    "claim_check",
];

/// The step of the capture.
pub const CAPTURE: usize = 0;
/// The step of the search for the captured text.
pub const SEARCH: usize = 1;
/// The step before which the daemon is restarted.
pub const AFTER_RESTART: usize = 2;
/// A record id no store holds, well formed: contradicting it is refused
/// by the daemon itself, not by the wrapper's argument checks.
pub const MISSING_RECORD: &str = "00000000-0000-4000-8000-000000000000";

/// One planned tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// The tool, by its MCP name.
    pub tool: &'static str,
    /// Its arguments.
    pub args: Value,
}

/// The conversation of one host run, told apart from other runs by `tag`.
#[derive(Debug, Clone)]
pub struct Script {
    /// The text captured and searched for.
    pub text: String,
}

impl Script {
    /// A script whose captured text carries `tag`.
    pub fn new(tag: &str) -> Self {
        Script {
            text: format!("The deploy window for service {tag} opens at 02:00 UTC on Tuesdays."),
        }
    }

    /// The prompt the host is started with (the stand-in ignores it).
    pub fn prompt(&self) -> String {
        "Check the iai-mcp memory tools, one call at a time.".to_owned()
    }

    /// How many calls the script makes.
    pub fn len(&self) -> usize {
        TOOLS.len() + 1
    }

    /// Whether the script makes no call (never).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The index of the call the daemon must refuse.
    pub fn refused(&self) -> usize {
        TOOLS.len()
    }

    /// The call of step `step`, given the id the capture returned (if
    /// any); `None` once the script is done.
    pub fn call(&self, step: usize, record_id: Option<&str>) -> Option<Planned> {
        let id = record_id.unwrap_or(MISSING_RECORD);
        let text = &self.text;
        let (tool, args) = match step {
            CAPTURE => ("memory_capture", json!({"text": text, "role": "user"})),
            SEARCH => ("memory_search", json!({"query": text, "k": 5})),
            AFTER_RESTART => ("memory_recall", json!({"cue": text, "budget_tokens": 800})),
            3 => ("memory_recall_structural", json!({})),
            4 => ("memory_reinforce", json!({"ids": [id]})),
            5 => (
                "memory_contradict",
                json!({"id": id, "new_fact": "Releases now ship on demand from the main branch, any day."}),
            ),
            6 => ("memory_consolidate", json!({})),
            7 => ("profile_get_set", json!({"operation": "get"})),
            8 => ("curiosity_pending", json!({})),
            9 => ("schema_list", json!({"confidence_min": 0.0})),
            10 => ("events_query", json!({"limit": 5})),
            11 => ("topology", json!({})),
            12 => ("episodes_recent", json!({"n": 5})),
            13 => (
                "memory_temporal_recall",
                json!({"cue": "deploy window", "limit": 5}),
            ),
            14 => ("claim_check", json!({"cue": text})),
            15 => (
                "memory_contradict",
                json!({"id": MISSING_RECORD, "new_fact": "This record does not exist."}),
            ),
            _ => return None,
        };
        Some(Planned { tool, args })
    }
}

/// The record id in a capture's result text (the structured result as
/// JSON, or text that quotes it).
pub fn record_id(result_text: &str) -> Option<String> {
    if let Ok(value) = serde_json::from_str::<Value>(result_text)
        && let Some(id) = value["record_id"].as_str()
    {
        return Some(id.to_owned());
    }
    let after = result_text.split("\"record_id\"").nth(1)?;
    let quoted = after.trim_start_matches([':', ' ']).strip_prefix('"')?;
    quoted.split('"').next().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_is_called_once_before_the_refused_call() {
        let script = Script::new("t");
        let mut called: Vec<&str> = (0..script.refused())
            .map(|i| script.call(i, Some("id")).expect("call").tool)
            .collect();
        called.sort_unstable();
        let mut tools = TOOLS.to_vec();
        tools.sort_unstable();
        assert_eq!(called, tools);
        assert_eq!(
            script.call(script.refused(), None).expect("refused").tool,
            "memory_contradict"
        );
        assert!(script.call(script.len(), None).is_none());
    }

    #[test]
    fn the_record_id_is_found_in_json_or_quoted_text() {
        assert_eq!(
            record_id(r#"{"record_id": "abc", "x": 1}"#).as_deref(),
            Some("abc")
        );
        assert_eq!(
            record_id(r#"stored: {"record_id":"def"}"#).as_deref(),
            Some("def")
        );
        assert_eq!(record_id("nothing"), None);
    }
}
