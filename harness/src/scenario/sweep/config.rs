//! What a sweep is told: the timings it runs the race at ([`Point`]), its
//! settings ([`SweepConfig`]) and their defaults, and why it can refuse
//! them ([`SweepError`]).

use std::collections::BTreeSet;
use std::num::NonZeroUsize;
use std::thread;

use serde::Serialize;

use crate::error::HarnessError;
use crate::scenario::race::RaceConfig;
use crate::wrapper::Subject;

/// The default reconnect delay: the width of the window, in milliseconds.
pub const DEFAULT_DELAY_MS: u64 = 1000;
/// The default step between two offsets, in milliseconds.
pub const DEFAULT_STEP_MS: u64 = 100;
/// How far past the delay the offsets go by default, in milliseconds.
pub const DEFAULT_MARGIN_MS: u64 = 200;
/// The default number of runs per subject and point.
pub const DEFAULT_RUNS: u32 = 3;
/// The default seed of the run order.
pub const DEFAULT_SEED: u64 = 305;

/// A timing of the race: the reconnect delay and the racing call's offset
/// after the drop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Point {
    /// `IAI_MCP_RECONNECT_TEST_DELAY_MS`.
    pub delay_ms: u64,
    /// Time from the daemon's `DROPPED` to the racing call.
    pub offset_ms: u64,
}

impl Point {
    /// Whether this is production timing: no reconnect widener.
    pub fn is_production(&self) -> bool {
        self.delay_ms == 0
    }
}

/// Parameters of a sweep.
#[derive(Debug, Clone)]
pub struct SweepConfig {
    /// The lines of the picture, in the order they are reported.
    pub subjects: Vec<Subject>,
    /// The reconnect delay of the swept points.
    pub delay_ms: u64,
    /// The first offset.
    pub from_ms: u64,
    /// The last offset (`None`: `delay_ms` + [`DEFAULT_MARGIN_MS`]).
    pub to_ms: Option<u64>,
    /// Step between offsets (at least 1).
    pub step_ms: u64,
    /// Whether to add the production point (delay 0, offset 0).
    pub production_point: bool,
    /// Runs per subject and point (at least 1).
    pub runs: u32,
    /// Runs at once (at least 1).
    pub jobs: usize,
    /// Seed of the order the runs start in.
    pub seed: u64,
    /// The rest of each run's configuration (mode, delay, offset: per run).
    pub race: RaceConfig,
}

impl Default for SweepConfig {
    fn default() -> Self {
        Self {
            subjects: Vec::new(),
            delay_ms: DEFAULT_DELAY_MS,
            from_ms: 0,
            to_ms: None,
            step_ms: DEFAULT_STEP_MS,
            production_point: true,
            runs: DEFAULT_RUNS,
            jobs: default_jobs(),
            seed: DEFAULT_SEED,
            race: RaceConfig::default(),
        }
    }
}

/// Runs at once when none is asked for: one per core, so that runs do not
/// compete for the cores and skew each other's timing.
pub fn default_jobs() -> usize {
    thread::available_parallelism().map_or(1, NonZeroUsize::get)
}

impl SweepConfig {
    /// The last offset: `to_ms`, or `delay_ms` + [`DEFAULT_MARGIN_MS`].
    pub fn last_offset_ms(&self) -> u64 {
        self.to_ms
            .unwrap_or_else(|| self.delay_ms.saturating_add(DEFAULT_MARGIN_MS))
    }

    /// Checks the settings; the error says what is wrong.
    pub fn validate(&self) -> Result<(), SweepError> {
        let (from_ms, to_ms) = (self.from_ms, self.last_offset_ms());
        let problem = if self.subjects.is_empty() {
            "no subject to sweep".to_owned()
        } else if self.step_ms == 0 {
            "the step must be at least 1 ms".to_owned()
        } else if from_ms > to_ms {
            format!("the first offset ({from_ms} ms) is after the last ({to_ms} ms)")
        } else if self.runs == 0 {
            "at least one run per point is needed".to_owned()
        } else if self.jobs == 0 {
            "at least one job is needed".to_owned()
        } else {
            return Ok(());
        };
        Err(SweepError::Config(problem))
    }

    /// The swept offsets, `from_ms` to the last by `step_ms`.
    pub fn offsets(&self) -> Vec<u64> {
        let to_ms = self.last_offset_ms();
        let step = usize::try_from(self.step_ms.max(1)).unwrap_or(usize::MAX);
        (self.from_ms..=to_ms).step_by(step).collect()
    }

    /// Every point, by delay, then offset (production first).
    pub fn points(&self) -> Vec<Point> {
        let production = self.production_point.then_some(Point {
            delay_ms: 0,
            offset_ms: 0,
        });
        let window = self.offsets().into_iter().map(|offset_ms| Point {
            delay_ms: self.delay_ms,
            offset_ms,
        });
        // Points order by delay, then offset; a set lists each once.
        let points: BTreeSet<Point> = production.into_iter().chain(window).collect();
        points.into_iter().collect()
    }

    /// How many runs the sweep makes.
    pub fn planned_runs(&self) -> usize {
        self.subjects.len() * self.points().len() * self.runs as usize
    }
}

/// Why a sweep could not be carried out (failed runs are data in the report).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SweepError {
    /// The settings make no sweep.
    #[error("invalid sweep: {0}")]
    Config(String),
    /// Setting up failed (for example the fake daemon cannot be found).
    #[error(transparent)]
    Harness(#[from] HarnessError),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wrapper::{BridgeMode, WrapperCommand};

    fn cfg() -> SweepConfig {
        SweepConfig {
            subjects: Subject::modes(
                &WrapperCommand::new("w"),
                &[BridgeMode::Prefix, BridgeMode::Fixed],
            ),
            ..SweepConfig::default()
        }
    }

    #[test]
    fn default_grid_spans_the_window_and_a_margin_plus_production() {
        let default = cfg();
        assert_eq!(
            default.offsets(),
            (0..=1200).step_by(100).collect::<Vec<_>>()
        );
        let points = default.points();
        assert_eq!((points[0].delay_ms, points[0].offset_ms), (0, 0));
        assert!(points[0].is_production());
        assert_eq!(points.len(), 14);
        assert!(points[1..].iter().all(|p| p.delay_ms == 1000));
        assert_eq!(default.planned_runs(), 2 * 14 * 3);
        assert!(default.validate().is_ok());

        let cfg = SweepConfig {
            delay_ms: 0,
            from_ms: 0,
            to_ms: Some(250),
            step_ms: 100,
            ..cfg()
        };
        assert_eq!(cfg.offsets(), [0, 100, 200]);
        // The production point coincides with (0, 0) and is listed once.
        assert_eq!(cfg.points().len(), 3);
    }

    #[test]
    fn invalid_settings_are_refused() {
        let spoilers: [fn(&mut SweepConfig); 5] = [
            |c| c.step_ms = 0,
            |c| (c.from_ms, c.to_ms) = (500, Some(100)),
            |c| c.runs = 0,
            |c| c.jobs = 0,
            |c| c.subjects.clear(),
        ];
        for spoil in spoilers {
            let mut bad = cfg();
            spoil(&mut bad);
            assert!(matches!(bad.validate(), Err(SweepError::Config(_))));
        }
    }
}
