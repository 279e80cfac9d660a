//! A hung daemon: it keeps the connection and reads requests but answers
//! none. A call must fail with `daemon_timeout` at its response deadline
//! (not before, and not never), the silent connection must be replaced, and
//! once the daemon answers again (`RESUME`) the next call must succeed, while
//! the late answer to the timed-out call must not reach the client.

use std::fmt;
use std::time::Duration;

use clap::Args;
use devkit::format::{format_ms, serialize_ms};
use serde::Serialize;
use serde_json::json;

use super::declaration::{Scenario, Scoring};
use super::live::{
    LiveSession, PROBE_TOOL, WrapperOutput, collect_unsolicited, env_ms, is_response, problems_text,
};
use super::outcome::CallOutcome;
use super::property::{Cause, Check, Checks, Judged, Prop};
use super::settings;
use super::setup::Setup;
use crate::daemon::FakeDaemon;
use crate::error::HarnessError;
use crate::wrapper::{BridgeMode, WrapperCommand};

/// Parameters of the hang scenario: its setting (the `hang` command's
/// flag) and its fixed bounds; `Default` is every value declared here.
#[derive(Debug, Clone, Args)]
pub struct HangConfig {
    /// The wrapper's response deadline (IAI_MCP_CALL_TIMEOUT_MS).
    #[arg(long = "call-timeout-ms", default_value = "500", value_name = "MS",
          value_parser = settings::millis())]
    pub call_timeout: Duration,
    /// How much longer than `call_timeout` the harness waits for any one
    /// call's answer before recording no response.
    #[arg(skip = Duration::from_secs(10))]
    pub call_grace: Duration,
    /// How long to watch for the late answer before counting connections.
    #[arg(skip = Duration::from_millis(250))]
    pub settle: Duration,
    /// The wrapper's bridge mode and the fake daemon.
    #[arg(skip)]
    pub setup: Setup,
}

impl Default for HangConfig {
    fn default() -> Self {
        settings::defaults()
    }
}

/// The hung daemon.
#[derive(Debug, Clone, Copy)]
pub struct Hang;

impl Scenario for Hang {
    const NAME: &'static str = "hang";
    const ABOUT: &'static str = "The daemon hangs: a call fails with daemon_timeout at its deadline, the silent connection is replaced, and after the daemon resumes the next call succeeds";
    type Config = HangConfig;
    type Args = HangConfig;
    type Report = HangReport;

    fn setup(cfg: &mut HangConfig) -> &mut Setup {
        &mut cfg.setup
    }

    fn run(cmd: &WrapperCommand, cfg: &HangConfig) -> Result<HangReport, HarnessError> {
        run_hang(cmd, cfg)
    }

    fn scored(_: &Scoring) -> Vec<HangConfig> {
        vec![HangConfig::default()]
    }
}

/// What the hang scenario measured.
#[derive(Debug, Clone, Serialize)]
pub struct HangReport {
    /// The bridge mode the wrapper ran in (`None`: not set).
    pub mode: Option<BridgeMode>,
    /// The response deadline the wrapper was given.
    #[serde(rename = "call_timeout_ms", serialize_with = "serialize_ms")]
    pub call_timeout: Duration,
    /// How the call made while the daemon hung ended (expected:
    /// `daemon_timeout`).
    pub hung_outcome: CallOutcome,
    /// From sending that call to its answer.
    #[serde(rename = "hung_latency_ms", serialize_with = "serialize_ms")]
    pub hung_latency: Duration,
    /// How the call made after `RESUME` ended (expected: ok).
    pub resumed_outcome: CallOutcome,
    /// From sending that call to its answer.
    #[serde(rename = "resumed_latency_ms", serialize_with = "serialize_ms")]
    pub resumed_latency: Duration,
    /// Answers to the call to the hung daemon that came after the harness
    /// had given up on it: late, not unsolicited.
    pub late_answers: usize,
    /// Responses to no call at all (must be 0).
    pub unsolicited: usize,
    /// Connections the daemon accepted after the baseline, other than
    /// those that brought a session-open message: the wrapper replaces a
    /// connection on which nothing arrived for a whole call timeout
    /// (expected: at least 1).
    pub new_connections: u64,
    /// Connections the daemon held at the end (must be 1).
    pub conns_after: u32,
    /// Its stdout defects and the end of its stderr.
    #[serde(flatten)]
    pub output: WrapperOutput,
}

impl Judged for HangReport {
    fn checks(&self) -> Vec<Check> {
        let mut checks = Checks::default();
        let on_time =
            self.hung_outcome.is_daemon_timeout() && self.hung_latency >= self.call_timeout;
        let late = if self.late_answers > 0 {
            ", answered late (after the harness gave up)"
        } else {
            ""
        };
        checks.expect(
            Prop::CallDeadline,
            on_time,
            Cause::of_call(&self.hung_outcome, true),
            format!(
                "the call to the hung daemon: {} after {} (deadline {}){late}",
                self.hung_outcome,
                format_ms(self.hung_latency),
                format_ms(self.call_timeout)
            ),
        );
        checks.expect(
            Prop::CallDeadline,
            self.new_connections >= 1,
            Cause::Other,
            format!(
                "{} new connection(s) after a whole call timeout of silence",
                self.new_connections
            ),
        );
        checks.expect(
            Prop::Recovers,
            self.resumed_outcome.is_ok(),
            Cause::of_call(&self.resumed_outcome, true),
            format!(
                "the call after RESUME: {} in {}",
                self.resumed_outcome,
                format_ms(self.resumed_latency)
            ),
        );
        checks.zero(
            Prop::AnsweredOnce,
            self.unsolicited,
            Cause::AnsweredTwice,
            "answers to no call",
        );
        checks.one_connection(self.conns_after);
        checks.stdout_clean(&self.output.defects);
        checks.into_vec()
    }
}

impl fmt::Display for HangReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hung = if self.hung_outcome.is_daemon_timeout() {
            "daemon_timeout"
        } else {
            self.hung_outcome.label()
        };
        write!(
            f,
            "{}: {hung} after {} (deadline {}), after RESUME {} in {}, late answers {}, unsolicited {}, new conns {}, conns {}; \
             hung call: {}; defects {}; problems: {}",
            if self.passed() { "PASS" } else { "FAIL" },
            format_ms(self.hung_latency),
            format_ms(self.call_timeout),
            self.resumed_outcome.label(),
            format_ms(self.resumed_latency),
            self.late_answers,
            self.unsolicited,
            self.new_connections,
            self.conns_after,
            self.hung_outcome,
            self.output.defects.len(),
            problems_text(&self.problems())
        )
    }
}

/// Runs the hang scenario once against the wrapper started by `cmd`.
pub fn run_hang(cmd: &WrapperCommand, cfg: &HangConfig) -> Result<HangReport, HarnessError> {
    let env = [
        ("IAI_MCP_LOG", "info".to_owned()),
        env_ms("IAI_MCP_CALL_TIMEOUT_MS", cfg.call_timeout),
    ];
    let mut session = LiveSession::start(cmd, &cfg.setup, &env)?;
    let bound = cfg.call_timeout + cfg.call_grace;
    let before = session.daemon.stats()?;
    let opens_before = session_opens(&session.daemon)?;

    session.daemon.hang()?;
    let hung = session.call(PROBE_TOOL, json!({}), bound);
    session.daemon.resume()?;
    let resumed = session.call(PROBE_TOOL, json!({}), bound);

    let responses = collect_unsolicited(&mut session.wrapper, cfg.settle)
        .iter()
        .filter(|m| is_response(m))
        .count();
    // The only call the harness gave up on is the one to the hung daemon:
    // an answer after that is its late answer.
    let gave_up = usize::from(hung.outcome == CallOutcome::NoResponse);
    let late_answers = responses.min(gave_up);
    let after = session.daemon.stats()?;
    // A wrapper's session-open message comes on a connection of its own,
    // which may be accepted after the baseline: it replaces nothing.
    let opens = session_opens(&session.daemon)?.saturating_sub(opens_before);
    let new_connections = after
        .accepted
        .saturating_sub(before.accepted)
        .saturating_sub(opens);

    let report = HangReport {
        mode: cfg.setup.mode,
        call_timeout: cfg.call_timeout,
        hung_outcome: hung.outcome,
        hung_latency: hung.latency,
        resumed_outcome: resumed.outcome,
        resumed_latency: resumed.latency,
        late_answers,
        unsolicited: responses - late_answers,
        new_connections,
        conns_after: after.conns,
        output: WrapperOutput::default(),
    };
    Ok(session.conclude(report, |r| &mut r.output))
}

/// How many `session_open` control messages the daemon has seen.
fn session_opens(daemon: &FakeDaemon) -> Result<u64, HarnessError> {
    let seen = daemon.seen()?;
    Ok(seen.iter().filter(|kind| *kind == "session_open").count() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::live::assert_each_breaks_once;

    fn clean_report() -> HangReport {
        HangReport {
            mode: Some(BridgeMode::Fixed),
            call_timeout: Duration::from_millis(500),
            hung_outcome: CallOutcome::ToolError(
                "error: daemon_timeout: no response from the daemon within 0.5 s".into(),
            ),
            hung_latency: Duration::from_millis(502),
            resumed_outcome: CallOutcome::Ok,
            resumed_latency: Duration::from_millis(2),
            late_answers: 0,
            unsolicited: 0,
            new_connections: 1,
            conns_after: 1,
            output: WrapperOutput::default(),
        }
    }

    #[test]
    fn passes_only_when_every_must_condition_holds() {
        let report = clean_report();
        assert!(report.passed(), "{report}");
        assert!(report.to_string().starts_with(
            "PASS: daemon_timeout after 502 ms (deadline 500 ms), after RESUME ok in 2.0 ms, late answers 0, unsolicited 0, new conns 1, conns 1; hung call:"
        ));
        let breakages: [fn(&mut HangReport); 7] = [
            |r| r.hung_outcome = CallOutcome::NoResponse,
            |r| r.hung_latency = Duration::from_millis(499),
            |r| r.resumed_outcome = CallOutcome::NoResponse,
            |r| r.unsolicited = 1,
            |r| r.new_connections = 0,
            |r| r.conns_after = 2,
            |r| r.output.defects.push("x".into()),
        ];
        assert_each_breaks_once(clean_report, breakages);
    }
}
