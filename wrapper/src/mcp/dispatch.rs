//! JSON-RPC and MCP rules for one inbound line, with no I/O.
//!
//! [`classify`] turns a line from the client into what the server must do:
//! answer at once, forward a tool call to the daemon, cancel a call, start
//! the warm-up, or nothing. Everything that can be answered without the
//! daemon (handshake, discovery, the tool list, every protocol error) is
//! answered here, so it never waits on the daemon.

use serde_json::{Map, Value, json};

use super::call_line;
use super::protocol::{
    self, Era, INVALID_PARAMS, INVALID_REQUEST, LEGACY_VERSIONS, METHOD_NOT_FOUND, MODERN_VERSION,
    PARSE_ERROR, PROTOCOL_VERSION_KEY, UNSUPPORTED_PROTOCOL_VERSION,
};
use crate::tools::{self, Tool};

/// What the server must do with one inbound line.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// Write this message (a response or an error) at once.
    Reply(Value),
    /// Forward a tool call to the daemon and answer `id` with the outcome.
    ToolCall(ToolCall),
    /// The client cancelled the request with this id: answer it no more.
    Cancel(Value),
    /// The legacy handshake finished (`notifications/initialized`).
    Initialized,
    /// Nothing to do (unknown notification, or a response from the client).
    Ignore,
}

/// A `tools/call` that needs the daemon.
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// The request id, echoed in the response.
    pub id: Value,
    /// The era the request was made in (decides the result's extra fields).
    pub era: Era,
    /// The tool called.
    pub tool: &'static Tool,
    /// The call's arguments (empty when none were given).
    pub arguments: Map<String, Value>,
}

impl PartialEq for ToolCall {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && self.era == other.era
            && self.tool.name == other.tool.name
            && self.arguments == other.arguments
    }
}

/// The outcome of [`classify`]: the action, and the era of the request when
/// the line was a valid request (a modern request starts the warm-up).
#[derive(Debug, Clone, PartialEq)]
pub struct Classified {
    /// What to do.
    pub inbound: Inbound,
    /// The request's era, for valid requests.
    pub era: Option<Era>,
}

impl Classified {
    fn reply(message: Value) -> Self {
        Classified {
            inbound: Inbound::Reply(message),
            era: None,
        }
    }
}

/// The answer to a line that was too long to read: an error with the
/// request's id when its first bytes show one.
pub fn oversized(id: Option<Value>, limit: usize) -> Value {
    protocol::error_response(
        id.unwrap_or(Value::Null),
        INVALID_REQUEST,
        &format!("request line exceeds the {limit}-byte limit"),
        None,
    )
}

/// Decide what to do with one line from the client.
pub fn classify(line: &[u8]) -> Classified {
    if let Some(call) = call_line::tool_call(line) {
        return Classified {
            era: Some(Era::Legacy),
            inbound: Inbound::ToolCall(ToolCall {
                id: call.id,
                era: Era::Legacy,
                tool: call.tool,
                arguments: call.arguments,
            }),
        };
    }
    classify_fully(line)
}

/// [`classify`] by the full rules, from a tree of the whole line.
fn classify_fully(line: &[u8]) -> Classified {
    let value: Value = match serde_json::from_slice(line) {
        Ok(value) => value,
        Err(e) => {
            if line.iter().all(u8::is_ascii_whitespace) {
                // Blank lines between messages are tolerated silently.
                return Classified {
                    inbound: Inbound::Ignore,
                    era: None,
                };
            }
            return Classified::reply(protocol::error_response(
                Value::Null,
                PARSE_ERROR,
                &format!("parse error: {e}"),
                None,
            ));
        }
    };
    let Value::Object(mut message) = value else {
        let what = if value.is_array() {
            "batch requests are not supported"
        } else {
            "a request must be a JSON object"
        };
        return Classified::reply(invalid(Value::Null, what));
    };
    let id = message.remove("id");
    let method = message.remove("method");
    let has_id = id.is_some();
    let id = match id {
        None => None,
        Some(id @ (Value::String(_) | Value::Number(_))) => Some(id),
        Some(_) => return Classified::reply(invalid(Value::Null, "id must be a string or number")),
    };
    let reply_id = id.clone().unwrap_or(Value::Null);
    if message.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return Classified::reply(invalid(reply_id, "jsonrpc must be \"2.0\""));
    }
    let method = match method {
        Some(Value::String(m)) => m,
        None if has_id && (message.contains_key("result") || message.contains_key("error")) => {
            // A response to a request we never send: nothing to answer.
            return Classified {
                inbound: Inbound::Ignore,
                era: None,
            };
        }
        _ => return Classified::reply(invalid(reply_id, "method must be a string")),
    };
    let params = match message.remove("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(p)) => p,
        Some(_) => {
            return match id {
                Some(id) => {
                    Classified::reply(error(id, INVALID_PARAMS, "params must be an object"))
                }
                None => Classified {
                    inbound: Inbound::Ignore,
                    era: None,
                },
            };
        }
    };
    match id {
        None => Classified {
            inbound: notification(&method, &params),
            era: None,
        },
        Some(id) => request(id, &method, params),
    }
}

fn notification(method: &str, params: &Map<String, Value>) -> Inbound {
    match method {
        "notifications/initialized" => Inbound::Initialized,
        "notifications/cancelled" => match params.get("requestId") {
            Some(id @ (Value::String(_) | Value::Number(_))) => Inbound::Cancel(id.clone()),
            _ => Inbound::Ignore,
        },
        _ => Inbound::Ignore,
    }
}

fn request(id: Value, method: &str, mut params: Map<String, Value>) -> Classified {
    let era = match era_of(&params) {
        Ok(era) => era,
        Err(requested) => {
            // The schema types `requested` as a string: a non-string
            // version is reported as its JSON text.
            let requested = match requested {
                Value::String(v) => v,
                other => other.to_string(),
            };
            let data = json!({
                "supported": protocol::supported_versions(),
                "requested": requested,
            });
            return Classified::reply(protocol::error_response(
                id,
                UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version",
                Some(data),
            ));
        }
    };
    let done = |result: Value| Classified {
        inbound: Inbound::Reply(protocol::response(
            id.clone(),
            protocol::finish_result(era, result),
        )),
        era: Some(era),
    };
    match method {
        "initialize" => {
            let requested = params.get("protocolVersion").and_then(Value::as_str);
            Classified {
                inbound: Inbound::Reply(protocol::response(
                    id.clone(),
                    protocol::initialize_result(requested),
                )),
                era: Some(Era::Legacy),
            }
        }
        "server/discover" => Classified {
            inbound: Inbound::Reply(protocol::response(
                id.clone(),
                protocol::finish_result(Era::Modern, protocol::discover_result()),
            )),
            era: Some(era),
        },
        "ping" if era == Era::Legacy => done(json!({})),
        "tools/list" => done(protocol::tools_list_result(era)),
        "tools/call" => {
            let name = match params.remove("name") {
                Some(Value::String(name)) => name,
                _ => {
                    return Classified::reply(error(
                        id,
                        INVALID_PARAMS,
                        "tools/call params need a string \"name\"",
                    ));
                }
            };
            let arguments = match params.remove("arguments") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(arguments)) => arguments,
                Some(_) => {
                    return Classified::reply(error(
                        id,
                        INVALID_PARAMS,
                        "tools/call \"arguments\" must be an object",
                    ));
                }
            };
            match tools::find(&name) {
                Some(tool) => Classified {
                    inbound: Inbound::ToolCall(ToolCall {
                        id,
                        era,
                        tool,
                        arguments,
                    }),
                    era: Some(era),
                },
                None => done(protocol::tool_error(&format!("unknown tool {name}"))),
            }
        }
        _ => Classified {
            inbound: Inbound::Reply(error(
                id,
                METHOD_NOT_FOUND,
                &format!("method not found: {method}"),
            )),
            era: Some(era),
        },
    }
}

/// The era of a request from its `_meta` protocol version: none means
/// legacy, a served version picks its era, anything else is refused with
/// the value that was asked for.
fn era_of(params: &Map<String, Value>) -> Result<Era, Value> {
    let requested = params
        .get("_meta")
        .and_then(|meta| meta.get(PROTOCOL_VERSION_KEY));
    match requested {
        None => Ok(Era::Legacy),
        Some(Value::String(v)) if v == MODERN_VERSION => Ok(Era::Modern),
        Some(Value::String(v)) if LEGACY_VERSIONS.contains(&v.as_str()) => Ok(Era::Legacy),
        Some(other) => Err(other.clone()),
    }
}

fn invalid(id: Value, why: &str) -> Value {
    error(id, INVALID_REQUEST, &format!("invalid request: {why}"))
}

fn error(id: Value, code: i64, message: &str) -> Value {
    protocol::error_response(id, code, message, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(line: &str) -> Value {
        match classify(line.as_bytes()).inbound {
            Inbound::Reply(v) => v,
            other => panic!("expected a reply to {line}, got {other:?}"),
        }
    }

    fn error_of(line: &str) -> (Value, i64) {
        let r = reply(line);
        (r["id"].clone(), r["error"]["code"].as_i64().expect("code"))
    }

    #[test]
    fn parse_errors_answer_with_a_present_null_id() {
        let r = reply("{not json");
        assert_eq!(r["error"]["code"], -32700);
        assert!(r.as_object().expect("object").contains_key("id"));
        assert_eq!(r["id"], Value::Null);
        assert_eq!(error_of(&String::from_utf8_lossy(b"\xff\xfe")).1, -32700);
    }

    #[test]
    fn invalid_requests_keep_a_recoverable_id() {
        assert_eq!(error_of(r#"{"jsonrpc":"2.0","id":5}"#), (json!(5), -32600));
        assert_eq!(
            error_of(r#"{"jsonrpc":"1.0","id":"a","method":"ping"}"#),
            (json!("a"), -32600)
        );
        assert_eq!(error_of(r#"{"id":7,"method":"ping"}"#), (json!(7), -32600));
        assert_eq!(
            error_of(r#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#),
            (Value::Null, -32600)
        );
        assert_eq!(error_of("[1,2]"), (Value::Null, -32600));
        assert_eq!(error_of("42"), (Value::Null, -32600));
        assert_eq!(
            error_of(r#"{"jsonrpc":"2.0","id":3,"method":17}"#),
            (json!(3), -32600)
        );
    }

    #[test]
    fn unknown_methods_and_bad_params() {
        assert_eq!(
            error_of(r#"{"jsonrpc":"2.0","id":1,"method":"resources/list"}"#),
            (json!(1), -32601)
        );
        assert_eq!(
            error_of(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#),
            (json!(1), -32602)
        );
        assert_eq!(
            error_of(
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"topology","arguments":[1]}}"#
            ),
            (json!(1), -32602)
        );
        assert_eq!(
            error_of(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}"#),
            (json!(1), -32602)
        );
    }

    #[test]
    fn unknown_tool_is_a_tool_error_result() {
        let r = reply(r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"nope"}}"#);
        assert_eq!(r["result"]["isError"], true);
        assert_eq!(r["result"]["content"][0]["text"], "unknown tool nope");
    }

    #[test]
    fn known_tool_is_forwarded_with_its_arguments() {
        let c = classify(
            br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_recall","arguments":{"cue":"x"}}}"#,
        );
        match c.inbound {
            Inbound::ToolCall(call) => {
                assert_eq!(call.id, json!(2));
                assert_eq!(call.tool.name, "memory_recall");
                assert_eq!(call.arguments.get("cue"), Some(&json!("x")));
                assert_eq!(call.era, Era::Legacy);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn notifications_never_get_replies() {
        for line in [
            r#"{"jsonrpc":"2.0","method":"notifications/whatever"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":[1]}"#,
            r#"{"jsonrpc":"2.0","id":4,"result":{}}"#,
            "   ",
        ] {
            assert_eq!(classify(line.as_bytes()).inbound, Inbound::Ignore, "{line}");
        }
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).inbound,
            Inbound::Initialized
        );
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"r1"}}"#)
                .inbound,
            Inbound::Cancel(json!("r1"))
        );
    }

    #[test]
    fn initialize_echoes_known_legacy_versions() {
        let r = reply(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}"#,
        );
        assert_eq!(r["result"]["protocolVersion"], "2025-03-26");
        assert_eq!(r["result"]["serverInfo"]["name"], "iai-mcp");
        assert_eq!(r["result"]["capabilities"], json!({"tools": {}}));
        let text = r["result"]["instructions"].as_str().expect("string");
        assert!(text.starts_with(protocol::GUIDANCE), "{text}");
        let config = protocol::instructions_config(text).expect("a config block");
        let hot: Vec<&str> = config["hot_tools"]
            .as_array()
            .expect("hot tools")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(hot, tools::names().collect::<Vec<_>>());
        assert_eq!(config["context_editing"]["trigger"]["value"], 30000);
        let r = reply(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2099-01-01"}}"#,
        );
        assert_eq!(r["result"]["protocolVersion"], "2025-11-25");
    }

    #[test]
    fn modern_requests_carry_result_type_and_cache_fields() {
        let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#;
        let r = reply(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{meta}}}}}"#
        ));
        assert_eq!(r["result"]["resultType"], "complete");
        assert_eq!(r["result"]["cacheScope"], "public");
        assert!(r["result"]["ttlMs"].is_u64());
        assert_eq!(
            r["result"]["tools"].as_array(),
            tools::list_json().as_array()
        );
        assert_eq!(
            r["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "iai-mcp"
        );
        let (_, code) = error_of(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{{meta}}}}}"#
        ));
        assert_eq!(code, -32601, "ping does not exist in the modern era");
        let d = reply(&format!(
            r#"{{"jsonrpc":"2.0","id":"d","method":"server/discover","params":{{{meta}}}}}"#
        ));
        assert_eq!(d["result"]["supportedVersions"][0], "2026-07-28");
        assert_eq!(
            d["result"]["supportedVersions"].as_array().map(Vec::len),
            Some(5)
        );
        assert_eq!(d["result"]["resultType"], "complete");
    }

    #[test]
    fn unsupported_modern_version_is_refused_with_the_supported_list() {
        let r = reply(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1900-01-01"}}}"#,
        );
        assert_eq!(r["error"]["code"], -32022);
        assert_eq!(r["error"]["data"]["requested"], "1900-01-01");
        assert_eq!(r["error"]["data"]["supported"][0], "2026-07-28");
    }

    #[test]
    fn legacy_ping_and_list() {
        let r = reply(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
        assert_eq!(r["result"], json!({}));
        let r = reply(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
        assert!(r["result"].get("resultType").is_none());
        assert_eq!(r["result"]["tools"][0]["name"], "memory_recall");
    }

    /// Every line the quick reader takes, the full rules take the same way.
    #[test]
    fn the_quick_reader_agrees_with_the_full_rules_or_steps_aside() {
        let lines = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"topology","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"topology"}}"#,
            r#"{"id":3,"params":{"arguments":{"cue":"x","n":[1,2]},"name":"memory_recall"},"method":"tools/call","jsonrpc":"2.0","extra":true}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"topology","arguments":null}}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"topology","arguments":[1]}}"#,
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"nope"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"id":8,"method":"tools/call","params":{"name":"topology"}}"#,
            r#"{"jsonrpc":"1.0","id":9,"method":"tools/call","params":{"name":"topology"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"topology"}}"#,
            r#"{"jsonrpc":"2.0","id":10,"method":"tools\/call","params":{"name":"topology"}}"#,
            r#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"topology","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
            r#"{"jsonrpc":"2.0","id":12,"method":"tools/list"}"#,
            r#"[{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"topology"}}]"#,
            r#"{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"topology","arguments":{"a":1,"a":2}}}"#,
            r#"{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"topology","_meta":{"progressToken":3}}}"#,
            r#"{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"topology","_meta":null}}"#,
            r#"{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"topology","_meta":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":18,"method":"tools/call","params":["topology"]}"#,
            r#"{"jsonrpc":"2.0","id":19,"method":"tools/call","params":["topology",{},null]}"#,
            "{not json",
        ];
        // Nesting around the depth limit, in the arguments and in members
        // that are skipped.
        let deep = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let mut nested = Vec::new();
        for depth in [1, 120, 124, 125, 126, 127, 128, 129, 130] {
            let value = deep(depth);
            nested.push(format!(
                r#"{{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{{"name":"topology","arguments":{{"deep":{value}}}}}}}"#
            ));
            nested.push(format!(
                r#"{{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{{"name":"topology","x":{value}}}}}"#
            ));
            nested.push(format!(
                r#"{{"jsonrpc":"2.0","id":22,"x":{value},"method":"tools/call","params":{{"name":"topology"}}}}"#
            ));
        }
        let mut taken = 0;
        for line in lines
            .iter()
            .copied()
            .chain(nested.iter().map(String::as_str))
        {
            let full = classify_fully(line.as_bytes());
            if call_line::tool_call(line.as_bytes()).is_some() {
                taken += 1;
                assert_eq!(full.inbound, classify(line.as_bytes()).inbound, "{line}");
                assert_eq!(full.era, Some(Era::Legacy), "{line}");
            }
        }
        // Six of the plain lines, and arguments nested within the limit.
        assert_eq!(taken, 9);
    }
}
