//! Scripted scenarios that drive a wrapper and the fake daemon together and
//! report what happened as data.
//!
//! Each scenario is a [`Scenario`]: a configuration (with its defaults,
//! read by the command line too), whose [`Setup`] says how the wrapper
//! and the fake daemon start, a run, and a report that judges itself
//! ([`property::Judged`]). The outcome is a measurement (the wrapper under
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
pub mod setup;
pub mod soak;
pub mod storm;
pub mod sweep;

use std::fmt;

use serde::Serialize;

use crate::error::HarnessError;
pub use crate::format::format_ms;
pub use crate::table::{Align, table_lines};
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
    /// What it found.
    type Report: Judged + Serialize + fmt::Display;
    /// The configuration's [`Setup`].
    fn setup(cfg: &mut Self::Config) -> &mut Setup;
    /// Runs it once against the wrapper `cmd` starts.
    fn run(cmd: &WrapperCommand, cfg: &Self::Config) -> Result<Self::Report, HarnessError>;
}

/// Implements [`Scenario`] for a unit type over a configuration and a run
/// function whose configuration holds a `setup`.
macro_rules! scenario {
    ($(#[$doc:meta])* $ty:ident, $name:literal, $config:ty, $report:ty, $run:path) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $ty;

        impl Scenario for $ty {
            const NAME: &'static str = $name;
            type Config = $config;
            type Report = $report;
            fn setup(cfg: &mut Self::Config) -> &mut Setup {
                &mut cfg.setup
            }
            fn run(cmd: &WrapperCommand, cfg: &Self::Config) -> Result<Self::Report, HarnessError> {
                $run(cmd, cfg)
            }
        }
    };
}

scenario!(
    /// The V3-05 race ([`race`]).
    Race, "race", race::RaceConfig, race::RaceReport, race::run_race
);
scenario!(
    /// The drop storm ([`storm`]).
    Storm, "storm", storm::StormConfig, storm::StormReport, storm::run_storm
);
scenario!(
    /// The daemon down, then up ([`down_up`]).
    DownUp, "down-up", down_up::DownUpConfig, down_up::DownUpReport, down_up::run_down_up
);
scenario!(
    /// The hung daemon ([`hang`]).
    Hang, "hang", hang::HangConfig, hang::HangReport, hang::run_hang
);
scenario!(
    /// Many wrappers on one daemon ([`herd`]).
    Herd, "herd", herd::HerdConfig, herd::HerdReport, herd::run_herd
);
scenario!(
    /// The hostile client ([`hostile`]).
    Hostile, "hostile", hostile::HostileConfig, hostile::HostileReport, hostile::run_hostile
);
scenario!(
    /// The soak ([`soak`]).
    Soak, "soak", soak::SoakConfig, soak::SoakReport, soak::run_soak
);
