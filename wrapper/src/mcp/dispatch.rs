//! JSON-RPC and MCP rules for one inbound line, with no I/O.
//!
//! [`classify`] turns a line from the client into what the server must do:
//! answer at once, forward a tool call to the daemon, cancel a call, start
//! the warm-up, or nothing. Everything that can be answered without the
//! daemon (handshake, discovery, the tool list, every protocol error) is
//! answered here, so it never waits on the daemon. The line is read once
//! ([`message::read`]); a request's params once its method is known.

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::message::{
    self, CallParams, CancelParams, Envelope, Id, InitializeParams, Line, ListenParams,
    ParamsError, PlainParams, RequestMeta,
};
use super::protocol::{
    DEFAULT_LEGACY_VERSION, Era, INVALID_PARAMS, INVALID_REQUEST, LEGACY_VERSIONS,
    METHOD_NOT_FOUND, MODERN_VERSION, PARSE_ERROR,
};
use super::reply::{self, ServerInfo};
use crate::json::Text;
use crate::surface::Surface;
use crate::tools::Tool;

/// What the server must do with one inbound line.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// Write this line (a response or an error) at once.
    Reply(reply::Line),
    /// Forward a tool call to the daemon and answer `id` with the outcome.
    ToolCall(ToolCall),
    /// The client cancelled the request with this id: answer it no more.
    Cancel(Value),
    /// A modern client opened a notification stream (`subscriptions/listen`):
    /// acknowledge it, notify it, and answer it when the server ends.
    Listen(Subscription),
    /// The legacy handshake finished (`notifications/initialized`).
    Initialized,
    /// Nothing to do (unknown notification, a response from the client, a
    /// blank line).
    Ignore,
}

/// A `tools/call` that needs the daemon.
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// The request id, echoed in the response.
    pub id: Value,
    /// The era the request was made in (decides the result's extra fields).
    pub era: Era,
    /// The tool called, as the surface served when the call arrived
    /// defines it (a later change of surface does not touch the call).
    pub tool: Tool,
    /// The call's arguments (empty when none were given).
    pub arguments: Map<String, Value>,
    /// Who answers it (the modern era's results name the server).
    pub server: ServerInfo,
}

impl PartialEq for ToolCall {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && self.era == other.era
            && self.tool.name == other.tool.name
            && self.arguments == other.arguments
    }
}

/// A notification stream a modern client opened with
/// `subscriptions/listen`: its request id is the subscription's id.
#[derive(Debug, Clone, PartialEq)]
pub struct Subscription {
    /// The `subscriptions/listen` request's id.
    pub id: Value,
    /// The client asked for `notifications/tools/list_changed`.
    pub tools_list_changed: bool,
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
    fn reply(line: reply::Line) -> Self {
        Classified {
            inbound: Inbound::Reply(line),
            era: None,
        }
    }

    fn ignore() -> Self {
        Classified {
            inbound: Inbound::Ignore,
            era: None,
        }
    }

    fn answered(line: reply::Line, era: Era) -> Self {
        Classified {
            inbound: Inbound::Reply(line),
            era: Some(era),
        }
    }
}

/// The answer to a line that was too long to read: an error with the
/// request's id when its first bytes show one.
pub fn oversized(id: Option<Value>, limit: usize) -> reply::Line {
    reply::error(
        &id.unwrap_or(Value::Null),
        INVALID_REQUEST,
        &format!("request line exceeds the {limit}-byte limit"),
    )
}

/// Decide what to do with one line from the client, serving `surface`.
pub fn classify(line: &[u8], surface: &Surface) -> Classified {
    match message::read(line) {
        Ok(Line::Message(envelope)) => classify_message(envelope, surface),
        Ok(Line::Blank) => Classified::ignore(),
        Ok(Line::Batch) => {
            Classified::reply(invalid(&Value::Null, "batch requests are not supported"))
        }
        Ok(Line::NotObject) => {
            Classified::reply(invalid(&Value::Null, "a request must be a JSON object"))
        }
        Err(e) if e.is_invalid_message() => {
            Classified::reply(invalid(&Value::Null, &e.to_string()))
        }
        Err(e) => Classified::reply(reply::error(
            &Value::Null,
            PARSE_ERROR,
            &format!("parse error: {e}"),
        )),
    }
}

fn classify_message(envelope: Envelope<'_>, surface: &Surface) -> Classified {
    let id = match envelope.id() {
        Id::Absent => None,
        Id::Valid(id) => Some(id),
        Id::Invalid => {
            return Classified::reply(invalid(&Value::Null, "id must be a string or number"));
        }
    };
    let reply_id = id.clone().unwrap_or(Value::Null);
    if !envelope.is_jsonrpc_2() {
        return Classified::reply(invalid(&reply_id, "jsonrpc must be \"2.0\""));
    }
    let method = match envelope.method() {
        Some(Text::Str(method)) => method,
        // A response to a request the wrapper never sends: nothing to answer.
        None if id.is_some() && envelope.answers() => return Classified::ignore(),
        _ => return Classified::reply(invalid(&reply_id, "method must be a string")),
    };
    match id {
        None => Classified {
            inbound: notification(&method, envelope.params()),
            era: None,
        },
        Some(id) => request(id, &method, envelope.params(), surface),
    }
}

/// A notification: never answered, whatever its params hold.
fn notification(method: &str, params: Option<&RawValue>) -> Inbound {
    match method {
        "notifications/initialized" => Inbound::Initialized,
        "notifications/cancelled" => match message::params::<CancelParams>(params) {
            Ok(CancelParams {
                request_id: Some(id @ (Value::String(_) | Value::Number(_))),
            }) => Inbound::Cancel(id),
            _ => Inbound::Ignore,
        },
        _ => Inbound::Ignore,
    }
}

fn request(id: Value, method: &str, params: Option<&RawValue>, surface: &Surface) -> Classified {
    match method {
        "initialize" => initialize(id, params, surface),
        "tools/call" => tool_call(id, params, surface),
        "subscriptions/listen" => listen(id, params),
        _ => {
            let plain = match message::params::<PlainParams>(params) {
                Ok(plain) => plain,
                Err(e) => return Classified::reply(invalid_params(&id, &e)),
            };
            let era = match era_of(plain.meta.as_ref()) {
                Ok(era) => era,
                Err(refused) => return refused.answer(&id),
            };
            let line = match method {
                "server/discover" => reply::discover(&id, surface),
                "ping" if era == Era::Legacy => reply::ping(&id),
                "tools/list" => reply::tools_list(&id, era, surface),
                _ => reply::error(
                    &id,
                    METHOD_NOT_FOUND,
                    &format!("method not found: {method}"),
                ),
            };
            Classified::answered(line, era)
        }
    }
}

/// `initialize` answers in the legacy era whatever `_meta` says (a
/// modern client does not send it), but a version `_meta` names must
/// still be one that is served.
fn initialize(id: Value, params: Option<&RawValue>, surface: &Surface) -> Classified {
    let params = match message::params::<InitializeParams>(params) {
        Ok(params) => params,
        Err(e) => return Classified::reply(invalid_params(&id, &e)),
    };
    if let Err(refused) = era_of(params.meta.as_ref()) {
        return refused.answer(&id);
    }
    let version = match &params.protocol_version {
        Some(Value::String(v)) if LEGACY_VERSIONS.contains(&v.as_str()) => v.as_str(),
        _ => DEFAULT_LEGACY_VERSION,
    };
    Classified::answered(reply::initialize(&id, version, surface), Era::Legacy)
}

fn tool_call(id: Value, params: Option<&RawValue>, surface: &Surface) -> Classified {
    let params = match message::params::<CallParams<'_>>(params) {
        Ok(params) => params,
        Err(e) => return Classified::reply(invalid_params(&id, &e)),
    };
    let era = match era_of(params.meta.as_ref()) {
        Ok(era) => era,
        Err(refused) => return refused.answer(&id),
    };
    let Some(name) = params.name.as_ref().and_then(Text::as_str) else {
        return Classified::reply(reply::error(
            &id,
            INVALID_PARAMS,
            "tools/call params need a string \"name\"",
        ));
    };
    let arguments = match params.arguments {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(arguments)) => arguments,
        Some(_) => {
            return Classified::reply(reply::error(
                &id,
                INVALID_PARAMS,
                "tools/call \"arguments\" must be an object",
            ));
        }
    };
    let server = ServerInfo::of(surface);
    match surface.find(name) {
        Some(tool) => Classified {
            inbound: Inbound::ToolCall(ToolCall {
                id,
                era,
                tool: tool.clone(),
                arguments,
                server,
            }),
            era: Some(era),
        },
        None => Classified::answered(
            reply::tool_error(&id, era, &server, &format!("unknown tool {name}")),
            era,
        ),
    }
}

/// `subscriptions/listen`, a modern method: the stream is opened (and
/// answered when it ends); in the legacy era it does not exist.
fn listen(id: Value, params: Option<&RawValue>) -> Classified {
    let params = match message::params::<ListenParams>(params) {
        Ok(params) => params,
        Err(e) => return Classified::reply(invalid_params(&id, &e)),
    };
    let era = match era_of(params.meta.as_ref()) {
        Ok(era) => era,
        Err(refused) => return refused.answer(&id),
    };
    if era == Era::Legacy {
        let line = reply::error(
            &id,
            METHOD_NOT_FOUND,
            "method not found: subscriptions/listen",
        );
        return Classified::answered(line, era);
    }
    let tools_list_changed = params
        .notifications
        .and_then(|filter| filter.tools_list_changed)
        .unwrap_or(false);
    Classified {
        inbound: Inbound::Listen(Subscription {
            id,
            tools_list_changed,
        }),
        era: Some(era),
    }
}

/// A protocol version the wrapper does not serve, as the request gave it.
struct Refused(Value);

impl Refused {
    fn answer(&self, id: &Value) -> Classified {
        // The schema types `requested` as a string: a non-string version
        // is reported as its JSON text.
        let requested = match &self.0 {
            Value::String(v) => v.clone(),
            other => other.to_string(),
        };
        Classified::reply(reply::unsupported_version(id, &requested))
    }
}

/// The era of a request from its `_meta` protocol version: none means
/// legacy, a served version picks its era, anything else is refused.
fn era_of(meta: Option<&RequestMeta>) -> Result<Era, Refused> {
    match meta.and_then(|meta| meta.protocol_version.as_ref()) {
        None => Ok(Era::Legacy),
        Some(Value::String(v)) if v == MODERN_VERSION => Ok(Era::Modern),
        Some(Value::String(v)) if LEGACY_VERSIONS.contains(&v.as_str()) => Ok(Era::Legacy),
        Some(other) => Err(Refused(other.clone())),
    }
}

fn invalid(id: &Value, why: &str) -> reply::Line {
    reply::error(id, INVALID_REQUEST, &format!("invalid request: {why}"))
}

fn invalid_params(id: &Value, error: &ParamsError) -> reply::Line {
    reply::error(id, INVALID_PARAMS, &error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;

    /// Classifies `line` serving the built-in table.
    fn classify(line: &[u8]) -> Classified {
        super::classify(line, &Surface::builtin(None))
    }

    fn reply(line: &str) -> Value {
        match classify(line.as_bytes()).inbound {
            Inbound::Reply(bytes) => serde_json::from_slice(&bytes).expect("a JSON reply"),
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
        assert_eq!(
            r["result"]["capabilities"],
            json!({"tools": {"listChanged": true}})
        );
        assert_eq!(
            r["result"]["instructions"],
            Surface::builtin(None).instructions()
        );
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
            Surface::builtin(None).listing().as_array()
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

    #[test]
    fn a_member_given_twice_is_an_invalid_request_without_an_id() {
        let (id, code) =
            error_of(r#"{"jsonrpc":"2.0","id":7,"id":8,"method":"tools/call","params":{}}"#);
        assert_eq!((id, code), (Value::Null, -32600));
        let r = reply(r#"{"jsonrpc":"2.0","id":7,"method":"ping","method":"tools/list"}"#);
        let message = r["error"]["message"].as_str().expect("a message");
        assert!(message.contains("duplicate field `method`"), "{message}");
        // Members the envelope does not read may repeat.
        let r = reply(r#"{"jsonrpc":"2.0","id":9,"x":1,"x":2,"method":"ping"}"#);
        assert_eq!(r["result"], json!({}));
    }

    #[test]
    fn nesting_counts_only_where_values_are_read() {
        let deep = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        // Skipped: an unknown member, or params a method does not read.
        let r = reply(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"x":{},"method":"ping"}}"#,
            deep(5000)
        ));
        assert_eq!(r["result"], json!({}));
        let r = reply(&format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{{"pad":{}}}}}"#,
            deep(5000)
        ));
        assert!(r["result"]["tools"].is_array());
        // Read: the arguments of a call, answered with the request's id.
        let call = |depth: usize| {
            classify(format!(
                r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"topology","arguments":{{"deep":{}}}}}}}"#,
                deep(depth)
            ).as_bytes())
        };
        assert!(matches!(call(120).inbound, Inbound::ToolCall(_)));
        let Inbound::Reply(bytes) = call(200).inbound else {
            panic!("too deep to forward");
        };
        let r: Value = serde_json::from_slice(&bytes).expect("json");
        assert_eq!(
            (r["id"].clone(), r["error"]["code"].clone()),
            (json!(3), json!(-32602))
        );
        assert!(
            r["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("recursion limit")),
            "{r}"
        );
        // The id itself is read: too deep, the line has no usable id.
        let (id, code) = error_of(&format!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"ping"}}"#,
            deep(200)
        ));
        assert_eq!((id, code), (Value::Null, -32600));
    }

    #[test]
    fn text_the_line_spells_with_escapes_is_read_as_characters() {
        let c = classify(
            br#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"memory_re\u0063all","arguments":{"cue":"caf\u00e9"}}}"#,
        );
        let Inbound::ToolCall(call) = c.inbound else {
            panic!("{c:?}");
        };
        assert_eq!(call.tool.name, "memory_recall");
        assert_eq!(call.arguments["cue"], "café");
        // A lone surrogate is refused where text is read (with the id),
        // skipped elsewhere.
        assert_eq!(
            error_of(r#"{"jsonrpc":"2.0","id":5,"method":"\ud800"}"#),
            (json!(5), -32600)
        );
        assert_eq!(
            error_of(
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\ud800"}}"#
            ),
            (json!(1), -32602)
        );
        let r = reply(r#"{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":"\ud800"}}"#);
        assert_eq!(r["result"], json!({}));
    }
}
