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

mod config;
mod progress;
pub(crate) mod results;
mod runs;

use std::collections::BTreeSet;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Instant;

pub use config::{
    DEFAULT_DELAY_MS, DEFAULT_MARGIN_MS, DEFAULT_RUNS, DEFAULT_SEED, DEFAULT_STEP_MS, Point,
    SweepConfig, SweepError, default_jobs,
};
use devkit::bins::{self, error_chain};
pub use progress::{SweepObserver, TerminalProgress};
pub(crate) use results::PointReport;
pub use results::SweepReport;
pub(crate) use runs::Grid;
pub use runs::{RunEvent, RunResult};

use super::race::{POLL, RaceConfig, Tally, run_race_until_stopped};
use crate::error::HarnessError;
pub use crate::wrapper::Subject;

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
    use crate::wrapper::WrapperCommand;

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
