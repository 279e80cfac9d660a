//! MCP protocol constants and the JSON shapes the wrapper sends.

use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use crate::tools;

/// The revision without a handshake (per-request `_meta`).
pub const MODERN_VERSION: &str = "2026-07-28";

/// Handshake-era revisions the wrapper serves, newest first.
pub const LEGACY_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The legacy revision answered when a client asks for one the wrapper
/// does not know.
pub const DEFAULT_LEGACY_VERSION: &str = "2025-11-25";

/// `_meta` key carrying a modern request's protocol version.
pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";

/// `_meta` key carrying the server identity in modern results.
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// Name the wrapper reports to clients (the original wrapper's name, so
/// configurations and logs keep matching).
pub const SERVER_NAME: &str = "iai-mcp";

/// How long modern clients may cache `tools/list` and `server/discover`:
/// the registry is static for the life of the process, so an hour is safe.
pub const LIST_TTL_MS: u64 = 3_600_000;

/// JSON-RPC: the line is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: the JSON is not a valid request.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC: no such method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC: the method's params are wrong.
pub const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC: the server failed internally.
pub const INTERNAL_ERROR: i64 = -32603;
/// MCP (2026-07-28): the request's protocol version is not served.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// Which protocol era a request belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// `initialize` handshake revisions.
    Legacy,
    /// Stateless revision with per-request metadata.
    Modern,
}

/// Every revision served, newest first (the `supportedVersions` list).
pub fn supported_versions() -> Vec<&'static str> {
    std::iter::once(MODERN_VERSION)
        .chain(LEGACY_VERSIONS)
        .collect()
}

/// `serverInfo`: name and wrapper version.
pub fn server_info() -> Value {
    json!({ "name": SERVER_NAME, "version": env!("CARGO_PKG_VERSION") })
}

/// How the model should use the memory, in a few sentences: ask it first
/// for decisions and their reasons, never instead of reading the code, and
/// treat what it returns as history.
pub const GUIDANCE: &str = "When a question is about what was decided, preferred or discussed before, \
or why something is the way it is, call memory_recall before searching the repository: that answer \
is in past conversations, not in the files, and one recall within its token budget saves a search of \
several steps. Recall comes before file search but never replaces it: for what the code does now, \
read the code. Memories carry timestamps and valid_from/valid_to; anything they say about the code \
is history until the current tree confirms it.";

/// The `instructions` string: the [`GUIDANCE`], then `config: ` and a JSON
/// document the iai-mcp client side reads for its context-editing
/// settings and the hot tool list.
pub fn instructions() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| {
        let config = json!({
            "context_editing": {
                "type": "clear_tool_uses_20250919",
                "trigger": { "type": "input_tokens", "value": 30000 }
            },
            "hot_tools": tools::names().collect::<Vec<_>>(),
        });
        format!("{GUIDANCE}\n\nconfig: {config}")
    })
}

/// The config block of the [`instructions`], parsed back (for clients and
/// tests that read it).
pub fn instructions_config(instructions: &str) -> Option<Value> {
    let (_, config) = instructions.rsplit_once("config: ")?;
    serde_json::from_str(config).ok()
}

/// The capabilities object: tools only.
pub fn capabilities() -> Value {
    json!({ "tools": {} })
}

/// Result of a legacy `initialize` for a client asking for `requested`.
pub fn initialize_result(requested: Option<&str>) -> Value {
    let version = requested
        .filter(|v| LEGACY_VERSIONS.contains(v))
        .unwrap_or(DEFAULT_LEGACY_VERSION);
    json!({
        "protocolVersion": version,
        "capabilities": capabilities(),
        "serverInfo": server_info(),
        "instructions": instructions(),
    })
}

/// Result of `server/discover`.
pub fn discover_result() -> Value {
    json!({
        "supportedVersions": supported_versions(),
        "capabilities": capabilities(),
        "instructions": instructions(),
        "ttlMs": LIST_TTL_MS,
        "cacheScope": "public",
    })
}

/// Result of `tools/list` in the given era.
pub fn tools_list_result(era: Era) -> Value {
    let mut result = Map::new();
    result.insert("tools".into(), tools::list_json().clone());
    if era == Era::Modern {
        result.insert("ttlMs".into(), LIST_TTL_MS.into());
        result.insert("cacheScope".into(), "public".into());
    }
    Value::Object(result)
}

/// A `tools/call` result for a call that failed with `message`: an
/// `isError` result carrying `error: <message>`. (A call that succeeded is
/// answered by [`result_line`](super::result_line), straight from the
/// daemon's JSON.)
pub fn tool_failure(message: &str) -> Value {
    tool_error(&format!("error: {message}"))
}

/// A `tools/call` result reporting a failure in `text`.
pub fn tool_error(text: &str) -> Value {
    json!({
        "content": [{ "type": "text", "text": text }],
        "isError": true,
    })
}

/// Add what modern results carry: `resultType` and the server identity.
pub fn finish_result(era: Era, mut result: Value) -> Value {
    if era == Era::Modern
        && let Value::Object(map) = &mut result
    {
        map.insert("resultType".into(), "complete".into());
        let meta = map
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert(SERVER_INFO_KEY.into(), server_info());
        }
    }
    result
}

/// A JSON-RPC success response.
pub fn response(id: Value, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

/// A JSON-RPC error response (`id` is `null` when none could be read).
pub fn error_response(id: Value, code: i64, message: &str, data: Option<Value>) -> Value {
    let mut error = json!({ "code": code, "message": message });
    if let (Some(data), Value::Object(map)) = (data, &mut error) {
        map.insert("data".into(), data);
    }
    json!({ "jsonrpc": "2.0", "id": id, "error": error })
}

/// One output line: the message and its newline. JSON text never contains
/// a raw newline, so a message can never span two lines.
pub fn encode(message: &Value) -> Vec<u8> {
    let mut line = serde_json::to_vec(message).unwrap_or_default();
    line.push(b'\n');
    line
}
