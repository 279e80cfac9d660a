//! The smoke run: the few things any build of a wrapper must do, whatever
//! machine or emulator it runs on. It is what `cargo xtask cross-check`
//! puts a cross-built binary through (under qemu-user or Wine, the runner
//! being the first words of the wrapper command).
//!
//! `--version` answers; the handshake and a first call succeed; `tools/list`
//! names every tool of the table; a tool call succeeds; after the daemon
//! drops the connection (`DROP`) the next call is answered and the daemon
//! holds one connection; the wrapper exits once its stdin closes.

use std::fmt;
use std::process::{Command, Stdio};
use std::time::Duration;

use clap::Args;
use serde::Serialize;
use serde_json::json;

use super::live::{LiveSession, PROBE_TOOL, WrapperOutput, problems_text};
use super::outcome::CallOutcome;
use super::property::{Cause, Check, Checks, Judged, Prop};
use super::settings;
use super::setup::Setup;
use crate::error::HarnessError;
use crate::wrapper::{BridgeMode, WrapperCommand};

/// How many tools the wrapper's table lists (iai-mcp 3.3.0's surface).
pub const TOOL_COUNT: usize = 15;

/// Parameters of the smoke run: its setting (the `smoke` command's flag);
/// `Default` is the value declared here.
#[derive(Debug, Clone, Args)]
pub struct SmokeConfig {
    /// Bound on any one answer (a safety net for slow emulators, not a
    /// measurement).
    // Generous: an emulated binary starts and answers several times slower
    // than a native one.
    #[arg(long = "reply-bound-ms", default_value = "60000", value_name = "MS",
          value_parser = settings::millis())]
    pub reply_bound: Duration,
    /// The wrapper's bridge mode and the fake daemon.
    #[arg(skip)]
    pub setup: Setup,
}

impl Default for SmokeConfig {
    fn default() -> Self {
        settings::defaults()
    }
}

/// How the wrapper ended once its stdin closed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "detail")]
pub enum EofExit {
    /// It exited by itself, with this status.
    Exited(String),
    /// It was still running at the bound and was killed.
    StillRunning,
}

/// What the smoke run found.
#[derive(Debug, Clone, Serialize)]
pub struct SmokeReport {
    /// The bridge mode the wrapper ran in (`None`: not set).
    pub mode: Option<BridgeMode>,
    /// The first line `--version` printed, or why it failed.
    pub version: Result<String, String>,
    /// How many tools `tools/list` named (`None`: no valid answer).
    pub tools_listed: Option<usize>,
    /// How a tool call before the drop ended.
    pub call: CallOutcome,
    /// How the first call after the daemon's `DROP` ended.
    pub after_drop: CallOutcome,
    /// Connections the daemon held after that call.
    pub conns_after: u32,
    /// How the wrapper ended after its stdin closed.
    pub eof_exit: EofExit,
    /// Its stdout defects and the end of its stderr.
    #[serde(flatten)]
    pub output: WrapperOutput,
}

impl Judged for SmokeReport {
    fn checks(&self) -> Vec<Check> {
        let mut checks = Checks::default();
        checks.expect(
            Prop::AnsweredOnce,
            self.version.is_ok(),
            Cause::Other,
            match &self.version {
                Ok(line) => format!("--version: {line}"),
                Err(why) => format!("--version failed: {why}"),
            },
        );
        checks.expect(
            Prop::AnsweredOnce,
            self.tools_listed == Some(TOOL_COUNT),
            Cause::Other,
            match self.tools_listed {
                Some(n) => format!("tools/list named {n} tools (expected {TOOL_COUNT})"),
                None => "tools/list got no valid answer".to_owned(),
            },
        );
        checks.expect(
            Prop::AnsweredOnce,
            self.call.is_ok(),
            Cause::of_call(&self.call, true),
            format!("a tool call: {}", self.call),
        );
        checks.expect(
            Prop::ReconnectCall,
            self.after_drop.is_ok(),
            Cause::of_call(&self.after_drop, true),
            format!("the call after DROP: {}", self.after_drop),
        );
        checks.expect(
            Prop::OneConnection,
            self.conns_after == 1,
            Cause::Other,
            format!("{} daemon connection(s) after the drop", self.conns_after),
        );
        checks.expect(
            Prop::ExitsOnEof,
            matches!(self.eof_exit, EofExit::Exited(_)),
            Cause::Other,
            match &self.eof_exit {
                EofExit::Exited(status) => format!("exited on stdin EOF ({status})"),
                EofExit::StillRunning => "still running after stdin closed".to_owned(),
            },
        );
        checks.stdout_clean(&self.output.defects);
        checks.into_vec()
    }
}

impl fmt::Display for SmokeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let version = match &self.version {
            Ok(line) => line.clone(),
            Err(_) => "FAILED".to_owned(),
        };
        let tools = self
            .tools_listed
            .map_or_else(|| "none".to_owned(), |n| n.to_string());
        let eof = match &self.eof_exit {
            EofExit::Exited(_) => "exited",
            EofExit::StillRunning => "still running",
        };
        write!(
            f,
            "{}: --version {version:?}, {tools} tools, call {}, after DROP {}, conns {}, on EOF {eof}; defects {}; problems: {}",
            if self.passed() { "PASS" } else { "FAIL" },
            self.call.label(),
            self.after_drop.label(),
            self.conns_after,
            self.output.defects.len(),
            problems_text(&self.problems())
        )
    }
}

/// Runs `cmd --version` (its program, its arguments, then `--version`) and
/// returns the first line it printed, or why it failed.
fn version_line(cmd: &WrapperCommand) -> Result<String, String> {
    let output = Command::new(&cmd.program)
        .args(&cmd.args)
        .arg("--version")
        .envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", cmd.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let first = stdout.lines().next().unwrap_or_default().trim().to_owned();
    if output.status.success() && !first.is_empty() {
        Ok(first)
    } else {
        Err(format!(
            "{} (stdout {first:?}, stderr {:?})",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// Runs the smoke run once against the wrapper started by `cmd`.
pub fn run_smoke(cmd: &WrapperCommand, cfg: &SmokeConfig) -> Result<SmokeReport, HarnessError> {
    let version = version_line(cmd);
    let env = [("IAI_MCP_LOG", "info".to_owned())];
    let mut session = LiveSession::start(cmd, &cfg.setup, &env)?;
    let bound = cfg.reply_bound;

    let listed = session.wrapper.request("tools/list", json!({}), bound);
    let tools_listed = listed
        .ok()
        .and_then(|r| r["result"]["tools"].as_array().map(Vec::len));
    let call = session.call(PROBE_TOOL, json!({}), bound).outcome;
    session.daemon.drop_connections()?;
    let after_drop = session.call(PROBE_TOOL, json!({}), bound).outcome;
    let conns_after = session.daemon.stats()?.conns;

    let defects = session.wrapper.defects();
    session.wrapper.close_stdin();
    let eof_exit = match session.wrapper.wait_exit(bound) {
        Ok(status) => EofExit::Exited(status.to_string()),
        Err(_) => EofExit::StillRunning,
    };
    let mut report = SmokeReport {
        mode: cfg.setup.mode,
        version,
        tools_listed,
        call,
        after_drop,
        conns_after,
        eof_exit,
        output: WrapperOutput {
            defects,
            wrapper_stderr_tail: None,
        },
    };
    if !report.passed() {
        report.output.wrapper_stderr_tail = Some(session.stderr_tail());
    }
    let _ = session.daemon.quit();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::live::assert_each_breaks_once;

    fn clean_report() -> SmokeReport {
        SmokeReport {
            mode: None,
            version: Ok("iai-mcp-wrapper 1.0.0".to_owned()),
            tools_listed: Some(TOOL_COUNT),
            call: CallOutcome::Ok,
            after_drop: CallOutcome::Ok,
            conns_after: 1,
            eof_exit: EofExit::Exited("exit status: 0".to_owned()),
            output: WrapperOutput::default(),
        }
    }

    #[test]
    fn passes_only_when_every_step_held() {
        let report = clean_report();
        assert!(report.passed(), "{report}");
        assert!(
            report
                .to_string()
                .starts_with("PASS: --version \"iai-mcp-wrapper 1.0.0\", 15 tools, call ok")
        );
        let breakages: [fn(&mut SmokeReport); 7] = [
            |r| r.version = Err("exit status: 1".to_owned()),
            |r| r.tools_listed = Some(14),
            |r| r.call = CallOutcome::NoResponse,
            |r| r.after_drop = CallOutcome::NoResponse,
            |r| r.conns_after = 0,
            |r| r.eof_exit = EofExit::StillRunning,
            |r| r.output.defects.push("x".into()),
        ];
        assert_each_breaks_once(clean_report, breakages);
    }
}
