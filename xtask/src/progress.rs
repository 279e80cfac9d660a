//! Running the race several times in one mode, with a line of progress per
//! run on stderr (shared by `race` and `race --all`).

use anyhow::{Context, Result};
use harness::scenario::race::{RaceConfig, RaceSummary, run_races};
use harness::wrapper::mode_label;
use harness::{BridgeMode, WrapperCommand};

/// Runs the race `runs` times in `mode`, reporting progress on stderr.
pub fn run_mode(
    cmd: &WrapperCommand,
    base: &RaceConfig,
    mode: Option<BridgeMode>,
    runs: u32,
) -> Result<RaceSummary> {
    let label = mode_label(mode);
    run_races(cmd, base, mode, runs, |run, report| {
        eprintln!("{label} run {run}/{runs}: {report}");
    })
    .with_context(|| format!("{label} race runs"))
}
