//! The race's commands: `race` (single runs, both modes side by side, the
//! scorecard of both with `--all`) and `sweep` (the race over its timing).

use std::path::PathBuf;

use clap::Args;

use super::target::Target;
use crate::scenario::race::RaceConfig;
use crate::scenario::sweep;
use crate::wrapper::BridgeMode;

/// The race: drop the wrapper's daemon connection, then call a tool while
/// the wrapper reconnects.
#[derive(Debug, Args)]
pub struct RaceArgs {
    /// Which wrapper, and how to report.
    #[command(flatten)]
    pub target: Target,
    /// Runs per mode.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
    /// The race's timing (`--delay-ms`, `--offset-ms`).
    #[command(flatten)]
    pub timing: RaceConfig,
    /// Run the whole scorecard instead (every scenario; this workspace's
    /// wrapper in both modes, or the --wrapper-cmd), as `score` does.
    #[arg(long)]
    pub all: bool,
}

/// Map the race window: the race at every offset of a range, for each
/// mode or wrapper command, several times each.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Wrapper command line to sweep (repeatable; each is one line of the
    /// chart, run without a bridge mode unless --mode is given), e.g.
    /// "node /path/dist/index.js". Default: this workspace's
    /// iai-mcp-wrapper in prefix and fixed mode.
    #[arg(long, value_name = "CMD")]
    pub wrapper_cmd: Vec<String>,
    /// Bridge mode to sweep (repeatable; default: prefix and fixed for this
    /// workspace's wrapper, unset for --wrapper-cmd).
    #[arg(long, value_name = "fixed|prefix")]
    pub mode: Vec<BridgeMode>,
    /// Reconnect delay given to the wrapper: the width of the race window.
    #[arg(long, default_value_t = sweep::DEFAULT_DELAY_MS, value_name = "MS")]
    pub delay_ms: u64,
    /// First offset of the racing call after the drop.
    #[arg(long, default_value_t = 0, value_name = "MS")]
    pub from_ms: u64,
    /// Last offset (default: the delay plus 200 ms).
    #[arg(long, value_name = "MS")]
    pub to_ms: Option<u64>,
    /// Step between offsets.
    #[arg(long, default_value_t = sweep::DEFAULT_STEP_MS, value_name = "MS",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub step_ms: u64,
    /// Leave out the production point (delay 0, offset 0: no widener).
    #[arg(long)]
    pub no_production: bool,
    /// Runs per subject and point.
    #[arg(long, default_value_t = sweep::DEFAULT_RUNS,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
    /// Runs at once (default: the available parallelism). Each run has its
    /// own socket and processes; results do not depend on it.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub jobs: Option<u64>,
    /// Seed of the (shuffled, reproducible) order the runs start in.
    #[arg(long, default_value_t = sweep::DEFAULT_SEED)]
    pub seed: u64,
    /// Where to write sweep.json and sweep.svg (default:
    /// target/race-report in this workspace).
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// Print the JSON report on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
}
