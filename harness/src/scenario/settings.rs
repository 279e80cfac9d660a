//! How a scenario's configuration declares its settings: each field a
//! command line may change carries its flag, its help and its default
//! (`#[arg(long, default_value_t = ...)]`), every other field its fixed
//! value (`#[arg(skip = ...)]`), so a setting is written in one place. The
//! configuration's `Default` is [`defaults`]: the same values, read with no
//! flag given, so the library, the scorecard and the command line can
//! never disagree on a default.

use std::ops::RangeBounds;
use std::time::Duration;

use clap::builder::{RangedU64ValueParser, TypedValueParser};
use clap::{Args, Command};

/// The value of `T` with no flag given: each setting at the default its
/// field declares, each other field at its `skip` value.
///
/// # Panics
///
/// If a declared default does not pass its own value parser: a mistake in
/// the declaration, which every test that builds the configuration shows.
pub fn defaults<T: Args>() -> T {
    let name = std::any::type_name::<T>();
    T::augment_args(Command::new(name))
        .try_get_matches_from([name])
        .and_then(|matches| T::from_arg_matches(&matches))
        .unwrap_or_else(|e| panic!("the defaults declared on {name} do not parse: {e}"))
}

/// The value parser of the `_ms` flags: whole milliseconds, read as a
/// [`Duration`].
pub fn millis() -> impl TypedValueParser<Value = Duration> {
    RangedU64ValueParser::<u64>::new().map(Duration::from_millis)
}

/// The value parser of the flags in whole seconds, at least `least`, read
/// as a [`Duration`].
pub fn seconds(least: u64) -> impl TypedValueParser<Value = Duration> {
    RangedU64ValueParser::<u64>::new()
        .range(least..)
        .map(Duration::from_secs)
}

/// The value parser of a count kept as a `usize` (calls in flight,
/// wrappers, bytes), within `range`: read as a `u64`, so its errors read as
/// those of the other counts.
pub fn count(range: impl RangeBounds<u64>) -> RangedU64ValueParser<usize> {
    RangedU64ValueParser::<usize>::new().range(range)
}

#[cfg(test)]
mod tests {
    use clap::FromArgMatches;

    use super::*;

    /// A configuration with one setting of each kind and a fixed field.
    #[derive(Debug, Args)]
    struct Sample {
        /// A duration in milliseconds.
        #[arg(long, default_value = "150", value_parser = millis())]
        interval_ms: Duration,
        /// A duration in seconds.
        #[arg(long, default_value = "60", value_parser = seconds(1))]
        seconds: Duration,
        /// A count.
        #[arg(long, default_value_t = 8, value_parser = count(1..))]
        concurrency: usize,
        #[arg(skip = Duration::from_secs(10))]
        fixed: Duration,
    }

    #[test]
    fn defaults_are_the_declared_values() {
        let sample: Sample = defaults();
        assert_eq!(sample.interval_ms, Duration::from_millis(150));
        assert_eq!(sample.seconds, Duration::from_secs(60));
        assert_eq!(sample.concurrency, 8);
        assert_eq!(sample.fixed, Duration::from_secs(10));
    }

    #[test]
    fn flags_parse_and_keep_their_ranges() {
        let parse = |args: &[&str]| {
            Sample::augment_args(Command::new("sample"))
                .try_get_matches_from(args)
                .and_then(|m| Sample::from_arg_matches(&m))
        };
        let sample = parse(&["sample", "--interval-ms", "7", "--seconds", "2"]).unwrap();
        assert_eq!(sample.interval_ms, Duration::from_millis(7));
        assert_eq!(sample.seconds, Duration::from_secs(2));
        assert!(parse(&["sample", "--seconds", "0"]).is_err());
        assert!(parse(&["sample", "--concurrency", "0"]).is_err());
    }
}
