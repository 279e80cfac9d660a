//! Command line and environment: every setting is a flag that can also come
//! from an environment variable (the flag wins), validated before anything
//! else happens.
//!
//! Each default is declared once, as a constant beside what it configures
//! (the bridge's timings in [`crate::bridge::policy`], the line cap in
//! [`crate::codec`], ...), and the flags below name those constants. An
//! empty value, which host configurations often hold, means the default.
//! [`Args::resolve`] turns the flags into a [`Config`] or a typed
//! [`ConfigError`] without touching the file system; finding the CLIs on
//! disk is a step of its own ([`Installation::locate`]).

use std::ffi::{OsStr, OsString};
use std::fmt::Display;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use clap::Parser;
use clap::builder::TypedValueParser;
use clap::error::ErrorKind;
use thiserror::Error;

use crate::bridge::{Backoff, BridgeMode, Policy, PolicyError, Timings, policy};
use crate::codec::DEFAULT_MAX_LINE_BYTES;
use crate::degraded::{self, DegradedConfig};
use crate::install::hosts::Host;
use crate::lifecycle::doctor::{self, DoctorConfig};
use crate::lifecycle::heartbeat;
use crate::logging::LogFormat;
use crate::mcp::server::DEFAULT_SHUTDOWN_GRACE;
use crate::platform::{Platform, Transport};
use crate::programs::Installation;
use crate::transport::{Endpoint, EndpointError, EndpointSettings};

/// Parses a setting's value; an empty value means the default the flag
/// declares (hosts often write a variable as `""` rather than leave it
/// out), anything else is parsed strictly.
#[derive(Debug)]
pub struct EmptyIsDefault<T>(PhantomData<fn() -> T>);

impl<T> EmptyIsDefault<T> {
    /// The parser for settings of type `T`.
    pub fn new() -> Self {
        EmptyIsDefault(PhantomData)
    }
}

impl<T> Default for EmptyIsDefault<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Clone for EmptyIsDefault<T> {
    fn clone(&self) -> Self {
        Self::new()
    }
}

impl<T> TypedValueParser for EmptyIsDefault<T>
where
    T: FromStr + Clone + Send + Sync + 'static,
    T::Err: Display,
{
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<T, clap::Error> {
        let name = arg.map_or_else(|| "the setting".to_owned(), |a| format!("--{}", a.get_id()));
        let Some(text) = value.to_str() else {
            return Err(clap::Error::raw(
                ErrorKind::InvalidUtf8,
                format!("the value of {name} is not UTF-8\n"),
            )
            .with_cmd(cmd));
        };
        let text = if text.is_empty() {
            arg.and_then(|a| a.get_default_values().first())
                .and_then(|default| default.to_str())
                .unwrap_or(text)
        } else {
            text
        };
        text.parse().map_err(|e: T::Err| {
            clap::Error::raw(
                ErrorKind::ValueValidation,
                format!("invalid value {text:?} for {name}: {e}\n"),
            )
            .with_cmd(cmd)
        })
    }
}

/// Any text, the empty string included (an empty value means "unset").
fn any_text(s: &str) -> Result<String, std::convert::Infallible> {
    Ok(s.to_owned())
}

/// A duration in whole milliseconds, as the settings spell durations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Millis(pub Duration);

impl FromStr for Millis {
    type Err = std::num::ParseIntError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse().map(|ms| Millis(Duration::from_millis(ms)))
    }
}

impl Display for Millis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0.as_millis())
    }
}

/// An on/off setting. Accepts `on`/`off`, `1`/`0`, `true`/`false` and
/// `yes`/`no` in any case, so that a value written for iai-mcp 3.3.0
/// (which only knew `0`) keeps its meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Switch(pub bool);

impl FromStr for Switch {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "on" | "1" | "true" | "yes" => Ok(Switch(true)),
            "off" | "0" | "false" | "no" => Ok(Switch(false)),
            other => Err(format!("expected on or off (or 1/0), got {other:?}")),
        }
    }
}

impl Display for Switch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0 { "on" } else { "off" })
    }
}

/// A TCP port number, 1 to 65535, or unset (an empty value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpPort(pub Option<u16>);

fn port(s: &str) -> Result<TcpPort, String> {
    if s.is_empty() {
        return Ok(TcpPort(None));
    }
    match s.parse::<u16>() {
        Ok(0) | Err(_) => Err(format!("expected a port number from 1 to 65535, got {s:?}")),
        Ok(port) => Ok(TcpPort(Some(port))),
    }
}

/// How the daemon listens, or unset (an empty value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransportSetting(pub Option<Transport>);

fn transport(s: &str) -> Result<TransportSetting, String> {
    if s.is_empty() {
        return Ok(TransportSetting(None));
    }
    s.parse().map(|t| TransportSetting(Some(t)))
}

/// The text `--version` prints: this release and the iai-mcp release it
/// stands in for.
fn version_text() -> &'static str {
    let description = crate::mcp::protocol::description();
    description
        .strip_prefix("iai-mcp-wrapper ")
        .unwrap_or(description)
}

/// MCP stdio server for iai-mcp: forwards tool calls to the iai-mcp daemon
/// (Unix socket, or loopback TCP with a token), waiting out daemon restarts
/// instead of failing, and answering the memory tools through the `iai` CLI
/// while the daemon is down.
#[derive(Debug, Clone, Parser)]
#[command(name = "iai-mcp-wrapper", version = version_text(), about, long_about = None, args_conflicts_with_subcommands = true)]
pub struct Args {
    /// Daemon socket to dial [default: $HOME/.iai-mcp/.daemon.sock]. Wins
    /// over the TCP settings. Where there are no Unix sockets, the daemon's
    /// port and token files beside it (PATH.port, PATH.token) are used.
    #[arg(long, env = "IAI_DAEMON_SOCKET_PATH",
        value_parser = any_text, value_name = "PATH")]
    pub socket_path: Option<String>,

    /// Dial the daemon over TCP on this port (when no socket path is set);
    /// the token file's content is sent first on every connection.
    #[arg(long, env = "IAI_DAEMON_TCP_PORT", value_parser = port, value_name = "PORT")]
    pub tcp_port: Option<TcpPort>,

    /// Host for --tcp-port [default: 127.0.0.1]. The token travels in clear
    /// text: use loopback only.
    #[arg(long, env = "IAI_DAEMON_TCP_HOST", value_parser = any_text, value_name = "HOST")]
    pub tcp_host: Option<String>,

    /// Token file for TCP [default: $HOME/.iai-mcp/.daemon.token].
    #[arg(long, env = "IAI_DAEMON_TOKEN_PATH", value_parser = any_text, value_name = "PATH")]
    pub token_path: Option<String>,

    /// How the daemon listens: `unix` (a socket) or `tcp` (loopback, with
    /// the port and token files it writes, as on Windows) [default: tcp on
    /// Windows, unix elsewhere]. For tests, and daemons run in the other
    /// platform's way.
    #[arg(long, env = "IAI_DAEMON_TRANSPORT", value_name = "unix|tcp",
        value_parser = transport, hide_short_help = true)]
    pub daemon_transport: Option<TransportSetting>,

    /// Directory for the heartbeat and wake files [default: $HOME/.iai-mcp]
    #[arg(long, env = "IAI_MCP_STATE_DIR",
        value_parser = any_text, value_name = "DIR")]
    pub state_dir: Option<String>,

    /// Reconnect behaviour. `prefix` reproduces the pre-fix V3-05 race (a
    /// call made during a reconnect fails with daemon_unreachable) and exists
    /// only to demonstrate and test it; never use it in production. It turns
    /// degraded mode off.
    #[arg(long, env = "IAI_MCP_BRIDGE_MODE", value_name = "MODE",
        default_value_t = BridgeMode::default(), value_parser = EmptyIsDefault::<BridgeMode>::new())]
    pub bridge_mode: BridgeMode,

    /// Sleep before reconnecting after a lost connection, in ms. Widens the
    /// race window for tests; leave at 0 in production.
    #[arg(long, env = "IAI_MCP_RECONNECT_TEST_DELAY_MS", value_name = "MS",
        default_value_t = Millis(policy::RECONNECT_DELAY), value_parser = EmptyIsDefault::<Millis>::new())]
    pub reconnect_test_delay_ms: Millis,

    /// How long a call waits for a daemon connection before failing with
    /// daemon_unreachable, in ms (covers a daemon cold start of 7-8 s).
    #[arg(long, env = "IAI_MCP_CONNECT_WAIT_MS", value_name = "MS",
        default_value_t = Millis(policy::CONNECT_WAIT), value_parser = EmptyIsDefault::<Millis>::new())]
    pub connect_wait_ms: Millis,

    /// How long a memory call that the CLI can answer waits for a daemon
    /// that is down before the CLI answers it, in ms (a daemon lost less
    /// than --connect-wait-ms ago is presumed restarting and waited for).
    #[arg(long, env = "IAI_MCP_FALLBACK_WAIT_MS", value_name = "MS",
        default_value_t = Millis(policy::FALLBACK_WAIT), value_parser = EmptyIsDefault::<Millis>::new())]
    pub fallback_wait_ms: Millis,

    /// How long a call waits for the daemon's response, in ms (generous:
    /// consolidation can take tens of seconds).
    #[arg(long, env = "IAI_MCP_CALL_TIMEOUT_MS", value_name = "MS",
        default_value_t = Millis(policy::CALL_TIMEOUT), value_parser = EmptyIsDefault::<Millis>::new())]
    pub call_timeout_ms: Millis,

    /// First delay between failed connect attempts, in ms; doubles with
    /// jitter up to --backoff-max-ms while the daemon stays down.
    #[arg(long, env = "IAI_MCP_BACKOFF_INITIAL_MS", value_name = "MS",
        default_value_t = Millis(policy::BACKOFF_INITIAL), value_parser = EmptyIsDefault::<Millis>::new())]
    pub backoff_initial_ms: Millis,

    /// Longest delay between failed connect attempts, in ms.
    #[arg(long, env = "IAI_MCP_BACKOFF_MAX_MS", value_name = "MS",
        default_value_t = Millis(policy::BACKOFF_MAX), value_parser = EmptyIsDefault::<Millis>::new())]
    pub backoff_max_ms: Millis,

    /// How often the heartbeat file is refreshed, in ms.
    #[arg(long, env = "IAI_MCP_HEARTBEAT_INTERVAL_MS", value_name = "MS",
        default_value_t = Millis(heartbeat::DEFAULT_INTERVAL), value_parser = EmptyIsDefault::<Millis>::new())]
    pub heartbeat_interval_ms: Millis,

    /// On exit, how long calls in flight may still finish, in ms (kept well
    /// under the 2 s clients wait before SIGTERM).
    #[arg(long, env = "IAI_MCP_SHUTDOWN_GRACE_MS", value_name = "MS",
        default_value_t = Millis(DEFAULT_SHUTDOWN_GRACE), value_parser = EmptyIsDefault::<Millis>::new())]
    pub shutdown_grace_ms: Millis,

    /// Longest accepted line on stdin and from the daemon, in bytes.
    #[arg(long, env = "IAI_MCP_MAX_LINE_BYTES", value_name = "BYTES",
        default_value_t = DEFAULT_MAX_LINE_BYTES, value_parser = EmptyIsDefault::<usize>::new())]
    pub max_line_bytes: usize,

    /// Log filter for stderr (tracing syntax, e.g. `info`, `debug`)
    /// [default: warn for the text log, info for the JSON log].
    #[arg(long, env = "IAI_MCP_LOG", value_parser = any_text, value_name = "FILTER")]
    pub log: Option<String>,

    /// How stderr's log is written: `text`, lines for people, or `json`,
    /// one object per event with stable event names, for programs.
    #[arg(long, env = "IAI_MCP_LOG_FORMAT", value_name = "FORMAT",
        default_value_t = LogFormat::default(), value_parser = EmptyIsDefault::<LogFormat>::new())]
    pub log_format: LogFormat,

    /// Degraded mode: while the daemon cannot be reached, answer
    /// memory_recall, memory_capture, episodes_recent, memory_search and
    /// memory_temporal_recall through the iai CLI (a capture only if it was
    /// never sent to the daemon).
    #[arg(long, env = "IAI_MCP_DEGRADED", value_name = "on|off",
        default_value_t = Switch(degraded::DEFAULT_ON), value_parser = EmptyIsDefault::<Switch>::new())]
    pub degraded: Switch,

    /// The `iai` CLI used in degraded mode (argv only, never a shell). A
    /// bare name is looked for beside IAI_MCP_PYTHON (the interpreter of
    /// the iai-mcp installation), then beside this binary, then on PATH.
    #[arg(long, env = "IAI_MCP_CLI", value_name = "PROGRAM",
        default_value = degraded::DEFAULT_CLI, value_parser = EmptyIsDefault::<String>::new())]
    pub cli: String,

    /// The `iai-mcp` CLI, for bank-recall and doctor (looked up like --cli).
    #[arg(long, env = "IAI_MCP_ADMIN_CLI", value_name = "PROGRAM",
        default_value = degraded::DEFAULT_ADMIN_CLI, value_parser = EmptyIsDefault::<String>::new())]
    pub admin_cli: String,

    /// After `iai recall` fails in degraded mode, try `iai-mcp bank-recall`.
    #[arg(long, env = "IAI_MCP_BANK_FALLBACK", value_name = "on|off",
        default_value_t = Switch(degraded::DEFAULT_BANK_FALLBACK), value_parser = EmptyIsDefault::<Switch>::new())]
    pub bank_fallback: Switch,

    /// Longest run of one CLI command, in ms; it is killed after that.
    #[arg(long, env = "IAI_MCP_CLI_TIMEOUT_MS", value_name = "MS",
        default_value_t = Millis(degraded::DEFAULT_LIMIT), value_parser = EmptyIsDefault::<Millis>::new())]
    pub cli_timeout_ms: Millis,

    /// The daemon's store: the CLI reads and writes it in degraded mode
    /// (passed on as IAI_MCP_STORE), and on macOS the wake-up reads the
    /// daemon's pid from its state file there [default: $HOME/.iai-mcp].
    #[arg(long, env = "IAI_MCP_STORE", value_parser = any_text, value_name = "PATH")]
    pub store: Option<String>,

    /// Run `iai-mcp doctor` after the session starts (one stderr warning
    /// if it fails), and `iai-mcp doctor --auto` once if the daemon stays
    /// down past --heal-after-ms (at most once per 6 h across wrappers).
    #[arg(long, env = "IAI_MCP_DOCTOR", value_name = "on|off",
        default_value_t = Switch(doctor::DEFAULT_ON), value_parser = EmptyIsDefault::<Switch>::new())]
    pub doctor: Switch,

    /// How long the daemon must stay unreachable before `iai-mcp doctor
    /// --auto` is run, in ms.
    #[arg(long, env = "IAI_MCP_HEAL_AFTER_MS", value_name = "MS",
        default_value_t = Millis(doctor::DEFAULT_HEAL_AFTER), value_parser = EmptyIsDefault::<Millis>::new())]
    pub heal_after_ms: Millis,

    /// The Python of the iai-mcp installation, as iai-mcp's installer
    /// writes it into host configurations: its directory is where bare
    /// CLI names are looked for first. Python is never started.
    #[arg(long, env = "IAI_MCP_PYTHON", value_parser = any_text,
        value_name = "PATH", hide_short_help = true)]
    pub python: Option<String>,

    /// Report whether the daemon is reachable (and its release beside the
    /// tool table's), every setting in effect, what is served and where the
    /// lifecycle files go, then exit (0 when the daemon answered, 1
    /// otherwise).
    #[arg(long)]
    pub check: bool,

    /// Instead of serving: edit MCP hosts' configuration files.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// What the binary can do besides serving MCP (which it does when no
/// command is given, as MCP hosts start it).
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Command {
    /// Point the iai-mcp entries in MCP hosts' configuration files at this
    /// binary, keeping every other field; the file as it was is kept beside
    /// it as FILE.iai-mcp-wrapper.bak
    Install(HostChoice),
    /// Give the entries switched by `install` back what they ran before,
    /// from the backup
    Uninstall(HostChoice),
    /// List, per host, which wrapper each iai-mcp entry runs, then the
    /// daemon's release beside the tool table's (exit 0 when every entry
    /// runs this binary)
    Status {
        /// Only this host (repeat for several) [default: every host]
        #[arg(long = "host", value_enum, value_name = "NAME")]
        hosts: Vec<Host>,
    },
}

/// Which hosts to edit, and whether to write.
#[derive(Debug, Clone, clap::Args)]
pub struct HostChoice {
    /// Only this host (repeat for several) [default: every host]
    #[arg(long = "host", value_enum, value_name = "NAME")]
    pub hosts: Vec<Host>,
    /// Print, per file, the change that would be made; write nothing
    #[arg(long)]
    pub dry_run: bool,
}

/// A setting that cannot be used.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// A default path needs the user's profile directory (`$HOME`, or
    /// `%USERPROFILE%` on Windows) and it is not known.
    #[error("{variable} is not set: pass --{flag} (or its environment variable)")]
    NoHome {
        /// The variable that names the profile directory.
        variable: &'static str,
        /// The flag that makes it unnecessary.
        flag: &'static str,
    },
    /// No daemon endpoint can be chosen.
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
    /// The socket path is longer than a Unix socket address allows.
    #[error("socket path {path:?} is {len} bytes; Unix socket paths are limited to {max} bytes")]
    SocketPathTooLong {
        /// The path given.
        path: PathBuf,
        /// Its length in bytes.
        len: usize,
        /// The limit on this system.
        max: usize,
    },
    /// A timing is out of range.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// A size or interval that must be positive is zero.
    #[error("--{0} must be greater than zero")]
    Zero(&'static str),
}

/// What the settings are resolved against, besides the flags: read by the
/// binary from its process, given by tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    /// The user's profile directory (`$HOME`; on Windows `%USERPROFILE%`,
    /// see [`Platform::profile_dir`]), where the daemon's base directory
    /// is by default.
    pub home: Option<PathBuf>,
    /// The directory of this binary (a wheel installed into iai-mcp's
    /// environment puts it beside the CLIs).
    pub wrapper_dir: Option<PathBuf>,
    /// Whose conventions apply (default endpoint, program file names).
    pub platform: Platform,
}

/// How the log is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSettings {
    /// Text or JSON.
    pub format: LogFormat,
    /// What is shown (tracing's filter syntax).
    pub filter: String,
}

/// Validated settings, ready to build the wrapper from.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the daemon listens.
    pub endpoint: Endpoint,
    /// Heartbeat and wake-file directory.
    pub state_dir: PathBuf,
    /// The daemon's store (`IAI_MCP_STORE`, default `$HOME/.iai-mcp`):
    /// where its state file is, and the store its process title names.
    pub store: Option<PathBuf>,
    /// Bridge behaviour.
    pub policy: Policy,
    /// Heartbeat refresh interval.
    pub heartbeat_interval: Duration,
    /// Grace for calls in flight at exit.
    pub shutdown_grace: Duration,
    /// Line size cap.
    pub max_line_bytes: usize,
    /// Degraded mode through the CLI.
    pub degraded: DegradedConfig,
    /// Doctor probe and auto-heal.
    pub doctor: DoctorConfig,
    /// Where bare CLI names are looked for.
    pub installation: Installation,
    /// The log.
    pub log: LogSettings,
    /// Run the `--check` report instead of serving.
    pub check: bool,
}

impl Args {
    /// Resolves defaults against `env` and validates everything; touches
    /// nothing outside its arguments.
    pub fn resolve(self, env: &Environment) -> Result<Config, ConfigError> {
        let base = || env.home.as_ref().map(|h| h.join(".iai-mcp"));
        let given = |v: Option<String>| v.filter(|v| !v.is_empty()).map(PathBuf::from);
        let socket_path = given(self.socket_path);
        let endpoint = Endpoint::select(
            &EndpointSettings {
                socket_path: socket_path.clone(),
                tcp_host: self.tcp_host.filter(|h| !h.is_empty()),
                tcp_port: self.tcp_port.and_then(|p| p.0),
                token_path: given(self.token_path),
                transport: self.daemon_transport.and_then(|t| t.0),
            },
            base().as_deref(),
            env.platform,
        )?;
        check_socket_path(&endpoint, env.platform)?;
        let state_dir = match given(self.state_dir) {
            Some(p) => p,
            None => base().ok_or(ConfigError::NoHome {
                variable: env.platform.home_variable(),
                flag: "state-dir",
            })?,
        };
        if self.max_line_bytes == 0 {
            return Err(ConfigError::Zero("max-line-bytes"));
        }
        if self.heartbeat_interval_ms.0.is_zero() {
            return Err(ConfigError::Zero("heartbeat-interval-ms"));
        }
        if self.cli_timeout_ms.0.is_zero() {
            return Err(ConfigError::Zero("cli-timeout-ms"));
        }
        // What the CLI children need to find the same daemon and store as
        // the wrapper, whether the wrapper got them from flags or the
        // environment. `iai capture` writes to the store directly only
        // when it is told where the store is: by default, where the daemon
        // keeps it.
        let store = given(self.store).or_else(base);
        let mut child_env = Vec::new();
        if let Some(store) = &store {
            child_env.push((OsString::from("IAI_MCP_STORE"), store.clone().into()));
        }
        if let Some(path) = &socket_path {
            child_env.push((
                OsString::from("IAI_DAEMON_SOCKET_PATH"),
                path.clone().into(),
            ));
        }
        let degraded = DegradedConfig {
            // The pre-fix mode exists to show V3-05: no call may be rescued
            // by the CLI there.
            enabled: self.degraded.0 && self.bridge_mode == BridgeMode::Fixed,
            cli: self.cli.into(),
            admin_cli: self.admin_cli.clone().into(),
            bank_fallback: self.bank_fallback.0,
            limit: self.cli_timeout_ms.0,
            env: child_env.clone(),
        };
        let doctor = DoctorConfig {
            enabled: self.doctor.0,
            admin_cli: self.admin_cli.into(),
            heal_after: self.heal_after_ms.0,
            env: child_env,
        };
        let timings = Timings {
            reconnect_delay: self.reconnect_test_delay_ms.0,
            connect_wait: self.connect_wait_ms.0,
            fallback_wait: self.fallback_wait_ms.0,
            call_timeout: self.call_timeout_ms.0,
            backoff: Backoff::new(self.backoff_initial_ms.0, self.backoff_max_ms.0)?,
        };
        // Host entries written by iai-mcp's installer name the
        // installation's Python, and hosts rarely inherit the shell's
        // PATH: its directory, then this binary's, come first.
        let python_dir = given(self.python)
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .filter(|dir| !dir.as_os_str().is_empty());
        let program_dirs = python_dir.map(|dir| env.platform.program_dirs(&dir));
        let installation = Installation::for_platform(
            env.platform,
            program_dirs
                .into_iter()
                .flatten()
                .chain(env.wrapper_dir.clone()),
        );
        let log = LogSettings {
            format: self.log_format,
            filter: self
                .log
                .filter(|f| !f.is_empty())
                .unwrap_or_else(|| self.log_format.default_filter().to_owned()),
        };
        Ok(Config {
            endpoint,
            state_dir,
            store,
            policy: Policy::new(self.bridge_mode, timings)?,
            heartbeat_interval: self.heartbeat_interval_ms.0,
            shutdown_grace: self.shutdown_grace_ms.0,
            max_line_bytes: self.max_line_bytes,
            degraded,
            doctor,
            installation,
            log,
            check: self.check,
        })
    }
}

/// A Unix socket path must fit the platform's address structure
/// ([`Platform::max_socket_path`]).
fn check_socket_path(endpoint: &Endpoint, platform: Platform) -> Result<(), ConfigError> {
    if let Endpoint::Unix(path) = endpoint {
        let len = path.as_os_str().len();
        let max = platform.max_socket_path();
        if len > max {
            return Err(ConfigError::SocketPathTooLong {
                path: path.clone(),
                len,
                max,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::Port;

    fn home(path: &str) -> Environment {
        Environment {
            home: Some(PathBuf::from(path)),
            wrapper_dir: None,
            platform: Platform::Linux,
        }
    }

    fn parse(args: &[&str]) -> Args {
        Args::try_parse_from(std::iter::once("iai-mcp-wrapper").chain(args.iter().copied()))
            .expect("valid arguments")
    }

    #[test]
    fn defaults_hang_off_home() {
        let c = parse(&[]).resolve(&home("/home/u")).expect("valid");
        assert_eq!(
            c.endpoint,
            Endpoint::Unix(PathBuf::from("/home/u/.iai-mcp/.daemon.sock"))
        );
        assert!(c.degraded.enabled && c.degraded.bank_fallback && c.doctor.enabled);
        assert_eq!(c.degraded.cli, "iai");
        assert_eq!(c.doctor.admin_cli, "iai-mcp");
        assert_eq!(
            c.degraded.env,
            [(
                OsString::from("IAI_MCP_STORE"),
                OsString::from("/home/u/.iai-mcp")
            )],
            "the default store is passed on"
        );
        assert_eq!(c.state_dir, PathBuf::from("/home/u/.iai-mcp"));
        assert_eq!(c.policy.mode(), BridgeMode::Fixed);
    }

    #[test]
    fn no_home_needs_explicit_paths() {
        assert!(matches!(
            parse(&[]).resolve(&Environment::default()),
            Err(ConfigError::Endpoint(EndpointError::NoHome {
                variable: "HOME"
            }))
        ));
        let c = parse(&["--socket-path", "/tmp/s", "--state-dir", "/tmp/st"])
            .resolve(&Environment::default())
            .expect("valid");
        assert_eq!(c.endpoint, Endpoint::Unix(PathBuf::from("/tmp/s")));
    }

    #[test]
    fn windows_defaults_to_tcp_with_the_profiles_port_and_token_files() {
        let windows = |home: Option<&str>| Environment {
            home: home.map(PathBuf::from),
            wrapper_dir: Some("/venv/Scripts".into()),
            platform: Platform::Windows,
        };
        let c = parse(&["--python", "/venv/Scripts/python.exe"])
            .resolve(&windows(Some("/Users/u")))
            .expect("valid");
        assert_eq!(
            c.endpoint,
            Endpoint::Tcp {
                host: "127.0.0.1".into(),
                port: Port::File("/Users/u/.iai-mcp/.daemon.port".into()),
                token: "/Users/u/.iai-mcp/.daemon.token".into(),
            }
        );
        assert_eq!(c.state_dir, PathBuf::from("/Users/u/.iai-mcp"));
        assert_eq!(
            c.installation.dirs(),
            [
                PathBuf::from("/venv/Scripts"),
                PathBuf::from("/venv/Scripts/Scripts")
            ],
            "beside python.exe, then its Scripts (a base installation's)"
        );
        let c = parse(&["--socket-path", "/run/d.sock", "--state-dir", "/st"])
            .resolve(&windows(None))
            .expect("no profile needed");
        assert_eq!(
            c.endpoint,
            Endpoint::Tcp {
                host: "127.0.0.1".into(),
                port: Port::File("/run/d.sock.port".into()),
                token: "/run/d.sock.token".into(),
            }
        );
        let refused = parse(&["--socket-path", "/run/d.sock"])
            .resolve(&windows(None))
            .unwrap_err();
        assert_eq!(
            refused.to_string(),
            "USERPROFILE is not set: pass --state-dir (or its environment variable)"
        );
    }

    #[test]
    fn long_socket_paths_are_refused() {
        let long = format!("/tmp/{}", "x".repeat(200));
        assert!(matches!(
            parse(&["--socket-path", &long]).resolve(&Environment::default()),
            Err(ConfigError::SocketPathTooLong { .. })
        ));
    }

    #[test]
    fn the_socket_path_limit_is_the_platforms() {
        // 105 bytes: fits Linux's 108-byte sun_path, not macOS's 104.
        let path = PathBuf::from(format!("/tmp/{}", "x".repeat(100)));
        let endpoint = Endpoint::Unix(path.clone());
        assert!(check_socket_path(&endpoint, Platform::Linux).is_ok());
        match check_socket_path(&endpoint, Platform::MacOs) {
            Err(ConfigError::SocketPathTooLong { len, max, .. }) => {
                assert_eq!((len, max), (105, 103));
            }
            other => panic!("expected SocketPathTooLong, got {other:?}"),
        }
        let longest = Endpoint::Unix(PathBuf::from("y".repeat(103)));
        assert!(check_socket_path(&longest, Platform::MacOs).is_ok());
    }

    #[test]
    fn empty_values_mean_the_default() {
        let c = Args::try_parse_from([
            "w",
            "--socket-path",
            "",
            "--bridge-mode",
            "",
            "--reconnect-test-delay-ms",
            "",
            "--connect-wait-ms",
            "",
            "--python",
            "",
            "--store",
            "",
            "--log",
            "",
            "--tcp-port",
            "",
            "--cli",
            "",
            "--degraded",
            "",
            "--doctor",
            "",
            "--bank-fallback",
            "",
        ])
        .expect("empty values parse")
        .resolve(&home("/h"))
        .expect("valid");
        assert_eq!(
            c.endpoint,
            Endpoint::Unix(PathBuf::from("/h/.iai-mcp/.daemon.sock"))
        );
        assert_eq!(c.policy.mode(), BridgeMode::Fixed);
        assert_eq!(c.policy.timings().reconnect_delay, Duration::ZERO);
        assert_eq!(c.policy.timings().connect_wait, Duration::from_secs(10));
        assert_eq!(c.log.filter, "warn");
        assert_eq!(c.degraded.cli, "iai");
        assert!(c.degraded.enabled && c.doctor.enabled && c.degraded.bank_fallback);
    }

    #[test]
    fn tcp_and_cli_settings_reach_the_config() {
        let c = parse(&[
            "--tcp-port",
            "4100",
            "--token-path",
            "/t/tok",
            "--cli",
            "/venv/bin/iai",
            "--admin-cli",
            "/venv/bin/iai-mcp",
            "--store",
            "/data/store",
            "--bank-fallback",
            "0",
            "--degraded",
            "off",
            "--doctor",
            "FALSE",
            "--heal-after-ms",
            "2500",
        ])
        .resolve(&home("/h"))
        .expect("valid");
        assert_eq!(
            c.endpoint,
            Endpoint::Tcp {
                host: "127.0.0.1".into(),
                port: crate::transport::Port::Fixed(4100),
                token: "/t/tok".into(),
            }
        );
        assert_eq!(c.degraded.cli, "/venv/bin/iai");
        assert_eq!(c.degraded.admin_cli, "/venv/bin/iai-mcp");
        assert!(!c.degraded.bank_fallback && !c.degraded.enabled && !c.doctor.enabled);
        assert_eq!(c.doctor.heal_after, Duration::from_millis(2500));
        assert_eq!(
            c.degraded.env,
            [(
                OsString::from("IAI_MCP_STORE"),
                OsString::from("/data/store")
            )]
        );
        let c = parse(&["--socket-path", "/run/d.sock", "--tcp-port", "9"])
            .resolve(&home("/h"))
            .expect("valid");
        assert_eq!(c.endpoint, Endpoint::Unix("/run/d.sock".into()));
        assert_eq!(
            c.doctor.env,
            [
                (
                    OsString::from("IAI_MCP_STORE"),
                    OsString::from("/h/.iai-mcp")
                ),
                (
                    OsString::from("IAI_DAEMON_SOCKET_PATH"),
                    OsString::from("/run/d.sock")
                )
            ]
        );
        for bad in [
            ["--tcp-port", "0"],
            ["--tcp-port", "70000"],
            ["--degraded", "maybe"],
        ] {
            assert!(
                Args::try_parse_from(["w", bad[0], bad[1]]).is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn bad_values_are_rejected() {
        assert!(
            Args::try_parse_from(["w", "--bridge-mode", "sometimes"]).is_err(),
            "unknown mode"
        );
        assert!(Args::try_parse_from(["w", "--connect-wait-ms", "-1"]).is_err());
        assert!(matches!(
            parse(&["--backoff-initial-ms", "0"]).resolve(&home("/h")),
            Err(ConfigError::Policy(PolicyError::ZeroBackoff))
        ));
        assert!(matches!(
            parse(&["--heartbeat-interval-ms", "0"]).resolve(&home("/h")),
            Err(ConfigError::Zero(_))
        ));
    }

    #[test]
    fn the_installation_is_where_its_python_and_this_binary_are() {
        let c = parse(&["--python", "/venv/bin/python3.11"])
            .resolve(&Environment {
                home: Some("/h".into()),
                wrapper_dir: Some("/opt/wrapper/bin".into()),
                platform: Platform::Linux,
            })
            .expect("valid");
        assert_eq!(
            c.installation.dirs(),
            [
                PathBuf::from("/venv/bin"),
                PathBuf::from("/opt/wrapper/bin")
            ]
        );
        assert_eq!(c.degraded.cli, "iai", "names stay names until located");
        let c = parse(&["--cli", "/elsewhere/iai"])
            .resolve(&home("/h"))
            .expect("valid");
        assert_eq!(c.degraded.cli, "/elsewhere/iai");
        assert!(c.installation.dirs().is_empty());
        let c = parse(&["--python", "python3"])
            .resolve(&home("/h"))
            .expect("valid");
        assert!(
            c.installation.dirs().is_empty(),
            "a bare name has no directory"
        );
    }

    #[test]
    fn the_log_filter_follows_the_format_unless_given() {
        let c = parse(&[]).resolve(&home("/h")).expect("valid");
        assert_eq!(
            (c.log.format, c.log.filter.as_str()),
            (LogFormat::Text, "warn")
        );
        let c = parse(&["--log-format", "json"])
            .resolve(&home("/h"))
            .expect("valid");
        assert_eq!(
            (c.log.format, c.log.filter.as_str()),
            (LogFormat::Json, "info")
        );
        let c = parse(&["--log-format", "json", "--log", "debug"])
            .resolve(&home("/h"))
            .expect("valid");
        assert_eq!(c.log.filter, "debug");
        assert!(Args::try_parse_from(["w", "--log-format", "yaml"]).is_err());
    }

    #[test]
    fn defaults_are_the_declared_constants() {
        let c = parse(&[]).resolve(&home("/h")).expect("valid");
        assert_eq!(*c.policy.timings(), Timings::default());
        assert_eq!(c.heartbeat_interval, heartbeat::DEFAULT_INTERVAL);
        assert_eq!(c.shutdown_grace, DEFAULT_SHUTDOWN_GRACE);
        assert_eq!(c.max_line_bytes, DEFAULT_MAX_LINE_BYTES);
        assert_eq!(c.degraded.limit, degraded::DEFAULT_LIMIT);
        assert_eq!(c.doctor.heal_after, doctor::DEFAULT_HEAL_AFTER);
        let defaults = DegradedConfig::default();
        assert_eq!(
            (
                c.degraded.enabled,
                c.degraded.bank_fallback,
                &c.degraded.cli
            ),
            (defaults.enabled, defaults.bank_fallback, &defaults.cli)
        );
    }
}
