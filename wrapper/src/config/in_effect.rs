//! Every serving setting as it is in effect, read from the same
//! declarations clap parses (the groups' flags), so that `--check` lists a
//! new setting without a line of its own: its flag, its variable, the
//! value given and where it came from.

use std::ffi::OsStr;

use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory};

use super::args::Args;

/// Where a setting's value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Nothing was given: the declared default applies (or, with no
    /// default, the wrapper's own rule, such as `$HOME/.iai-mcp`).
    Default,
    /// Its environment variable.
    Environment,
    /// Its flag.
    CommandLine,
}

/// One serving setting and the value it has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// The flag, without its dashes (`connect-wait-ms`).
    pub flag: String,
    /// Its environment variable, if it has one.
    pub env: Option<String>,
    /// The value as given (or as declared by default); `None` when nothing
    /// was given and no default is declared.
    pub value: Option<String>,
    /// Where the value came from.
    pub source: Source,
}

impl std::fmt::Display for Setting {
    /// `--flag value (from VARIABLE)`, for people.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "--{} ", self.flag)?;
        match &self.value {
            Some(value) if value.is_empty() => f.write_str("\"\" (empty: the default)")?,
            Some(value) => f.write_str(value)?,
            None => f.write_str("-")?,
        }
        match (self.source, &self.env) {
            (Source::Environment, Some(env)) => write!(f, " (from {env})"),
            (Source::CommandLine, _) => f.write_str(" (from the command line)"),
            _ => f.write_str(" (default)"),
        }
    }
}

/// Every serving setting of [`Args`] as `matches` (the command line and
/// environment clap parsed) has it, in the order `--help` lists them.
/// Switches that only choose what the binary does (`--check`, `--help`,
/// `--version`) are left out.
pub fn settings_in_effect(matches: &ArgMatches) -> Vec<Setting> {
    Args::command()
        .get_arguments()
        .filter(|arg| arg.get_long().is_some() && arg.get_action().takes_values())
        .map(|arg| {
            let id = arg.get_id().as_str();
            let value = matches.get_raw(id).map(|values| {
                values
                    .map(OsStr::to_string_lossy)
                    .collect::<Vec<_>>()
                    .join(",")
            });
            let source = match matches.value_source(id) {
                Some(ValueSource::EnvVariable) => Source::Environment,
                Some(ValueSource::CommandLine) => Source::CommandLine,
                _ => Source::Default,
            };
            Setting {
                flag: arg.get_long().unwrap_or_default().to_owned(),
                env: arg.get_env().map(|env| env.to_string_lossy().into_owned()),
                value,
                source,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The settings for `args`; the variables' side is tested through the
    /// binary (`wrapper/tests/it/cli.rs`), which has an environment of its
    /// own.
    fn settings(args: &[&str]) -> Vec<Setting> {
        let matches = Args::command()
            .try_get_matches_from(std::iter::once("iai-mcp-wrapper").chain(args.iter().copied()))
            .expect("valid arguments");
        settings_in_effect(&matches)
    }

    fn find<'a>(all: &'a [Setting], flag: &str) -> &'a Setting {
        all.iter()
            .find(|s| s.flag == flag)
            .unwrap_or_else(|| panic!("no --{flag}"))
    }

    #[test]
    fn every_serving_flag_is_listed_with_its_value_and_source() {
        let all = settings(&["--connect-wait-ms", "250", "--check"]);
        let wait = find(&all, "connect-wait-ms");
        assert_eq!(
            (wait.value.as_deref(), wait.source),
            (Some("250"), Source::CommandLine)
        );
        assert_eq!(wait.env.as_deref(), Some("IAI_MCP_CONNECT_WAIT_MS"));
        assert_eq!(
            wait.to_string(),
            "--connect-wait-ms 250 (from the command line)"
        );
        let timeout = find(&all, "call-timeout-ms");
        assert_eq!(timeout.source, Source::Default);
        assert_eq!(timeout.value.as_deref(), Some("120000"));
        assert!(
            all.iter().all(|s| s.flag != "check" && s.flag != "help"),
            "switches that choose what the binary does are not settings"
        );
        let declared = Args::command()
            .get_arguments()
            .filter(|a| a.get_env().is_some())
            .count();
        assert_eq!(
            all.iter().filter(|s| s.env.is_some()).count(),
            declared,
            "every flag with a variable is listed"
        );
    }
}
