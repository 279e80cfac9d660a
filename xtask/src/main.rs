//! `cargo xtask`: project automation. Thin: parses arguments and calls the
//! `harness` library.

mod bench;
mod soak;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use harness::bins::{self, Profile};
use harness::scenario::down_up::{DownUpConfig, run_down_up};
use harness::scenario::format_ms;
use harness::scenario::hang::{HangConfig, run_hang};
use harness::scenario::race::{RaceConfig, RaceSummary, run_race};
use harness::scenario::storm::{StormConfig, run_storm};
use harness::scenario::sweep::{
    self, Subject, SweepConfig, TerminalProgress, run_sweep, stop_on_signals,
};
use harness::{BridgeMode, WrapperCommand};

/// Project automation for the iai-mcp wrapper workspace.
#[derive(Debug, Parser)]
#[command(bin_name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

/// The tasks.
#[derive(Debug, Subcommand)]
enum Task {
    /// Show the V3-05 disconnect race live: run it against the wrapper in
    /// prefix mode (must fail with daemon_unreachable every time) and in
    /// fixed mode (must succeed every time, holding one daemon connection).
    /// With --sweep, map the whole race window instead.
    Race(RaceArgs),
    /// Measure the wrapper (release build) against the floor of talking to
    /// the fake daemon directly: cold start, latency, throughput, memory,
    /// recovery. Prints a Markdown table; writes target/bench/.
    Bench(bench::BenchArgs),
    /// Soak the wrapper (fixed mode): calls keep flowing for --seconds while
    /// the fake daemon drops, hangs, delays, garbles, slices, cuts, goes
    /// down and up, strays and duplicates on a seeded schedule. Prints the
    /// report; exits 0 only if no call was lost or answered twice, no write
    /// ran twice, descriptors and memory stayed flat and the wrapper lived.
    Soak(soak::SoakArgs),
}

#[derive(Debug, Args)]
struct RaceArgs {
    /// Runs per mode [default: 10; with --sweep, 3 per mode and point].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    runs: Option<u32>,
    /// Reconnect delay given to the wrapper: the width of the race window.
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    delay_ms: u64,
    /// Time between the daemon dropping the connection and the racing call.
    #[arg(
        long,
        default_value_t = 50,
        value_name = "MS",
        conflicts_with = "sweep"
    )]
    offset_ms: u64,
    /// Test this wrapper command line instead (e.g. "node /path/dist/index.js"),
    /// N runs without setting a bridge mode, and report whether it shows the
    /// V3-05 bug.
    #[arg(long, value_name = "CMD")]
    wrapper_cmd: Option<String>,
    /// Build and run the release binaries.
    #[arg(long)]
    release: bool,
    /// Also run the live fault scenarios (storm, down-up, hang) in fixed
    /// mode, and print one table with a row per scenario and mode; exit 0
    /// only if every row passes. With --wrapper-cmd every scenario runs
    /// without setting a bridge mode, and the table is a report (exit 0).
    #[arg(long)]
    all: bool,
    /// Map the race window: run the race in both modes (or the
    /// --wrapper-cmd, mode unset) at every offset from --from-ms to --to-ms
    /// and without the widener (delay 0), --runs times each; print a table
    /// and write sweep.json and sweep.svg. A report, not a verdict: exit 0
    /// (130 when interrupted by Ctrl-C, after writing the partial report).
    #[arg(long, conflicts_with = "all")]
    sweep: bool,
    /// With --sweep: the first offset.
    #[arg(long, default_value_t = 0, value_name = "MS", requires = "sweep")]
    from_ms: u64,
    /// With --sweep: the last offset [default: the delay plus 200 ms].
    #[arg(long, value_name = "MS", requires = "sweep")]
    to_ms: Option<u64>,
    /// With --sweep: the step between offsets.
    #[arg(long, default_value_t = sweep::DEFAULT_STEP_MS, value_name = "MS",
          requires = "sweep", value_parser = clap::value_parser!(u64).range(1..))]
    step_ms: u64,
    /// With --sweep: runs at once [default: the available parallelism].
    #[arg(long, value_name = "N", requires = "sweep",
          value_parser = clap::value_parser!(u64).range(1..))]
    jobs: Option<u64>,
    /// With --sweep: seed of the (shuffled, reproducible) run order.
    #[arg(long, default_value_t = sweep::DEFAULT_SEED, requires = "sweep")]
    seed: u64,
    /// With --sweep: where to write sweep.json and sweep.svg [default:
    /// target/race-report].
    #[arg(long, value_name = "DIR", requires = "sweep")]
    out_dir: Option<PathBuf>,
}

/// Runs per mode of the race when --runs is not given.
const DEFAULT_RACE_RUNS: u32 = 10;

fn main() -> Result<ExitCode> {
    match Cli::parse().task {
        Task::Race(args) => race(&args),
        Task::Bench(args) => bench::run(&args, &bench::workspace_root()),
        Task::Soak(args) => soak::run(&args),
    }
}

fn race(args: &RaceArgs) -> Result<ExitCode> {
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
        ..RaceConfig::default()
    };

    if args.sweep {
        let subjects = match (&foreign, &wrapper) {
            (Some(cmd), _) => vec![Subject::command(cmd.clone(), None)],
            (None, Some(cmd)) => Subject::modes(cmd, &[BridgeMode::Prefix, BridgeMode::Fixed]),
            (None, None) => unreachable!("the wrapper is built when no command is given"),
        };
        return run_race_sweep(args, subjects, base);
    }

    let runs = args.runs.unwrap_or(DEFAULT_RACE_RUNS);
    if args.all {
        return Ok(match foreign {
            Some(cmd) => {
                run_all(&cmd, &base, runs, None);
                ExitCode::SUCCESS
            }
            None => {
                let cmd = wrapper.expect("built above when no wrapper command is given");
                if run_all(&cmd, &base, runs, Some(BridgeMode::Fixed)) {
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

/// `--sweep`: maps the race window for `subjects` and prints the table, a
/// line per subject and where the report went.
fn run_race_sweep(args: &RaceArgs, subjects: Vec<Subject>, race: RaceConfig) -> Result<ExitCode> {
    let cfg = SweepConfig {
        subjects,
        delay_ms: args.delay_ms,
        from_ms: args.from_ms,
        to_ms: args.to_ms,
        step_ms: args.step_ms,
        production_point: true,
        runs: args.runs.unwrap_or(sweep::DEFAULT_RUNS),
        jobs: match args.jobs {
            Some(jobs) => usize::try_from(jobs).context("--jobs")?,
            None => sweep::default_jobs(),
        },
        seed: args.seed,
        race,
    };
    cfg.validate()?;
    let stop = stop_on_signals().context("installing the SIGINT handler")?;
    let report = run_sweep(&cfg, &stop, &mut TerminalProgress::new())?;
    let out_dir = args.out_dir.clone().unwrap_or_else(sweep::default_out_dir);
    let files = report
        .write_files(&out_dir)
        .with_context(|| format!("writing the report to {}", out_dir.display()))?;
    let mut wrappers: Vec<String> = report.subjects.iter().map(|s| s.wrapper.clone()).collect();
    wrappers.dedup();
    println!("\nwrapper: {}", wrappers.join(", "));
    print!("{}", report.table());
    println!();
    for line in report.subject_summaries() {
        println!("{line}");
    }
    println!("report: {}", files.json.display());
    println!("chart:  {}", files.svg.display());
    Ok(if report.partial {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

/// Runs the race `runs` times in `mode`, reporting progress on stderr.
fn run_mode(
    cmd: &WrapperCommand,
    base: &RaceConfig,
    mode: Option<BridgeMode>,
    runs: u32,
) -> Result<RaceSummary> {
    let cfg = RaceConfig {
        mode,
        ..base.clone()
    };
    let label = mode_label(mode);
    let mut reports = Vec::new();
    for run in 1..=runs {
        let report =
            run_race(cmd, &cfg).with_context(|| format!("{label} race run {run}/{runs}"))?;
        eprintln!("{label} run {run}/{runs}: {report}");
        reports.push(report);
    }
    Ok(RaceSummary::from_reports(mode, &reports))
}

fn mode_label(mode: Option<BridgeMode>) -> String {
    mode.map_or_else(|| "(unset)".to_owned(), |m| m.to_string())
}

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
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].len())
                .chain([header[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: Vec<&str>| {
        cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (cell, w))| {
                if i == 0 {
                    format!("{cell:<w$}")
                } else {
                    format!("{cell:>w$}")
                }
            })
            .collect::<Vec<_>>()
            .join(" | ")
    };
    println!("\nwrapper: {wrapper}");
    println!("{}", line(header.to_vec()));
    println!(
        "{}",
        widths
            .iter()
            .map(|w| "-".repeat(*w))
            .collect::<Vec<_>>()
            .join("-|-")
    );
    for row in &rows {
        println!("{}", line(row.iter().map(String::as_str).collect()));
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

/// One row of the `--all` table.
struct Row {
    scenario: &'static str,
    mode: String,
    result: &'static str,
    figures: String,
}

impl Row {
    fn new(
        scenario: &'static str,
        mode: Option<BridgeMode>,
        passed: bool,
        figures: String,
    ) -> Self {
        Self {
            scenario,
            mode: mode_label(mode),
            result: if passed { "pass" } else { "fail" },
            figures,
        }
    }

    fn error(scenario: &'static str, mode: Option<BridgeMode>, error: &anyhow::Error) -> Self {
        Self {
            scenario,
            mode: mode_label(mode),
            result: "error",
            figures: format!("{error:#}"),
        }
    }
}

/// `--all`: the race in both modes (or, for a foreign wrapper, unset) and
/// the fault scenarios in `fault_mode`; prints one table and returns whether
/// every row passed.
fn run_all(
    cmd: &WrapperCommand,
    base: &RaceConfig,
    runs: u32,
    fault_mode: Option<BridgeMode>,
) -> bool {
    let fake_daemon = base.fake_daemon_bin.as_deref();
    let race_modes = match fault_mode {
        Some(_) => vec![Some(BridgeMode::Prefix), Some(BridgeMode::Fixed)],
        None => vec![None],
    };
    let mut rows = Vec::new();
    for mode in race_modes {
        rows.push(match run_mode(cmd, base, mode, runs) {
            Ok(summary) => race_row(&summary),
            Err(e) => Row::error("race", mode, &e),
        });
    }
    rows.push(fault_row("storm", fault_mode, || {
        let cfg = StormConfig {
            mode: fault_mode,
            fake_daemon_bin: fake_daemon.map(Path::to_path_buf),
            ..StormConfig::default()
        };
        let report = run_storm(cmd, &cfg)?;
        eprintln!("storm: {report}");
        Ok((report.passed(), report.key_figures()))
    }));
    rows.push(fault_row("down-up", fault_mode, || {
        let cfg = DownUpConfig {
            mode: fault_mode,
            fake_daemon_bin: fake_daemon.map(Path::to_path_buf),
            ..DownUpConfig::default()
        };
        let report = run_down_up(cmd, &cfg)?;
        eprintln!("down-up: {report}");
        Ok((report.passed(), report.key_figures()))
    }));
    rows.push(fault_row("hang", fault_mode, || {
        let cfg = HangConfig {
            mode: fault_mode,
            fake_daemon_bin: fake_daemon.map(Path::to_path_buf),
            ..HangConfig::default()
        };
        let report = run_hang(cmd, &cfg)?;
        eprintln!("hang: {report}");
        Ok((report.passed(), report.key_figures()))
    }));

    print_rows(&rows, &cmd.display());
    let failed: Vec<String> = rows
        .iter()
        .filter(|r| r.result != "pass")
        .map(|r| format!("{} ({})", r.scenario, r.mode))
        .collect();
    let passed = failed.is_empty();
    match (fault_mode, passed) {
        (None, _) => println!(
            "report for `{}`: {} of {} rows pass (a foreign wrapper is reported, not judged)",
            cmd.display(),
            rows.len() - failed.len(),
            rows.len()
        ),
        (Some(_), true) => println!("verdict: PASS: every scenario passed"),
        (Some(_), false) => println!("verdict: FAIL: {}", failed.join(", ")),
    }
    passed
}

fn fault_row(
    scenario: &'static str,
    mode: Option<BridgeMode>,
    run: impl FnOnce() -> Result<(bool, String), harness::HarnessError>,
) -> Row {
    eprintln!("running {scenario} ({})", mode_label(mode));
    match run() {
        Ok((passed, figures)) => Row::new(scenario, mode, passed, figures),
        Err(e) => Row::error(scenario, mode, &anyhow::Error::new(e)),
    }
}

/// The race in prefix mode passes when it reproduced the bug every time;
/// otherwise when every racing call succeeded with one connection after.
fn race_row(summary: &RaceSummary) -> Row {
    let passed = match summary.mode {
        Some(BridgeMode::Prefix) => summary.always_reproduced_bug(),
        _ => summary.always_fixed(),
    };
    let mut figures = format!(
        "racing ok {}/{}, daemon_unreachable {}/{}",
        summary.ok, summary.runs, summary.daemon_unreachable, summary.runs
    );
    if summary.other_failures() > 0 {
        figures.push_str(&format!(", other failures {}", summary.other_failures()));
    }
    figures.push_str(&format!(
        ", median {}, conns {}",
        summary
            .median_racing_latency
            .map_or_else(|| "n/a".to_owned(), format_ms),
        summary.conns_after
    ));
    if summary.runs_with_defects > 0 {
        figures.push_str(&format!(
            ", runs with stdout defects {}",
            summary.runs_with_defects
        ));
    }
    Row::new("race", summary.mode, passed, figures)
}

fn print_rows(rows: &[Row], wrapper: &str) {
    let header = ["scenario", "mode", "result", "key figures"];
    let cells: Vec<[&str; 4]> = rows
        .iter()
        .map(|r| [r.scenario, r.mode.as_str(), r.result, r.figures.as_str()])
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            cells
                .iter()
                .map(|c| c[i].len())
                .chain([header[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[&str; 4]| {
        cells
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect::<Vec<_>>()
            .join(" | ")
            .trim_end()
            .to_owned()
    };
    println!("\nwrapper: {wrapper}");
    println!("{}", line(&header));
    println!(
        "{}",
        widths
            .iter()
            .map(|w| "-".repeat(*w))
            .collect::<Vec<_>>()
            .join("-|-")
    );
    for row in &cells {
        println!("{}", line(row));
    }
}
