//! What the wrapper does around the MCP traffic for the daemon's lifecycle
//! machinery: the heartbeat file, waking a stopped daemon, the warm-up
//! messages after the first connection, the daemon's release after each
//! connection and the installed release followed across an upgrade, and
//! the doctor probe and auto-heal.

pub mod daemon_process;
pub(crate) mod daemon_state;
pub(crate) mod doctor;
pub(crate) mod heartbeat;
pub(crate) mod release;
pub(crate) mod upgrade;
pub(crate) mod verdict;
pub mod wake;
pub(crate) mod warmup;

/// Current time as ISO-8601 UTC with a trailing `Z`, the format every
/// lifecycle file and control message uses.
pub fn now_iso8601() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}
