//! `harness`: runs scripted scenarios against an MCP wrapper and the fake
//! iai-mcp daemon, and prints what happened.

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use harness::scenario::race::{RaceConfig, RaceReport, RaceSummary, run_race};
use harness::{BridgeMode, WrapperCommand};
use serde::Serialize;

/// Runs scripted scenarios against an MCP wrapper and the fake iai-mcp
/// daemon. Outcomes are data: the exit code is 0 whenever the scenario ran,
/// and non-zero only when the harness itself failed.
#[derive(Debug, Parser)]
#[command(version)]
struct Cli {
    #[command(subcommand)]
    scenario: Scenario,
}

/// The scenarios the harness can run.
#[derive(Debug, Subcommand)]
enum Scenario {
    /// The V3-05 disconnect race: drop the wrapper's daemon connection, then
    /// call a tool while the wrapper waits to reconnect.
    Race(RaceArgs),
}

#[derive(Debug, Args)]
struct RaceArgs {
    /// Wrapper command line to test, e.g. "node /path/dist/index.js"
    /// (default: this workspace's iai-mcp-wrapper). Split like a shell
    /// would, without expansions; leading NAME=value words set environment
    /// variables.
    #[arg(long, value_name = "CMD")]
    wrapper_cmd: Option<String>,
    /// Bridge mode to set through IAI_MCP_BRIDGE_MODE (unset: the wrapper's
    /// default).
    #[arg(long, value_name = "fixed|prefix")]
    mode: Option<BridgeMode>,
    /// Number of runs.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    /// Reconnect delay given to the wrapper (IAI_MCP_RECONNECT_TEST_DELAY_MS):
    /// the width of the race window.
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    delay_ms: u64,
    /// Time between the daemon dropping the connection and the racing call.
    #[arg(long, default_value_t = 50, value_name = "MS")]
    offset_ms: u64,
    /// Print one JSON document (the runs and a summary) instead of text.
    #[arg(long)]
    json: bool,
}

/// The `--json` output of `harness race`.
#[derive(Debug, Serialize)]
struct RaceOutput<'a> {
    wrapper: String,
    config: RaceConfigOutput,
    runs: &'a [RaceReport],
    summary: RaceSummary,
}

#[derive(Debug, Serialize)]
struct RaceConfigOutput {
    mode: Option<BridgeMode>,
    delay_ms: u64,
    offset_ms: u64,
}

fn main() -> Result<()> {
    match Cli::parse().scenario {
        Scenario::Race(args) => race(&args),
    }
}

fn race(args: &RaceArgs) -> Result<()> {
    let cmd = match &args.wrapper_cmd {
        Some(line) => WrapperCommand::parse_shell_words(line)?,
        None => {
            WrapperCommand::try_this_workspace().context("locating this workspace's wrapper")?
        }
    };
    let cfg = RaceConfig {
        mode: args.mode,
        delay_ms: args.delay_ms,
        offset_ms: args.offset_ms,
        ..RaceConfig::default()
    };
    let mut reports = Vec::new();
    for run in 1..=args.runs {
        let report =
            run_race(&cmd, &cfg).with_context(|| format!("race run {run}/{}", args.runs))?;
        if !args.json {
            println!("run {run}/{}: {report}", args.runs);
            for defect in &report.defects {
                println!("  stdout defect: {defect}");
            }
        }
        reports.push(report);
    }
    let summary = RaceSummary::from_reports(cfg.mode, &reports);
    if args.json {
        let output = RaceOutput {
            wrapper: cmd.display(),
            config: RaceConfigOutput {
                mode: cfg.mode,
                delay_ms: cfg.delay_ms,
                offset_ms: cfg.offset_ms,
            },
            runs: &reports,
            summary,
        };
        println!("{}", serde_json::to_string_pretty(&output)?);
    } else {
        let mode = cfg
            .mode
            .map_or_else(|| "unset".to_owned(), |m| m.to_string());
        println!(
            "summary (wrapper: {}, mode {mode}): {summary}",
            cmd.display()
        );
    }
    Ok(())
}
