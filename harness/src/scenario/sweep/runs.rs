//! How each run of a sweep ended: as told to an observer ([`RunEvent`])
//! and as kept, in grid order, for the report ([`Grid`]).

use super::config::Point;
use crate::scenario::race::{RaceReport, Tally};
use crate::wrapper::Subject;

/// How one run ended: its report, or the harness error that kept it from
/// measuring anything.
pub type RunResult = Result<RaceReport, String>;

/// One finished run, as told to a [`SweepObserver`].
#[derive(Debug)]
pub struct RunEvent<'a> {
    /// Whose run it was.
    pub subject: &'a Subject,
    /// At which timing.
    pub point: Point,
    /// Its index among the point's runs, from 0.
    pub run: u32,
    /// How it ended.
    pub result: &'a RunResult,
    /// Runs finished so far, this one included.
    pub done: usize,
    /// Runs in the whole sweep.
    pub planned: usize,
    /// Outcomes so far, this one included.
    pub tally: Tally,
}

/// Results by subject, then point, then run index (`None`: not run).
pub(crate) type Grid = Vec<Vec<Vec<Option<RunResult>>>>;
