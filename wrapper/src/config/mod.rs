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
//! disk is a step of its own ([`Installation::locate`](crate::programs::Installation::locate)).
//!
//! The settings come in groups by area, each a struct of its own flattened
//! into [`Args`] and building its part of the [`Config`]: where the daemon
//! is ([`DaemonArgs`]), how the bridge waits for it ([`BridgeArgs`]), the
//! session's limits ([`SessionArgs`]), the log ([`LogArgs`]) and iai-mcp's
//! own programs ([`CliArgs`]). Adding a setting touches its group only. The
//! value types and their parsers are in `values`.

mod args;
mod bridge;
mod cli;
mod daemon;
mod environment;
mod error;
mod in_effect;
mod log;
mod session;
mod values;

pub use self::args::{Args, Command, HostChoice};
pub use self::bridge::{BridgeArgs, BridgeSettings};
pub use self::cli::{CliArgs, CliSettings};
pub use self::daemon::{DaemonArgs, DaemonSettings};
pub use self::environment::Environment;
pub use self::error::ConfigError;
pub use self::in_effect::{Setting, Source, settings_in_effect};
pub use self::log::{LogArgs, LogSettings};
pub use self::session::{SessionArgs, SessionSettings};
pub use self::values::{EmptyIsDefault, Millis, Switch, TcpPort, TransportSetting};

use crate::surface::Finder;

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

impl Config {
    /// The finder of the release whose tools and instructions are served:
    /// the surface setting, looked for around the installation and the
    /// admin CLI, cached in the wrapper's state directory. The serving
    /// wrapper, `--check` and `status` all find it this way.
    pub fn surface_finder(&self) -> Finder {
        Finder::new(
            self.cli.surface.clone(),
            &self.cli.installation,
            &self.cli.doctor.admin_cli,
            &self.daemon.state_dir,
        )
    }
}

#[cfg(test)]
mod tests;
