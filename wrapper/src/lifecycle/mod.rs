//! What the wrapper does around the MCP traffic for the daemon's lifecycle
//! machinery: the heartbeat file, waking a stopped daemon, the warm-up
//! messages after the first connection, the daemon's release after each
//! connection and the installed release followed across an upgrade, and
//! the doctor probe and auto-heal.

pub mod daemon_process;
pub mod daemon_state;
pub mod doctor;
pub mod heartbeat;
pub mod release;
pub mod upgrade;
pub mod verdict;
pub mod wake;
pub mod warmup;

/// Current time as ISO-8601 UTC with a trailing `Z`, the format every
/// lifecycle file and control message uses.
pub fn now_iso8601() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}
