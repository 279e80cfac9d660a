//! How one `tools/call` ended, as the fault scenarios see it.
//!
//! The race scenario has its own, coarser classification
//! ([`race::classify`](super::race::classify)), kept as the seed test
//! defines it. The fault scenarios need the error text itself (does it name
//! the socket? is it `daemon_timeout` or `socket closed`?), so
//! [`CallOutcome`] keeps it.

use std::fmt;

use devkit::bins::error_chain;
use serde::Serialize;
use serde_json::Value;

use crate::client::ClientError;

/// The marker word of every "cannot reach the daemon" failure.
pub const DAEMON_UNREACHABLE: &str = "daemon_unreachable";

/// The failure of a call whose connection closed and which is not safe to
/// re-send.
pub const SOCKET_CLOSED: &str = "daemon_unreachable: socket closed";

/// The marker word of a call that got no answer within its deadline.
pub const DAEMON_TIMEOUT: &str = "daemon_timeout";

/// How one tool call ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum CallOutcome {
    /// A result without `isError`.
    Ok,
    /// A result with `isError: true`; the text of its first content block
    /// (or the whole result when it has none).
    ToolError(String),
    /// A JSON-RPC error response; its `error` object as JSON.
    RpcError(String),
    /// A response with neither `result` nor `error`; the response as JSON.
    Malformed(String),
    /// No response within the harness's own bound on the call.
    NoResponse,
    /// The wrapper went away (closed stdout, broken stdin); what failed.
    WrapperGone(String),
}

impl CallOutcome {
    /// Classifies a `tools/call` response message.
    pub fn from_response(response: &Value) -> Self {
        if let Some(error) = response.get("error") {
            return Self::RpcError(error.to_string());
        }
        match response.get("result") {
            Some(result) if result.get("isError") == Some(&Value::Bool(true)) => {
                let text = result["content"][0]["text"]
                    .as_str()
                    .map_or_else(|| result.to_string(), str::to_owned);
                Self::ToolError(text)
            }
            Some(_) => Self::Ok,
            None => Self::Malformed(response.to_string()),
        }
    }

    /// Classifies what [`McpClient::call_tool`](crate::client::McpClient::call_tool)
    /// (or a wait for a response) returned.
    pub fn from_client(result: Result<Value, ClientError>) -> Self {
        match result {
            Ok(response) => Self::from_response(&response),
            Err(ClientError::Timeout { .. }) => Self::NoResponse,
            Err(e) => Self::WrapperGone(error_chain(&e)),
        }
    }

    /// A short, stable name: `ok`, `tool_error`, `rpc_error`, `malformed`,
    /// `no_response`, `wrapper_gone`.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::ToolError(_) => "tool_error",
            Self::RpcError(_) => "rpc_error",
            Self::Malformed(_) => "malformed",
            Self::NoResponse => "no_response",
            Self::WrapperGone(_) => "wrapper_gone",
        }
    }

    /// Whether the call succeeded.
    pub fn is_ok(&self) -> bool {
        *self == Self::Ok
    }

    /// The failure's text, if the wrapper answered with a failure.
    pub fn error_text(&self) -> Option<&str> {
        match self {
            Self::ToolError(text) | Self::RpcError(text) | Self::Malformed(text) => Some(text),
            Self::Ok | Self::NoResponse | Self::WrapperGone(_) => None,
        }
    }

    /// Whether the wrapper answered with a failure whose text contains
    /// `needle`.
    pub fn error_mentions(&self, needle: &str) -> bool {
        self.error_text().is_some_and(|text| text.contains(needle))
    }

    /// A `daemon_unreachable` failure (of any kind).
    pub fn is_daemon_unreachable(&self) -> bool {
        self.error_mentions(DAEMON_UNREACHABLE)
    }

    /// The `daemon_unreachable: socket closed` failure of a call lost with
    /// its connection.
    pub fn is_socket_closed(&self) -> bool {
        self.error_mentions(SOCKET_CLOSED)
    }

    /// A `daemon_timeout` failure.
    pub fn is_daemon_timeout(&self) -> bool {
        self.error_mentions(DAEMON_TIMEOUT)
    }
}

impl fmt::Display for CallOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ok | Self::NoResponse => f.write_str(self.label()),
            Self::ToolError(text)
            | Self::RpcError(text)
            | Self::Malformed(text)
            | Self::WrapperGone(text) => write!(f, "{} ({text})", self.label()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    fn tool_error(text: &str) -> Value {
        json!({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":text}],"isError":true}})
    }

    #[test]
    fn classifies_responses_and_keeps_the_text() {
        let ok = json!({"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{}}});
        assert_eq!(CallOutcome::from_response(&ok), CallOutcome::Ok);

        let closed = CallOutcome::from_response(&tool_error(
            "error: daemon_unreachable: socket closed (code -32002)",
        ));
        assert!(closed.is_daemon_unreachable() && closed.is_socket_closed());
        assert!(!closed.is_daemon_timeout() && !closed.is_ok());

        let wait = CallOutcome::from_response(&tool_error(
            "error: daemon_unreachable: no connection to the iai-mcp daemon at /tmp/x/d.sock within 0.5 s",
        ));
        assert!(wait.is_daemon_unreachable() && !wait.is_socket_closed());
        assert!(wait.error_mentions("/tmp/x/d.sock"));

        let timeout = CallOutcome::from_response(&tool_error(
            "error: daemon_timeout: no response from the daemon within 0.5 s",
        ));
        assert!(timeout.is_daemon_timeout() && !timeout.is_daemon_unreachable());

        let rpc = CallOutcome::from_response(
            &json!({"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"daemon_unreachable: x"}}),
        );
        assert_eq!(rpc.label(), "rpc_error");
        assert!(rpc.is_daemon_unreachable());

        let odd =
            CallOutcome::from_response(&json!({"jsonrpc":"2.0","id":1,"result":{"isError":true}}));
        assert_eq!(odd, CallOutcome::ToolError(r#"{"isError":true}"#.into()));
        assert_eq!(
            CallOutcome::from_response(&json!({"id": 1})).label(),
            "malformed"
        );
    }

    #[test]
    fn client_errors_become_no_response_or_wrapper_gone() {
        let timeout = ClientError::Timeout {
            waiting_for: "x".into(),
            after: Duration::from_millis(1),
        };
        assert_eq!(
            CallOutcome::from_client(Err(timeout)),
            CallOutcome::NoResponse
        );
        let gone = CallOutcome::from_client(Err(ClientError::StdinClosed));
        assert_eq!(gone.label(), "wrapper_gone");
        assert_eq!(gone.error_text(), None);
    }

    #[test]
    fn serializes_with_kind_and_detail() {
        assert_eq!(
            serde_json::to_value(CallOutcome::ToolError("e".into())).unwrap(),
            json!({"kind": "tool_error", "detail": "e"})
        );
        assert_eq!(
            serde_json::to_value(CallOutcome::Ok).unwrap(),
            json!({"kind": "ok"})
        );
    }
}
