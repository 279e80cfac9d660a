//! What declaring a scenario means: the [`Scenario`] trait, which each
//! scenario implements in its own module beside its configuration, run and
//! report, and [`Scoring`], what the scorecard hands each scenario it runs.
//! From that one declaration follow the scenario's `harness` command, its
//! line in `harness --help` and `cargo xtask --help`, and its place in the
//! scorecard (the list of every scenario is `scenario::ALL`).

use std::fmt;
use std::time::Duration;

use serde::Serialize;

use super::property::Judged;
use super::setup::Setup;
use crate::error::HarnessError;
use crate::wrapper::WrapperCommand;

/// A scenario: its name and what it is for, its configuration, its
/// command's settings, its run, its self-judging report, and its runs in
/// the scorecard.
pub trait Scenario {
    /// Its name in tables and on the command line.
    const NAME: &'static str;
    /// What it does, in one line: its entry in `harness --help` and
    /// `cargo xtask --help`.
    const ABOUT: &'static str;
    /// Whether `harness NAME` runs it with the options every scenario takes
    /// (the wrapper to test, how to report) and its own settings; `false`
    /// where the harness has a command of its own for it (the race's).
    const COMMAND: bool = true;
    /// What it can be told.
    type Config: Default + Clone;
    /// Its command's settings: the configuration itself, or a small
    /// structure beside it where the command line's default differs from
    /// the library's (the soak's seed).
    type Args: clap::Args + fmt::Debug + Into<Self::Config>;
    /// What it found.
    type Report: Judged + Serialize + fmt::Display;

    /// The configuration's [`Setup`].
    fn setup(cfg: &mut Self::Config) -> &mut Setup;

    /// Runs it once against the wrapper `cmd` starts.
    fn run(cmd: &WrapperCommand, cfg: &Self::Config) -> Result<Self::Report, HarnessError>;

    /// The configurations the scorecard runs it with, each judged (none:
    /// it is not scored); their setup is the scorecard's.
    fn scored(scoring: &Scoring) -> Vec<Self::Config>;

    /// What to say before a run from the command line, on stderr.
    fn announce(_cmd: &WrapperCommand, _cfg: &Self::Config) -> Option<String> {
        None
    }

    /// The command that repeats a run from the command line, printed after
    /// its report.
    fn replay(_cfg: &Self::Config) -> Option<String> {
        None
    }
}

/// What the scorecard hands every scenario it runs: the setup of the
/// wrapper under test, and the amounts that set the scorecard's pace.
#[derive(Debug, Clone)]
pub struct Scoring {
    /// The wrapper's bridge mode and the fake daemon.
    pub setup: Setup,
    /// Race runs per wrapper (each with a second drop).
    pub race_runs: u32,
    /// The race's timing, when not its defaults (`race --all` passes its
    /// own).
    pub race_timing: Option<RaceTiming>,
    /// Lines the hostile client sends.
    pub hostile_lines: usize,
    /// How long the soak runs (zero: no soak).
    pub soak: Duration,
    /// How long a wrapper may take to answer again after the daemon is
    /// back (race, down-up and herd) before it is judged to have stopped.
    pub recovery_timeout: Duration,
}

/// The race's timing flags, carried into the scorecard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RaceTiming {
    /// The wrapper's reconnect delay: the width of the race window.
    pub delay_ms: u64,
    /// Time between the drop and the racing call.
    pub offset_ms: u64,
}
