//! `cargo xtask race --sweep`: maps the race window with the harness's
//! sweep and prints its table, a line per subject and where the report went.

use std::process::ExitCode;

use anyhow::{Context, Result};
use harness::scenario::race::RaceConfig;
use harness::scenario::sweep::{self, Subject, SweepConfig};

use crate::race::RaceArgs;

/// Maps the race window for `subjects` (each run starting from `race`),
/// prints the report and returns 0, or 130 if a signal stopped it early.
pub fn run(args: &RaceArgs, subjects: Vec<Subject>, race: RaceConfig) -> Result<ExitCode> {
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
    let (report, files) = sweep::run_sweep_in_terminal(&cfg, args.out_dir.as_deref())?;
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
