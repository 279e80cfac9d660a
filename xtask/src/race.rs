//! `cargo xtask race`: builds the wrapper and the fake daemon, runs the
//! V3-05 race in both bridge modes (or against another wrapper command) and
//! prints a table and a verdict; `--all` and `--sweep` hand over to
//! [`all`](crate::all) and [`sweep`](crate::sweep).

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use harness::bins::{self, Profile};
use harness::scenario::race::{RaceConfig, RaceSummary};
use harness::wrapper::mode_label;

use crate::progress::run_mode;
use harness::scenario::sweep::Subject;
use harness::scenario::{Align, format_ms, table_lines};
use harness::{BridgeMode, WrapperCommand};

/// Arguments of `cargo xtask race`.
#[derive(Debug, Args)]
pub struct RaceArgs {
    /// Runs per mode [default: 10; with --sweep, 3 per mode and point].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) runs: Option<u32>,
    /// Reconnect delay given to the wrapper: the width of the race window.
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    pub(crate) delay_ms: u64,
    /// Time between the daemon dropping the connection and the racing call.
    #[arg(
        long,
        default_value_t = 50,
        value_name = "MS",
        conflicts_with = "sweep"
    )]
    pub(crate) offset_ms: u64,
    /// Test this wrapper command line instead (e.g. "node /path/dist/index.js"),
    /// N runs without setting a bridge mode, and report whether it shows the
    /// V3-05 bug.
    #[arg(long, value_name = "CMD")]
    pub(crate) wrapper_cmd: Option<String>,
    /// Build and run the release binaries.
    #[arg(long)]
    pub(crate) release: bool,
    /// How the fake daemon listens: a Unix socket, or loopback TCP with a
    /// token (as iai-mcp does where there are no Unix sockets).
    #[arg(
        long,
        default_value = "unix",
        value_name = "unix|tcp",
        conflicts_with = "sweep"
    )]
    pub(crate) transport: harness::Transport,
    /// Also run the live fault scenarios (storm, down-up, hang) in fixed
    /// mode, and print one table with a row per scenario and mode; exit 0
    /// only if every row passes. With --wrapper-cmd every scenario runs
    /// without setting a bridge mode, and the table is a report (exit 0).
    #[arg(long)]
    pub(crate) all: bool,
    /// Map the race window: run the race in both modes (or the
    /// --wrapper-cmd, mode unset) at every offset from --from-ms to --to-ms
    /// and without the widener (delay 0), --runs times each; print a table
    /// and write sweep.json and sweep.svg. A report, not a verdict: exit 0
    /// (130 when interrupted by Ctrl-C, after writing the partial report).
    #[arg(long, conflicts_with = "all")]
    pub(crate) sweep: bool,
    /// The sweep's own options.
    #[command(flatten)]
    pub(crate) sweep_opts: crate::sweep::SweepOpts,
}

/// Runs per mode of the race when --runs is not given.
const DEFAULT_RACE_RUNS: u32 = 10;

/// Builds, then runs the race (or `--all`, or `--sweep`) as `args` say.
pub fn run(args: &RaceArgs) -> Result<ExitCode> {
    let profile = if args.release {
        Profile::Release
    } else {
        Profile::Dev
    };
    let foreign = args
        .wrapper_cmd
        .as_deref()
        .map(WrapperCommand::parse_shell_words)
        .transpose()?;
    let (wrapper, fake_daemon) = if foreign.is_some() {
        let built = bins::cargo_build(&[bins::FAKE_DAEMON], &profile, false)?;
        (None, built[0].clone())
    } else {
        let built = bins::cargo_build(&[bins::WRAPPER, bins::FAKE_DAEMON], &profile, false)?;
        (Some(WrapperCommand::new(&built[0])), built[1].clone())
    };
    let base = RaceConfig {
        delay_ms: args.delay_ms,
        offset_ms: args.offset_ms,
        fake_daemon_bin: Some(fake_daemon),
        transport: args.transport,
        ..RaceConfig::default()
    };

    if args.sweep {
        let subjects = match (&foreign, &wrapper) {
            (Some(cmd), _) => vec![Subject::command(cmd.clone(), None)],
            (None, Some(cmd)) => Subject::modes(cmd, &[BridgeMode::Prefix, BridgeMode::Fixed]),
            (None, None) => unreachable!("the wrapper is built when no command is given"),
        };
        return crate::sweep::run(&args.sweep_opts, args.runs, subjects, base);
    }

    let runs = args.runs.unwrap_or(DEFAULT_RACE_RUNS);
    if args.all {
        return Ok(match foreign {
            Some(cmd) => {
                crate::all::run(&cmd, &base, runs, None);
                ExitCode::SUCCESS
            }
            None => {
                let cmd = wrapper.expect("built above when no wrapper command is given");
                if crate::all::run(&cmd, &base, runs, Some(BridgeMode::Fixed)) {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                }
            }
        });
    }

    if let Some(cmd) = foreign {
        let summary = run_mode(&cmd, &base, None, runs)?;
        print_table(&[&summary], &cmd.display());
        let verdict = if summary.daemon_unreachable > 0 {
            format!(
                "verdict: `{}` SHOWS the V3-05 bug: daemon_unreachable in {}/{} racing calls",
                cmd.display(),
                summary.daemon_unreachable,
                summary.runs
            )
        } else if summary.ok == summary.runs {
            format!(
                "verdict: `{}` does not show the V3-05 bug: {}/{} racing calls succeeded",
                cmd.display(),
                summary.ok,
                summary.runs
            )
        } else {
            format!(
                "verdict: `{}` does not show daemon_unreachable, but {} of {} racing calls failed otherwise",
                cmd.display(),
                summary.other_failures(),
                summary.runs
            )
        };
        println!("{verdict}");
        return Ok(ExitCode::SUCCESS);
    }

    let cmd = wrapper.expect("built above when no wrapper command is given");
    let prefix = run_mode(&cmd, &base, Some(BridgeMode::Prefix), runs)?;
    let fixed = run_mode(&cmd, &base, Some(BridgeMode::Fixed), runs)?;
    print_table(&[&prefix, &fixed], &cmd.display());
    let reproduced = prefix.always_reproduced_bug();
    let repaired = fixed.always_fixed();
    let verdict = match (reproduced, repaired) {
        (true, true) => "verdict: PASS: prefix mode reproduced V3-05 in every run; fixed mode answered every racing call and held exactly one daemon connection after recovery".to_owned(),
        _ => format!(
            "verdict: FAIL: {}; {}",
            if reproduced {
                "prefix mode reproduced V3-05 in every run".to_owned()
            } else {
                format!("prefix mode reproduced V3-05 in only {}/{} runs", prefix.daemon_unreachable, prefix.runs)
            },
            if repaired {
                "fixed mode passed every run".to_owned()
            } else {
                format!(
                    "fixed mode answered {}/{} racing calls, daemon connections after recovery: {}",
                    fixed.ok, fixed.runs, fixed.conns_after
                )
            }
        ),
    };
    println!("{verdict}");
    Ok(if reproduced && repaired {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Prints the race table: a row per mode, and which modes saw stdout
/// defects.
fn print_table(summaries: &[&RaceSummary], wrapper: &str) {
    let header = [
        "mode",
        "runs",
        "racing ok",
        "daemon_unreachable",
        "other failures",
        "median racing latency",
        "daemon conns after recovery",
    ];
    let rows: Vec<[String; 7]> = summaries
        .iter()
        .map(|s| {
            [
                mode_label(s.mode),
                s.runs.to_string(),
                s.ok.to_string(),
                s.daemon_unreachable.to_string(),
                s.other_failures().to_string(),
                s.median_racing_latency
                    .map_or_else(|| "n/a".to_owned(), format_ms),
                s.conns_after.to_string(),
            ]
        })
        .collect();
    println!("\nwrapper: {wrapper}");
    for line in table_lines(&header, &rows, Align::FirstLeft) {
        println!("{line}");
    }
    for s in summaries {
        if s.runs_with_defects > 0 {
            println!(
                "{}: {} run(s) saw stdout framing defects",
                mode_label(s.mode),
                s.runs_with_defects
            );
        }
    }
}
