//! What the daemon answers each command with, one line on stdout: written
//! by the daemon and read by the harness as the same [`Ack`].

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

use crate::command::{Command, CommandError};
use crate::stats::{StatsError, StatsSnapshot};

/// The line the daemon prints on stdout once it listens, before any
/// acknowledgement.
pub const BOUND: &str = "BOUND";

/// One acknowledgement: every command but `QUIT` gets exactly one, printed
/// once its effect has taken place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ack {
    /// `DROPPED`: every connection is closed (`DROP`).
    Dropped,
    /// `OK <command>`: the command, as given, has taken effect.
    Done(Command),
    /// `STATS ...`: the counters.
    Stats(StatsSnapshot),
    /// A report on one line of JSON (`ACCEPTS`, `SEEN`, `LOG`; read with
    /// the types of [`reports`](crate::reports)).
    Report(String),
    /// `ERR <reason>`: the command was refused, and nothing changed (or, for
    /// `UP`, the daemon could not bind).
    Refused(String),
}

/// A line that is no acknowledgement.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AckError {
    /// `OK` followed by something that is not a command.
    #[error("'{line}' acknowledges no command: {source}")]
    Command {
        /// The line.
        line: String,
        /// Why the rest is no command.
        source: CommandError,
    },
    /// `STATS` followed by something that is not the counters.
    #[error("'{line}' is no STATS reply: {source}")]
    Stats {
        /// The line.
        line: String,
        /// What is wrong with it.
        source: StatsError,
    },
    /// Anything else.
    #[error("'{0}' is no acknowledgement")]
    Unknown(String),
}

impl Ack {
    /// The acknowledgement of `command` carried out, for the commands that
    /// change something: `DROPPED` for `DROP`, else `OK <command>`.
    pub fn carried_out(command: Command) -> Ack {
        match command {
            Command::Drop => Ack::Dropped,
            other => Ack::Done(other),
        }
    }
}

impl fmt::Display for Ack {
    /// The line as printed, without its newline.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ack::Dropped => f.write_str("DROPPED"),
            Ack::Done(command) => write!(f, "OK {command}"),
            Ack::Stats(stats) => write!(f, "{stats}"),
            Ack::Report(json) => f.write_str(json),
            Ack::Refused(reason) => write!(f, "ERR {reason}"),
        }
    }
}

impl FromStr for Ack {
    type Err = AckError;

    /// Reads one stdout line (its line ending ignored).
    fn from_str(line: &str) -> Result<Self, Self::Err> {
        let line = line.trim_end();
        if line == "DROPPED" {
            return Ok(Ack::Dropped);
        }
        if let Some(command) = line.strip_prefix("OK ") {
            return command
                .parse()
                .map(Ack::Done)
                .map_err(|source| AckError::Command {
                    line: line.to_owned(),
                    source,
                });
        }
        if let Some(reason) = line.strip_prefix("ERR ") {
            return Ok(Ack::Refused(reason.to_owned()));
        }
        if line.starts_with("STATS") {
            return line
                .parse()
                .map(Ack::Stats)
                .map_err(|source| AckError::Stats {
                    line: line.to_owned(),
                    source,
                });
        }
        if line.starts_with('{') {
            return Ok(Ack::Report(line.to_owned()));
        }
        Err(AckError::Unknown(line.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_acknowledgement_reads_back_as_it_is_written() {
        for ack in [
            Ack::Dropped,
            Ack::Done(Command::Delay { ms: 20 }),
            Ack::Done(Command::Up { order: None }),
            Ack::Stats(StatsSnapshot {
                conns: 1,
                accepted: 2,
                ..StatsSnapshot::default()
            }),
            Ack::Report("{\"seen\":[]}".to_owned()),
            Ack::Refused("unknown command: BOGUS".to_owned()),
        ] {
            assert_eq!(ack.to_string().parse(), Ok(ack.clone()), "{ack}");
        }
    }

    #[test]
    fn carried_out_is_dropped_or_ok_and_the_command() {
        assert_eq!(Ack::carried_out(Command::Drop).to_string(), "DROPPED");
        assert_eq!(
            Ack::carried_out(Command::Garbage { lines: 3 }).to_string(),
            "OK GARBAGE 3"
        );
    }

    #[test]
    fn other_lines_are_no_acknowledgement() {
        assert_eq!(
            "BOUND".parse::<Ack>(),
            Err(AckError::Unknown("BOUND".to_owned()))
        );
        assert!(matches!(
            "OK FROBNICATE".parse::<Ack>(),
            Err(AckError::Command { .. })
        ));
        assert!(matches!(
            "STATS conns=1".parse::<Ack>(),
            Err(AckError::Stats { .. })
        ));
    }
}
