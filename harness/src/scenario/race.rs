//! The V3-05 disconnect race, as described by the seed regression test.
//!
//! The fake daemon drops the wrapper's connection while its listener stays
//! bound; the wrapper, started with `IAI_MCP_RECONNECT_TEST_DELAY_MS`, waits
//! that long before reconnecting, and a tool call made `offset_ms` after the
//! drop lands inside that window. The pre-fix wrapper fails it at once with
//! `daemon_unreachable: bridge not connected`; the fixed one waits for the
//! reconnect and answers it.
//!
//! A run: `initialize` and a baseline `tools/call topology` that must
//! succeed (else a [`HarnessError::Scenario`]: nothing is measured); `DROP`;
//! the racing call `offset_ms` later, timed and classified; then the call
//! repeated every 50 ms until one succeeds (within `delay_ms` +
//! `recovery_timeout`), and `STATS conns` read no earlier than `delay_ms` +
//! `settle` after the drop, once every reconnect the wrapper scheduled has
//! happened.

mod config;
mod report;
mod steps;

use std::fmt;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use devkit::format::serialize_opt_ms;
use serde::Serialize;

use super::declaration::{RaceTiming, Scenario, Scoring};
use super::setup::Setup;
use crate::error::HarnessError;
use crate::wrapper::{BridgeMode, WrapperCommand};

pub use config::{EOF_EXIT_BOUND, PROTOCOL_VERSION, RaceConfig, TOOL};
pub use report::{RaceOutcome, RaceReport, SchemaCheck, SecondDrop, classify};
pub use steps::{POLL, run_race_until_stopped};

/// The V3-05 race.
#[derive(Debug, Clone, Copy)]
pub struct Race;

impl Scenario for Race {
    const NAME: &'static str = "race";
    const ABOUT: &'static str = "The V3-05 disconnect race: drop the wrapper's daemon connection, then call a tool while the wrapper waits to reconnect. Without --mode or --wrapper-cmd, both modes: prefix must fail with daemon_unreachable every time, fixed must answer every time holding one connection";
    /// The race has a command of its own: runs per mode, both modes side by
    /// side, the scorecard of both (`harness race`).
    const COMMAND: bool = false;
    type Config = RaceConfig;
    type Args = RaceConfig;
    type Report = RaceReport;

    fn setup(cfg: &mut RaceConfig) -> &mut Setup {
        &mut cfg.setup
    }

    fn run(cmd: &WrapperCommand, cfg: &RaceConfig) -> Result<RaceReport, HarnessError> {
        run_race(cmd, cfg)
    }

    /// `race_runs` runs, each with a second drop.
    fn scored(scoring: &Scoring) -> Vec<RaceConfig> {
        let defaults = RaceConfig::default();
        let timing = scoring.race_timing.unwrap_or(RaceTiming {
            delay_ms: defaults.delay_ms,
            offset_ms: defaults.offset_ms,
        });
        let cfg = RaceConfig {
            delay_ms: timing.delay_ms,
            offset_ms: timing.offset_ms,
            recovery_timeout: scoring.recovery_timeout,
            second_drop: true,
            ..defaults
        };
        vec![cfg; scoring.race_runs as usize]
    }
}

/// Runs the race once against the wrapper started by `cmd`.
///
/// The steps live in [`run_race_until_stopped`], which a sweep can
/// interrupt; here no one ever raises the stop flag.
pub fn run_race(cmd: &WrapperCommand, cfg: &RaceConfig) -> Result<RaceReport, HarnessError> {
    let never = AtomicBool::new(false);
    run_race_until_stopped(cmd, cfg, &never)?
        .ok_or_else(|| HarnessError::Scenario("race run abandoned".to_owned()))
}

/// The range of `conns_after` values over several runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct ConnsRange {
    /// The smallest count seen.
    pub min: Option<u32>,
    /// The largest count seen.
    pub max: Option<u32>,
    /// Runs that did not recover, so have no count.
    pub unknown: usize,
}

impl ConnsRange {
    /// Whether every run recovered holding exactly `n` connections (and
    /// there was at least one run).
    pub fn all_exactly(&self, n: u32) -> bool {
        self.unknown == 0 && self.min == Some(n) && self.max == Some(n)
    }
}

impl fmt::Display for ConnsRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.min, self.max) {
            (Some(min), Some(max)) if min == max => write!(f, "{min}")?,
            (Some(min), Some(max)) => write!(f, "{min}-{max}")?,
            _ => f.write_str("n/a")?,
        }
        if self.unknown > 0 && self.min.is_some() {
            write!(f, " ({} without recovery)", self.unknown)?;
        }
        Ok(())
    }
}

/// Counts of race runs, by how their racing call ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// Racing calls that succeeded.
    pub ok: usize,
    /// Racing calls that failed with `daemon_unreachable`.
    pub daemon_unreachable: usize,
    /// Of those, calls written to the dying connection (`socket closed`).
    pub socket_closed: usize,
    /// Racing calls that failed otherwise.
    pub other_error: usize,
    /// Racing calls without an answer in time.
    pub timeout: usize,
    /// Runs the harness could not carry out.
    pub errors: usize,
}

impl Tally {
    /// Counts one run: its report, or `None` for a run the harness could
    /// not carry out.
    pub fn add(&mut self, report: Option<&RaceReport>) {
        let Some(report) = report else {
            self.errors += 1;
            return;
        };
        match report.outcome {
            RaceOutcome::Ok => self.ok += 1,
            RaceOutcome::DaemonUnreachable => {
                self.daemon_unreachable += 1;
                let response = report.racing_response.as_ref();
                let closed = response.is_some_and(|r| r.to_string().contains("socket closed"));
                self.socket_closed += usize::from(closed);
            }
            RaceOutcome::OtherError(_) => self.other_error += 1,
            RaceOutcome::Timeout => self.timeout += 1,
        }
    }

    /// All runs counted.
    pub fn total(&self) -> usize {
        self.ok + self.failures()
    }

    /// Runs whose racing call did not succeed, harness errors included.
    pub fn failures(&self) -> usize {
        self.failure_kinds().iter().map(|f| f.runs).sum()
    }

    /// The failures by kind, as progress lines and tooltips name them.
    pub fn failure_kinds(&self) -> [FailureCount; 4] {
        let count = |kind, runs| FailureCount { kind, runs };
        [
            count("daemon_unreachable", self.daemon_unreachable),
            count("other", self.other_error),
            count("timeout", self.timeout),
            count("errors", self.errors),
        ]
    }
}

/// How many race runs failed one way ([`Tally::failure_kinds`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailureCount {
    /// The way, as progress lines and tooltips name it.
    pub kind: &'static str,
    /// How many runs.
    pub runs: usize,
}

/// Counts and figures over several race runs.
#[derive(Debug, Clone, Serialize)]
pub struct RaceSummary {
    /// The bridge mode of the runs.
    pub mode: Option<BridgeMode>,
    /// Number of runs, harness errors included.
    pub runs: usize,
    /// The runs by outcome.
    #[serde(flatten)]
    pub tally: Tally,
    /// Median racing-call latency over the measured runs.
    #[serde(
        rename = "median_racing_latency_ms",
        serialize_with = "serialize_opt_ms"
    )]
    pub median_racing_latency: Option<Duration>,
    /// Daemon connections held after recovery, over the measured runs.
    pub conns_after: ConnsRange,
    /// Runs that saw at least one stdout defect.
    pub runs_with_defects: usize,
}

impl RaceSummary {
    /// Summarizes runs made in `mode`: each one's report, or `None` for a
    /// run the harness could not carry out.
    pub fn from_runs<'a>(
        mode: Option<BridgeMode>,
        runs: impl IntoIterator<Item = Option<&'a RaceReport>>,
    ) -> Self {
        let mut tally = Tally::default();
        let mut reports = Vec::new();
        for run in runs {
            tally.add(run);
            reports.extend(run);
        }
        let mut latencies: Vec<Duration> = reports.iter().map(|r| r.racing_latency).collect();
        latencies.sort_unstable();
        let median_racing_latency = match latencies.len() {
            0 => None,
            n if n % 2 == 1 => Some(latencies[n / 2]),
            n => Some((latencies[n / 2 - 1] + latencies[n / 2]) / 2),
        };
        let conns: Vec<u32> = reports.iter().filter_map(|r| r.conns_after).collect();
        Self {
            mode,
            runs: tally.total(),
            tally,
            median_racing_latency,
            conns_after: ConnsRange {
                min: conns.iter().copied().min(),
                max: conns.iter().copied().max(),
                unknown: reports.len() - conns.len(),
            },
            runs_with_defects: reports.iter().filter(|r| !r.defects.is_empty()).count(),
        }
    }

    /// Failures other than `daemon_unreachable` (other errors and timeouts).
    pub fn other_failures(&self) -> usize {
        self.tally.other_error + self.tally.timeout
    }

    /// Whether every run reproduced the V3-05 bug.
    pub fn always_reproduced_bug(&self) -> bool {
        self.runs > 0 && self.tally.daemon_unreachable == self.runs
    }

    /// Whether every racing call succeeded and every run recovered holding
    /// exactly one daemon connection: the fixed behaviour.
    pub fn always_fixed(&self) -> bool {
        self.runs > 0 && self.tally.ok == self.runs && self.conns_after.all_exactly(1)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// A run's report with `outcome` after `latency_ms`, holding `conns`.
    pub(crate) fn report(outcome: RaceOutcome, latency_ms: u64, conns: Option<u32>) -> RaceReport {
        RaceReport {
            mode: None,
            endpoint: "/tmp/d.sock".into(),
            outcome,
            racing_latency: Duration::from_millis(latency_ms),
            racing_response: None,
            recovery_calls: conns.map(|_| 1),
            recovered_after: None,
            conns_after: conns,
            second_drop: None,
            exit_after_eof: None,
            output_schema: None,
            defects: Vec::new(),
            wrapper_stderr_tail: None,
        }
    }

    #[test]
    fn classifies_responses() {
        let ok = json!({"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"{}"}]}});
        assert_eq!(classify(&ok), RaceOutcome::Ok);
        let unreachable = json!({"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text",
            "text":"error: daemon_unreachable: bridge not connected (code -32002)"}],"isError":true}});
        assert_eq!(classify(&unreachable), RaceOutcome::DaemonUnreachable);
        let rpc_unreachable = json!({"jsonrpc":"2.0","id":3,"error":{"code":-32002,"message":"daemon_unreachable: x"}});
        assert_eq!(classify(&rpc_unreachable), RaceOutcome::DaemonUnreachable);
        let is_error = json!({"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"error: boom"}],"isError":true}});
        assert_eq!(
            classify(&is_error),
            RaceOutcome::OtherError("isError: error: boom".into())
        );
        let rpc_error = json!({"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"nope"}});
        assert_eq!(classify(&rpc_error).label(), "other_error");
        assert_eq!(classify(&json!({"id":3})).label(), "other_error");
    }

    #[test]
    fn summarizes_runs() {
        let reports = [
            report(RaceOutcome::Ok, 1000, Some(1)),
            report(RaceOutcome::Ok, 1010, Some(1)),
            report(RaceOutcome::Ok, 1004, Some(1)),
        ];
        let summary = RaceSummary::from_runs(Some(BridgeMode::Fixed), reports.iter().map(Some));
        assert!(summary.always_fixed() && !summary.always_reproduced_bug());
        let median = summary.median_racing_latency;
        assert_eq!(median, Some(Duration::from_millis(1004)));
        assert_eq!(summary.conns_after.to_string(), "1");

        let reports = [
            report(RaceOutcome::DaemonUnreachable, 2, Some(2)),
            report(RaceOutcome::DaemonUnreachable, 4, Some(1)),
            report(RaceOutcome::Timeout, 20_000, None),
            report(RaceOutcome::OtherError("x".into()), 6, Some(1)),
        ];
        let summary = RaceSummary::from_runs(Some(BridgeMode::Prefix), reports.iter().map(Some));
        let failures = (summary.tally.daemon_unreachable, summary.other_failures());
        assert_eq!((failures, summary.tally.ok), ((2, 2), 0));
        let median = summary.median_racing_latency;
        assert_eq!(median, Some(Duration::from_millis(5)));
        assert_eq!(summary.conns_after.to_string(), "1-2 (1 without recovery)");
        assert!(!summary.always_fixed() && !summary.always_reproduced_bug());

        let empty = RaceSummary::from_runs(None, []);
        assert!(!empty.always_fixed() && !empty.always_reproduced_bug());
        assert_eq!(empty.conns_after.to_string(), "n/a");
    }

    #[test]
    fn a_call_written_to_the_dying_connection_is_told_apart_from_a_refusal() {
        let mut closed = report(RaceOutcome::DaemonUnreachable, 1, Some(1));
        closed.racing_response = Some(
            json!({"result": {"isError": true, "content": [{"type": "text",
            "text": "error: daemon_unreachable: socket closed (code -32002)"}]}}),
        );
        let refused = report(RaceOutcome::DaemonUnreachable, 1, Some(1));
        let tally = RaceSummary::from_runs(None, [Some(&closed), Some(&refused), None]).tally;
        assert_eq!((tally.daemon_unreachable, tally.socket_closed), (2, 1));
        assert_eq!((tally.errors, tally.total(), tally.failures()), (1, 3, 3));
    }

    #[test]
    fn report_serializes_outcome_and_milliseconds() {
        let json =
            serde_json::to_value(report(RaceOutcome::OtherError("x".into()), 7, None)).unwrap();
        assert_eq!(
            json["outcome"],
            json!({"kind": "other_error", "detail": "x"})
        );
        assert_eq!(json["racing_latency_ms"], json!(7.0));
        assert_eq!(json["conns_after"], Value::Null);
        let json = serde_json::to_value(report(RaceOutcome::Ok, 7, Some(1))).unwrap();
        assert_eq!(json["outcome"], json!({"kind": "ok"}));
    }
}
