//! The scorecard: every scenario against each wrapper, gathered into one
//! table of properties by wrapper (shown by [`crate::report::score`]).
//!
//! It runs what each scenario declares it runs in a scorecard
//! ([`crate::scenario::Scenario::scored`]), every scenario of
//! [`crate::scenario::ALL`] in turn; each report judges itself, and the
//! scorecard only gathers the checks of every run by property and subject.
//! A property
//! fails for a subject when any of its checks failed, with the first
//! failure's cause and figure; contract properties come first, this
//! workspace's policies after.

use std::time::{Duration, Instant};

use clap::Args;
use serde::Serialize;

use crate::scenario::property::{Cause, Check, Kind, Prop};
use crate::scenario::{self, RaceTiming, Scoring, Setup, settings};
use crate::wrapper::Subject;

/// The contract properties this workspace's wrapper fails in its pre-fix
/// mode, which reproduces the original wrapper: calls made while it
/// reconnects are refused (V3-05), and it reconnects at most once per
/// lifetime, so it stops serving after a second drop, or after a daemon
/// restart during which that one attempt failed.
pub const PREFIX_CONTRACT_FAILURES: [Prop; 3] =
    [Prop::ReconnectCall, Prop::SecondDrop, Prop::Recovers];

/// What to score, and how hard: the `score` command's settings, the
/// subjects it names, and the fixed amounts; `Default` is every value
/// declared here, with no subject. Each scenario says what it makes of
/// them ([`scenario::Scenario::scored`]).
#[derive(Debug, Clone, Args)]
pub struct ScoreConfig {
    /// The wrappers, one column each.
    #[arg(skip)]
    pub subjects: Vec<Subject>,
    /// Race runs per wrapper (each with a second drop).
    #[arg(long = "runs", default_value_t = 3, value_name = "RUNS",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub race_runs: u32,
    /// The fake daemon (the bridge mode is each subject's).
    #[arg(skip)]
    pub setup: Setup,
    /// The race's timing, when not its defaults (`race --all`).
    #[arg(skip)]
    pub race_timing: Option<RaceTiming>,
    /// Lines the hostile client sends.
    #[arg(skip = 2_000_usize)]
    pub hostile_lines: usize,
    /// How long the soak runs per wrapper, in seconds (0: no soak).
    #[arg(long = "soak-seconds", default_value = "10", value_name = "SOAK_SECONDS",
          value_parser = settings::seconds(0))]
    pub soak: Duration,
    /// How long a wrapper may take to answer again after the daemon is
    /// back (race, down-up and herd) before it is judged to have stopped.
    #[arg(skip = Duration::from_secs(10))]
    pub recovery_timeout: Duration,
}

impl Default for ScoreConfig {
    fn default() -> Self {
        settings::defaults()
    }
}

/// One scenario run for one subject.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioRun {
    /// The scenario's name.
    pub scenario: String,
    /// The subject's label.
    pub subject: String,
    /// Its checks (none when it could not run).
    pub checks: Vec<Check>,
    /// Why it could not run, if it could not.
    pub error: Option<String>,
    /// How long it took, in seconds.
    pub seconds: f64,
}

/// How a property came out for one subject.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// `None` when it held (or was not checked); the first failure's cause.
    pub failure: Option<Cause>,
    /// Checks made, and how many failed.
    pub checks: usize,
    /// Checks that failed.
    pub failed: usize,
    /// The scenario and figure of the first failure, or of the first check.
    pub figure: String,
}

impl Cell {
    /// `pass`, `FAIL (cause)`, or `-` when no scenario checked it.
    pub fn verdict(&self) -> String {
        match (self.checks, self.failure) {
            (0, _) => "-".to_owned(),
            (_, None) => "pass".to_owned(),
            (_, Some(cause)) => format!("FAIL ({cause})"),
        }
    }
}

/// One property across the subjects.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The property.
    pub prop: Prop,
    /// Contract or policy.
    pub kind: Kind,
    /// In words.
    pub title: &'static str,
    /// One cell per subject, in the subjects' order.
    pub cells: Vec<Cell>,
}

/// The whole scorecard.
#[derive(Debug, Clone, Serialize)]
pub struct Scorecard {
    /// The subjects' labels, in column order.
    pub subjects: Vec<String>,
    /// One row per property, contract first.
    pub rows: Vec<Row>,
    /// Every scenario run, with its checks.
    pub runs: Vec<ScenarioRun>,
}

/// Runs every scenario against every subject of `cfg`, the subjects side
/// by side (each has its own daemons, sockets and processes; a subject's
/// scenarios run one after another); `progress` hears of each run as it
/// starts.
pub fn run_score(cfg: &ScoreConfig, progress: impl Fn(&str) + Sync) -> Scorecard {
    let progress = &progress;
    let runs = std::thread::scope(|scope| {
        let handles: Vec<_> = cfg
            .subjects
            .iter()
            .map(|subject| scope.spawn(move || score_subject(cfg, subject, progress)))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    Scorecard::from_runs(cfg.subjects.iter().map(|s| s.label.clone()).collect(), runs)
}

/// Every scenario the scorecard runs, against `subject`, one after the
/// other.
fn score_subject(
    cfg: &ScoreConfig,
    subject: &Subject,
    progress: &(impl Fn(&str) + Sync),
) -> Vec<ScenarioRun> {
    let scoring = cfg.scoring(subject);
    let mut runs = Vec::new();
    for scenario in &scenario::ALL {
        let started = Instant::now();
        let starting = || progress(&format!("{} against {}", scenario.name, subject.label));
        let Some(result) = scenario.score(&subject.cmd, &scoring, &starting) else {
            continue;
        };
        let (checks, error) = match result {
            Ok(checks) => (checks, None),
            Err(e) => (Vec::new(), Some(devkit::bins::error_chain(&e))),
        };
        runs.push(ScenarioRun {
            scenario: scenario.name.to_owned(),
            subject: subject.label.clone(),
            checks,
            error,
            seconds: started.elapsed().as_secs_f64(),
        });
    }
    runs
}

impl ScoreConfig {
    /// What every scenario is handed for `subject`.
    fn scoring(&self, subject: &Subject) -> Scoring {
        Scoring {
            setup: Setup {
                mode: subject.mode,
                ..self.setup.clone()
            },
            race_runs: self.race_runs,
            race_timing: self.race_timing,
            hostile_lines: self.hostile_lines,
            soak: self.soak,
            recovery_timeout: self.recovery_timeout,
        }
    }
}

impl Scorecard {
    /// Gathers `runs` by property and subject.
    pub fn from_runs(subjects: Vec<String>, runs: Vec<ScenarioRun>) -> Self {
        let rows = Prop::ALL
            .iter()
            .map(|&prop| Row {
                prop,
                kind: prop.kind(),
                title: prop.title(),
                cells: subjects
                    .iter()
                    .map(|subject| cell(prop, runs.iter().filter(|r| &r.subject == subject)))
                    .collect(),
            })
            .collect();
        Scorecard {
            subjects,
            rows,
            runs,
        }
    }

    /// The contract properties `subject` failed.
    pub fn failed_contract(&self, subject: &str) -> Vec<Prop> {
        self.failed(subject)
            .into_iter()
            .filter(|p| p.kind() == Kind::Contract)
            .collect()
    }

    /// The properties `subject` failed, contract and policy alike.
    pub fn failed(&self, subject: &str) -> Vec<Prop> {
        let Some(column) = self.subjects.iter().position(|s| s == subject) else {
            return Vec::new();
        };
        self.rows
            .iter()
            .filter(|row| row.cells[column].failure.is_some())
            .map(|row| row.prop)
            .collect()
    }

    /// Scenario runs that could not be carried out.
    pub fn errors(&self) -> impl Iterator<Item = &ScenarioRun> {
        self.runs.iter().filter(|r| r.error.is_some())
    }
}

fn cell<'a>(prop: Prop, runs: impl Iterator<Item = &'a ScenarioRun>) -> Cell {
    let checks: Vec<(&str, &Check)> = runs
        .flat_map(|r| r.checks.iter().map(move |c| (r.scenario.as_str(), c)))
        .filter(|(_, c)| c.prop == prop)
        .collect();
    let failures: Vec<&(&str, &Check)> = checks.iter().filter(|(_, c)| !c.held()).collect();
    let (checked, failed) = (checks.len(), failures.len());
    Cell {
        failure: failures.first().and_then(|(_, c)| c.failure),
        checks: checked,
        failed,
        figure: match (failures.first(), checks.first()) {
            (Some((scenario, check)), _) => {
                format!("{failed}/{checked} failed; {scenario}: {}", check.figure)
            }
            (None, Some((scenario, check))) => format!("{scenario}: {}", check.figure),
            (None, None) => String::new(),
        },
    }
}
