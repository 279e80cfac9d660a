//! The commands of the scenarios of [`scenario::ALL`]: one per scenario,
//! named after it, with what it is for as its help, the options every
//! scenario takes ([`Target`]) and its own settings, all from its
//! declaration. None of them is written out here, so a new scenario needs
//! no line in the command line.

use clap::{ArgMatches, Args, FromArgMatches, Subcommand};

use super::target::Target;
use crate::scenario::{self, Registered};

/// A scenario's command, as parsed: which scenario, which wrapper and how
/// to report, and the scenario's own settings (read when it runs).
#[derive(Debug, Clone)]
pub struct ScenarioTask {
    /// The scenario.
    pub scenario: &'static Registered,
    /// Which wrapper, and how to report.
    pub target: Target,
    /// The command's matches, from which the scenario reads its settings.
    pub settings: ArgMatches,
}

/// The command of `scenario`: its name and help, the target options and
/// its settings.
fn command(scenario: &Registered) -> clap::Command {
    let command = Target::augment_args(clap::Command::new(scenario.name));
    // After the settings, whose own doc comment would otherwise be the help.
    (scenario.settings)(command)
        .about(scenario.about)
        .long_about(None)
}

/// The scenarios that have a command of this kind.
fn with_commands() -> impl Iterator<Item = &'static Registered> {
    scenario::ALL.iter().filter(|scenario| scenario.command)
}

impl FromArgMatches for ScenarioTask {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let missing = || clap::Error::new(clap::error::ErrorKind::MissingSubcommand);
        let (name, settings) = matches.subcommand().ok_or_else(missing)?;
        let scenario = with_commands()
            .find(|scenario| scenario.name == name)
            .ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidSubcommand))?;
        Ok(ScenarioTask {
            scenario,
            target: Target::from_arg_matches(settings)?,
            settings: settings.clone(),
        })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl Subcommand for ScenarioTask {
    fn augment_subcommands(commands: clap::Command) -> clap::Command {
        with_commands().fold(commands, |commands, scenario| {
            commands.subcommand(command(scenario))
        })
    }

    fn augment_subcommands_for_update(commands: clap::Command) -> clap::Command {
        Self::augment_subcommands(commands)
    }

    fn has_subcommand(name: &str) -> bool {
        with_commands().any(|scenario| scenario.name == name)
    }
}
