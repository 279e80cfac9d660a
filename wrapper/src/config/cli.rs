//! iai-mcp's own programs: the CLIs that answer while the daemon is down
//! (degraded mode), the doctor, where they are installed, and the store
//! they share with the daemon.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::environment::{Environment, given};
use super::error::ConfigError;
use super::values::{EmptyIsDefault, Millis, Switch, any_text};
use crate::bridge::BridgeMode;
use crate::degraded::{self, DegradedConfig};
use crate::lifecycle::doctor::{self, DoctorConfig};
use crate::lifecycle::verdict;
use crate::programs::Installation;
use crate::surface::Choice;

/// Degraded mode, the doctor, the installation and the store.
#[derive(Debug, Clone, clap::Args)]
pub struct CliArgs {
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

    /// How long the doctor's verdict on a run of the daemon stands for
    /// later sessions of that run, in ms (within it they show the warning
    /// it calls for without running the doctor again).
    #[arg(long, env = "IAI_MCP_DOCTOR_VERDICT_MAX_AGE_MS", value_name = "MS",
        default_value_t = Millis(verdict::DEFAULT_MAX_AGE), value_parser = EmptyIsDefault::<Millis>::new())]
    pub doctor_verdict_max_age_ms: Millis,

    /// Whose tools and instructions to serve: `auto`, those of the iai-mcp
    /// release installed beside this binary (or beside IAI_MCP_PYTHON, or
    /// the `iai-mcp` program found); `builtin`, the built-in table; or the
    /// path of a release (its environment, site-packages, `iai_mcp`
    /// package or `_wrapper/index.js`).
    #[arg(long, env = "IAI_MCP_SURFACE", value_name = "auto|builtin|PATH",
        default_value_t = Choice::Installed, value_parser = EmptyIsDefault::<Choice>::new())]
    pub surface: Choice,

    /// The Python of the iai-mcp installation, as iai-mcp's installer
    /// writes it into host configurations: its directory is where bare
    /// CLI names are looked for first. Python is never started.
    #[arg(long, env = "IAI_MCP_PYTHON", value_parser = any_text,
        value_name = "PATH", hide_short_help = true)]
    pub python: Option<String>,
}

/// What [`CliArgs`] resolve to: the CLIs' part of the [`super::Config`].
#[derive(Debug, Clone)]
pub struct CliSettings {
    /// Degraded mode through the CLI.
    pub degraded: DegradedConfig,
    /// Doctor probe and auto-heal.
    pub doctor: DoctorConfig,
    /// Where bare CLI names are looked for.
    pub installation: Installation,
    /// The daemon's store (`IAI_MCP_STORE`, default `$HOME/.iai-mcp`):
    /// where its state file is, and the store its process title names.
    pub store: Option<PathBuf>,
    /// Whose tool surface to serve.
    pub surface: Choice,
}

impl CliArgs {
    /// The CLIs' settings. `base` is the daemon's base directory (the
    /// store's default), `socket_path` the socket path given to the
    /// wrapper (passed on so the CLIs find the same daemon), `mode` the
    /// bridge's (the pre-fix mode turns degraded mode off).
    pub(super) fn resolve(
        self,
        env: &Environment,
        base: Option<&Path>,
        socket_path: Option<&Path>,
        mode: BridgeMode,
    ) -> Result<CliSettings, ConfigError> {
        if self.cli_timeout_ms.0.is_zero() {
            return Err(ConfigError::Zero("cli-timeout-ms"));
        }
        let store = given(self.store).or_else(|| base.map(Path::to_path_buf));
        let child_env = child_env(store.as_deref(), socket_path);
        let degraded = DegradedConfig {
            // The pre-fix mode exists to show V3-05: no call may be rescued
            // by the CLI there.
            enabled: self.degraded.0 && mode == BridgeMode::Fixed,
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
            verdict_max_age: self.doctor_verdict_max_age_ms.0,
            env: child_env,
        };
        Ok(CliSettings {
            degraded,
            doctor,
            installation: installation(given(self.python), env),
            store,
            surface: self.surface,
        })
    }
}

/// What the CLI children need to find the same daemon and store as the
/// wrapper, whether the wrapper got them from flags or the environment.
/// `iai capture` writes to the store directly only when it is told where
/// the store is: by default, where the daemon keeps it.
fn child_env(store: Option<&Path>, socket_path: Option<&Path>) -> Vec<(OsString, OsString)> {
    let mut child_env = Vec::new();
    if let Some(store) = store {
        child_env.push((OsString::from("IAI_MCP_STORE"), store.into()));
    }
    if let Some(path) = socket_path {
        child_env.push((OsString::from("IAI_DAEMON_SOCKET_PATH"), path.into()));
    }
    child_env
}

/// Where bare CLI names are looked for. Host entries written by iai-mcp's
/// installer name the installation's Python, and hosts rarely inherit the
/// shell's PATH: its directory, then this binary's, come first.
fn installation(python: Option<PathBuf>, env: &Environment) -> Installation {
    let python_dir = python
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .filter(|dir| !dir.as_os_str().is_empty());
    let program_dirs = python_dir.map(|dir| env.platform.program_dirs(&dir));
    Installation::for_platform(
        env.platform,
        program_dirs
            .into_iter()
            .flatten()
            .chain(env.wrapper_dir.clone())
            .chain(env.real_wrapper_dir.clone()),
    )
}
