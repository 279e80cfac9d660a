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
use crate::tools;

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

/// `serverInfo`: the name hosts know (the original wrapper's), this
/// release's version, and what it stands in for.
#[derive(Serialize)]
pub struct ServerInfo {
    name: &'static str,
    version: &'static str,
    description: &'static str,
}

impl ServerInfo {
    /// This wrapper's identity.
    pub fn this() -> Self {
        ServerInfo {
            name: protocol::SERVER_NAME,
            version: protocol::SERVER_VERSION,
            description: protocol::description(),
        }
    }
}

/// `capabilities`: tools only.
#[derive(Serialize)]
struct Capabilities {
    tools: Empty,
}

const CAPABILITIES: Capabilities = Capabilities { tools: Empty {} };

/// `{}`.
#[derive(Serialize)]
struct Empty {}

/// What every modern-era result ends with.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Completion {
    result_type: &'static str,
    #[serde(rename = "_meta")]
    meta: CompletionMeta,
}

#[derive(Serialize)]
struct CompletionMeta {
    #[serde(rename = "io.modelcontextprotocol/serverInfo")]
    server_info: ServerInfo,
}

/// The modern era's additions to a result made in `era`.
fn completion(era: Era) -> Option<Completion> {
    (era == Era::Modern).then(|| Completion {
        result_type: "complete",
        meta: CompletionMeta {
            server_info: ServerInfo::this(),
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
    instructions: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DiscoverResult {
    supported_versions: Vec<&'static str>,
    capabilities: Capabilities,
    instructions: &'static str,
    #[serde(flatten)]
    cache: Cache,
    #[serde(flatten)]
    completion: Option<Completion>,
}

#[derive(Serialize)]
struct ListResult {
    tools: &'static Value,
    #[serde(flatten)]
    cache: Option<Cache>,
    #[serde(flatten)]
    completion: Option<Completion>,
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
    completion: Option<Completion>,
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

/// The result of a legacy `initialize`, answering in `version`.
pub fn initialize(id: &Value, version: &str) -> Line {
    respond(
        id,
        InitializeResult {
            protocol_version: version,
            capabilities: CAPABILITIES,
            server_info: ServerInfo::this(),
            instructions: protocol::instructions(),
        },
    )
}

/// The result of `server/discover` (modern by definition).
pub fn discover(id: &Value) -> Line {
    respond(
        id,
        DiscoverResult {
            supported_versions: protocol::supported_versions(),
            capabilities: CAPABILITIES,
            instructions: protocol::instructions(),
            cache: PUBLIC_CACHE,
            completion: completion(Era::Modern),
        },
    )
}

/// The result of `tools/list` in `era`.
pub fn tools_list(id: &Value, era: Era) -> Line {
    respond(
        id,
        ListResult {
            tools: tools::list_json(),
            cache: (era == Era::Modern).then_some(PUBLIC_CACHE),
            completion: completion(era),
        },
    )
}

/// The result of a legacy `ping`: `{}`.
pub fn ping(id: &Value) -> Line {
    respond(id, Empty {})
}

/// A `tools/call` that succeeded: the daemon's result as the text content
/// (its JSON text) and as `structuredContent`.
pub fn tool_success(id: &Value, era: Era, result: &DaemonResult) -> Line {
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
            completion: completion(era),
        },
    )
}

/// A `tools/call` answered with an error result reading `text` (`unknown
/// tool NAME`, or `error: ` and why a call failed).
pub fn tool_error(id: &Value, era: Era, text: &str) -> Line {
    respond(
        id,
        ToolResult {
            content: [TextContent { kind: "text", text }],
            structured_content: None,
            is_error: true,
            completion: completion(era),
        },
    )
}

/// A `tools/call` that failed with `message`: an error result reading
/// `error: <message>`.
pub fn tool_failure(id: &Value, era: Era, message: &str) -> Line {
    tool_error(id, era, &format!("error: {message}"))
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

    fn parsed(line: &[u8]) -> Value {
        assert_eq!(line.last(), Some(&b'\n'));
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        serde_json::from_slice(line).expect("a JSON line")
    }

    #[test]
    fn tool_results_carry_the_text_and_the_structured_result() {
        let result = DaemonResult::from_value(&json!({"ok": true, "t": "a \"q\"\nb"}));
        let r = parsed(&tool_success(&json!(7), Era::Legacy, &result));
        assert_eq!(
            r,
            json!({"jsonrpc": "2.0", "id": 7, "result": {
                "content": [{"type": "text", "text": r#"{"ok":true,"t":"a \"q\"\nb"}"#}],
                "structuredContent": {"ok": true, "t": "a \"q\"\nb"},
            }})
        );
        let list = DaemonResult::from_value(&json!([1, 2]));
        let r = parsed(&tool_success(&json!("x"), Era::Modern, &list));
        assert_eq!(r["result"]["structuredContent"], json!({"value": [1, 2]}));
        assert_eq!(r["result"]["resultType"], "complete");
        assert_eq!(
            r["result"]["_meta"][protocol::SERVER_INFO_KEY]["name"],
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
        let r = parsed(&tool_failure(&json!(1), Era::Legacy, "it broke"));
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
        let legacy = parsed(&tools_list(&json!(1), Era::Legacy));
        let keys: Vec<&String> = legacy["result"]
            .as_object()
            .expect("object")
            .keys()
            .collect();
        assert_eq!(keys, ["tools"]);
        let modern = parsed(&tools_list(&json!(1), Era::Modern));
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
}
