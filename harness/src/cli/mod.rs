//! The `harness` command line: one module per family of commands, each
//! printing a verdict line. A scenario's settings are declared once, on its
//! configuration in the library, and [`scenario`] runs any scenario from
//! them; `cargo xtask` builds the binaries and runs this one, so nothing
//! here is declared twice.

pub mod race;
pub mod scenario;
pub mod score;

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use devkit::rows::verdict_code;
use harness::scenario::Setup;
use harness::{BridgeMode, Judged, Transport, WrapperCommand};
use serde::Serialize;

/// Which wrapper to test, and how to report.
#[derive(Debug, Clone, Args)]
pub struct Target {
    /// Wrapper command line to test, e.g. "node /path/dist/index.js"
    /// (default: this workspace's iai-mcp-wrapper). Split like a shell
    /// would, without expansions; leading NAME=value words set environment
    /// variables. Another wrapper is reported on, not judged: exit code 0.
    #[arg(long, value_name = "CMD")]
    pub wrapper_cmd: Option<String>,
    /// Bridge mode to set through IAI_MCP_BRIDGE_MODE (unset: the wrapper's
    /// default).
    #[arg(long, value_name = "fixed|prefix")]
    pub mode: Option<BridgeMode>,
    /// How the fake daemon listens: a Unix socket, or loopback TCP with a
    /// token (as iai-mcp does where there are no Unix sockets).
    #[arg(long, default_value = "unix", value_name = "unix|tcp")]
    pub transport: Transport,
    /// Print the report as one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
}

impl Target {
    /// The wrapper to start.
    pub fn command(&self) -> Result<WrapperCommand> {
        match &self.wrapper_cmd {
            Some(line) => Ok(WrapperCommand::parse_shell_words(line)?),
            None => {
                WrapperCommand::try_this_workspace().context("locating this workspace's wrapper")
            }
        }
    }

    /// The scenario setup these options ask for.
    pub fn setup(&self) -> Setup {
        Setup {
            mode: self.mode,
            transport: self.transport,
            fake_daemon_bin: None,
        }
    }

    /// The exit code of a run: a verdict for this workspace's wrapper, 0
    /// for another one (reported on, not judged).
    pub fn exit_code(&self, passed: bool) -> ExitCode {
        verdict_code(passed || self.wrapper_cmd.is_some())
    }
}

/// The `--json` output of a scenario.
#[derive(Debug, Serialize)]
struct Output<'a, R> {
    scenario: &'static str,
    wrapper: String,
    mode: Option<BridgeMode>,
    passed: bool,
    checks: Vec<harness::Check>,
    report: &'a R,
}

/// Prints a judged report (text and its verdict line, or JSON) and returns
/// the exit code.
pub fn print_judged<R: Judged + Serialize + std::fmt::Display>(
    scenario: &'static str,
    cmd: &WrapperCommand,
    target: &Target,
    report: &R,
) -> Result<ExitCode> {
    if target.json {
        let output = Output {
            scenario,
            wrapper: cmd.display(),
            mode: target.mode,
            passed: report.passed(),
            checks: report.checks(),
            report,
        };
        println!("{}", serde_json::to_string_pretty(&output)?);
    } else {
        println!(
            "{scenario} (wrapper: {}, mode {}): {report}",
            cmd.display(),
            harness::wrapper::mode_label(target.mode)
        );
        println!("{}", report.verdict_line());
    }
    Ok(target.exit_code(report.passed()))
}
