//! `cargo xtask race --sweep`: maps the race window with the harness's
//! sweep and prints its table, a line per subject and where the report went.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use harness::scenario::race::RaceConfig;
use harness::scenario::sweep::{self, Subject, SweepConfig};
use std::path::PathBuf;

/// Options of `cargo xtask race --sweep` (flattened into its arguments).
#[derive(Debug, Args)]
pub struct SweepOpts {
    /// With --sweep: the first offset.
    #[arg(long, default_value_t = 0, value_name = "MS", requires = "sweep")]
    pub(crate) from_ms: u64,
    /// With --sweep: the last offset [default: the delay plus 200 ms].
    #[arg(long, value_name = "MS", requires = "sweep")]
    pub(crate) to_ms: Option<u64>,
    /// With --sweep: the step between offsets.
    #[arg(long, default_value_t = sweep::DEFAULT_STEP_MS, value_name = "MS",
          requires = "sweep", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) step_ms: u64,
    /// With --sweep: runs at once [default: the available parallelism].
    #[arg(long, value_name = "N", requires = "sweep",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) jobs: Option<u64>,
    /// With --sweep: seed of the (shuffled, reproducible) run order.
    #[arg(long, default_value_t = sweep::DEFAULT_SEED, requires = "sweep")]
    pub(crate) seed: u64,
    /// With --sweep: where to write sweep.json and sweep.svg [default:
    /// target/race-report].
    #[arg(long, value_name = "DIR", requires = "sweep")]
    pub(crate) out_dir: Option<PathBuf>,
}

/// Maps the race window for `subjects` (each run starting from `race`),
/// prints the report and returns 0, or 130 if a signal stopped it early.
pub fn run(
    args: &SweepOpts,
    runs: Option<u32>,
    subjects: Vec<Subject>,
    race: RaceConfig,
) -> Result<ExitCode> {
    let cfg = SweepConfig {
        subjects,
        delay_ms: race.delay_ms,
        from_ms: args.from_ms,
        to_ms: args.to_ms,
        step_ms: args.step_ms,
        production_point: true,
        runs: runs.unwrap_or(sweep::DEFAULT_RUNS),
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
