//! `harness`: runs scripted scenarios against an MCP wrapper and the fake
//! iai-mcp daemon, and prints what happened.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use harness::scenario::down_up::{DownUpConfig, run_down_up};
use harness::scenario::hang::{HangConfig, run_hang};
use harness::scenario::hostile::{HostileConfig, run_hostile};
use harness::scenario::race::{RaceConfig, RaceReport, RaceSummary, run_race};
use harness::scenario::soak::{SoakConfig, run_soak, seed_from_clock};
use harness::scenario::storm::{StormConfig, run_storm};
use harness::scenario::sweep::{self, Subject, SweepConfig};
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
    /// Drop storm: the daemon drops the connection again and again while
    /// calls (reads and writes) are kept in flight; every call must be
    /// answered once, reads must succeed, writes never run twice.
    Storm(StormArgs),
    /// The daemon goes down and comes back: calls fail cleanly at the
    /// connect deadline, reconnect attempts stay bounded, the next call after
    /// the daemon is back succeeds.
    DownUp(DownUpArgs),
    /// The daemon hangs: a call fails with daemon_timeout at its deadline,
    /// and after the daemon resumes the next call succeeds.
    Hang(HangArgs),
    /// Hostile client: tens of thousands of random and malformed lines
    /// (seeded) interleaved with valid requests; every line with a request
    /// id must be answered exactly once, stdout must carry only JSON-RPC
    /// responses, and the wrapper's memory must stay flat.
    Hostile(HostileArgs),
    /// Soak: calls keep flowing for a while as the daemon drops, hangs,
    /// delays, garbles, slices, cuts, goes down and up, strays and
    /// duplicates (seeded schedule); no call may be lost or answered twice,
    /// no write may run twice, descriptors and memory must stay flat.
    Soak(SoakArgs),
    /// Map the race window: run the race for each mode (or wrapper command)
    /// at every offset of a range and without the widener, several times
    /// each; print a table and write sweep.json and sweep.svg. Ctrl-C stops
    /// it and still writes the partial report (exit code 130).
    Sweep(SweepArgs),
}

/// Options every fault scenario takes.
#[derive(Debug, Args)]
struct CommonArgs {
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
    /// Print the report as one JSON document instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct StormArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Number of drops.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    drops: u32,
    /// Calls kept in flight.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..))]
    concurrency: u64,
    /// The daemon's answer delay (its DELAY command), so calls are in flight
    /// when a drop hits.
    #[arg(long, default_value_t = 20, value_name = "MS")]
    delay_ms: u64,
    /// Time between two drops.
    #[arg(long, default_value_t = 150, value_name = "MS")]
    drop_interval_ms: u64,
    /// Every N-th call is a write (0: reads only).
    #[arg(long, default_value_t = 3, value_name = "N")]
    write_every: u32,
}

#[derive(Debug, Args)]
struct DownUpArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// How long a call waits for a connection (IAI_MCP_CONNECT_WAIT_MS).
    #[arg(long, default_value_t = 500, value_name = "MS")]
    connect_wait_ms: u64,
    /// Calls made while the daemon is down.
    #[arg(long, default_value_t = 2)]
    down_calls: u32,
    /// How long the daemon stays down after those calls, while reconnect
    /// attempts are counted.
    #[arg(long, default_value_t = 2000, value_name = "MS")]
    rate_window_ms: u64,
    /// IAI_MCP_BACKOFF_INITIAL_MS (unset: the wrapper's default).
    #[arg(long, value_name = "MS")]
    backoff_initial_ms: Option<u64>,
    /// IAI_MCP_BACKOFF_MAX_MS (unset: the wrapper's default).
    #[arg(long, value_name = "MS")]
    backoff_max_ms: Option<u64>,
    /// Reconnect attempts per second counted as a busy loop.
    #[arg(long, default_value_t = 50.0, value_name = "PER_S")]
    max_attempt_rate: f64,
}

#[derive(Debug, Args)]
struct HangArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// The wrapper's response deadline (IAI_MCP_CALL_TIMEOUT_MS).
    #[arg(long, default_value_t = 500, value_name = "MS")]
    call_timeout_ms: u64,
}

#[derive(Debug, Args)]
struct HostileArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Lines to send (valid requests included).
    #[arg(long, default_value_t = 20_000)]
    lines: usize,
    /// Seed of the line generator (the same seed sends the same bytes).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Most lines owing an answer outstanding at once.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..))]
    in_flight: u64,
    /// The wrapper's line cap (IAI_MCP_MAX_LINE_BYTES); lines are generated
    /// below, at and above it.
    #[arg(long, default_value_t = 65_536, value_name = "BYTES",
          value_parser = clap::value_parser!(u64).range(64..))]
    max_line_bytes: u64,
}

#[derive(Debug, Args)]
struct SoakArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// How long calls keep flowing.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    seconds: u64,
    /// Seed of the fault schedule and the call mix (default: from the
    /// clock; the report prints it).
    #[arg(long)]
    seed: Option<u64>,
    /// Calls kept in flight.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..))]
    concurrency: u64,
    /// The daemon's answer delay between DELAY episodes, so calls are in
    /// flight when a fault strikes; 0 runs as fast as the wrapper goes (the
    /// daemon's journal may then forget the oldest requests).
    #[arg(long, default_value_t = 8, value_name = "MS")]
    delay_ms: u64,
}

/// The `--json` output of the fault scenarios.
#[derive(Debug, Serialize)]
struct FaultOutput<R> {
    scenario: &'static str,
    wrapper: String,
    passed: bool,
    problems: Vec<String>,
    report: R,
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

#[derive(Debug, Args)]
struct SweepArgs {
    /// Wrapper command line to sweep (repeatable; each is one line of the
    /// chart, run without a bridge mode unless --mode is given), e.g.
    /// "node /path/dist/index.js". Default: this workspace's
    /// iai-mcp-wrapper in prefix and fixed mode.
    #[arg(long, value_name = "CMD")]
    wrapper_cmd: Vec<String>,
    /// Bridge mode to sweep (repeatable; default: prefix and fixed for this
    /// workspace's wrapper, unset for --wrapper-cmd).
    #[arg(long, value_name = "fixed|prefix")]
    mode: Vec<BridgeMode>,
    /// Reconnect delay given to the wrapper (IAI_MCP_RECONNECT_TEST_DELAY_MS):
    /// the width of the race window.
    #[arg(long, default_value_t = sweep::DEFAULT_DELAY_MS, value_name = "MS")]
    delay_ms: u64,
    /// First offset of the racing call after the drop.
    #[arg(long, default_value_t = 0, value_name = "MS")]
    from_ms: u64,
    /// Last offset (default: the delay plus 200 ms).
    #[arg(long, value_name = "MS")]
    to_ms: Option<u64>,
    /// Step between offsets.
    #[arg(long, default_value_t = sweep::DEFAULT_STEP_MS, value_name = "MS",
          value_parser = clap::value_parser!(u64).range(1..))]
    step_ms: u64,
    /// Leave out the production point (delay 0, offset 0: no widener).
    #[arg(long)]
    no_production: bool,
    /// Runs per subject and point.
    #[arg(long, default_value_t = sweep::DEFAULT_RUNS,
          value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    /// Runs at once (default: the available parallelism). Each run has its
    /// own socket and processes; results do not depend on it.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    jobs: Option<u64>,
    /// Seed of the (shuffled, reproducible) order the runs start in.
    #[arg(long, default_value_t = sweep::DEFAULT_SEED)]
    seed: u64,
    /// Where to write sweep.json and sweep.svg (default:
    /// target/race-report in this workspace).
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
    /// Print the JSON report on stdout instead of the table.
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

fn main() -> Result<ExitCode> {
    let ran = match Cli::parse().scenario {
        Scenario::Race(args) => race(&args),
        Scenario::Storm(args) => storm(&args),
        Scenario::DownUp(args) => down_up(&args),
        Scenario::Hang(args) => hang(&args),
        Scenario::Hostile(args) => hostile(&args),
        Scenario::Soak(args) => soak(&args),
        Scenario::Sweep(args) => return sweep(&args),
    };
    ran.map(|()| ExitCode::SUCCESS)
}

/// Exit code of a sweep stopped by a signal before it was done.
const INTERRUPTED: u8 = 130;

fn sweep(args: &SweepArgs) -> Result<ExitCode> {
    let subjects = if args.wrapper_cmd.is_empty() {
        let cmd =
            WrapperCommand::try_this_workspace().context("locating this workspace's wrapper")?;
        let modes = if args.mode.is_empty() {
            vec![BridgeMode::Prefix, BridgeMode::Fixed]
        } else {
            args.mode.clone()
        };
        Subject::modes(&cmd, &modes)
    } else {
        let modes: Vec<Option<BridgeMode>> = if args.mode.is_empty() {
            vec![None]
        } else {
            args.mode.iter().copied().map(Some).collect()
        };
        let mut subjects = Vec::new();
        for line in &args.wrapper_cmd {
            let cmd = WrapperCommand::parse_shell_words(line)?;
            for &mode in &modes {
                subjects.push(Subject::command(cmd.clone(), mode));
            }
        }
        subjects
    };
    let cfg = SweepConfig {
        subjects,
        delay_ms: args.delay_ms,
        from_ms: args.from_ms,
        to_ms: args.to_ms,
        step_ms: args.step_ms,
        production_point: !args.no_production,
        runs: args.runs,
        jobs: match args.jobs {
            Some(jobs) => usize::try_from(jobs).context("--jobs")?,
            None => sweep::default_jobs(),
        },
        seed: args.seed,
        ..SweepConfig::default()
    };
    let (report, files) = sweep::run_sweep_in_terminal(&cfg, args.out_dir.as_deref())?;
    if args.json {
        println!("{}", report.to_json());
        eprintln!("report: {}", files.json.display());
        eprintln!("chart:  {}", files.svg.display());
    } else {
        print!("{}", report.table());
        for line in report.subject_summaries() {
            println!("{line}");
        }
        println!("report: {}", files.json.display());
        println!("chart:  {}", files.svg.display());
    }
    Ok(if report.partial {
        ExitCode::from(INTERRUPTED)
    } else {
        ExitCode::SUCCESS
    })
}

fn wrapper_command(line: Option<&str>) -> Result<WrapperCommand> {
    match line {
        Some(line) => Ok(WrapperCommand::parse_shell_words(line)?),
        None => WrapperCommand::try_this_workspace().context("locating this workspace's wrapper"),
    }
}

/// Prints a fault scenario's report as text (the report line and its
/// verdict) or as JSON.
fn print_fault<R: Serialize + std::fmt::Display>(
    scenario: &'static str,
    cmd: &WrapperCommand,
    common: &CommonArgs,
    report: &R,
    passed: bool,
    problems: Vec<String>,
) -> Result<()> {
    if common.json {
        let output = FaultOutput {
            scenario,
            wrapper: cmd.display(),
            passed,
            problems,
            report,
        };
        println!("{}", serde_json::to_string_pretty(&output)?);
    } else {
        let mode = common
            .mode
            .map_or_else(|| "unset".to_owned(), |m| m.to_string());
        println!(
            "{scenario} (wrapper: {}, mode {mode}): {report}",
            cmd.display()
        );
    }
    Ok(())
}

fn storm(args: &StormArgs) -> Result<()> {
    let cmd = wrapper_command(args.common.wrapper_cmd.as_deref())?;
    let cfg = StormConfig {
        mode: args.common.mode,
        drops: args.drops,
        concurrency: usize::try_from(args.concurrency).context("--concurrency")?,
        daemon_delay_ms: args.delay_ms,
        drop_interval: Duration::from_millis(args.drop_interval_ms),
        write_every: args.write_every,
        ..StormConfig::default()
    };
    let report = run_storm(&cmd, &cfg).context("storm")?;
    print_fault(
        "storm",
        &cmd,
        &args.common,
        &report,
        report.passed(),
        report.problems(),
    )
}

fn down_up(args: &DownUpArgs) -> Result<()> {
    let cmd = wrapper_command(args.common.wrapper_cmd.as_deref())?;
    let cfg = DownUpConfig {
        mode: args.common.mode,
        connect_wait: Duration::from_millis(args.connect_wait_ms),
        down_calls: args.down_calls,
        rate_window: Duration::from_millis(args.rate_window_ms),
        backoff_initial_ms: args.backoff_initial_ms,
        backoff_max_ms: args.backoff_max_ms,
        max_attempt_rate: args.max_attempt_rate,
        ..DownUpConfig::default()
    };
    let report = run_down_up(&cmd, &cfg).context("down-up")?;
    print_fault(
        "down-up",
        &cmd,
        &args.common,
        &report,
        report.passed(),
        report.problems(),
    )
}

fn hang(args: &HangArgs) -> Result<()> {
    let cmd = wrapper_command(args.common.wrapper_cmd.as_deref())?;
    let cfg = HangConfig {
        mode: args.common.mode,
        call_timeout: Duration::from_millis(args.call_timeout_ms),
        ..HangConfig::default()
    };
    let report = run_hang(&cmd, &cfg).context("hang")?;
    print_fault(
        "hang",
        &cmd,
        &args.common,
        &report,
        report.passed(),
        report.problems(),
    )
}

fn hostile(args: &HostileArgs) -> Result<()> {
    let cmd = wrapper_command(args.common.wrapper_cmd.as_deref())?;
    let cfg = HostileConfig {
        mode: args.common.mode,
        lines: args.lines,
        seed: args.seed,
        in_flight: usize::try_from(args.in_flight).context("--in-flight")?,
        max_line_bytes: usize::try_from(args.max_line_bytes).context("--max-line-bytes")?,
        ..HostileConfig::default()
    };
    let report = run_hostile(&cmd, &cfg).context("hostile")?;
    print_fault(
        "hostile",
        &cmd,
        &args.common,
        &report,
        report.passed(),
        report.problems(),
    )
}

fn soak(args: &SoakArgs) -> Result<()> {
    let cmd = wrapper_command(args.common.wrapper_cmd.as_deref())?;
    let cfg = SoakConfig {
        mode: args.common.mode,
        duration: Duration::from_secs(args.seconds),
        seed: args.seed.unwrap_or_else(seed_from_clock),
        concurrency: usize::try_from(args.concurrency).context("--concurrency")?,
        daemon_delay_ms: args.delay_ms,
        ..SoakConfig::default()
    };
    let report = run_soak(&cmd, &cfg).context("soak")?;
    print_fault(
        "soak",
        &cmd,
        &args.common,
        &report,
        report.passed(),
        report.problems(),
    )
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
