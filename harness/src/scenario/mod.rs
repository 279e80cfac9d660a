//! Scripted scenarios that drive a wrapper and the fake daemon together and
//! report what happened as data.
//!
//! Each scenario is a [`Scenario`]: a configuration that declares its own
//! command-line settings and their defaults ([`settings`]), whose
//! [`Setup`] says how the wrapper and the fake daemon start, a run, and a
//! report that judges itself ([`property::Judged`]). The command line
//! runs any of them the same way, from its parsed [`Scenario::Args`]. The outcome is a measurement (the wrapper under
//! test may well fail it); a `HarnessError` means the scenario itself
//! could not be carried out.

pub mod down_up;
pub mod hang;
pub mod herd;
pub mod hostile;
mod live;
pub mod outcome;
pub mod property;
pub mod race;
pub mod settings;
pub mod setup;
pub mod smoke;
pub mod soak;
pub mod storm;
pub mod sweep;
pub mod wrapper_log;

use std::fmt;

use serde::Serialize;

use crate::error::HarnessError;
use crate::wrapper::WrapperCommand;
pub use live::WrapperOutput;
use property::Judged;
pub use setup::Setup;

/// A scenario: its configuration, its run, and its self-judging report.
pub trait Scenario {
    /// Its name in tables and on the command line.
    const NAME: &'static str;
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
}

/// The V3-05 race ([`race`]).
#[derive(Debug, Clone, Copy)]
pub struct Race;

impl Scenario for Race {
    const NAME: &'static str = "race";
    type Config = race::RaceConfig;
    type Args = race::RaceConfig;
    type Report = race::RaceReport;

    fn setup(cfg: &mut Self::Config) -> &mut Setup {
        &mut cfg.setup
    }

    fn run(cmd: &WrapperCommand, cfg: &Self::Config) -> Result<Self::Report, HarnessError> {
        race::run_race(cmd, cfg)
    }
}

/// The drop storm ([`storm`]).
#[derive(Debug, Clone, Copy)]
pub struct Storm;

impl Scenario for Storm {
    const NAME: &'static str = "storm";
    type Config = storm::StormConfig;
    type Args = storm::StormConfig;
    type Report = storm::StormReport;

    fn setup(cfg: &mut Self::Config) -> &mut Setup {
        &mut cfg.setup
    }

    fn run(cmd: &WrapperCommand, cfg: &Self::Config) -> Result<Self::Report, HarnessError> {
        storm::run_storm(cmd, cfg)
    }
}

/// The daemon down, then up ([`down_up`]).
#[derive(Debug, Clone, Copy)]
pub struct DownUp;

impl Scenario for DownUp {
    const NAME: &'static str = "down-up";
    type Config = down_up::DownUpConfig;
    type Args = down_up::DownUpConfig;
    type Report = down_up::DownUpReport;

    fn setup(cfg: &mut Self::Config) -> &mut Setup {
        &mut cfg.setup
    }

    fn run(cmd: &WrapperCommand, cfg: &Self::Config) -> Result<Self::Report, HarnessError> {
        down_up::run_down_up(cmd, cfg)
    }
}

/// The hung daemon ([`hang`]).
#[derive(Debug, Clone, Copy)]
pub struct Hang;

impl Scenario for Hang {
    const NAME: &'static str = "hang";
    type Config = hang::HangConfig;
    type Args = hang::HangConfig;
    type Report = hang::HangReport;

    fn setup(cfg: &mut Self::Config) -> &mut Setup {
        &mut cfg.setup
    }

    fn run(cmd: &WrapperCommand, cfg: &Self::Config) -> Result<Self::Report, HarnessError> {
        hang::run_hang(cmd, cfg)
    }
}

/// Many wrappers on one daemon ([`herd`]).
#[derive(Debug, Clone, Copy)]
pub struct Herd;

impl Scenario for Herd {
    const NAME: &'static str = "herd";
    type Config = herd::HerdConfig;
    type Args = herd::HerdConfig;
    type Report = herd::HerdReport;

    fn setup(cfg: &mut Self::Config) -> &mut Setup {
        &mut cfg.setup
    }

    fn run(cmd: &WrapperCommand, cfg: &Self::Config) -> Result<Self::Report, HarnessError> {
        herd::run_herd(cmd, cfg)
    }
}

/// The hostile client ([`hostile`]).
#[derive(Debug, Clone, Copy)]
pub struct Hostile;

impl Scenario for Hostile {
    const NAME: &'static str = "hostile";
    type Config = hostile::HostileConfig;
    type Args = hostile::HostileConfig;
    type Report = hostile::HostileReport;

    fn setup(cfg: &mut Self::Config) -> &mut Setup {
        &mut cfg.setup
    }

    fn run(cmd: &WrapperCommand, cfg: &Self::Config) -> Result<Self::Report, HarnessError> {
        hostile::run_hostile(cmd, cfg)
    }
}

/// The soak ([`soak`]).
#[derive(Debug, Clone, Copy)]
pub struct Soak;

impl Scenario for Soak {
    const NAME: &'static str = "soak";
    type Config = soak::SoakConfig;
    type Args = soak::SoakArgs;
    type Report = soak::SoakReport;

    fn setup(cfg: &mut Self::Config) -> &mut Setup {
        &mut cfg.setup
    }

    fn run(cmd: &WrapperCommand, cfg: &Self::Config) -> Result<Self::Report, HarnessError> {
        soak::run_soak(cmd, cfg)
    }
}

/// The smoke run any build must pass ([`smoke`]).
#[derive(Debug, Clone, Copy)]
pub struct Smoke;

impl Scenario for Smoke {
    const NAME: &'static str = "smoke";
    type Config = smoke::SmokeConfig;
    type Args = smoke::SmokeConfig;
    type Report = smoke::SmokeReport;

    fn setup(cfg: &mut Self::Config) -> &mut Setup {
        &mut cfg.setup
    }

    fn run(cmd: &WrapperCommand, cfg: &Self::Config) -> Result<Self::Report, HarnessError> {
        smoke::run_smoke(cmd, cfg)
    }
}

#[cfg(test)]
mod tests {
    use clap::{Args, Command, FromArgMatches};

    use super::*;

    /// `S`'s command-line settings parsed from `flags`, as its configuration.
    fn parsed<S: Scenario>(flags: &[&str]) -> S::Config {
        let command = S::Args::augment_args(Command::new(S::NAME));
        let matches = command
            .try_get_matches_from(std::iter::once(S::NAME).chain(flags.iter().copied()))
            .unwrap();
        S::Args::from_arg_matches(&matches).unwrap().into()
    }

    #[test]
    fn every_configuration_has_its_declared_defaults() {
        // Each `Default` reads the values declared on the fields; a default
        // that did not pass its own value parser would panic here.
        assert_eq!(race::RaceConfig::default().delay_ms, 1000);
        assert_eq!(storm::StormConfig::default().drops, 5);
        assert_eq!(down_up::DownUpConfig::default().backoff_max_ms, None);
        assert_eq!(
            hang::HangConfig::default().call_timeout,
            std::time::Duration::from_millis(500)
        );
        assert_eq!(herd::HerdConfig::default().wrappers, 50);
        assert_eq!(hostile::HostileConfig::default().max_line_bytes, 65_536);
        assert_eq!(soak::SoakConfig::default().seed, 1);
        assert_eq!(
            smoke::SmokeConfig::default().reply_bound,
            std::time::Duration::from_secs(60)
        );
    }

    #[test]
    fn flags_change_only_their_own_settings() {
        let storm = parsed::<Storm>(&["--drop-interval-ms", "40", "--concurrency", "3"]);
        assert_eq!(storm.drop_interval, std::time::Duration::from_millis(40));
        assert_eq!(storm.concurrency, 3);
        let defaults = storm::StormConfig::default();
        assert_eq!(storm.drops, defaults.drops);
        assert_eq!(storm.drain_timeout, defaults.drain_timeout);
    }

    #[test]
    fn the_soak_keeps_a_given_seed_and_draws_one_otherwise() {
        let given = parsed::<Soak>(&["--seed", "7", "--seconds", "3"]);
        assert_eq!(given.seed, 7);
        assert_eq!(given.duration, std::time::Duration::from_secs(3));
        // Drawn from the clock: any value will do, but the settings around
        // it keep their defaults.
        let drawn = parsed::<Soak>(&[]);
        assert_eq!(drawn.concurrency, soak::SoakConfig::default().concurrency);
    }
}
