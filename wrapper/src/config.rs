//! Command line and environment: every setting is a flag that can also come
//! from an environment variable (the flag wins), validated before anything
//! else happens.

use std::fmt::Display;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use clap::Parser;
use thiserror::Error;

use crate::bridge::{Backoff, BridgeMode, Policy, PolicyError, Timings};

/// Default longest accepted line, on stdin and from the daemon: far above
/// any real tool call (a 384-float embedding is about 8 KiB) while keeping a
/// hostile peer from making the wrapper buffer without bound.
pub const DEFAULT_MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// A value parser that treats an empty value (typically an environment
/// variable set to nothing in a client configuration) as the default, and
/// parses anything else strictly.
fn or_default<T>(default: T) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: FromStr + Copy + Send + Sync + 'static,
    T::Err: Display,
{
    move |s: &str| {
        if s.is_empty() {
            Ok(default)
        } else {
            s.parse().map_err(|e: T::Err| e.to_string())
        }
    }
}

/// Any text, the empty string included (an empty value means "unset").
fn any_text(s: &str) -> Result<String, std::convert::Infallible> {
    Ok(s.to_owned())
}

/// MCP stdio server for iai-mcp: forwards tool calls to the iai-mcp daemon
/// over its Unix socket, waiting out daemon restarts instead of failing.
#[derive(Debug, Clone, Parser)]
#[command(name = "iai-mcp-wrapper", version, about, long_about = None)]
pub struct Args {
    /// Daemon socket to dial [default: $HOME/.iai-mcp/.daemon.sock]
    #[arg(long, env = "IAI_DAEMON_SOCKET_PATH",
        value_parser = any_text, value_name = "PATH")]
    pub socket_path: Option<String>,

    /// Directory for the heartbeat and wake files [default: $HOME/.iai-mcp]
    #[arg(long, env = "IAI_MCP_STATE_DIR",
        value_parser = any_text, value_name = "DIR")]
    pub state_dir: Option<String>,

    /// Reconnect behaviour. `prefix` reproduces the pre-fix V3-05 race (a
    /// call made during a reconnect fails with daemon_unreachable) and exists
    /// only to demonstrate and test it; never use it in production.
    #[arg(
        long,
        env = "IAI_MCP_BRIDGE_MODE",
        value_name = "MODE",
        default_value = "fixed",
        value_parser = or_default(BridgeMode::Fixed)
    )]
    pub bridge_mode: BridgeMode,

    /// Sleep before reconnecting after a lost connection, in ms. Widens the
    /// race window for tests; leave at 0 in production.
    #[arg(
        long,
        env = "IAI_MCP_RECONNECT_TEST_DELAY_MS",
        value_name = "MS",
        default_value_t = 0, value_parser = or_default(0u64)
    )]
    pub reconnect_test_delay_ms: u64,

    /// How long a call waits for a daemon connection before failing with
    /// daemon_unreachable, in ms (covers a daemon cold start of 7-8 s).
    #[arg(
        long,
        env = "IAI_MCP_CONNECT_WAIT_MS",
        value_name = "MS",
        default_value_t = 10_000, value_parser = or_default(10_000u64)
    )]
    pub connect_wait_ms: u64,

    /// How long a call waits for the daemon's response, in ms (generous:
    /// consolidation can take tens of seconds).
    #[arg(
        long,
        env = "IAI_MCP_CALL_TIMEOUT_MS",
        value_name = "MS",
        default_value_t = 120_000, value_parser = or_default(120_000u64)
    )]
    pub call_timeout_ms: u64,

    /// First delay between failed connect attempts, in ms; doubles with
    /// jitter up to --backoff-max-ms while the daemon stays down.
    #[arg(
        long,
        env = "IAI_MCP_BACKOFF_INITIAL_MS",
        value_name = "MS",
        default_value_t = 50, value_parser = or_default(50u64)
    )]
    pub backoff_initial_ms: u64,

    /// Longest delay between failed connect attempts, in ms.
    #[arg(
        long,
        env = "IAI_MCP_BACKOFF_MAX_MS",
        value_name = "MS",
        default_value_t = 2_000, value_parser = or_default(2_000u64)
    )]
    pub backoff_max_ms: u64,

    /// How often the heartbeat file is refreshed, in ms.
    #[arg(
        long,
        env = "IAI_MCP_HEARTBEAT_INTERVAL_MS",
        value_name = "MS",
        default_value_t = 30_000, value_parser = or_default(30_000u64)
    )]
    pub heartbeat_interval_ms: u64,

    /// On exit, how long calls in flight may still finish, in ms (kept well
    /// under the 2 s clients wait before SIGTERM).
    #[arg(
        long,
        env = "IAI_MCP_SHUTDOWN_GRACE_MS",
        value_name = "MS",
        default_value_t = 1_000, value_parser = or_default(1_000u64)
    )]
    pub shutdown_grace_ms: u64,

    /// Longest accepted line on stdin and from the daemon, in bytes.
    #[arg(long, env = "IAI_MCP_MAX_LINE_BYTES", value_name = "BYTES", default_value_t = DEFAULT_MAX_LINE_BYTES, value_parser = or_default(DEFAULT_MAX_LINE_BYTES))]
    pub max_line_bytes: usize,

    /// Log filter for stderr (tracing syntax, e.g. `info`, `debug`).
    #[arg(
        long,
        env = "IAI_MCP_LOG",
        value_name = "FILTER",
        default_value = "warn"
    )]
    pub log: String,

    /// Accepted for compatibility with existing configurations and ignored:
    /// the wrapper never starts Python.
    #[arg(
        long,
        env = "IAI_MCP_STORE",
        value_parser = any_text,
        value_name = "PATH",
        hide_short_help = true
    )]
    pub store: Option<String>,

    /// Accepted for compatibility with existing configurations and ignored.
    #[arg(
        long,
        env = "IAI_MCP_PYTHON",
        value_parser = any_text,
        value_name = "PATH",
        hide_short_help = true
    )]
    pub python: Option<String>,

    /// Report whether the daemon is reachable, what is served and where the
    /// heartbeat goes, then exit (0 when the daemon answered, 1 otherwise).
    #[arg(long)]
    pub check: bool,
}

/// A setting that cannot be used.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// A default path needs `$HOME` and it is not set.
    #[error("HOME is not set: pass --{0} (or its environment variable)")]
    NoHome(&'static str),
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

/// Longest Unix socket path (`sun_path` is 108 bytes on Linux, 104 on the
/// BSDs and macOS, including the terminating NUL).
#[cfg(target_os = "linux")]
pub const MAX_SOCKET_PATH: usize = 107;
/// Longest Unix socket path (`sun_path` is 108 bytes on Linux, 104 on the
/// BSDs and macOS, including the terminating NUL).
#[cfg(not(target_os = "linux"))]
pub const MAX_SOCKET_PATH: usize = 103;

/// Validated settings, ready to build the wrapper from.
#[derive(Debug, Clone)]
pub struct Config {
    /// Daemon socket.
    pub socket_path: PathBuf,
    /// Heartbeat and wake-file directory.
    pub state_dir: PathBuf,
    /// Bridge behaviour.
    pub policy: Policy,
    /// Heartbeat refresh interval.
    pub heartbeat_interval: Duration,
    /// Grace for calls in flight at exit.
    pub shutdown_grace: Duration,
    /// Line size cap.
    pub max_line_bytes: usize,
    /// Log filter.
    pub log: String,
    /// Run the `--check` report instead of serving.
    pub check: bool,
}

impl Args {
    /// Resolve defaults against `home` and validate everything.
    pub fn resolve(self, home: Option<PathBuf>) -> Result<Config, ConfigError> {
        let base = || home.as_ref().map(|h| h.join(".iai-mcp"));
        let given = |v: Option<String>| v.filter(|v| !v.is_empty()).map(PathBuf::from);
        let socket_path = match given(self.socket_path) {
            Some(p) => p,
            None => base()
                .ok_or(ConfigError::NoHome("socket-path"))?
                .join(".daemon.sock"),
        };
        let len = socket_path.as_os_str().len();
        if len > MAX_SOCKET_PATH {
            return Err(ConfigError::SocketPathTooLong {
                path: socket_path,
                len,
                max: MAX_SOCKET_PATH,
            });
        }
        let state_dir = match given(self.state_dir) {
            Some(p) => p,
            None => base().ok_or(ConfigError::NoHome("state-dir"))?,
        };
        if self.max_line_bytes == 0 {
            return Err(ConfigError::Zero("max-line-bytes"));
        }
        if self.heartbeat_interval_ms == 0 {
            return Err(ConfigError::Zero("heartbeat-interval-ms"));
        }
        let ms = Duration::from_millis;
        let timings = Timings {
            reconnect_delay: ms(self.reconnect_test_delay_ms),
            connect_wait: ms(self.connect_wait_ms),
            call_timeout: ms(self.call_timeout_ms),
            backoff: Backoff::new(ms(self.backoff_initial_ms), ms(self.backoff_max_ms))?,
        };
        Ok(Config {
            socket_path,
            state_dir,
            policy: Policy::new(self.bridge_mode, timings)?,
            heartbeat_interval: ms(self.heartbeat_interval_ms),
            shutdown_grace: ms(self.shutdown_grace_ms),
            max_line_bytes: self.max_line_bytes,
            log: if self.log.is_empty() {
                "warn".to_owned()
            } else {
                self.log
            },
            check: self.check,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Args {
        Args::try_parse_from(std::iter::once("iai-mcp-wrapper").chain(args.iter().copied()))
            .expect("valid arguments")
    }

    #[test]
    fn defaults_hang_off_home() {
        let c = parse(&[])
            .resolve(Some(PathBuf::from("/home/u")))
            .expect("valid");
        assert_eq!(
            c.socket_path,
            PathBuf::from("/home/u/.iai-mcp/.daemon.sock")
        );
        assert_eq!(c.state_dir, PathBuf::from("/home/u/.iai-mcp"));
        assert_eq!(c.policy.mode(), BridgeMode::Fixed);
    }

    #[test]
    fn no_home_needs_explicit_paths() {
        assert!(matches!(
            parse(&[]).resolve(None),
            Err(ConfigError::NoHome("socket-path"))
        ));
        let c = parse(&["--socket-path", "/tmp/s", "--state-dir", "/tmp/st"])
            .resolve(None)
            .expect("valid");
        assert_eq!(c.socket_path, PathBuf::from("/tmp/s"));
    }

    #[test]
    fn long_socket_paths_are_refused() {
        let long = format!("/tmp/{}", "x".repeat(200));
        assert!(matches!(
            parse(&["--socket-path", &long]).resolve(None),
            Err(ConfigError::SocketPathTooLong { .. })
        ));
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
        ])
        .expect("empty values parse")
        .resolve(Some("/h".into()))
        .expect("valid");
        assert_eq!(c.socket_path, PathBuf::from("/h/.iai-mcp/.daemon.sock"));
        assert_eq!(c.policy.mode(), BridgeMode::Fixed);
        assert_eq!(c.policy.timings().reconnect_delay, Duration::ZERO);
        assert_eq!(c.policy.timings().connect_wait, Duration::from_secs(10));
        assert_eq!(c.log, "warn");
    }

    #[test]
    fn bad_values_are_rejected() {
        assert!(
            Args::try_parse_from(["w", "--bridge-mode", "sometimes"]).is_err(),
            "unknown mode"
        );
        assert!(Args::try_parse_from(["w", "--connect-wait-ms", "-1"]).is_err());
        assert!(matches!(
            parse(&["--backoff-initial-ms", "0"]).resolve(Some("/h".into())),
            Err(ConfigError::Policy(PolicyError::ZeroBackoff))
        ));
        assert!(matches!(
            parse(&["--heartbeat-interval-ms", "0"]).resolve(Some("/h".into())),
            Err(ConfigError::Zero(_))
        ));
    }
}
