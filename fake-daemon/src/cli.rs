//! Command-line arguments, `--help` and `--version`.
//!
//! Hand-rolled: one positional argument and a few options do not need a
//! parser library, and the help text is generated from the command table
//! (`fake_daemon_control::spec::COMMANDS`), so it documents exactly what the
//! parser accepts.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::PathBuf;

use fake_daemon_control::spec::COMMANDS;
use fake_daemon_control::{BOUND, START_UP_OPTION, StartupOrder, StartupOrderError, StartupStep};
use thiserror::Error;

use crate::journal::DEFAULT_JOURNAL_BYTES;
use crate::listener::{MAX_SOCKET_PATH_BYTES, SocketPathError, check_socket_path};
use crate::server::{Config, DEFAULT_MAX_LINE_BYTES, DEFAULT_RELEASE};

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invocation {
    /// Serve with this configuration.
    Run(Config),
    /// Print [`help_text`] and exit 0.
    Help,
    /// Print [`version_text`] and exit 0.
    Version,
}

/// A command line that cannot be run; the binary exits 2.
#[derive(Debug, Error)]
pub enum CliError {
    /// No socket path was given.
    #[error("missing <socket-path> argument")]
    MissingSocketPath,
    /// More than one positional argument.
    #[error("unexpected argument '{0}'")]
    UnexpectedArgument(String),
    /// An option that does not exist.
    #[error("unknown option '{0}'")]
    UnknownOption(String),
    /// An option without its value.
    #[error("option {0} needs a value")]
    MissingValue(&'static str),
    /// An option value that is not a whole number of bytes.
    #[error("invalid value '{value}' for {option}: {reason}")]
    InvalidValue {
        /// The option.
        option: &'static str,
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The socket path cannot work.
    #[error(transparent)]
    SocketPath(#[from] SocketPathError),
    /// The `--start-up` value is no start-up order.
    #[error("invalid value for {START_UP_OPTION}: {0}")]
    StartupOrder(#[from] StartupOrderError),
    /// A TCP-only start-up order without `--tcp`.
    #[error("the start-up order {0} is for TCP (--tcp) only")]
    TcpOnlyOrder(StartupOrder),
}

/// Parses the arguments after the program name.
pub fn parse_args<I>(args: I) -> Result<Invocation, CliError>
where
    I: IntoIterator<Item = OsString>,
{
    let mut args = args.into_iter();
    let mut socket_path: Option<OsString> = None;
    let mut max_line_bytes = DEFAULT_MAX_LINE_BYTES;
    let mut journal_bytes = DEFAULT_JOURNAL_BYTES;
    let mut tcp = false;
    let mut release = Some(DEFAULT_RELEASE.to_owned());
    let mut start_up = StartupOrder::AtOnce;
    let mut options_done = false;
    while let Some(arg) = args.next() {
        let text = arg.to_string_lossy();
        if !options_done && text.starts_with('-') && text.len() > 1 {
            let (name, inline) = match text.split_once('=') {
                Some((name, value)) => (name.to_owned(), Some(value.to_owned())),
                None => (text.clone().into_owned(), None),
            };
            match name.as_str() {
                "--" if inline.is_none() => options_done = true,
                "-h" | "--help" => return Ok(Invocation::Help),
                "-V" | "--version" => return Ok(Invocation::Version),
                "--tcp" if inline.is_none() => tcp = true,
                "--no-release" if inline.is_none() => release = None,
                "--release" => release = Some(text_value("--release", inline, &mut args)?),
                START_UP_OPTION => {
                    start_up = text_value(START_UP_OPTION, inline, &mut args)?.parse()?;
                }
                "--max-line-bytes" => {
                    max_line_bytes = byte_count("--max-line-bytes", inline, &mut args, 1)?;
                }
                "--journal-bytes" => {
                    journal_bytes = byte_count("--journal-bytes", inline, &mut args, 0)?;
                }
                _ => return Err(CliError::UnknownOption(text.into_owned())),
            }
            continue;
        }
        if socket_path.is_some() {
            return Err(CliError::UnexpectedArgument(text.into_owned()));
        }
        socket_path = Some(arg);
    }
    let socket_path = PathBuf::from(socket_path.ok_or(CliError::MissingSocketPath)?);
    check_socket_path(&socket_path)?;
    if start_up.tcp_only() && !tcp {
        return Err(CliError::TcpOnlyOrder(start_up));
    }
    Ok(Invocation::Run(Config {
        socket_path,
        tcp,
        max_line_bytes,
        journal_bytes,
        release,
        start_up,
    }))
}

/// Reads a text option value (inline after `=` or the next argument).
fn text_value(
    option: &'static str,
    inline: Option<String>,
    rest: &mut impl Iterator<Item = OsString>,
) -> Result<String, CliError> {
    match inline {
        Some(value) => Ok(value),
        None => Ok(rest
            .next()
            .ok_or(CliError::MissingValue(option))?
            .to_string_lossy()
            .into_owned()),
    }
}

/// Reads a byte-count option value (inline after `=` or the next argument).
fn byte_count(
    option: &'static str,
    inline: Option<String>,
    rest: &mut impl Iterator<Item = OsString>,
    min: usize,
) -> Result<usize, CliError> {
    let value = match inline {
        Some(value) => value,
        None => rest
            .next()
            .ok_or(CliError::MissingValue(option))?
            .to_string_lossy()
            .into_owned(),
    };
    let invalid = |reason| CliError::InvalidValue {
        option,
        value: value.clone(),
        reason,
    };
    let n: usize = value
        .parse()
        .map_err(|_| invalid("not a whole number of bytes"))?;
    if n < min {
        return Err(invalid("must be at least 1"));
    }
    Ok(n)
}

/// `fake-daemon <version>`.
pub fn version_text() -> String {
    format!("fake-daemon {}", env!("CARGO_PKG_VERSION"))
}

/// The `--help` text: usage, wire behaviour, options, every stdin command
/// with its acknowledgement, the start-up orders, and exit statuses.
pub fn help_text() -> String {
    [
        about_text(),
        options_text(),
        commands_text(),
        acknowledgements_text(),
        start_up_text(),
        exit_status_text(),
    ]
    .concat()
}

/// What the daemon is and does on the wire.
fn about_text() -> String {
    format!(
        "{version}
Stand-in for the iai-mcp daemon in tests, the race kit, benchmarks and soaks.

USAGE:
    fake-daemon [OPTIONS] <socket-path>

Binds a Unix socket at <socket-path> (a stale socket file there is removed
first; the new socket gets mode 0600), prints {BOUND} on stdout once listening,
and answers every newline-delimited JSON-RPC 2.0 request
    {{\"jsonrpc\":\"2.0\",\"id\":<id>,\"method\":<method>,\"params\":<params>}}
with
    {{\"jsonrpc\":\"2.0\",\"id\":<id>,\"result\":{{\"ok\":true,\"method\":<method>,\"fake_daemon\":true}}}}
echoing <id> exactly. Any number of connections; requests may be split
across writes or pipelined. A non-JSON line gets
    {{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{{\"code\":-32700,\"message\":\"parse error\"}}}}
and JSON that is not a valid request gets code -32600 (with the request's id
when it has a usable one). A line longer than --max-line-bytes gets -32600
and is skipped up to its newline. Notifications (no id) get no reply.
Control messages (an object without \"jsonrpc\" whose \"type\" is a string:
status, user_initiated_sleep, force_wake, force_rem, pause, resume,
session_open) are counted and recorded; only status gets a reply, as the
real daemon's (DELAY and HANG apply to it):
    {{\"ok\":true,\"state\":\"WAKE\",\"version\":<--release>}}

With --tcp, listens on loopback TCP instead, as iai-mcp does where there
are no Unix sockets: an ephemeral port (kept across DOWN/UP), written to
<socket-path>.port, and a fresh random token written to <socket-path>.token
(mode 0600) at every bind. Every connection must send the token as its first
line; others are closed (STATS counts them as refused).

",
        version = version_text(),
    )
}

/// The options.
fn options_text() -> String {
    format!(
        "OPTIONS:
    --tcp                 listen on loopback TCP with a token (see above)
    --release <VERSION>   the release status reports [default: {release}]
    --no-release          status replies carry no version member (a daemon
                          that does not report its release)
    --max-line-bytes <N>  longest accepted request line [default: {max_line}]
    --journal-bytes <N>   memory kept for SEEN and LOG; beyond it the oldest
                          entries are forgotten and both reports add
                          \"dropped\":<count>; 0 records nothing (fastest)
                          [default: {journal}]
    {START_UP_OPTION} <ORDER>    the order of every start: at-once, listen-after=<ms>
                          or token-then-port=<ms> (see START-UP ORDERS)
                          [default: at-once]
    -h, --help            print this help
    -V, --version         print the version

",
        max_line = DEFAULT_MAX_LINE_BYTES,
        journal = DEFAULT_JOURNAL_BYTES,
        release = DEFAULT_RELEASE,
    )
}

/// Every stdin command with what it does and its answer, from the table.
fn commands_text() -> String {
    let mut text = "COMMANDS (on stdin, one per line, command word case-insensitive):\n".to_owned();
    for spec in COMMANDS {
        let mut lead = format!("{:<17}", spec.usage());
        for line in wrap(spec.effect, 56) {
            let _ = writeln!(text, "    {lead} {line}");
            lead = " ".repeat(17);
        }
        let mut arrow = "->";
        for line in wrap(&spec.answer_text(), 53) {
            let _ = writeln!(text, "    {lead} {arrow} {line}");
            arrow = "  ";
        }
    }
    text
}

/// How commands are acknowledged and refused, and how faults combine.
fn acknowledgements_text() -> String {
    "
Every command except QUIT is acknowledged by exactly one line on stdout,
printed once its effect has taken place (after DROPPED every connection is
closed; after OK GARBAGE the lines are written). A refused command gets
    ERR unknown command: <word>     or     ERR <reason>
and changes nothing. stdout carries only BOUND and acknowledgements;
diagnostics go to stderr. One-shot faults (CUT, OVERSIZE, DUPLICATE) apply
to the next success reply; HANG and DELAY apply to every reply, while
GARBAGE and STRAY lines are written at once regardless. End of stdin
stops command reading only: the daemon serves until QUIT, SIGTERM or SIGINT,
which close everything, remove the socket file and exit 0.
"
    .to_owned()
}

/// The start-up orders, at start and at UP.
fn start_up_text() -> String {
    format!(
        "
START-UP ORDERS ({START_UP_OPTION} ORDER for every start, UP ORDER for one):
    at-once               bind and listen in one step; on TCP then write the
                          token file, then the port file, each whole
    listen-after=<ms>     bind (on TCP and write both files), wait <ms>,
                          then listen: a dial in between is refused
    token-then-port=<ms>  iai-mcp 3.3.0's order, TCP only: the token file
                          written empty, the token written into it, bind and
                          listen, the port file emptied, the port written
                          into it, <ms> between each step and the next
Each step of the last two is logged on stderr once taken, before its
pause, as \"fake-daemon: start-up: <step>\", <step> being in turn
    listen-after:         {bound} | {listening}
    token-then-port:      {token_empty} | {token} | {listening} |
                          {port_empty} | {port}
{BOUND} (at start) and OK UP (at UP) come once the whole start-up is done.
",
        bound = StartupStep::Bound.words(),
        listening = StartupStep::Listening.words(),
        token_empty = StartupStep::TokenFileEmpty.words(),
        token = StartupStep::TokenWritten.words(),
        port_empty = StartupStep::PortFileEmpty.words(),
        port = StartupStep::PortWritten.words(),
    )
}

/// The exit statuses.
fn exit_status_text() -> String {
    format!(
        "
EXIT STATUS:
    0  after QUIT, SIGTERM or SIGINT (or --help, --version)
    1  the socket (or TCP port) could not be bound
    2  bad arguments, including a socket path longer than {MAX_SOCKET_PATH_BYTES} bytes
"
    )
}

/// Splits `text` into lines of at most `width` characters at spaces (a
/// longer word gets a line of its own).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push(line);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Invocation, CliError> {
        parse_args(args.iter().map(OsString::from))
    }

    #[test]
    fn socket_path_and_options() {
        assert_eq!(
            parse(&["/tmp/d.sock"]).unwrap(),
            Invocation::Run(Config::new("/tmp/d.sock"))
        );
        let Invocation::Run(config) = parse(&[
            "--max-line-bytes",
            "1024",
            "--journal-bytes=0",
            "/tmp/d.sock",
        ])
        .unwrap() else {
            panic!("expected a run");
        };
        assert_eq!((config.max_line_bytes, config.journal_bytes), (1024, 0));
        assert_eq!(config.release.as_deref(), Some(DEFAULT_RELEASE));
        for (args, release) in [
            (&["--release", "3.2.3", "s"][..], Some("3.2.3")),
            (&["--release=3.4.0", "s"], Some("3.4.0")),
            (&["--no-release", "s"], None),
        ] {
            let Invocation::Run(config) = parse(args).unwrap() else {
                panic!("expected a run");
            };
            assert_eq!(config.release.as_deref(), release, "{args:?}");
        }
        assert!(matches!(
            parse(&["s", "--release"]),
            Err(CliError::MissingValue("--release"))
        ));
        let Invocation::Run(config) = parse(&["--", "-odd.sock"]).unwrap() else {
            panic!("expected a run");
        };
        assert_eq!(config.socket_path, PathBuf::from("-odd.sock"));
    }

    #[test]
    fn start_up_orders() {
        let order = |args: &[&str]| match parse(args) {
            Ok(Invocation::Run(config)) => Ok(config.start_up),
            Ok(other) => panic!("expected a run, not {other:?}"),
            Err(err) => Err(err.to_string()),
        };
        assert_eq!(order(&["s"]), Ok(StartupOrder::AtOnce));
        assert_eq!(
            order(&["--start-up", "listen-after=50", "s"]),
            Ok(StartupOrder::ListenAfter {
                gap: std::time::Duration::from_millis(50)
            })
        );
        assert_eq!(
            order(&["--tcp", "--start-up=token-then-port=5", "s"]),
            Ok(StartupOrder::TokenThenPort {
                pause: std::time::Duration::from_millis(5)
            })
        );
        assert_eq!(
            order(&["--start-up=token-then-port=5", "s"]),
            Err("the start-up order token-then-port=5 is for TCP (--tcp) only".to_owned())
        );
        assert_eq!(
            order(&["--start-up", "later", "s"]),
            Err("invalid value for --start-up: unknown start-up order 'later' (at-once, listen-after=<ms> or token-then-port=<ms>)".to_owned())
        );
    }

    #[test]
    fn help_and_version_win() {
        assert_eq!(parse(&["/tmp/x", "--help"]).unwrap(), Invocation::Help);
        assert_eq!(parse(&["-V"]).unwrap(), Invocation::Version);
    }

    #[test]
    fn bad_command_lines() {
        assert!(matches!(parse(&[]), Err(CliError::MissingSocketPath)));
        assert!(matches!(
            parse(&["a", "b"]),
            Err(CliError::UnexpectedArgument(_))
        ));
        assert!(matches!(
            parse(&["--bogus", "a"]),
            Err(CliError::UnknownOption(_))
        ));
        assert!(matches!(
            parse(&["a", "--max-line-bytes"]),
            Err(CliError::MissingValue(_))
        ));
        assert!(matches!(
            parse(&["--max-line-bytes=0", "a"]),
            Err(CliError::InvalidValue { .. })
        ));
        assert!(matches!(
            parse(&["--journal-bytes=x", "a"]),
            Err(CliError::InvalidValue { .. })
        ));
        assert!(matches!(
            parse(&[&"s".repeat(200)]),
            Err(CliError::SocketPath(_))
        ));
    }

    #[test]
    fn help_fits_in_80_columns() {
        // Wire-format examples are the exception: they must stay one line.
        for line in help_text()
            .lines()
            .filter(|line| !line.starts_with("    {\""))
        {
            assert!(line.chars().count() <= 80, "{line}");
        }
        assert_eq!(wrap("a bb ccc", 4), ["a bb", "ccc"]);
    }

    #[test]
    fn help_documents_every_command_and_start_up_step() {
        // Wrapped lines read as one: every run of white space as one space.
        let squeeze = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
        let help = squeeze(&help_text());
        for step in StartupStep::ALL {
            assert!(help.contains(step.words()), "{step}");
        }
        for spec in COMMANDS {
            assert!(
                help.contains(&spec.usage()) && help.contains(&squeeze(&spec.answer_text())),
                "{}",
                spec.name
            );
        }
    }
}
