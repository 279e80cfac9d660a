//! Every message the wrapper writes to the client, as typed values that
//! serde writes: the result of each method, tool results, and errors.
//!
//! Each function returns one whole output line, newline included. JSON
//! text never holds a raw newline, so a message can never span two lines.
//! Members come in the order the MCP schema lists them; a result made in
//! the modern era ends with what that era adds (`resultType` and the
//! server's identity in `_meta`).

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::protocol::{self, Era};
use crate::bridge::DaemonResult;
use crate::surface::Surface;

/// One output line: a JSON-RPC message and its newline.
pub type Line = Vec<u8>;

/// A success response.
#[derive(Serialize)]
struct Response<'a, R> {
    jsonrpc: &'static str,
    id: &'a Value,
    result: R,
}

/// An error response.
#[derive(Serialize)]
struct ErrorResponse<'a> {
    jsonrpc: &'static str,
    id: &'a Value,
    error: ErrorObject<'a>,
}

#[derive(Serialize)]
struct ErrorObject<'a> {
    code: i64,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<UnsupportedVersion<'a>>,
}

/// The `data` of an unsupported-version error (2026-07-28).
#[derive(Serialize)]
struct UnsupportedVersion<'a> {
    supported: Vec<&'static str>,
    requested: &'a str,
}

/// `serverInfo`: what the host shows, iai-mcp and the version of the
/// release whose surface is served, with this wrapper's own identity one
/// look away in its description.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerInfo {
    name: &'static str,
    version: String,
    description: &'static str,
}

impl ServerInfo {
    /// The identity of a server serving `surface`.
    pub fn of(surface: &Surface) -> Self {
        ServerInfo {
            name: protocol::SERVER_NAME,
            version: surface.version().to_owned(),
            description: protocol::description(),
        }
    }
}

/// `capabilities`: tools, whose list may change (when the iai-mcp release
/// installed beside the wrapper changes under it).
#[derive(Serialize)]
struct Capabilities {
    tools: ToolsCapability,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolsCapability {
    list_changed: bool,
}

const CAPABILITIES: Capabilities = Capabilities {
    tools: ToolsCapability { list_changed: true },
};

/// `{}`.
#[derive(Serialize)]
struct Empty {}

/// What every modern-era result ends with.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Completion<'a> {
    result_type: &'static str,
    #[serde(rename = "_meta")]
    meta: CompletionMeta<'a>,
}

#[derive(Serialize)]
struct CompletionMeta<'a> {
    #[serde(rename = "io.modelcontextprotocol/serverInfo")]
    server_info: &'a ServerInfo,
}

/// The modern era's additions to a result made in `era` by `server`.
fn completion(era: Era, server: &ServerInfo) -> Option<Completion<'_>> {
    (era == Era::Modern).then_some(Completion {
        result_type: "complete",
        meta: CompletionMeta {
            server_info: server,
        },
    })
}

/// How long a modern client may cache a listing, and with whom.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Cache {
    ttl_ms: u64,
    cache_scope: &'static str,
}

const PUBLIC_CACHE: Cache = Cache {
    ttl_ms: protocol::LIST_TTL_MS,
    cache_scope: "public",
};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InitializeResult<'a> {
    protocol_version: &'a str,
    capabilities: Capabilities,
    server_info: ServerInfo,
    instructions: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DiscoverResult<'a> {
    supported_versions: Vec<&'static str>,
    capabilities: Capabilities,
    instructions: &'a str,
    #[serde(flatten)]
    cache: Cache,
    #[serde(flatten)]
    completion: Option<Completion<'a>>,
}

#[derive(Serialize)]
struct ListResult<'a> {
    tools: &'a Value,
    #[serde(flatten)]
    cache: Option<Cache>,
    #[serde(flatten)]
    completion: Option<Completion<'a>>,
}

/// A `tools/call` result.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolResult<'a> {
    content: [TextContent<'a>; 1],
    #[serde(skip_serializing_if = "Option::is_none")]
    structured_content: Option<Structured<'a>>,
    #[serde(skip_serializing_if = "is_false")]
    is_error: bool,
    #[serde(flatten)]
    completion: Option<Completion<'a>>,
}

fn is_false(flag: &bool) -> bool {
    !flag
}

#[derive(Serialize)]
struct TextContent<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

/// `structuredContent`: the result itself when it is an object, else
/// wrapped as `{"value": ...}` (the schema wants an object).
#[derive(Serialize)]
#[serde(untagged)]
enum Structured<'a> {
    Object(&'a RawValue),
    Wrapped { value: &'a RawValue },
}

/// An error response with `id` (`null` when none could be read).
pub fn error(id: &Value, code: i64, message: &str) -> Line {
    encode(&ErrorResponse {
        jsonrpc: "2.0",
        id,
        error: ErrorObject {
            code,
            message,
            data: None,
        },
    })
}

/// The error for a request whose protocol version is not served, naming
/// the versions that are.
pub fn unsupported_version(id: &Value, requested: &str) -> Line {
    encode(&ErrorResponse {
        jsonrpc: "2.0",
        id,
        error: ErrorObject {
            code: protocol::UNSUPPORTED_PROTOCOL_VERSION,
            message: "Unsupported protocol version",
            data: Some(UnsupportedVersion {
                supported: protocol::supported_versions(),
                requested,
            }),
        },
    })
}

/// The result of a legacy `initialize` serving `surface`, answering in
/// `version`.
pub fn initialize(id: &Value, version: &str, surface: &Surface) -> Line {
    respond(
        id,
        InitializeResult {
            protocol_version: version,
            capabilities: CAPABILITIES,
            server_info: ServerInfo::of(surface),
            instructions: surface.instructions(),
        },
    )
}

/// The result of `server/discover` (modern by definition) serving
/// `surface`.
pub fn discover(id: &Value, surface: &Surface) -> Line {
    let server = ServerInfo::of(surface);
    respond(
        id,
        DiscoverResult {
            supported_versions: protocol::supported_versions(),
            capabilities: CAPABILITIES,
            instructions: surface.instructions(),
            cache: PUBLIC_CACHE,
            completion: completion(Era::Modern, &server),
        },
    )
}

/// The result of `tools/list` in `era`: the tools of `surface`.
pub fn tools_list(id: &Value, era: Era, surface: &Surface) -> Line {
    let server = ServerInfo::of(surface);
    respond(
        id,
        ListResult {
            tools: surface.listing(),
            cache: (era == Era::Modern).then_some(PUBLIC_CACHE),
            completion: completion(era, &server),
        },
    )
}

/// The notification that the tool list changed, to a legacy session (no
/// params).
pub fn tools_list_changed() -> Line {
    encode(&Notification {
        jsonrpc: "2.0",
        method: "notifications/tools/list_changed",
        params: None::<Empty>,
    })
}

/// The notification that the tool list changed, on the modern stream
/// `subscription` (the `subscriptions/listen` request's id).
pub fn tools_list_changed_on(subscription: &Value) -> Line {
    encode(&Notification {
        jsonrpc: "2.0",
        method: "notifications/tools/list_changed",
        params: Some(OnStream {
            meta: StreamMeta { subscription },
        }),
    })
}

/// The acknowledgement that opens the stream `subscription`, naming the
/// notifications it will carry: the tool list's changes when asked for
/// (the wrapper has nothing else to tell).
pub fn subscription_acknowledged(subscription: &Value, tools_list_changed: bool) -> Line {
    encode(&Notification {
        jsonrpc: "2.0",
        method: "notifications/subscriptions/acknowledged",
        params: Some(Acknowledged {
            meta: StreamMeta { subscription },
            notifications: Honored {
                tools_list_changed: tools_list_changed.then_some(true),
            },
        }),
    })
}

/// The response that ends the stream `subscription` gracefully (the
/// server is stopping).
pub fn subscription_ended(subscription: &Value) -> Line {
    respond(
        subscription,
        StreamEnd {
            result_type: "complete",
            meta: StreamMeta { subscription },
        },
    )
}

/// A notification.
#[derive(Serialize)]
struct Notification<P> {
    jsonrpc: &'static str,
    method: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<P>,
}

/// The `_meta` of everything on a modern notification stream.
#[derive(Serialize)]
struct StreamMeta<'a> {
    #[serde(rename = "io.modelcontextprotocol/subscriptionId")]
    subscription: &'a Value,
}

/// The params of a notification on a stream.
#[derive(Serialize)]
struct OnStream<'a> {
    #[serde(rename = "_meta")]
    meta: StreamMeta<'a>,
}

#[derive(Serialize)]
struct Acknowledged<'a> {
    #[serde(rename = "_meta")]
    meta: StreamMeta<'a>,
    notifications: Honored,
}

/// The notifications a stream will carry.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Honored {
    #[serde(skip_serializing_if = "Option::is_none")]
    tools_list_changed: Option<bool>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StreamEnd<'a> {
    result_type: &'static str,
    #[serde(rename = "_meta")]
    meta: StreamMeta<'a>,
}

/// The result of a legacy `ping`: `{}`.
pub fn ping(id: &Value) -> Line {
    respond(id, Empty {})
}

/// A `tools/call` that succeeded: the daemon's result as the text content
/// (its JSON text) and as `structuredContent`.
pub fn tool_success(id: &Value, era: Era, server: &ServerInfo, result: &DaemonResult) -> Line {
    let raw = result.as_raw();
    let structured = if result.is_object() {
        Structured::Object(raw)
    } else {
        Structured::Wrapped { value: raw }
    };
    respond(
        id,
        ToolResult {
            content: [TextContent {
                kind: "text",
                text: raw.get(),
            }],
            structured_content: Some(structured),
            is_error: false,
            completion: completion(era, server),
        },
    )
}

/// A `tools/call` answered with an error result reading `text` (`unknown
/// tool NAME`, or `error: ` and why a call failed).
pub fn tool_error(id: &Value, era: Era, server: &ServerInfo, text: &str) -> Line {
    respond(
        id,
        ToolResult {
            content: [TextContent { kind: "text", text }],
            structured_content: None,
            is_error: true,
            completion: completion(era, server),
        },
    )
}

/// A `tools/call` that failed with `message`: an error result reading
/// `error: <message>`.
pub fn tool_failure(id: &Value, era: Era, server: &ServerInfo, message: &str) -> Line {
    tool_error(id, era, server, &format!("error: {message}"))
}

fn respond<R: Serialize>(id: &Value, result: R) -> Line {
    encode(&Response {
        jsonrpc: "2.0",
        id,
        result,
    })
}

/// The message as one line. None of the messages above can fail to
/// serialise (every map key is a string, every number finite or written as
/// `null`); should one ever fail, nothing is written rather than a line
/// that is not a message.
fn encode<T: Serialize>(message: &T) -> Line {
    match serde_json::to_vec(message) {
        Ok(mut line) => {
            line.push(b'\n');
            line
        }
        Err(e) => {
            tracing::error!(error = %e, "a reply could not be written");
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn server() -> ServerInfo {
        ServerInfo::of(&Surface::builtin(None))
    }

    fn parsed(line: &[u8]) -> Value {
        assert_eq!(line.last(), Some(&b'\n'));
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        serde_json::from_slice(line).expect("a JSON line")
    }

    #[test]
    fn tool_results_carry_the_text_and_the_structured_result() {
        let result = DaemonResult::from_value(&json!({"ok": true, "t": "a \"q\"\nb"}));
        let r = parsed(&tool_success(&json!(7), Era::Legacy, &server(), &result));
        assert_eq!(
            r,
            json!({"jsonrpc": "2.0", "id": 7, "result": {
                "content": [{"type": "text", "text": r#"{"ok":true,"t":"a \"q\"\nb"}"#}],
                "structuredContent": {"ok": true, "t": "a \"q\"\nb"},
            }})
        );
        let list = DaemonResult::from_value(&json!([1, 2]));
        let r = parsed(&tool_success(&json!("x"), Era::Modern, &server(), &list));
        assert_eq!(r["result"]["structuredContent"], json!({"value": [1, 2]}));
        assert_eq!(r["result"]["resultType"], "complete");
        assert_eq!(
            r["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "iai-mcp"
        );
        let keys: Vec<&str> = r["result"]
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            ["content", "structuredContent", "resultType", "_meta"]
        );
    }

    #[test]
    fn failures_are_error_results() {
        let r = parsed(&tool_failure(&json!(1), Era::Legacy, &server(), "it broke"));
        assert_eq!(
            r["result"],
            json!({"content": [{"type": "text", "text": "error: it broke"}], "isError": true})
        );
    }

    #[test]
    fn errors_name_the_id_and_the_versions() {
        let r = parsed(&error(&Value::Null, -32700, "parse error: x"));
        assert_eq!(
            r,
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "parse error: x"}})
        );
        let r = parsed(&unsupported_version(&json!(3), "1999-01-01"));
        assert_eq!(r["error"]["code"], -32022);
        assert_eq!(r["error"]["data"]["requested"], "1999-01-01");
        assert_eq!(r["error"]["data"]["supported"][0], protocol::MODERN_VERSION);
    }

    #[test]
    fn listings_are_cacheable_only_in_the_modern_era() {
        let legacy = parsed(&tools_list(&json!(1), Era::Legacy, &Surface::builtin(None)));
        let keys: Vec<&String> = legacy["result"]
            .as_object()
            .expect("object")
            .keys()
            .collect();
        assert_eq!(keys, ["tools"]);
        let modern = parsed(&tools_list(&json!(1), Era::Modern, &Surface::builtin(None)));
        let keys: Vec<&String> = modern["result"]
            .as_object()
            .expect("object")
            .keys()
            .collect();
        assert_eq!(
            keys,
            ["tools", "ttlMs", "cacheScope", "resultType", "_meta"]
        );
        assert_eq!(parsed(&ping(&json!(2)))["result"], json!({}));
    }

    #[test]
    fn the_host_sees_iai_mcp_and_the_served_release() {
        let r = parsed(&initialize(
            &json!(1),
            "2025-06-18",
            &Surface::builtin(None),
        ));
        assert_eq!(r["result"]["serverInfo"]["name"], "iai-mcp");
        assert_eq!(r["result"]["serverInfo"]["version"], "3.3.0");
        assert!(
            r["result"]["serverInfo"]["description"]
                .as_str()
                .is_some_and(|d| d.starts_with("iai-mcp-wrapper "))
        );
        assert_eq!(
            r["result"]["capabilities"],
            json!({"tools": {"listChanged": true}})
        );
        assert_eq!(
            parsed(&tools_list_changed()),
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        );
    }
}
