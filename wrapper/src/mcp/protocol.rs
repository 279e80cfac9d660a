//! MCP protocol constants: the revisions served, the error codes, the
//! server's identity and its instructions. The messages themselves are
//! built in [`reply`](super::reply).

use std::sync::OnceLock;

use serde_json::{Value, json};

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

/// This release's version, as `serverInfo` and `--version` report it.
pub const SERVER_VERSION: &str = env!("CARGO_PKG_VERSION");

/// What this server is, in one line: the release and the iai-mcp release
/// whose wrapper it stands in for (`serverInfo.description`, `--version`).
pub fn description() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| {
        format!(
            "iai-mcp-wrapper {SERVER_VERSION}, a drop-in for the MCP wrapper of iai-mcp {}",
            tools::SURFACE_RELEASE
        )
    })
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
