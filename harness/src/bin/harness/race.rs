//! The V3-05 race: single runs, both modes side by side, the scorecard of
//! this wrapper (`--all`), and the sweep over the race's timing.

use std::process::ExitCode;

use anyhow::{Context, Result};
use devkit::format::format_ms;
use devkit::table::{Align, table_lines};
use harness::cli::race::{RaceArgs, SweepArgs};
use harness::cli::target::Target;
use harness::report::sweep::default_out_dir;
use harness::scenario::race::{RaceConfig, RaceReport, RaceSummary, run_race};
use harness::scenario::sweep::{self, SweepConfig};
use harness::wrapper::{Subject, mode_label};
use harness::{BridgeMode, Check, Judged, Prop, WrapperCommand};

use super::scenario::wrapper_command;

/// Runs the race as `args` say and prints the table and the verdict.
pub fn race(args: &RaceArgs) -> Result<ExitCode> {
    let base = RaceConfig {
        setup: args.target.setup(),
        ..args.timing.clone()
    };
    let cmd = wrapper_command(&args.target)?;
    if args.all {
        return super::score::score_subjects(subjects(&args.target, &cmd), base, None);
    }
    let mut summaries = Vec::new();
    let mut all_runs = Vec::new();
    for subject in subjects(&args.target, &cmd) {
        let mut cfg = base.clone();
        cfg.setup.mode = subject.mode;
        let mut reports = Vec::new();
        for run in 1..=args.runs {
            let report = run_race(&cmd, &cfg)?;
            if !args.target.json {
                let mode = mode_label(subject.mode);
                eprintln!("{mode}: run {run}/{}: {report}", args.runs);
            }
            reports.push(report);
        }
        let summary = RaceSummary::from_runs(subject.mode, reports.iter().map(Some));
        summaries.push(summary);
        all_runs.push(reports);
    }
    if args.target.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "wrapper": cmd.display(),
                "delay_ms": base.delay_ms,
                "offset_ms": base.offset_ms,
                "summaries": summaries,
                "runs": all_runs,
            }))?
        );
    } else {
        print_table(&summaries, &cmd.display());
    }
    let verdict = verdict(&args.target, &summaries, &all_runs);
    println!("{}", verdict.line);
    Ok(args.target.exit_code(verdict.passed))
}

/// The subjects: this wrapper in both modes, or the command in its mode.
fn subjects(target: &Target, cmd: &WrapperCommand) -> Vec<Subject> {
    match (&target.wrapper_cmd, target.mode) {
        (None, None) => Subject::modes(cmd, &[BridgeMode::Prefix, BridgeMode::Fixed]),
        (_, mode) => vec![Subject::command(cmd.clone(), mode)],
    }
}

/// The verdict of a race command: its line, and whether it passed.
struct Verdict {
    line: String,
    passed: bool,
}

/// The verdict: in both modes, prefix must show V3-05 in every run and
/// fixed must pass every run; otherwise the runs' own checks decide.
fn verdict(target: &Target, summaries: &[RaceSummary], runs: &[Vec<RaceReport>]) -> Verdict {
    if let [prefix, fixed] = summaries
        && target.wrapper_cmd.is_none()
        && target.mode.is_none()
    {
        let passed = prefix.always_reproduced_bug() && fixed.always_fixed();
        let line = format!(
            "verdict: {}: prefix mode reproduced V3-05 in {}/{} runs; fixed mode answered {}/{} racing calls holding {} daemon connection(s) after recovery",
            if passed { "PASS" } else { "FAIL" },
            prefix.tally.daemon_unreachable,
            prefix.runs,
            fixed.tally.ok,
            fixed.runs,
            fixed.conns_after
        );
        return Verdict { line, passed };
    }
    let checks: Vec<Check> = runs.iter().flatten().flat_map(Judged::checks).collect();
    let failed: Vec<&Check> = checks.iter().filter(|c| !c.held()).collect();
    let shows = failed.iter().any(|c| c.prop == Prop::ReconnectCall);
    let line = match failed.first() {
        None => format!("verdict: PASS: every run held ({} checks)", checks.len()),
        Some(first) => format!(
            "verdict: FAIL{}: {} of {} checks failed, first: {first}",
            if shows { " (shows the V3-05 bug)" } else { "" },
            failed.len(),
            checks.len()
        ),
    };
    Verdict {
        line,
        passed: failed.is_empty(),
    }
}

/// Prints the race table: a row per mode, and which modes saw stdout
/// defects.
fn print_table(summaries: &[RaceSummary], wrapper: &str) {
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
                s.tally.ok.to_string(),
                s.tally.daemon_unreachable.to_string(),
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
    for s in summaries.iter().filter(|s| s.runs_with_defects > 0) {
        println!(
            "{}: {} run(s) saw stdout framing defects",
            mode_label(s.mode),
            s.runs_with_defects
        );
    }
}

/// Exit code of a sweep stopped by a signal before it was done.
const INTERRUPTED: u8 = 130;

/// Runs the sweep, prints its table (or JSON) and where its files went.
pub fn sweep(args: &SweepArgs) -> Result<ExitCode> {
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
            subjects.extend(modes.iter().map(|&m| Subject::command(cmd.clone(), m)));
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
    cfg.validate()?;
    let stop = sweep::stop_on_signals().context("installing the SIGINT handler")?;
    let report = sweep::run_sweep(&cfg, &stop, &mut sweep::TerminalProgress::new())?;
    let out_dir = args.out_dir.clone().unwrap_or_else(default_out_dir);
    let files = report
        .write_files(&out_dir)
        .with_context(|| format!("writing the report to {}", out_dir.display()))?;
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
    let code = if report.partial { INTERRUPTED } else { 0 };
    Ok(ExitCode::from(code))
}
