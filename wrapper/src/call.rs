//! One tool call, from its MCP arguments to its outcome: the daemon first,
//! the CLI's degraded answer when the bridge allows it, and a message that
//! says what may have happened when neither answers.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::bridge::{Access, BridgeError, BridgeHandle, DaemonResult, Failure, Request};
use crate::degraded::{Degraded, DegradedError};
use crate::tools::Tool;

/// JSON-RPC "method not found": what an older daemon answers for a tool
/// it does not have.
const METHOD_NOT_FOUND: i64 = -32601;

/// What a tool call needs besides its arguments.
#[derive(Debug, Clone)]
pub struct Caller {
    bridge: BridgeHandle,
    degraded: Arc<Degraded>,
}

impl Caller {
    /// Calls through `bridge`, falling back to the CLI as `degraded` says.
    pub fn new(bridge: BridgeHandle, degraded: Degraded) -> Self {
        Caller {
            bridge,
            degraded: Arc::new(degraded),
        }
    }

    /// Fail every call still waiting on the daemon and close the
    /// connection (the wrapper is exiting).
    pub async fn shutdown(&self) {
        self.bridge.shutdown().await;
    }

    /// Run `tool` with `arguments`; the result is the daemon's (or the
    /// CLI's) JSON, the error is the text the client sees after `error: `.
    pub async fn call(
        &self,
        tool: &Tool,
        arguments: Map<String, Value>,
    ) -> Result<DaemonResult, String> {
        let fallback = self.degraded.serves(&tool.name);
        // The CLI needs the arguments after the daemon has had them.
        let kept = fallback.then(|| arguments.clone());
        let (method, params) = tool.daemon_request(arguments).map_err(|e| e.to_string())?;
        let access = tool.access();
        let failure = match self
            .bridge
            .call(Request {
                method,
                params,
                access,
                fallback,
            })
            .await
        {
            Ok(result) => return Ok(result),
            Err(failure) => failure,
        };
        match kept {
            // Boxed: the CLI's future is large and rarely needed, and
            // every call's task would otherwise carry (and copy) its room.
            Some(arguments) if failure.fallback => {
                Box::pin(self.degraded.answer(&tool.name, &arguments))
                    .await
                    .map(|answer| DaemonResult::from_value(&answer))
                    .map_err(|e| degraded_failure(&failure, access, &e))
            }
            _ => Err(daemon_failure(&failure, access)),
        }
    }
}

/// The message for a call the daemon did not answer and the CLI was not
/// asked to: for a write that reached the daemon, say that it may have
/// been stored (it is never re-run, so it is never stored twice).
fn daemon_failure(failure: &Failure, access: Access) -> String {
    if let BridgeError::Daemon {
        code: METHOD_NOT_FOUND,
        ..
    } = failure.error
    {
        return format!(
            "{}; this daemon does not know the tool (it needs iai-mcp 3.3 or newer)",
            failure.error
        );
    }
    let unknown = access == Access::Write
        && failure.sent
        && matches!(
            failure.error,
            BridgeError::SocketClosed | BridgeError::Timeout(_) | BridgeError::Shutdown
        );
    if unknown {
        format!(
            "{}; the daemon may have stored it (it was not retried, so it cannot be stored twice)",
            failure.error
        )
    } else {
        failure.error.to_string()
    }
}

fn degraded_failure(failure: &Failure, access: Access, error: &DegradedError) -> String {
    format!(
        "{}; degraded mode: {error}",
        daemon_failure(failure, access)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn failure(error: BridgeError, sent: bool) -> Failure {
        Failure {
            error,
            sent,
            fallback: false,
        }
    }

    #[test]
    fn a_write_lost_after_sending_may_have_been_stored() {
        let text = daemon_failure(&failure(BridgeError::SocketClosed, true), Access::Write);
        assert!(
            text.starts_with("daemon_unreachable: socket closed"),
            "{text}"
        );
        assert!(text.contains("may have stored it"), "{text}");
        let text = daemon_failure(
            &failure(BridgeError::Timeout(Duration::from_secs(1)), true),
            Access::Write,
        );
        assert!(text.contains("may have stored it"), "{text}");
    }

    #[test]
    fn reads_and_unsent_writes_say_only_what_failed() {
        let text = daemon_failure(&failure(BridgeError::SocketClosed, true), Access::Read);
        assert_eq!(text, "daemon_unreachable: socket closed (code -32002)");
        let text = daemon_failure(&failure(BridgeError::NotConnected, false), Access::Write);
        assert_eq!(
            text,
            "daemon_unreachable: bridge not connected (code -32002)"
        );
        let daemon = BridgeError::Daemon {
            code: -32602,
            message: "missing required param: 'text'".into(),
        };
        let text = daemon_failure(&failure(daemon, true), Access::Write);
        assert_eq!(text, "missing required param: 'text' (code -32602)");
    }

    #[test]
    fn a_tool_an_old_daemon_lacks_says_so() {
        let old = BridgeError::Daemon {
            code: -32601,
            message: "unknown method 'memory_search'".into(),
        };
        let text = daemon_failure(&failure(old, true), Access::Read);
        assert!(text.contains("needs iai-mcp 3.3 or newer"), "{text}");
    }

    #[test]
    fn a_failed_fallback_names_both_failures() {
        let text = degraded_failure(
            &failure(BridgeError::NotConnected, false),
            Access::Read,
            &DegradedError::Failed(vec!["`iai recall` failed".into()]),
        );
        assert!(text.starts_with("daemon_unreachable:"), "{text}");
        assert!(
            text.ends_with("degraded mode: `iai recall` failed"),
            "{text}"
        );
    }
}
