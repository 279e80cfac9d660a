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

mod steps;

use std::fmt;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use clap::Args;
use devkit::format::{format_ms, serialize_ms, serialize_opt_ms};
use serde::Serialize;
use serde_json::Value;

use super::declaration::{RaceTiming, Scenario, Scoring};
use super::outcome::CallOutcome;
use super::property::{Cause, Check, Checks, Judged, Prop};
use super::settings;
use super::setup::Setup;
use crate::error::HarnessError;
use crate::wrapper::{BridgeMode, WrapperCommand};

pub use steps::{EOF_EXIT_BOUND, POLL, run_race_until_stopped};

/// The protocol revision the seed test initializes with.
pub const PROTOCOL_VERSION: &str = "2025-03-26";

/// The tool every call of the scenario uses (read-only, no arguments).
pub const TOOL: &str = "topology";

/// Parameters of one race run: its settings (the `race` command's timing
/// flags) and its fixed bounds; `Default` is every value declared here.
#[derive(Debug, Clone, Args)]
pub struct RaceConfig {
    /// Reconnect delay given to the wrapper (IAI_MCP_RECONNECT_TEST_DELAY_MS):
    /// the width of the race window.
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    pub delay_ms: u64,
    /// Time between the daemon dropping the connection and the racing call.
    // Measured from the daemon's `DROPPED`.
    #[arg(long, default_value_t = 50, value_name = "MS")]
    pub offset_ms: u64,
    /// Bound on every tool call (the seed allows the racing call 20 s).
    #[arg(skip = Duration::from_secs(20))]
    pub call_timeout: Duration,
    /// Wait past `delay_ms` after the drop before counting connections.
    #[arg(skip = Duration::from_millis(250))]
    pub settle: Duration,
    /// How long past `delay_ms` after the drop recovery may take.
    #[arg(skip = Duration::from_secs(10))]
    pub recovery_timeout: Duration,
    /// Drop and race again after recovering (the second-drop property).
    #[arg(skip)]
    pub second_drop: bool,
    /// The wrapper's bridge mode and the fake daemon.
    #[arg(skip)]
    pub setup: Setup,
}

impl Default for RaceConfig {
    fn default() -> Self {
        settings::defaults()
    }
}

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

/// How the racing call ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum RaceOutcome {
    /// A result without `isError`: the wrapper bridged the race.
    Ok,
    /// The response mentions `daemon_unreachable`: the V3-05 bug.
    DaemonUnreachable,
    /// Any other failure (`isError`, a JSON-RPC error, the wrapper gone).
    OtherError(String),
    /// No response within the call timeout.
    Timeout,
}

impl RaceOutcome {
    /// A short, stable name, as in JSON reports.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::DaemonUnreachable => "daemon_unreachable",
            Self::OtherError(_) => "other_error",
            Self::Timeout => "timeout",
        }
    }
}

impl fmt::Display for RaceOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::OtherError(detail) => write!(f, "other_error ({detail})"),
            other => f.write_str(other.label()),
        }
    }
}

/// Classifies a `tools/call` response.
///
/// Like the seed test, any mention of `daemon_unreachable` in the serialized
/// response counts as the bug, whatever its shape; otherwise an `isError`
/// result or a JSON-RPC error is another error, and a result is success.
pub fn classify(response: &Value) -> RaceOutcome {
    if response.to_string().contains("daemon_unreachable") {
        return RaceOutcome::DaemonUnreachable;
    }
    match CallOutcome::from_response(response) {
        CallOutcome::Ok => RaceOutcome::Ok,
        CallOutcome::RpcError(error) => RaceOutcome::OtherError(format!("JSON-RPC error {error}")),
        CallOutcome::ToolError(text) => RaceOutcome::OtherError(format!("isError: {text}")),
        _ => RaceOutcome::OtherError(format!("response without result or error: {response}")),
    }
}

/// What one race run measured.
#[derive(Debug, Clone, Serialize)]
pub struct RaceReport {
    /// The bridge mode the wrapper ran in (`None`: not set).
    pub mode: Option<BridgeMode>,
    /// Where the fake daemon listened: a socket path or `tcp://host:port`.
    pub endpoint: String,
    /// How the racing call ended.
    pub outcome: RaceOutcome,
    /// Time from sending the racing call to its response (or timeout).
    #[serde(rename = "racing_latency_ms", serialize_with = "serialize_ms")]
    pub racing_latency: Duration,
    /// The racing call's whole response, when there was one.
    pub racing_response: Option<Value>,
    /// Calls after the race until one succeeded (`None`: none in time).
    pub recovery_calls: Option<u32>,
    /// Time from the drop to the first successful call after the race.
    #[serde(rename = "recovered_after_ms", serialize_with = "serialize_opt_ms")]
    pub recovered_after: Option<Duration>,
    /// Daemon connections after recovery (`None`: no recovery).
    pub conns_after: Option<u32>,
    /// The second drop, when the run made one.
    pub second_drop: Option<SecondDrop>,
    /// Results checked against the tool's `outputSchema` (`None`: none).
    pub output_schema: Option<SchemaCheck>,
    /// Time to exit once stdin closed (`None`: not within [`EOF_EXIT_BOUND`]).
    #[serde(rename = "exit_after_eof_ms", serialize_with = "serialize_opt_ms")]
    pub exit_after_eof: Option<Duration>,
    /// Stdout framing defects seen during the run.
    pub defects: Vec<String>,
    /// The end of the wrapper's stderr, when the race or recovery failed.
    pub wrapper_stderr_tail: Option<String>,
}

/// Results checked against the tool's `outputSchema`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SchemaCheck {
    /// Successful results checked.
    pub validated: u32,
    /// Why the first one that did not validate did not.
    pub mismatch: Option<String>,
}

/// A second drop after the wrapper recovered from the first.
#[derive(Debug, Clone, Serialize)]
pub struct SecondDrop {
    /// How the call racing the second reconnect ended.
    pub outcome: RaceOutcome,
    /// Its response, when there was one.
    pub racing_response: Option<Value>,
    /// Whether a call succeeded afterwards.
    pub served_after: bool,
    /// Connections the daemon held after that.
    pub conns_after: Option<u32>,
}

impl Judged for RaceReport {
    fn checks(&self) -> Vec<Check> {
        let mut checks = Checks::default();
        let racing = RacingCall::judge(&self.outcome, self.racing_response.as_ref());
        let latency = format_ms(self.racing_latency);
        checks.judge(
            Prop::ReconnectCall,
            racing.failure,
            format!("{} after {latency}", racing.words),
        );
        checks.expect(
            Prop::Recovers,
            self.recovered_after.is_some(),
            Cause::Died,
            match self.recovered_after {
                Some(after) => format!("answering again {} after the drop", format_ms(after)),
                None => "no call succeeded after the drop".to_owned(),
            },
        );
        if let Some(conns) = self.conns_after {
            checks.one_connection(conns);
        }
        if let Some(second) = &self.second_drop {
            let racing = RacingCall::judge(&second.outcome, second.racing_response.as_ref());
            let (failure, after) = if second.served_after {
                (racing.failure, "served after it")
            } else {
                (Some(Cause::Died), "no call succeeded after it")
            };
            let figure = format!("racing call: {}; {after}", racing.words);
            checks.judge(Prop::SecondDrop, failure, figure);
            if let Some(conns) = second.conns_after {
                checks.one_connection(conns);
            }
        }
        if let Some(schema) = &self.output_schema {
            checks.judge(
                Prop::OutputSchema,
                schema.mismatch.as_ref().map(|_| Cause::SchemaMismatch),
                match &schema.mismatch {
                    None => format!(
                        "{} {TOOL} results valid against its outputSchema",
                        schema.validated
                    ),
                    Some(why) => format!("a {TOOL} result does not validate: {why}"),
                },
            );
        }
        checks.expect(
            Prop::ExitsOnEof,
            self.exit_after_eof.is_some(),
            Cause::Other,
            match self.exit_after_eof {
                Some(after) => format!("exited {} after stdin closed", format_ms(after)),
                None => format!(
                    "still running {} after stdin closed",
                    format_ms(steps::EOF_EXIT_BOUND)
                ),
            },
        );
        checks.stdout_clean(&self.defects);
        checks.into_vec()
    }
}

/// How a racing call is judged.
struct RacingCall {
    /// Why it failed (`None`: it succeeded).
    failure: Option<Cause>,
    /// How it ended, in words: `ok`, or the failure's own text.
    words: String,
}

impl RacingCall {
    /// Judges a racing call by its outcome and response. A refusal is
    /// V3-05 (the daemon was up all along); `socket closed` means the call
    /// was written to the dying connection.
    fn judge(outcome: &RaceOutcome, response: Option<&Value>) -> Self {
        if *outcome == RaceOutcome::Ok {
            return Self {
                failure: None,
                words: "ok".to_owned(),
            };
        }
        let cause = if *outcome == RaceOutcome::Timeout {
            Cause::NoAnswer
        } else {
            Cause::of_text(&response.map(Value::to_string).unwrap_or_default(), true)
        };
        let text = response.and_then(|r| {
            r["result"]["content"][0]["text"]
                .as_str()
                .map(str::to_owned)
                .or_else(|| r.get("error").map(Value::to_string))
        });
        Self {
            failure: Some(cause),
            words: text.unwrap_or_else(|| outcome.to_string()),
        }
    }
}

impl fmt::Display for RaceReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "outcome={} latency={} conns_after={} defects={}",
            self.outcome,
            format_ms(self.racing_latency),
            self.conns_after
                .map_or_else(|| "n/a (no recovery)".to_owned(), |c| c.to_string()),
            self.defects.len()
        )
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
    use serde_json::json;

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
