//! The scorecard's command: every scenario against each wrapper.

use std::path::PathBuf;

use clap::Args;

use crate::score::ScoreConfig;

/// Run every scenario against each wrapper and print one table of
/// properties by wrapper.
#[derive(Debug, Args)]
pub struct ScoreArgs {
    /// A wrapper command line to score (repeatable; one column each), run
    /// without a bridge mode. Default: this workspace's iai-mcp-wrapper in
    /// prefix and fixed mode.
    #[arg(long, value_name = "CMD")]
    pub wrapper_cmd: Vec<String>,
    /// How many race runs, and how long a soak.
    #[command(flatten)]
    pub amounts: ScoreConfig,
    /// Where to write score.json and score.html [default: target/score].
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}
