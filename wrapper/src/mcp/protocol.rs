//! MCP protocol constants: the revisions served, the error codes, the
//! server's identity and its instructions. The messages themselves are
//! built in [`reply`](super::reply).

use std::sync::OnceLock;

/// The revision without a handshake (per-request `_meta`).
pub const MODERN_VERSION: &str = "2026-07-28";

/// Handshake-era revisions the wrapper serves, newest first.
pub const LEGACY_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The legacy revision answered when a client asks for one the wrapper
/// does not know.
pub const DEFAULT_LEGACY_VERSION: &str = "2025-11-25";

/// Name the wrapper reports to clients (the original wrapper's name, so
/// configurations and logs keep matching).
pub const SERVER_NAME: &str = "iai-mcp";

/// How long modern clients may cache `tools/list` and `server/discover`:
/// the list changes only when the iai-mcp release installed beside the
/// wrapper changes under it (a client subscribed to `toolsListChanged`
/// hears of it at once); one that is not re-fetches within a minute.
pub const LIST_TTL_MS: u64 = 60_000;

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

/// What this server is, in one line: its own name and release
/// (`serverInfo.description`, `--version`; `serverInfo`'s name and version
/// are iai-mcp's, the installed release's).
pub fn description() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| {
        format!(
            "iai-mcp-wrapper {SERVER_VERSION}, the MCP server of iai-mcp, serving the tools of the release installed beside it"
        )
    })
}
