//! Sweeps: the V3-05 race over a grid of timings, for several subjects, to
//! map the whole race window instead of probing one instant of it.
//!
//! A *subject* is a wrapper command and the bridge mode it runs in; a
//! [`Point`] is a reconnect delay (the width of the window) and an offset
//! (from the daemon's `DROP` to the racing call). Each (subject, point)
//! runs `runs` times, each run one [`run_race`](super::race::run_race)
//! scenario with its own socket, daemon and wrapper, up to `jobs` at once.
//!
//! The runs start in an order shuffled by `seed` (reproducible), so a slow
//! drift of the machine spreads over the whole picture instead of biasing
//! one stretch of offsets or one subject; the report lists them in grid
//! order, so neither `jobs` nor the seed changes its layout. A raised stop
//! flag ([`stop_on_signals`]) starts no new run and abandons the runs in
//! flight within [`POLL`]; the report is then [`partial`](SweepReport::partial).

mod progress;
pub(crate) mod results;

use std::collections::BTreeSet;
use std::io;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Instant;

use serde::Serialize;

use devkit::bins::{self, error_chain};
pub use progress::{SweepObserver, TerminalProgress};
pub(crate) use results::PointReport;
pub use results::SweepReport;

use super::race::{POLL, RaceConfig, RaceReport, Tally, run_race_until_stopped};
use crate::error::HarnessError;

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

pub use crate::wrapper::Subject;

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

/// One run to make.
#[derive(Debug, Clone, Copy)]
struct Task {
    /// The index of its subject.
    subject: usize,
    /// The index of its point.
    point: usize,
    /// Its index among the point's runs.
    run: u32,
}

/// A run a worker finished, and how it ended.
struct Finished {
    task: Task,
    result: RunResult,
}

/// Results by subject, then point, then run index (`None`: not run).
pub(crate) type Grid = Vec<Vec<Vec<Option<RunResult>>>>;

/// Runs the sweep described by `cfg`, telling `observer` about every run,
/// until done or until `stop` is raised (the report is then partial).
///
/// An error means the sweep could not start (invalid settings, no fake
/// daemon); a run that fails is recorded in the report and the sweep goes on.
pub fn run_sweep(
    cfg: &SweepConfig,
    stop: &AtomicBool,
    observer: &mut dyn SweepObserver,
) -> Result<SweepReport, SweepError> {
    cfg.validate()?;
    let started = Instant::now();
    let plan = SweepPlan::new(cfg)?;
    let planned = plan.tasks.len();
    let jobs = cfg.jobs.min(planned);
    let mut grid: Grid =
        vec![vec![vec![None; cfg.runs as usize]; plan.points.len()]; plan.subjects.len()];
    observer.started(planned, jobs);

    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel::<Finished>();
    thread::scope(|scope| -> Result<(), SweepError> {
        plan.start_workers(scope, jobs, &next, tx, stop)?;
        plan.collect(&rx, &mut grid, stop, observer);
        Ok(())
    })?;

    let report = SweepReport::new(
        cfg,
        &plan.race,
        &plan.subjects,
        &plan.points,
        grid,
        started.elapsed(),
    );
    observer.finished(&report);
    Ok(report)
}

/// What a sweep runs: its subjects (labels made unique), its points, the
/// race they share, and every run in a seeded random order.
struct SweepPlan {
    subjects: Vec<Subject>,
    points: Vec<Point>,
    race: RaceConfig,
    tasks: Vec<Task>,
}

impl SweepPlan {
    /// The plan of `cfg`; an error when no fake daemon can be found.
    fn new(cfg: &SweepConfig) -> Result<Self, SweepError> {
        let subjects = unique_labels(&cfg.subjects);
        let points = cfg.points();
        let mut race = cfg.race.clone();
        if race.setup.fake_daemon_bin.is_none() {
            race.setup.fake_daemon_bin =
                Some(bins::try_fake_daemon_bin().map_err(HarnessError::from)?);
        }
        let mut tasks = Vec::with_capacity(cfg.planned_runs());
        for subject in 0..subjects.len() {
            for point in 0..points.len() {
                for run in 0..cfg.runs {
                    tasks.push(Task {
                        subject,
                        point,
                        run,
                    });
                }
            }
        }
        fastrand::Rng::with_seed(cfg.seed).shuffle(&mut tasks);
        Ok(SweepPlan {
            subjects,
            points,
            race,
            tasks,
        })
    }

    /// Starts `jobs` worker threads in `scope`, each taking the next task
    /// (`next`) and sending what it finished on `tx`. Fewer workers than
    /// asked for still finish the sweep; an error only when none started.
    fn start_workers<'scope, 'env>(
        &'env self,
        scope: &'scope thread::Scope<'scope, 'env>,
        jobs: usize,
        next: &'env AtomicUsize,
        tx: mpsc::Sender<Finished>,
        stop: &'env AtomicBool,
    ) -> Result<(), SweepError> {
        let mut workers = 0;
        for worker in 0..jobs {
            let tx = tx.clone();
            let spawned = thread::Builder::new()
                .name(format!("sweep-{worker}"))
                .spawn_scoped(scope, move || self.run_tasks(next, &tx, stop));
            match spawned {
                Ok(_) => workers += 1,
                // Fewer workers than asked for still finish the sweep.
                Err(_) if workers > 0 => {}
                Err(e) => {
                    return Err(HarnessError::io("starting a sweep worker thread", e).into());
                }
            }
        }
        Ok(())
    }

    /// A worker: runs the next task until none is left, `stop` is raised,
    /// or nobody listens on `tx` any more.
    fn run_tasks(&self, next: &AtomicUsize, tx: &mpsc::Sender<Finished>, stop: &AtomicBool) {
        while !stop.load(Ordering::SeqCst) {
            let Some(&task) = self.tasks.get(next.fetch_add(1, Ordering::SeqCst)) else {
                break;
            };
            let subject = &self.subjects[task.subject];
            let point = self.points[task.point];
            let mut cfg = RaceConfig {
                delay_ms: point.delay_ms,
                offset_ms: point.offset_ms,
                ..self.race.clone()
            };
            cfg.setup.mode = subject.mode;
            let result = match run_race_until_stopped(&subject.cmd, &cfg, stop) {
                Ok(Some(report)) => Ok(report),
                Ok(None) => break,
                Err(e) => Err(error_chain(&e)),
            };
            if tx.send(Finished { task, result }).is_err() {
                break;
            }
        }
    }

    /// Puts every finished run in `grid` and tells `observer`, until every
    /// worker is done; tells it once when the sweep stops early.
    fn collect(
        &self,
        rx: &mpsc::Receiver<Finished>,
        grid: &mut Grid,
        stop: &AtomicBool,
        observer: &mut dyn SweepObserver,
    ) {
        let planned = self.tasks.len();
        let mut done = 0;
        let mut tally = Tally::default();
        let mut told_stopping = false;
        loop {
            if !told_stopping && stop.load(Ordering::SeqCst) && done < planned {
                told_stopping = true;
                observer.stopping(done, planned);
            }
            match rx.recv_timeout(POLL) {
                Ok(Finished { task, result }) => {
                    done += 1;
                    tally.add(result.as_ref().ok());
                    let cell = &mut grid[task.subject][task.point][task.run as usize];
                    let result = cell.insert(result);
                    observer.run_done(&RunEvent {
                        subject: &self.subjects[task.subject],
                        point: self.points[task.point],
                        run: task.run,
                        result,
                        done,
                        planned,
                        tally,
                    });
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        if !told_stopping && done < planned {
            observer.stopping(done, planned);
        }
    }
}

/// The subjects, a label seen before suffixed ` #n` to name one subject.
fn unique_labels(subjects: &[Subject]) -> Vec<Subject> {
    let mut seen = BTreeSet::new();
    subjects
        .iter()
        .map(|subject| {
            let mut subject = subject.clone();
            let base = subject.label.clone();
            let mut n = 1;
            while !seen.insert(subject.label.clone()) {
                n += 1;
                subject.label = format!("{base} #{n}");
            }
            subject
        })
        .collect()
}

/// A stop flag raised by SIGINT (Ctrl-C) and SIGTERM, for [`run_sweep`]; a
/// second signal exits at once with status 130, for a sweep that does not
/// stop. Installs process-wide handlers: call it once, from a binary.
pub fn stop_on_signals() -> io::Result<Arc<AtomicBool>> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    use signal_hook::flag;

    let stop = Arc::new(AtomicBool::new(false));
    for signal in [SIGINT, SIGTERM] {
        // The exit must be registered first: it looks at the flag before
        // the second handler raises it.
        flag::register_conditional_shutdown(signal, 130, Arc::clone(&stop))?;
        flag::register(signal, Arc::clone(&stop))?;
    }
    Ok(stop)
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

    #[test]
    fn labels_are_made_unique() {
        let cmd = WrapperCommand::new("node");
        let subjects = unique_labels(&[
            Subject::command(cmd.clone(), None),
            Subject::command(cmd.clone(), None),
            Subject::command(cmd, None),
        ]);
        let labels: Vec<&str> = subjects.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["node", "node #2", "node #3"]);
    }
}
