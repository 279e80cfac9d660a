//! What the scenarios read in the wrapper's log: its stderr at
//! `IAI_MCP_LOG=info`, as the wrapper prints it today. Down-up counts the
//! lines of failed connect attempts; the herd times them.
//!
//! These functions read the log's text, so they live here, apart from the
//! scenarios that use them: a reader of structured log events can take
//! their place without touching the scenarios.

use std::time::SystemTime;

/// The wrapper's stderr line for one failed connect attempt
/// (`IAI_MCP_LOG=info`).
pub const CONNECT_FAILED_LOG: &str = "daemon connect failed";

/// How many failed connect attempts the wrapper's `stderr` logs.
pub(crate) fn connect_failures(stderr: &str) -> u64 {
    stderr.matches(CONNECT_FAILED_LOG).count() as u64
}

/// One failed connect attempt in a wrapper's log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dial {
    /// When it failed, by the wrapper's own clock.
    pub(crate) at: SystemTime,
    /// Whether it was the first attempt after the connection was lost
    /// (`failures=1`).
    pub(crate) first_after_loss: bool,
}

/// The failed connect attempts a wrapper logged, in its log's order.
pub(crate) fn dial_times(stderr: &str) -> impl Iterator<Item = Dial> + '_ {
    stderr
        .lines()
        .filter(|line| line.contains(CONNECT_FAILED_LOG))
        .filter_map(|line| {
            let stamp = line.split_whitespace().next()?;
            let at = humantime::parse_rfc3339_weak(stamp.trim_end_matches('Z')).ok()?;
            Some(Dial {
                at,
                first_after_loss: line.contains(" failures=1 "),
            })
        })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn dials_are_read_from_the_wrappers_log_with_their_own_timestamps() {
        let log = "2026-12-01T04:39:24.684048Z  INFO iai_mcp_wrapper::bridge::driver: daemon connect failed failures=1 error=x retry_in=Some(47ms)\n\
                   2026-12-01T04:39:24.684433Z  INFO iai_mcp_wrapper::lifecycle::wake: daemon unreachable\n\
                   2026-12-01T04:39:24.734965Z  INFO iai_mcp_wrapper::bridge::driver: daemon connect failed failures=2 error=x retry_in=Some(83ms)\n";
        let dials: Vec<Dial> = dial_times(log).collect();
        assert_eq!(dials.len(), 2);
        assert!(dials[0].first_after_loss && !dials[1].first_after_loss);
        let apart = dials[1].at.duration_since(dials[0].at).unwrap();
        assert_eq!(apart, Duration::from_micros(50_917));
        assert_eq!(connect_failures(log), 2);
    }
}
