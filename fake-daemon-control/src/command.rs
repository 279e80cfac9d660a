//! The commands, one line each on the daemon's stdin: read from their wire
//! form ([`FromStr`]) by the daemon and written in it ([`Display`]) by
//! whoever drives the daemon, so both sides hold the same values.
//!
//! [`Display`]: std::fmt::Display

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

use crate::spec::{self, Argument};
use crate::start_up::{StartupOrder, StartupOrderError};

/// Largest accepted `DELAY`: one day, in milliseconds.
pub const MAX_DELAY_MS: u64 = 86_400_000;
/// Largest accepted `GARBAGE` line count.
pub const MAX_GARBAGE_LINES: u32 = 1_000_000;
/// Largest accepted `SLICE` and `OVERSIZE` byte count (1 GiB).
pub const MAX_BYTES_ARGUMENT: usize = 1 << 30;

/// One stdin command (each described for people in
/// [`COMMANDS`](crate::spec::COMMANDS)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Shut down and close every accepted connection; the listener stays.
    Drop,
    /// Close everything, remove the socket file and exit 0.
    Quit,
    /// Report the counters.
    Stats,
    /// Report when the most recent connections were accepted.
    Accepts,
    /// Report request methods and control types received, in order.
    Seen,
    /// Report every JSON-RPC request received (method and params), in order.
    Log,
    /// Close and unlink the listener and close every connection.
    Down,
    /// Bind again after [`Command::Down`].
    Up {
        /// This start's order; `None`: the one the daemon was started with.
        order: Option<StartupOrder>,
    },
    /// Stop answering; keep reading and holding requests.
    Hang,
    /// Answer again; held requests are answered at once.
    Resume,
    /// Send every reply this many milliseconds after its request arrived.
    Delay {
        /// Milliseconds; 0 turns delaying off.
        ms: u64,
    },
    /// Write this many non-JSON lines to every live connection now.
    Garbage {
        /// Number of lines.
        lines: u32,
    },
    /// Write output in pieces of at most this many bytes.
    Slice {
        /// Bytes per piece; 0 turns slicing off.
        bytes: usize,
    },
    /// Write the first half of the next success reply, then close its
    /// connection.
    Cut,
    /// Pad the next success reply to more than this many bytes.
    Oversize {
        /// The reply line (newline excluded) ends up longer than this.
        bytes: usize,
    },
    /// Write the next success reply twice.
    Duplicate,
    /// Write a response with an id nobody asked for to every live
    /// connection now.
    Stray,
}

/// Why a command line was refused; displays as the reason after `ERR `.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CommandError {
    /// The line held only whitespace.
    #[error("empty command")]
    Empty,
    /// The first word is not a command.
    #[error("unknown command: {0}")]
    Unknown(String),
    /// A command without argument got one.
    #[error("{command} takes no argument")]
    UnexpectedArgument {
        /// The command's name.
        command: &'static str,
    },
    /// A command that needs an argument got none.
    #[error("{command} needs {argument}")]
    MissingArgument {
        /// The command's name.
        command: &'static str,
        /// What the argument is, e.g. `<ms>`.
        argument: &'static str,
    },
    /// A command got more than its one argument.
    #[error("{command} takes one argument")]
    TooManyArguments {
        /// The command's name.
        command: &'static str,
    },
    /// The argument is not a whole number in range.
    #[error("{command} needs a whole number from 0 to {max}, not '{value}'")]
    InvalidNumber {
        /// The command's name.
        command: &'static str,
        /// The argument as given.
        value: String,
        /// The largest accepted value.
        max: u64,
    },
    /// The argument is not a start-up order.
    #[error(transparent)]
    StartupOrder(#[from] StartupOrderError),
}

impl Command {
    /// The command word.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Drop => "DROP",
            Command::Quit => "QUIT",
            Command::Stats => "STATS",
            Command::Accepts => "ACCEPTS",
            Command::Seen => "SEEN",
            Command::Log => "LOG",
            Command::Down => "DOWN",
            Command::Up { .. } => "UP",
            Command::Hang => "HANG",
            Command::Resume => "RESUME",
            Command::Delay { .. } => "DELAY",
            Command::Garbage { .. } => "GARBAGE",
            Command::Slice { .. } => "SLICE",
            Command::Cut => "CUT",
            Command::Oversize { .. } => "OVERSIZE",
            Command::Duplicate => "DUPLICATE",
            Command::Stray => "STRAY",
        }
    }

    /// The argument as written after the word, if the command has one.
    fn argument(&self) -> Option<String> {
        match self {
            Command::Up { order } => order.map(|order| order.to_string()),
            Command::Delay { ms } => Some(ms.to_string()),
            Command::Garbage { lines } => Some(lines.to_string()),
            Command::Slice { bytes } | Command::Oversize { bytes } => Some(bytes.to_string()),
            _ => None,
        }
    }

    /// The command named `name` (a word of [`COMMANDS`](crate::spec::COMMANDS))
    /// with `argument`, which the table says it may have.
    fn build(name: &'static str, argument: Option<&str>) -> Result<Command, CommandError> {
        let number = |max: u64| -> Result<u64, CommandError> {
            let value = argument.unwrap_or_default();
            value
                .parse::<u64>()
                .ok()
                .filter(|n| *n <= max)
                .ok_or_else(|| CommandError::InvalidNumber {
                    command: name,
                    value: value.to_owned(),
                    max,
                })
        };
        let bytes = || number(MAX_BYTES_ARGUMENT as u64).map(|n| n as usize);
        match name {
            "DROP" => Ok(Command::Drop),
            "QUIT" => Ok(Command::Quit),
            "STATS" => Ok(Command::Stats),
            "ACCEPTS" => Ok(Command::Accepts),
            "SEEN" => Ok(Command::Seen),
            "LOG" => Ok(Command::Log),
            "DOWN" => Ok(Command::Down),
            "UP" => Ok(Command::Up {
                order: argument.map(str::parse).transpose()?,
            }),
            "HANG" => Ok(Command::Hang),
            "RESUME" => Ok(Command::Resume),
            "DELAY" => Ok(Command::Delay {
                ms: number(MAX_DELAY_MS)?,
            }),
            "GARBAGE" => Ok(Command::Garbage {
                lines: number(MAX_GARBAGE_LINES.into())? as u32,
            }),
            "SLICE" => Ok(Command::Slice { bytes: bytes()? }),
            "CUT" => Ok(Command::Cut),
            "OVERSIZE" => Ok(Command::Oversize { bytes: bytes()? }),
            "DUPLICATE" => Ok(Command::Duplicate),
            "STRAY" => Ok(Command::Stray),
            // Not reached while every word of COMMANDS has an arm above (a
            // unit test checks that); refusing is safer than panicking.
            _ => Err(CommandError::Unknown(name.to_owned())),
        }
    }
}

impl fmt::Display for Command {
    /// The wire form: the word, and its argument after a space.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())?;
        match self.argument() {
            Some(argument) => write!(f, " {argument}"),
            None => Ok(()),
        }
    }
}

impl FromStr for Command {
    type Err = CommandError;

    /// Reads one command line; the command word is case-insensitive and
    /// surrounding whitespace is ignored.
    fn from_str(line: &str) -> Result<Self, Self::Err> {
        let mut words = line.split_whitespace();
        let word = words.next().ok_or(CommandError::Empty)?;
        let spec = spec::find(word).ok_or_else(|| CommandError::Unknown(word.to_owned()))?;
        let argument = words.next();
        if words.next().is_some() {
            return Err(CommandError::TooManyArguments { command: spec.name });
        }
        match (spec.argument, argument) {
            (Argument::None, Some(_)) => {
                Err(CommandError::UnexpectedArgument { command: spec.name })
            }
            (Argument::Required(what), None) => Err(CommandError::MissingArgument {
                command: spec.name,
                argument: what,
            }),
            (_, argument) => Command::build(spec.name, argument),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::spec::COMMANDS;

    fn parse(line: &str) -> Result<Command, CommandError> {
        line.parse()
    }

    #[test]
    fn parses_every_command() {
        assert_eq!(parse("DROP"), Ok(Command::Drop));
        assert_eq!(parse("  quit \r"), Ok(Command::Quit));
        assert_eq!(parse("Stats"), Ok(Command::Stats));
        assert_eq!(parse("SEEN"), Ok(Command::Seen));
        assert_eq!(parse("accepts"), Ok(Command::Accepts));
        assert_eq!(parse("LOG"), Ok(Command::Log));
        assert_eq!(parse("DOWN"), Ok(Command::Down));
        assert_eq!(parse("UP"), Ok(Command::Up { order: None }));
        assert_eq!(
            parse("up listen-after=50"),
            Ok(Command::Up {
                order: Some(StartupOrder::ListenAfter {
                    gap: Duration::from_millis(50)
                })
            })
        );
        assert_eq!(parse("HANG"), Ok(Command::Hang));
        assert_eq!(parse("RESUME"), Ok(Command::Resume));
        assert_eq!(parse("DELAY 250"), Ok(Command::Delay { ms: 250 }));
        assert_eq!(parse("GARBAGE 3"), Ok(Command::Garbage { lines: 3 }));
        assert_eq!(parse("SLICE 0"), Ok(Command::Slice { bytes: 0 }));
        assert_eq!(parse("CUT"), Ok(Command::Cut));
        assert_eq!(
            parse("OVERSIZE 1048576"),
            Ok(Command::Oversize { bytes: 1_048_576 })
        );
        assert_eq!(parse("DUPLICATE"), Ok(Command::Duplicate));
        assert_eq!(parse("STRAY"), Ok(Command::Stray));
    }

    /// A line for `spec` with a sample argument where it takes one.
    fn sample_line(name: &str, argument: Argument) -> String {
        match (name, argument) {
            ("UP", _) => "UP token-then-port=5".to_owned(),
            (_, Argument::None) => name.to_owned(),
            (_, Argument::Required(_) | Argument::Optional(_)) => format!("{name} 1"),
        }
    }

    #[test]
    fn every_documented_command_reads_back_as_it_is_written() {
        for spec in COMMANDS {
            let line = sample_line(spec.name, spec.argument);
            let command = parse(&line).unwrap_or_else(|e| panic!("{line}: {e}"));
            assert_eq!(command.name(), spec.name, "{line}");
            assert_eq!(command.to_string(), line);
            if let Argument::Optional(_) = spec.argument {
                assert_eq!(parse(spec.name).unwrap().to_string(), spec.name);
            }
        }
    }

    #[test]
    fn refusals_say_why() {
        let reason = |line: &str| parse(line).unwrap_err().to_string();
        assert_eq!(reason(""), "empty command");
        assert_eq!(reason("BOGUS now"), "unknown command: BOGUS");
        assert_eq!(reason("DROP now"), "DROP takes no argument");
        assert_eq!(reason("DELAY"), "DELAY needs <ms>");
        assert_eq!(reason("DELAY 1 2"), "DELAY takes one argument");
        assert_eq!(
            reason("DELAY -5"),
            "DELAY needs a whole number from 0 to 86400000, not '-5'"
        );
        assert_eq!(
            reason("GARBAGE 1000001"),
            "GARBAGE needs a whole number from 0 to 1000000, not '1000001'"
        );
        assert_eq!(
            reason("SLICE x"),
            "SLICE needs a whole number from 0 to 1073741824, not 'x'"
        );
        assert_eq!(
            reason("UP sideways"),
            "unknown start-up order 'sideways' (at-once, listen-after=<ms> or token-then-port=<ms>)"
        );
    }
}
