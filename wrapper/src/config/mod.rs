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
//!
//! The settings come in groups by area, each a struct of its own flattened
//! into [`Args`] and building its part of the [`Config`]: where the daemon
//! is ([`DaemonArgs`]), how the bridge waits for it ([`BridgeArgs`]), the
//! session's limits ([`SessionArgs`]), the log ([`LogArgs`]) and iai-mcp's
//! own programs ([`CliArgs`]). Adding a setting touches its group only. The
//! value types and their parsers are in `values`.

mod bridge;
mod cli;
mod daemon;
mod environment;
mod error;
mod in_effect;
mod log;
mod session;
mod values;

use clap::Parser;

use crate::install::hosts::Host;

pub use self::bridge::{BridgeArgs, BridgeSettings};
pub use self::cli::{CliArgs, CliSettings};
pub use self::daemon::{DaemonArgs, DaemonSettings};
pub use self::environment::Environment;
pub use self::error::ConfigError;
pub use self::in_effect::{Setting, Source, settings_in_effect};
pub use self::log::{LogArgs, LogSettings};
pub use self::session::{SessionArgs, SessionSettings};
pub use self::values::{EmptyIsDefault, Millis, Switch, TcpPort, TransportSetting};

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
    /// Where the daemon listens and the lifecycle files go.
    #[command(flatten)]
    pub daemon: DaemonArgs,

    /// The bridge's mode and timings.
    #[command(flatten)]
    pub bridge: BridgeArgs,

    /// The session's intervals and sizes.
    #[command(flatten)]
    pub session: SessionArgs,

    /// The log.
    #[command(flatten)]
    pub log: LogArgs,

    /// iai-mcp's CLIs: degraded mode, the doctor, the installation, the
    /// store.
    #[command(flatten)]
    pub cli: CliArgs,

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

/// Validated settings, ready to build the wrapper from: one part per group
/// of settings, each built by its group from its flags alone.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the daemon listens and the wrapper's own files go.
    pub daemon: DaemonSettings,
    /// How the bridge waits for and reconnects to the daemon.
    pub bridge: BridgeSettings,
    /// The session's intervals and sizes.
    pub session: SessionSettings,
    /// The log.
    pub log: LogSettings,
    /// iai-mcp's CLIs: degraded mode, the doctor, where they are installed,
    /// the store.
    pub cli: CliSettings,
    /// Run the `--check` report instead of serving.
    pub check: bool,
}

impl Args {
    /// Resolves defaults against `env` and validates everything; touches
    /// nothing outside its arguments. Each group of settings builds its
    /// part of the [`Config`].
    pub fn resolve(self, env: &Environment) -> Result<Config, ConfigError> {
        let base = env.home.as_ref().map(|h| h.join(".iai-mcp"));
        let daemon = self.daemon.resolve(env, base.as_deref())?;
        let bridge = self.bridge.resolve()?;
        let cli = self.cli.resolve(
            env,
            base.as_deref(),
            daemon.socket_path(),
            bridge.policy.mode(),
        )?;
        Ok(Config {
            daemon,
            bridge,
            session: self.session.resolve()?,
            log: self.log.resolve(),
            cli,
            check: self.check,
        })
    }
}

#[cfg(test)]
mod tests;
