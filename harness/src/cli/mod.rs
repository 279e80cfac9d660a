//! The `harness` binary's command line: the race's commands ([`race`]),
//! the scorecard's ([`score`]), and one per scenario ([`scenario`], made
//! from each scenario's declaration). The binary runs what it parses;
//! `cargo xtask` passes every task that is not its own or the kits' on to
//! it (`cargo xtask help` prints this list).

pub mod race;
pub mod scenario;
pub mod score;
pub mod target;

use clap::{Parser, Subcommand};

use crate::scenario::Scenario as _;
use crate::scenario::race::Race;

/// Runs scripted scenarios against an MCP wrapper and the fake iai-mcp
/// daemon and prints what happened and a verdict. Exit code: 0 when this
/// workspace's wrapper passed (another wrapper is reported on, not judged),
/// 1 when it failed, 2 on a usage error or when the harness itself failed.
#[derive(Debug, Parser)]
#[command(name = "harness", version)]
pub struct Cli {
    /// What to run.
    #[command(subcommand)]
    pub task: Task,
}

/// What the harness can do.
#[derive(Debug, Subcommand)]
pub enum Task {
    /// The race, in both modes or one.
    #[command(about = Race::ABOUT)]
    Race(race::RaceArgs),
    /// Every scenario against each wrapper: one table of properties
    /// (contract, then this wrapper's policy) by wrapper, each failure with
    /// its cause; writes score.json and a self-contained score.html.
    Score(score::ScoreArgs),
    /// A scenario of its own command.
    #[command(flatten)]
    Scenario(scenario::ScenarioTask),
    /// Map the race window: the race for each mode (or wrapper command) at
    /// every offset of a range and without the widener; writes sweep.json
    /// and sweep.svg. Ctrl-C stops it and still writes the partial report
    /// (exit code 130).
    Sweep(race::SweepArgs),
}
