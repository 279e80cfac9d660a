//! One tool call, from its MCP arguments to its outcome: the daemon first,
//! the CLI's degraded answer when the bridge allows it, and a message that
//! says what may have happened when neither answers.

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};
use thiserror::Error;

use crate::bridge::{Access, BridgeError, BridgeHandle, DaemonResult, Failure, Request};
use crate::degraded::{Degraded, DegradedError};
use crate::tools::{Tool, ToolError};

/// JSON-RPC "method not found": what an older daemon answers for a tool
/// it does not have.
const METHOD_NOT_FOUND: i64 = -32601;

/// Why a tool call has no result. The `Display` text is what the client
/// reads after `error: `.
#[derive(Debug, Error)]
pub enum CallError {
    /// The arguments cannot be made into a daemon request.
    #[error(transparent)]
    Tool(#[from] ToolError),
    /// The daemon did not answer, and the CLI was not asked to.
    #[error("{0}")]
    Daemon(DaemonFailure),
    /// The daemon did not answer, and neither did the CLI.
    #[error("{daemon}; degraded mode: {cli}")]
    Degraded {
        /// Why the daemon did not.
        daemon: DaemonFailure,
        /// Why the CLI did not.
        cli: DegradedError,
    },
}

/// A call the daemon did not answer, with what the bridge knows of it and
/// whether the tool writes, so that the message can say what may have
/// happened.
#[derive(Debug)]
pub struct DaemonFailure {
    /// The bridge's account.
    pub failure: Failure,
    /// Whether the tool reads or writes.
    pub access: Access,
}

impl fmt::Display for DaemonFailure {
    /// For a write that reached the daemon, says that it may have been
    /// stored (it is never re-run, so it is never stored twice); for a tool
    /// an older daemon lacks, which release it needs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let error = &self.failure.error;
        if let BridgeError::Daemon {
            code: METHOD_NOT_FOUND,
            ..
        } = error
        {
            return write!(
                f,
                "{error}; this daemon does not know the tool (it runs an older iai-mcp release than the one whose tools are served: restart it from the release installed)"
            );
        }
        let unknown = self.access == Access::Write
            && self.failure.sent
            && matches!(
                error,
                BridgeError::SocketClosed | BridgeError::Timeout(_) | BridgeError::Shutdown
            );
        if unknown {
            write!(
                f,
                "{error}; the daemon may have stored it (it was not retried, so it cannot be stored twice)"
            )
        } else {
            write!(f, "{error}")
        }
    }
}

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

    /// Run `tool` with `arguments`: the daemon's result, or the CLI's when
    /// the bridge allows it and the daemon cannot be reached.
    pub async fn call(
        &self,
        tool: &Tool,
        arguments: Map<String, Value>,
    ) -> Result<DaemonResult, CallError> {
        let fallback = self.degraded.serves(&tool.name);
        // The CLI needs the arguments after the daemon has had them.
        let kept = fallback.then(|| arguments.clone());
        let (method, params) = tool.daemon_request(arguments)?;
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
        let daemon = DaemonFailure { failure, access };
        match kept {
            // Boxed: the CLI's future is large and rarely needed, and
            // every call's task would otherwise carry (and copy) its room.
            Some(arguments) if daemon.failure.fallback => {
                match Box::pin(self.degraded.answer(&tool.name, &arguments)).await {
                    Ok(answer) => Ok(DaemonResult::from_value(&answer)),
                    Err(cli) => Err(CallError::Degraded { daemon, cli }),
                }
            }
            _ => Err(CallError::Daemon(daemon)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn daemon_failure(error: BridgeError, sent: bool, access: Access) -> String {
        DaemonFailure {
            failure: Failure {
                error,
                sent,
                fallback: false,
            },
            access,
        }
        .to_string()
    }

    #[test]
    fn a_write_lost_after_sending_may_have_been_stored() {
        let text = daemon_failure(BridgeError::SocketClosed, true, Access::Write);
        assert!(
            text.starts_with("daemon_unreachable: socket closed"),
            "{text}"
        );
        assert!(text.contains("may have stored it"), "{text}");
        let text = daemon_failure(
            BridgeError::Timeout(Duration::from_secs(1)),
            true,
            Access::Write,
        );
        assert!(text.contains("may have stored it"), "{text}");
    }

    #[test]
    fn reads_and_unsent_writes_say_only_what_failed() {
        let text = daemon_failure(BridgeError::SocketClosed, true, Access::Read);
        assert_eq!(text, "daemon_unreachable: socket closed (code -32002)");
        let text = daemon_failure(BridgeError::NotConnected, false, Access::Write);
        assert_eq!(
            text,
            "daemon_unreachable: bridge not connected (code -32002)"
        );
        let daemon = BridgeError::Daemon {
            code: -32602,
            message: "missing required param: 'text'".into(),
        };
        let text = daemon_failure(daemon, true, Access::Write);
        assert_eq!(text, "missing required param: 'text' (code -32602)");
    }

    #[test]
    fn a_tool_an_old_daemon_lacks_says_so() {
        let old = BridgeError::Daemon {
            code: -32601,
            message: "unknown method 'memory_search'".into(),
        };
        let text = daemon_failure(old, true, Access::Read);
        assert!(text.contains("an older iai-mcp release"), "{text}");
    }

    #[test]
    fn a_failed_fallback_names_both_failures() {
        let text = CallError::Degraded {
            daemon: DaemonFailure {
                failure: Failure::detached(BridgeError::NotConnected),
                access: Access::Read,
            },
            cli: DegradedError::Failed(vec!["`iai recall` failed".into()]),
        }
        .to_string();
        assert!(text.starts_with("daemon_unreachable:"), "{text}");
        assert!(
            text.ends_with("degraded mode: `iai recall` failed"),
            "{text}"
        );
    }
}
