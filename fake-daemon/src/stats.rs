//! Counters behind the `STATS` command.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use fake_daemon_control::StatsSnapshot;

use crate::sync::lock;

/// How many accept times `ACCEPTS` can report: the most recent ones, so a
/// long soak keeps bounded memory.
pub const ACCEPT_TIMES_KEPT: usize = 10_000;

/// Running totals, updated by the connection tasks.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    accepted: AtomicU64,
    refused: AtomicU64,
    requests: AtomicU64,
    controls: AtomicU64,
    /// Wall-clock times of the most recent accepts, microseconds since the
    /// Unix epoch, oldest first: the one clock a harness shares with every
    /// process it starts, for accept rates next to the clients' own logs.
    accept_times: Mutex<VecDeque<u64>>,
}

impl Counters {
    /// Counts one accepted connection.
    pub(crate) fn connection_accepted(&self) {
        self.accepted.fetch_add(1, Ordering::Relaxed);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
        let mut times = lock(&self.accept_times);
        if times.len() == ACCEPT_TIMES_KEPT {
            times.pop_front();
        }
        times.push_back(now);
    }

    /// The `ACCEPTS` reply: `{"accepted_at_us":[..]}`, the most recent
    /// accept times, oldest first.
    pub(crate) fn accepts_line(&self) -> String {
        let times = lock(&self.accept_times);
        serde_json::json!({ "accepted_at_us": *times }).to_string()
    }

    /// Counts one TCP connection closed for a missing or wrong token.
    pub(crate) fn connection_refused(&self) {
        self.refused.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one JSON-RPC request answered with a result.
    pub(crate) fn request_answered(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one control message received.
    pub(crate) fn control_received(&self) {
        self.controls.fetch_add(1, Ordering::Relaxed);
    }

    /// The counters together with the current number of live connections
    /// and of TCP connections still to send their token.
    pub(crate) fn snapshot(&self, conns: usize, pending: usize) -> StatsSnapshot {
        StatsSnapshot {
            conns: u32::try_from(conns).unwrap_or(u32::MAX),
            pending: u32::try_from(pending).unwrap_or(u32::MAX),
            accepted: self.accepted.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            requests: self.requests.load(Ordering::Relaxed),
            controls: self.controls.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use fake_daemon_control::reports::AcceptTimes;

    use super::*;

    #[test]
    fn snapshots_display_as_the_stats_reply() {
        let counters = Counters::default();
        counters.connection_accepted();
        counters.connection_accepted();
        counters.request_answered();
        counters.control_received();
        assert_eq!(
            counters.snapshot(1, 0).to_string(),
            "STATS conns=1 accepted=2 requests=1 controls=1 refused=0 pending=0"
        );
    }

    #[test]
    fn keeps_the_most_recent_accept_times_oldest_first() {
        let counters = Counters::default();
        for _ in 0..ACCEPT_TIMES_KEPT + 3 {
            counters.connection_accepted();
        }
        let reply: AcceptTimes = serde_json::from_str(&counters.accepts_line()).unwrap();
        let times = reply.accepted_at_us;
        assert_eq!(times.len(), ACCEPT_TIMES_KEPT);
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
    }
}
