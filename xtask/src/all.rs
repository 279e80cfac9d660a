//! `cargo xtask race --all`: the race and the live fault scenarios (storm,
//! down-up, hang), one table with a row per scenario and mode.

use std::fmt;

use harness::scenario::down_up::{DownUpConfig, DownUpReport, run_down_up};
use harness::scenario::hang::{HangConfig, HangReport, run_hang};
use harness::scenario::race::{RaceConfig, RaceSummary};
use harness::scenario::storm::{StormConfig, StormReport, run_storm};
use harness::scenario::{Align, format_ms, table_lines};
use harness::{BridgeMode, HarnessError, WrapperCommand};

use crate::progress::run_mode;
use harness::wrapper::mode_label;

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
pub fn run(
    cmd: &WrapperCommand,
    base: &RaceConfig,
    runs: u32,
    fault_mode: Option<BridgeMode>,
) -> bool {
    let fake_daemon_bin = || base.fake_daemon_bin.clone();
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
        run_storm(
            cmd,
            &StormConfig {
                mode: fault_mode,
                fake_daemon_bin: fake_daemon_bin(),
                transport: base.transport,
                ..StormConfig::default()
            },
        )
    }));
    rows.push(fault_row("down-up", fault_mode, || {
        run_down_up(
            cmd,
            &DownUpConfig {
                mode: fault_mode,
                fake_daemon_bin: fake_daemon_bin(),
                transport: base.transport,
                ..DownUpConfig::default()
            },
        )
    }));
    rows.push(fault_row("hang", fault_mode, || {
        run_hang(
            cmd,
            &HangConfig {
                mode: fault_mode,
                fake_daemon_bin: fake_daemon_bin(),
                transport: base.transport,
                ..HangConfig::default()
            },
        )
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

/// What a fault scenario's report gives its `--all` row.
trait FaultReport: fmt::Display {
    /// Whether every must-condition held.
    fn passed(&self) -> bool;
    /// The figures that matter, on one line.
    fn key_figures(&self) -> String;
}

macro_rules! fault_report {
    ($($report:ty),*) => {$(
        impl FaultReport for $report {
            fn passed(&self) -> bool {
                <$report>::passed(self)
            }
            fn key_figures(&self) -> String {
                <$report>::key_figures(self)
            }
        }
    )*};
}

fault_report!(StormReport, DownUpReport, HangReport);

/// Runs one fault scenario, prints its report on stderr, and makes its row.
fn fault_row<R: FaultReport>(
    scenario: &'static str,
    mode: Option<BridgeMode>,
    run: impl FnOnce() -> Result<R, HarnessError>,
) -> Row {
    eprintln!("running {scenario} ({})", mode_label(mode));
    match run() {
        Ok(report) => {
            eprintln!("{scenario}: {report}");
            Row::new(scenario, mode, report.passed(), report.key_figures())
        }
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

/// Prints the `--all` table.
fn print_rows(rows: &[Row], wrapper: &str) {
    let header = ["scenario", "mode", "result", "key figures"];
    let cells: Vec<[&str; 4]> = rows
        .iter()
        .map(|r| [r.scenario, r.mode.as_str(), r.result, r.figures.as_str()])
        .collect();
    println!("\nwrapper: {wrapper}");
    for line in table_lines(&header, &cells, Align::Left) {
        println!("{line}");
    }
}
