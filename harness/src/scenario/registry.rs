//! A scenario as the command line and the scorecard see it: a
//! [`Registered`] entry made from its [`Scenario`] declaration, so that
//! both can go through every scenario by name without knowing its types.

use clap::{ArgMatches, FromArgMatches};
use serde_json::Value;

use super::declaration::{Scenario, Scoring};
use super::property::{Check, Judged};
use super::setup::Setup;
use crate::error::HarnessError;
use crate::wrapper::WrapperCommand;

/// One scenario, by name: what the command line and the scorecard do with
/// it, made by [`Registered::of`] from its declaration.
#[derive(Clone, Copy)]
pub struct Registered {
    /// Its name ([`Scenario::NAME`]).
    pub name: &'static str,
    /// What it does ([`Scenario::ABOUT`]).
    pub about: &'static str,
    /// Whether `harness NAME` runs it ([`Scenario::COMMAND`]).
    pub command: bool,
    /// Adds its settings to a command.
    pub settings: fn(clap::Command) -> clap::Command,
    /// Runs it from its command's settings.
    run_with: RunWith,
    /// Its scorecard runs.
    scored: Scored,
}

/// How a scenario runs from its command's settings, with a setup, against
/// a wrapper, saying what it says on the way.
type RunWith =
    fn(&ArgMatches, &WrapperCommand, &Setup, &dyn Fn(&str)) -> Result<Judgement, HarnessError>;

/// How a scenario runs in the scorecard: `None` when it does not, else the
/// checks of its runs; the callback hears that the first run starts.
type Scored = fn(&WrapperCommand, &Scoring, &dyn Fn()) -> Option<Result<Vec<Check>, HarnessError>>;

impl std::fmt::Debug for Registered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registered")
            .field("name", &self.name)
            .field("command", &self.command)
            .finish_non_exhaustive()
    }
}

impl Registered {
    /// The entry of `S`.
    pub const fn of<S: Scenario>() -> Self {
        Registered {
            name: S::NAME,
            about: S::ABOUT,
            command: S::COMMAND,
            settings: settings::<S>,
            run_with: run_with::<S>,
            scored: scored::<S>,
        }
    }

    /// Runs the scenario once from its command's `settings` (matched on
    /// the command [`settings`](Self::settings) made), with `setup`,
    /// against the wrapper `cmd` starts; `say` hears what the scenario
    /// says before it runs.
    pub fn run(
        &self,
        settings: &ArgMatches,
        cmd: &WrapperCommand,
        setup: &Setup,
        say: &dyn Fn(&str),
    ) -> Result<Judgement, HarnessError> {
        (self.run_with)(settings, cmd, setup, say)
    }

    /// The checks of the scenario's scorecard runs against `cmd` (`None`
    /// when the scorecard does not run it); `starting` is called once
    /// before the first run.
    pub fn score(
        &self,
        cmd: &WrapperCommand,
        scoring: &Scoring,
        starting: &dyn Fn(),
    ) -> Option<Result<Vec<Check>, HarnessError>> {
        (self.scored)(cmd, scoring, starting)
    }
}

/// A scenario run from the command line, judged, as it is printed.
#[derive(Debug, Clone)]
pub struct Judgement {
    /// The scenario's name.
    pub scenario: &'static str,
    /// Whether every check held.
    pub passed: bool,
    /// Its checks.
    pub checks: Vec<Check>,
    /// The report for people.
    pub text: String,
    /// The verdict line under it.
    pub verdict_line: String,
    /// The report as JSON.
    pub report: Value,
    /// The command that repeats the run, where the scenario has one.
    pub replay: Option<String>,
}

/// Adds the settings of `S` to `command`.
fn settings<S: Scenario>(command: clap::Command) -> clap::Command {
    <S::Args as clap::Args>::augment_args(command)
}

/// Runs `S` from its settings: the configuration they make, with `setup`.
fn run_with<S: Scenario>(
    settings: &ArgMatches,
    cmd: &WrapperCommand,
    setup: &Setup,
    say: &dyn Fn(&str),
) -> Result<Judgement, HarnessError> {
    let args = S::Args::from_arg_matches(settings)
        .map_err(|e| HarnessError::Settings(format!("{}: {e}", S::NAME)))?;
    let mut cfg: S::Config = args.into();
    *S::setup(&mut cfg) = setup.clone();
    if let Some(line) = S::announce(cmd, &cfg) {
        say(&line);
    }
    let report = S::run(cmd, &cfg)?;
    Ok(Judgement {
        scenario: S::NAME,
        passed: report.passed(),
        checks: report.checks(),
        text: report.to_string(),
        verdict_line: report.verdict_line(),
        report: serde_json::to_value(&report).map_err(HarnessError::ReportJson)?,
        replay: S::replay(&cfg),
    })
}

/// Runs `S` as the scorecard does: each of its scored configurations with
/// the scorecard's setup, their checks together.
fn scored<S: Scenario>(
    cmd: &WrapperCommand,
    scoring: &Scoring,
    starting: &dyn Fn(),
) -> Option<Result<Vec<Check>, HarnessError>> {
    let configs = S::scored(scoring);
    if configs.is_empty() {
        return None;
    }
    starting();
    let mut checks = Vec::new();
    for mut cfg in configs {
        *S::setup(&mut cfg) = scoring.setup.clone();
        match S::run(cmd, &cfg) {
            Ok(report) => checks.extend(report.checks()),
            Err(e) => return Some(Err(e)),
        }
    }
    Some(Ok(checks))
}
