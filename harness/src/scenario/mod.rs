//! Scripted scenarios that drive a wrapper and the fake daemon together and
//! report what happened as data.
//!
//! Each scenario is declared once, in its own module: a configuration that
//! declares its own command-line settings and their defaults
//! ([`settings`]), whose [`Setup`] says how the wrapper and the fake daemon
//! start, a run, a report that judges itself ([`property::Judged`]), and
//! its [`Scenario`] implementation: its name, what it is for, and its runs
//! in the scorecard. [`ALL`] lists them; the command line and the
//! scorecard go through that list. The outcome is a measurement (the
//! wrapper under test may well fail it); a `HarnessError` means the
//! scenario itself could not be carried out.

pub mod declaration;
pub mod down_up;
pub mod hang;
pub mod herd;
pub mod hostile;
mod live;
pub mod outcome;
pub mod property;
pub mod race;
pub mod registry;
pub mod settings;
pub mod setup;
pub mod smoke;
pub mod soak;
pub mod storm;
pub mod sweep;
pub mod wrapper_log;

pub use declaration::{RaceTiming, Scenario, Scoring};
pub use live::WrapperOutput;
pub use registry::{Judgement, Registered};
pub use setup::Setup;

/// Every scenario, in the order the scorecard runs them and `harness
/// --help` lists their commands.
pub const ALL: [Registered; 8] = [
    Registered::of::<race::Race>(),
    Registered::of::<storm::Storm>(),
    Registered::of::<down_up::DownUp>(),
    Registered::of::<hang::Hang>(),
    Registered::of::<herd::Herd>(),
    Registered::of::<hostile::Hostile>(),
    Registered::of::<soak::Soak>(),
    Registered::of::<smoke::Smoke>(),
];

/// The scenario named `name`.
pub fn find(name: &str) -> Option<&'static Registered> {
    ALL.iter().find(|scenario| scenario.name == name)
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
        let storm = parsed::<storm::Storm>(&["--drop-interval-ms", "40", "--concurrency", "3"]);
        assert_eq!(storm.drop_interval, std::time::Duration::from_millis(40));
        assert_eq!(storm.concurrency, 3);
        let defaults = storm::StormConfig::default();
        assert_eq!(storm.drops, defaults.drops);
        assert_eq!(storm.drain_timeout, defaults.drain_timeout);
    }

    #[test]
    fn the_soak_keeps_a_given_seed_and_draws_one_otherwise() {
        let given = parsed::<soak::Soak>(&["--seed", "7", "--seconds", "3"]);
        assert_eq!(given.seed, 7);
        assert_eq!(given.duration, std::time::Duration::from_secs(3));
        // Drawn from the clock: any value will do, but the settings around
        // it keep their defaults.
        let drawn = parsed::<soak::Soak>(&[]);
        assert_eq!(drawn.concurrency, soak::SoakConfig::default().concurrency);
    }

    #[test]
    fn every_scenario_is_listed_once_by_its_name() {
        for scenario in &ALL {
            assert_eq!(find(scenario.name).map(|s| s.name), Some(scenario.name));
            assert!(!scenario.about.is_empty(), "{}", scenario.name);
        }
        let mut names: Vec<&str> = ALL.iter().map(|s| s.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
        assert!(find("race").is_some_and(|race| !race.command));
    }

    #[test]
    fn the_scorecard_runs_what_each_scenario_declares() {
        let scoring = Scoring {
            setup: Setup::default(),
            race_runs: 3,
            race_timing: Some(RaceTiming {
                delay_ms: 400,
                offset_ms: 20,
            }),
            hostile_lines: 7,
            soak: std::time::Duration::ZERO,
            recovery_timeout: std::time::Duration::from_secs(4),
        };
        let races = race::Race::scored(&scoring);
        assert_eq!(races.len(), 3);
        assert!(races.iter().all(|r| r.second_drop
            && (r.delay_ms, r.offset_ms) == (400, 20)
            && r.recovery_timeout == scoring.recovery_timeout));
        assert_eq!(hostile::Hostile::scored(&scoring)[0].lines, 7);
        assert!(soak::Soak::scored(&scoring).is_empty(), "no soak at zero");
        assert!(smoke::Smoke::scored(&scoring).is_empty());
        let soak = soak::Soak::scored(&Scoring {
            soak: std::time::Duration::from_secs(3),
            ..scoring
        });
        assert_eq!(soak[0].duration, std::time::Duration::from_secs(3));
    }
}
