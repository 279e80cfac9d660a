//! The daemon's counters as `STATS` reports them, written by the daemon and
//! read by the harness through the same type.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

/// The daemon's counters at one moment; displays as the `STATS` reply
/// `STATS conns=<n> accepted=<n> requests=<n> controls=<n> refused=<n>
/// pending=<n>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StatsSnapshot {
    /// Accepted connections that are still open.
    pub conns: u32,
    /// TCP connections accepted and still to send their token.
    pub pending: u32,
    /// Connections accepted since start (on TCP: that sent the token).
    pub accepted: u64,
    /// TCP connections closed for a missing or wrong token.
    pub refused: u64,
    /// JSON-RPC requests answered with a result (counted when the answer is
    /// queued for writing, so held or delayed requests count once released;
    /// error replies do not count).
    pub requests: u64,
    /// Control messages (no `jsonrpc` member, a string `type`) received.
    pub controls: u64,
}

/// The `STATS` reply's form, for documentation.
pub const STATS_FORM: &str =
    "STATS conns=<n> accepted=<n> requests=<n> controls=<n> refused=<n> pending=<n>";

/// A line that is not a `STATS` reply.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum StatsError {
    /// The line does not start with `STATS`.
    #[error("not a STATS reply")]
    NotStats,
    /// A field is not `name=<whole number>`.
    #[error("'{0}' is not a counter")]
    BadField(String),
    /// A counter the reply must carry is missing.
    #[error("no {0} counter")]
    Missing(&'static str),
}

impl fmt::Display for StatsSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "STATS conns={} accepted={} requests={} controls={} refused={} pending={}",
            self.conns, self.accepted, self.requests, self.controls, self.refused, self.pending
        )
    }
}

impl FromStr for StatsSnapshot {
    type Err = StatsError;

    /// Reads the reply in any order of its fields; every counter must be
    /// there, and no other field.
    fn from_str(line: &str) -> Result<Self, Self::Err> {
        let fields = line
            .trim_end()
            .strip_prefix("STATS")
            .filter(|rest| rest.is_empty() || rest.starts_with(' '))
            .ok_or(StatsError::NotStats)?;
        let mut found: [Option<u64>; 6] = [None; 6];
        for field in fields.split_whitespace() {
            let bad = || StatsError::BadField(field.to_owned());
            let (name, value) = field.split_once('=').ok_or_else(bad)?;
            let slot = COUNTERS.iter().position(|c| *c == name).ok_or_else(bad)?;
            found[slot] = Some(value.parse().map_err(|_| bad())?);
        }
        let get = |slot: usize| found[slot].ok_or(StatsError::Missing(COUNTERS[slot]));
        let narrow = |slot: usize| {
            get(slot).and_then(|n| {
                u32::try_from(n)
                    .map_err(|_| StatsError::BadField(format!("{}={n}", COUNTERS[slot])))
            })
        };
        Ok(StatsSnapshot {
            conns: narrow(0)?,
            accepted: get(1)?,
            requests: get(2)?,
            controls: get(3)?,
            refused: get(4)?,
            pending: narrow(5)?,
        })
    }
}

/// The counters' names, in the order of the reply.
const COUNTERS: [&str; 6] = [
    "conns", "accepted", "requests", "controls", "refused", "pending",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_it_writes() {
        let stats = StatsSnapshot {
            conns: 1,
            pending: 2,
            accepted: 3,
            refused: 4,
            requests: 5,
            controls: 6,
        };
        let line = stats.to_string();
        assert_eq!(
            line,
            "STATS conns=1 accepted=3 requests=5 controls=6 refused=4 pending=2"
        );
        assert_eq!(line.parse(), Ok(stats));
        assert_eq!(
            "STATS pending=0 refused=0 controls=0 requests=0 accepted=0 conns=0\r\n".parse(),
            Ok(StatsSnapshot::default())
        );
    }

    #[test]
    fn refuses_anything_else() {
        let error = |line: &str| line.parse::<StatsSnapshot>().unwrap_err();
        assert_eq!(error("ERR unknown command: STATS"), StatsError::NotStats);
        assert_eq!(error("STATSX conns=1"), StatsError::NotStats);
        assert_eq!(
            error("STATS conns=1 accepted=3 requests=7 controls=1 refused=0"),
            StatsError::Missing("pending")
        );
        assert_eq!(
            error("STATS conns=x accepted=3"),
            StatsError::BadField("conns=x".to_owned())
        );
        assert_eq!(
            error("STATS extra=9"),
            StatsError::BadField("extra=9".to_owned())
        );
    }
}
