//! The stdin command language: one command per line, parsed into a
//! [`Command`] or a [`CommandError`] (which the daemon reports as
//! `ERR <reason>` without changing anything).
//!
//! [`COMMANDS`] describes every command once; `--help` is generated from it so
//! the usage text cannot fall behind the parser.

use std::str::FromStr;

use thiserror::Error;

/// Largest accepted `DELAY`: one day, in milliseconds.
pub const MAX_DELAY_MS: u64 = 86_400_000;
/// Largest accepted `GARBAGE` line count.
pub const MAX_GARBAGE_LINES: u32 = 1_000_000;
/// Largest accepted `SLICE` and `OVERSIZE` byte count (1 GiB).
pub const MAX_BYTES_ARGUMENT: usize = 1 << 30;

/// One stdin command.
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
    /// Bind the socket path again after [`Command::Down`].
    Up,
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
}

/// Usage documentation of one command, for `--help`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandSpec {
    /// The command word.
    pub name: &'static str,
    /// Its argument, e.g. `<ms>`, if it takes one.
    pub argument: Option<&'static str>,
    /// What it does.
    pub effect: &'static str,
    /// The acknowledgement line on success.
    pub ack: &'static str,
}

/// Every command, in the order `--help` lists them.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "DROP",
        argument: None,
        effect: "shut down and close every accepted connection; the listener stays bound",
        ack: "DROPPED",
    },
    CommandSpec {
        name: "QUIT",
        argument: None,
        effect: "close everything, remove the socket file, exit 0",
        ack: "(none: the process exits)",
    },
    CommandSpec {
        name: "STATS",
        argument: None,
        effect: "report live accepted connections, total accepted, JSON-RPC requests answered, control messages seen",
        ack: "STATS conns=<n> accepted=<n> requests=<n> controls=<n>",
    },
    CommandSpec {
        name: "ACCEPTS",
        argument: None,
        effect: "report when the most recent connections (up to 10000) were accepted, in microseconds since the Unix epoch, oldest first",
        ack: "{\"accepted_at_us\":[1764564000000000,...]}",
    },
    CommandSpec {
        name: "SEEN",
        argument: None,
        effect: "report the request methods and control message types received, in order",
        ack: "{\"seen\":[\"session_open\",\"topology\",...]}",
    },
    CommandSpec {
        name: "LOG",
        argument: None,
        effect: "report every JSON-RPC request received, in order (params null when absent, id left out for notifications)",
        ack: "{\"requests\":[{\"method\":..,\"params\":..,\"id\":..},...]}",
    },
    CommandSpec {
        name: "DOWN",
        argument: None,
        effect: "close and unlink the listener and close every connection (daemon stopped); no-op when already down",
        ack: "OK DOWN",
    },
    CommandSpec {
        name: "UP",
        argument: None,
        effect: "bind the socket path again after DOWN; no-op when already up",
        ack: "OK UP  (or ERR <reason> when binding fails)",
    },
    CommandSpec {
        name: "HANG",
        argument: None,
        effect: "stop answering: keep connections, keep reading and holding requests",
        ack: "OK HANG",
    },
    CommandSpec {
        name: "RESUME",
        argument: None,
        effect: "answer again; held requests are answered now",
        ack: "OK RESUME",
    },
    CommandSpec {
        name: "DELAY",
        argument: Some("<ms>"),
        effect: "send every reply <ms> after its request arrived, without blocking anything else (0 = off)",
        ack: "OK DELAY <ms>",
    },
    CommandSpec {
        name: "GARBAGE",
        argument: Some("<n>"),
        effect: "write n non-JSON lines (\"garbage line 1\", ...) to every live connection now",
        ack: "OK GARBAGE <n>",
    },
    CommandSpec {
        name: "SLICE",
        argument: Some("<bytes>"),
        effect: "write output in pieces of at most <bytes>, yielding between pieces (0 = off)",
        ack: "OK SLICE <bytes>",
    },
    CommandSpec {
        name: "CUT",
        argument: None,
        effect: "write the first half of the next success reply on any connection, then close that connection",
        ack: "OK CUT",
    },
    CommandSpec {
        name: "OVERSIZE",
        argument: Some("<bytes>"),
        effect: "give the next success reply an extra result field \"padding\" making the line longer than <bytes>",
        ack: "OK OVERSIZE <bytes>",
    },
    CommandSpec {
        name: "DUPLICATE",
        argument: None,
        effect: "write the next success reply twice",
        ack: "OK DUPLICATE",
    },
    CommandSpec {
        name: "STRAY",
        argument: None,
        effect: "write a well-formed response with id 999999999 (asked for by nobody) to every live connection now",
        ack: "OK STRAY",
    },
];

impl FromStr for Command {
    type Err = CommandError;

    /// Parses one command line; the command word is case-insensitive and
    /// surrounding whitespace is ignored.
    fn from_str(line: &str) -> Result<Self, Self::Err> {
        let mut words = line.split_whitespace();
        let word = words.next().ok_or(CommandError::Empty)?;
        let argument = words.next();
        let name = COMMANDS
            .iter()
            .map(|spec| spec.name)
            .find(|name| name.eq_ignore_ascii_case(word))
            .ok_or_else(|| CommandError::Unknown(word.to_owned()))?;
        if words.next().is_some() {
            return Err(CommandError::TooManyArguments { command: name });
        }
        let no_argument = |command: Command| match argument {
            None => Ok(command),
            Some(_) => Err(CommandError::UnexpectedArgument { command: name }),
        };
        let number = |what: &'static str, max: u64| -> Result<u64, CommandError> {
            let value = argument.ok_or(CommandError::MissingArgument {
                command: name,
                argument: what,
            })?;
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
        let bytes = || number("<bytes>", MAX_BYTES_ARGUMENT as u64).map(|n| n as usize);
        match name {
            "DROP" => no_argument(Command::Drop),
            "QUIT" => no_argument(Command::Quit),
            "STATS" => no_argument(Command::Stats),
            "ACCEPTS" => no_argument(Command::Accepts),
            "SEEN" => no_argument(Command::Seen),
            "LOG" => no_argument(Command::Log),
            "DOWN" => no_argument(Command::Down),
            "UP" => no_argument(Command::Up),
            "HANG" => no_argument(Command::Hang),
            "RESUME" => no_argument(Command::Resume),
            "DELAY" => Ok(Command::Delay {
                ms: number("<ms>", MAX_DELAY_MS)?,
            }),
            "GARBAGE" => Ok(Command::Garbage {
                lines: number("<n>", MAX_GARBAGE_LINES.into())? as u32,
            }),
            "SLICE" => Ok(Command::Slice { bytes: bytes()? }),
            "CUT" => no_argument(Command::Cut),
            "OVERSIZE" => Ok(Command::Oversize { bytes: bytes()? }),
            "DUPLICATE" => no_argument(Command::Duplicate),
            "STRAY" => no_argument(Command::Stray),
            // Not reached while every name in COMMANDS has an arm above (a
            // unit test checks that); refusing is safer than panicking.
            _ => Err(CommandError::Unknown(word.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(parse("UP"), Ok(Command::Up));
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

    #[test]
    fn every_documented_command_parses() {
        for spec in COMMANDS {
            let line = match spec.argument {
                Some(_) => format!("{} 1", spec.name),
                None => spec.name.to_owned(),
            };
            assert!(parse(&line).is_ok(), "{line}");
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
    }
}
