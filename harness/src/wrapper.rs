//! Starting an MCP wrapper (this workspace's, or any other command such as
//! the original Node.js wrapper) in an isolated environment, with an
//! [`McpClient`] on its stdio.
//!
//! Every wrapper gets its own scratch directory for `HOME`, the state
//! directory (heartbeat and wake files) and the store, so runs never touch
//! the developer's `~/.iai-mcp` and never see each other's files.

use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::str::FromStr;
use std::time::{Duration, Instant};

use devkit::bins;
#[cfg(unix)]
use devkit::process::Signal;
use devkit::process::{CapturedOutput, ChildGuard};
use devkit::shell::{env_assignment, split_words};
use devkit::tempdir::short_tempdir;
use serde::Serialize;
use tempfile::TempDir;

use crate::client::McpClient;
use crate::daemon::{DaemonEndpoint, FakeDaemon};
use crate::error::HarnessError;

/// The wrapper's bridge behaviour, as selected by `IAI_MCP_BRIDGE_MODE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BridgeMode {
    /// The fixed bridge (the wrapper's default).
    Fixed,
    /// The pre-fix behaviour that reproduces the V3-05 race.
    Prefix,
}

impl BridgeMode {
    /// The value of `IAI_MCP_BRIDGE_MODE` for this mode.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fixed => "fixed",
            Self::Prefix => "prefix",
        }
    }
}

impl fmt::Display for BridgeMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A bridge mode for a table: its name, or `(unset)` when a run leaves it
/// to the wrapper.
pub fn mode_label(mode: Option<BridgeMode>) -> String {
    mode.map_or_else(|| "(unset)".to_owned(), |m| m.to_string())
}

/// A wrapper under test: its command and the bridge mode it runs in (a
/// line of the sweep's picture, a column of the scorecard).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    /// The name in tables, the legend and the JSON report.
    pub label: String,
    /// The wrapper to start.
    pub cmd: WrapperCommand,
    /// `IAI_MCP_BRIDGE_MODE` (`None`: unset).
    pub mode: Option<BridgeMode>,
}

impl Subject {
    /// `cmd` in each of `modes`, labelled by the mode's name (`prefix`,
    /// `fixed`): this workspace's wrapper.
    pub fn modes(cmd: &WrapperCommand, modes: &[BridgeMode]) -> Vec<Self> {
        modes
            .iter()
            .map(|&mode| Self {
                label: mode.to_string(),
                cmd: cmd.clone(),
                mode: Some(mode),
            })
            .collect()
    }

    /// Another wrapper command, labelled by its command line (and the mode,
    /// when one is set).
    pub fn command(cmd: WrapperCommand, mode: Option<BridgeMode>) -> Self {
        let label = match mode {
            Some(mode) => format!("{} ({mode})", cmd.display()),
            None => cmd.display(),
        };
        Self { label, cmd, mode }
    }
}

/// The error of parsing a [`BridgeMode`] from text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid bridge mode {0:?}: expected `fixed` or `prefix`")]
pub struct ParseBridgeModeError(pub String);

impl FromStr for BridgeMode {
    type Err = ParseBridgeModeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "fixed" => Ok(Self::Fixed),
            "prefix" => Ok(Self::Prefix),
            other => Err(ParseBridgeModeError(other.to_owned())),
        }
    }
}

/// How to start a wrapper: a program, its arguments, and environment
/// variables of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrapperCommand {
    /// The program to run.
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Environment variables set for it, after the harness's own (so they
    /// win over them).
    pub env: Vec<(OsString, OsString)>,
}

impl WrapperCommand {
    /// Runs `program` with no arguments.
    pub fn new(program: impl Into<OsString>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
        }
    }

    /// This workspace's `iai-mcp-wrapper`, found or built by
    /// [`bins::wrapper_bin`] and run through [`bins::WRAPPER_RUNNER_ENV`]'s
    /// runner if one is set; panics when that fails. Meant for tests; see
    /// [`try_this_workspace`](Self::try_this_workspace).
    pub fn this_workspace() -> Self {
        Self::try_this_workspace().unwrap_or_else(|e| panic!("{}", bins::error_chain(&e)))
    }

    /// This workspace's `iai-mcp-wrapper`, found or built by
    /// [`bins::try_wrapper_bin`], run through [`bins::WRAPPER_RUNNER_ENV`]'s
    /// runner if one is set.
    pub fn try_this_workspace() -> Result<Self, HarnessError> {
        Self::with_runner(bins::try_wrapper_bin()?)
    }

    /// The wrapper a test should run: the binary `IAI_WRAPPER_BIN` names,
    /// else `built` (the one cargo built for the test), behind the runner
    /// [`bins::WRAPPER_RUNNER_ENV`] names, if any. This is how the
    /// wrapper's real-process tests run a cross-built binary under an
    /// emulator (`IAI_WRAPPER_RUNNER="qemu-aarch64-static -L /usr/aarch64-linux-gnu"`);
    /// panics on a runner that cannot be parsed.
    pub fn under_test(built: impl Into<OsString>) -> Self {
        let binary = std::env::var_os(bins::WRAPPER.env_override)
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| built.into());
        Self::with_runner(binary).unwrap_or_else(|e| panic!("{}", bins::error_chain(&e)))
    }

    /// `binary` behind the runner [`bins::WRAPPER_RUNNER_ENV`] names (its
    /// words before the binary), or alone when none is set.
    pub fn with_runner(binary: impl Into<OsString>) -> Result<Self, HarnessError> {
        let binary = binary.into();
        let runner = std::env::var(bins::WRAPPER_RUNNER_ENV).unwrap_or_default();
        if runner.trim().is_empty() {
            return Ok(Self::new(binary));
        }
        let mut cmd = Self::parse_shell_words(&runner)?;
        cmd.args.push(binary);
        Ok(cmd)
    }

    /// A [`Command`] running this wrapper command (program, arguments and
    /// environment), for tests that drive the process themselves.
    pub fn std_command(&self) -> Command {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        command
    }

    /// Parses a command line such as `node /path/dist/index.js`.
    ///
    /// Words are split on whitespace; single quotes keep everything
    /// literally, double quotes keep everything but `\"` and `\\`, and a
    /// backslash outside quotes escapes the next character. Leading
    /// `NAME=value` words become environment variables, as in a shell. No
    /// expansion of any kind is done.
    pub fn parse_shell_words(line: &str) -> Result<Self, HarnessError> {
        let mut words = split_words(line)
            .map_err(|e| HarnessError::WrapperCommand(e.to_string()))?
            .into_iter()
            .peekable();
        let mut env = Vec::new();
        while let Some((name, value)) = words.peek().and_then(|w| env_assignment(w)) {
            env.push((OsString::from(name), OsString::from(value)));
            words.next();
        }
        let program = words
            .next()
            .ok_or_else(|| HarnessError::WrapperCommand(format!("no program in {line:?}")))?;
        Ok(Self {
            program: program.into(),
            args: words.map(OsString::from).collect(),
            env,
        })
    }

    /// The command as one line, for messages.
    pub fn display(&self) -> String {
        let env = self
            .env
            .iter()
            .map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy()));
        let argv = std::iter::once(&self.program)
            .chain(&self.args)
            .map(|a| a.to_string_lossy().into_owned());
        env.chain(argv).collect::<Vec<_>>().join(" ")
    }
}

/// The environment a wrapper runs in.
///
/// Unset directories are fresh ones in the wrapper's scratch directory
/// (`HOME=<scratch>/home`, state `<scratch>/home/.iai-mcp`, store
/// `<scratch>/store`). `mode` and `reconnect_delay_ms` left at `None` unset
/// the variable, so the wrapper's own default applies whatever the shell
/// exports; `cli` left at `None` names a program that does not exist, so no
/// run starts the developer's own iai-mcp tools.
#[derive(Debug, Clone, Default)]
pub struct WrapperOptions {
    /// Where the daemon listens (`IAI_DAEMON_SOCKET_PATH`, or
    /// `IAI_DAEMON_TCP_PORT` and `IAI_DAEMON_TOKEN_PATH`).
    pub endpoint: DaemonEndpoint,
    /// `IAI_MCP_BRIDGE_MODE`.
    pub mode: Option<BridgeMode>,
    /// `IAI_MCP_RECONNECT_TEST_DELAY_MS`: widens the reconnect race window.
    pub reconnect_delay_ms: Option<u64>,
    /// `IAI_MCP_STATE_DIR`: where heartbeat and wake files go.
    pub state_dir: Option<PathBuf>,
    /// `HOME`.
    pub home: Option<PathBuf>,
    /// `IAI_MCP_STORE` (accepted and ignored by the Rust wrapper; set like
    /// the seed test does).
    pub store_dir: Option<PathBuf>,
    /// The program both `IAI_MCP_CLI` and `IAI_MCP_ADMIN_CLI` name (for
    /// example the `fake-iai` stand-in).
    pub cli: Option<PathBuf>,
    /// More environment variables, set last (they win over everything).
    pub extra_env: Vec<(OsString, OsString)>,
}

impl WrapperOptions {
    /// Options for a wrapper dialling `socket_path`, everything else default.
    pub fn new(socket_path: impl Into<PathBuf>) -> Self {
        Self::at(DaemonEndpoint::Unix(socket_path.into()))
    }

    /// Options for a wrapper dialling `endpoint`, everything else default.
    pub fn at(endpoint: DaemonEndpoint) -> Self {
        Self {
            endpoint,
            ..Self::default()
        }
    }

    /// Options for a wrapper dialling `daemon`, over whichever transport it
    /// listens on.
    pub fn for_daemon(daemon: &FakeDaemon) -> Self {
        Self::at(daemon.endpoint().clone())
    }

    /// Points both iai CLIs at `program`.
    pub fn cli(mut self, program: impl Into<PathBuf>) -> Self {
        self.cli = Some(program.into());
        self
    }

    /// Sets the bridge mode.
    pub fn mode(mut self, mode: BridgeMode) -> Self {
        self.mode = Some(mode);
        self
    }

    /// Sets the reconnect test delay in milliseconds.
    pub fn reconnect_delay_ms(mut self, ms: u64) -> Self {
        self.reconnect_delay_ms = Some(ms);
        self
    }

    /// Adds an environment variable.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.extra_env.push((key.into(), value.into()));
        self
    }
}

/// A running wrapper: the child process (killed and reaped on drop), an
/// [`McpClient`] on its stdio (also reachable through `Deref`), and its
/// captured stderr.
#[derive(Debug)]
pub struct WrapperProcess {
    // Field order is drop order: kill the child before removing its scratch
    // directory.
    guard: ChildGuard,
    client: McpClient,
    stderr: CapturedOutput,
    home: PathBuf,
    state_dir: PathBuf,
    _scratch: TempDir,
}

impl WrapperProcess {
    /// Starts `cmd` with the environment described by `opts`.
    pub fn spawn(cmd: &WrapperCommand, opts: &WrapperOptions) -> Result<Self, HarnessError> {
        let scratch = short_tempdir()?;
        let or = |dir: &Option<PathBuf>, default: PathBuf| dir.clone().unwrap_or(default);
        let home = or(&opts.home, scratch.path().join("home"));
        let state_dir = or(&opts.state_dir, home.join(".iai-mcp"));
        let store_dir = or(&opts.store_dir, scratch.path().join("store"));
        let mut command = isolated_command(cmd, &opts.endpoint, &home, &state_dir, &store_dir)?;
        if let Some(cli) = &opts.cli {
            command
                .env("IAI_MCP_CLI", cli)
                .env("IAI_MCP_ADMIN_CLI", cli);
        }
        let delay = opts.reconnect_delay_ms.map(|ms| ms.to_string());
        let mode = opts.mode.map(BridgeMode::as_str);
        for (key, value) in [
            ("IAI_MCP_BRIDGE_MODE", mode),
            ("IAI_MCP_RECONNECT_TEST_DELAY_MS", delay.as_deref()),
        ] {
            match value {
                Some(value) => command.env(key, value),
                None => command.env_remove(key),
            };
        }
        command.envs(cmd.env.iter().map(|(k, v)| (k, v)));
        command.envs(opts.extra_env.iter().map(|(k, v)| (k, v)));

        let mut guard = ChildGuard::spawn(&mut command)?;
        let child = guard.child_mut();
        let stderr =
            CapturedOutput::spawn(child.stderr.take().expect("stderr is piped"), "wrapper");
        let client = McpClient::attach(child)?;
        Ok(Self {
            guard,
            client,
            stderr,
            home,
            state_dir,
            _scratch: scratch,
        })
    }

    /// The wrapper's process id.
    pub fn pid(&self) -> u32 {
        self.guard.pid()
    }

    /// Sends `signal` to the wrapper (refused once it has been reaped).
    /// Unix only: Windows has no signals to send.
    #[cfg(unix)]
    pub fn signal(&mut self, signal: Signal) -> Result<(), HarnessError> {
        Ok(self.guard.signal(signal)?)
    }

    /// Closes the wrapper's stdin, so it sees end of file.
    pub fn close_stdin(&mut self) {
        self.client.close_stdin();
    }

    /// Waits up to `timeout` for the wrapper to exit, then (within what is
    /// left of the timeout, and at least briefly) for its stderr to be fully
    /// captured.
    pub fn wait_exit(&mut self, timeout: Duration) -> Result<ExitStatus, HarnessError> {
        let start = Instant::now();
        let status = self.guard.wait_exit(timeout)?;
        let left = timeout
            .saturating_sub(start.elapsed())
            .max(Duration::from_millis(200));
        self.stderr.wait_eof(left);
        Ok(status)
    }

    /// The exit status if the wrapper has exited, without blocking.
    pub fn try_wait(&mut self) -> Result<Option<ExitStatus>, HarnessError> {
        Ok(self.guard.try_wait()?)
    }

    /// Kills the wrapper (SIGKILL) and reaps it.
    pub fn kill(&mut self) -> Result<ExitStatus, HarnessError> {
        Ok(self.guard.kill()?)
    }

    /// Everything the wrapper wrote to stderr so far.
    pub fn stderr_text(&self) -> String {
        self.stderr.text()
    }

    /// At most the last `max_bytes` of the wrapper's stderr.
    pub fn stderr_tail(&self, max_bytes: usize) -> String {
        self.stderr.tail(max_bytes)
    }

    /// The wrapper's `HOME`.
    pub fn home_dir(&self) -> &Path {
        &self.home
    }

    /// The wrapper's `IAI_MCP_STATE_DIR`.
    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }
}

impl Deref for WrapperProcess {
    type Target = McpClient;

    fn deref(&self) -> &McpClient {
        &self.client
    }
}

impl DerefMut for WrapperProcess {
    fn deref_mut(&mut self) -> &mut McpClient {
        &mut self.client
    }
}

/// Creates `home`, `state_dir` and `store_dir`, and returns a command
/// starting `cmd` (its program and arguments; not its `env`) with piped
/// stdio, dialling `endpoint`, with its state, home (`HOME`, and
/// `USERPROFILE` on Windows) and store in those
/// directories, `python3` as its Python, its iai CLIs naming a program that
/// does not exist (so that nothing of the developer's installation runs),
/// and no other inherited `IAI_*` variable.
pub fn isolated_command(
    cmd: &WrapperCommand,
    endpoint: &DaemonEndpoint,
    home: &Path,
    state_dir: &Path,
    store_dir: &Path,
) -> Result<Command, HarnessError> {
    for dir in [home, state_dir, store_dir] {
        fs::create_dir_all(dir)
            .map_err(|e| HarnessError::io(format!("creating {}", dir.display()), e))?;
    }
    let mut command = Command::new(&cmd.program);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("IAI_") {
            command.env_remove(&key);
        }
    }
    command
        .args(&cmd.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("IAI_MCP_STATE_DIR", state_dir)
        .env("HOME", home)
        .env("IAI_MCP_STORE", store_dir)
        .env("IAI_MCP_PYTHON", "python3")
        .env("IAI_MCP_CLI", home.join("no-iai-cli"))
        .env("IAI_MCP_ADMIN_CLI", home.join("no-iai-cli"));
    if cfg!(windows) {
        // Where Windows programs (the wrapper, Python, Node) find the home
        // directory.
        command.env("USERPROFILE", home);
    }
    match endpoint {
        DaemonEndpoint::Unix(socket) => {
            command.env("IAI_DAEMON_SOCKET_PATH", socket);
        }
        DaemonEndpoint::Tcp { port, token_path } => {
            command
                .env("IAI_DAEMON_TCP_PORT", port.to_string())
                .env("IAI_DAEMON_TOKEN_PATH", token_path);
        }
    }
    Ok(command)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leading_assignments_become_env() {
        let cmd = WrapperCommand::parse_shell_words("A=1 _B='x y' node index.js C=3").unwrap();
        assert_eq!(cmd.program, "node");
        assert_eq!(cmd.args, ["index.js", "C=3"]);
        assert_eq!(
            cmd.env,
            [
                (OsString::from("A"), OsString::from("1")),
                (OsString::from("_B"), OsString::from("x y"))
            ]
        );
        assert!(WrapperCommand::parse_shell_words("A=1").is_err());
        assert!(WrapperCommand::parse_shell_words("   ").is_err());
        assert_eq!(
            WrapperCommand::parse_shell_words("=x y").unwrap().program,
            "=x"
        );
    }

    #[test]
    fn bridge_mode_round_trips() {
        for mode in [BridgeMode::Fixed, BridgeMode::Prefix] {
            assert_eq!(mode.to_string().parse::<BridgeMode>(), Ok(mode));
        }
        assert!("Fixed".parse::<BridgeMode>().is_err());
        assert_eq!(
            serde_json::to_string(&BridgeMode::Prefix).unwrap(),
            "\"prefix\""
        );
    }
}
