//! Why a forwarded call did not produce a daemon result.

use std::time::Duration;

use thiserror::Error;

/// JSON-RPC error code the wrapper uses for "cannot reach the daemon".
pub const DAEMON_UNREACHABLE_CODE: i64 = -32002;

/// The failure of one call through the bridge. The `Display` text is what
/// the MCP client sees after `error: `, so every variant that means "the
/// daemon could not be reached" starts with `daemon_unreachable:`, the word
/// clients and tests look for.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BridgeError {
    /// The connection carrying the call closed before its response arrived,
    /// and the call was not safe to re-send.
    #[error("daemon_unreachable: socket closed (code -32002)")]
    SocketClosed,
    /// The daemon closed the connection carrying the call at once, before
    /// sending anything (on TCP: it refused the token); the call was a
    /// write, so it was not sent again.
    #[error(
        "daemon_unreachable: the daemon closed the connection as soon as it was made ({reason}) (code -32002)"
    )]
    Refused {
        /// What such a close means (`token refused, <token file>`).
        reason: String,
    },
    /// Pre-fix mode only: the call arrived while the bridge was
    /// disconnected, and that mode does not wait for the reconnect.
    #[error("daemon_unreachable: bridge not connected (code -32002)")]
    NotConnected,
    /// No connection could be made within the connect wait.
    #[error(
        "daemon_unreachable: no connection to the iai-mcp daemon at {endpoint} within {:.1} s{} (code -32002); start the daemon, or point IAI_DAEMON_SOCKET_PATH (or IAI_DAEMON_TCP_PORT) at where it listens",
        waited.as_secs_f64(),
        last_error.as_deref().map(|e| format!(" (last error: {e})")).unwrap_or_default()
    )]
    ConnectWait {
        /// Where the daemon was dialled (socket path or TCP address).
        endpoint: String,
        /// How long the call waited.
        waited: Duration,
        /// The most recent connect error, if any.
        last_error: Option<String>,
    },
    /// The wrapper is exiting and the call could not finish in time.
    #[error("daemon_unreachable: wrapper shutting down (code -32002)")]
    Shutdown,
    /// The daemon accepted the call but did not answer within the call
    /// timeout.
    #[error("daemon_timeout: no response from the daemon within {:.1} s", .0.as_secs_f64())]
    Timeout(Duration),
    /// The daemon kept writing lines that are not JSON while this call was
    /// the oldest one waiting.
    #[error("parse_error: the daemon sent {0} consecutive non-JSON lines")]
    ParseStreak(u32),
    /// The daemon's response was larger than the wrapper accepts.
    #[error("response_too_large: the daemon's response exceeded {0} bytes")]
    ResponseTooLarge(usize),
    /// The daemon answered with a JSON-RPC error.
    #[error("{message} (code {code})")]
    Daemon {
        /// The daemon's error code.
        code: i64,
        /// The daemon's error message.
        message: String,
    },
}

impl BridgeError {
    /// Whether this failure means the daemon could not be reached.
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self,
            BridgeError::SocketClosed
                | BridgeError::Refused { .. }
                | BridgeError::NotConnected
                | BridgeError::ConnectWait { .. }
                | BridgeError::Shutdown
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreachable_messages_carry_the_marker_word_and_code() {
        let errors = [
            BridgeError::SocketClosed,
            BridgeError::Refused {
                reason: "token refused, /h/.iai-mcp/.daemon.token".into(),
            },
            BridgeError::NotConnected,
            BridgeError::Shutdown,
            BridgeError::ConnectWait {
                endpoint: "/tmp/d.sock".into(),
                waited: Duration::from_secs(10),
                last_error: Some("connection refused".into()),
            },
        ];
        for e in errors {
            let text = e.to_string();
            assert!(e.is_unreachable());
            assert!(text.starts_with("daemon_unreachable: "), "{text}");
            assert!(text.contains("(code -32002)"), "{text}");
        }
        let wait = BridgeError::ConnectWait {
            endpoint: "/tmp/d.sock".into(),
            waited: Duration::from_secs(10),
            last_error: None,
        }
        .to_string();
        assert!(wait.contains("/tmp/d.sock") && wait.contains("start the daemon"));
        assert_eq!(
            BridgeError::SocketClosed.to_string(),
            "daemon_unreachable: socket closed (code -32002)"
        );
    }

    #[test]
    fn other_failures_are_not_unreachable() {
        assert!(!BridgeError::Timeout(Duration::from_secs(1)).is_unreachable());
        assert!(!BridgeError::ParseStreak(4).is_unreachable());
        assert!(
            BridgeError::ParseStreak(4)
                .to_string()
                .starts_with("parse_error:")
        );
    }
}
