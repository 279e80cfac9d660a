//! The smoke run: the few things any build of a wrapper must do, whatever
//! machine or emulator it runs on. It is what `cargo xtask cross-check`
//! puts a cross-built binary through (under qemu-user or Wine, the runner
//! being the first words of the wrapper command).
//!
//! `--version` answers; the handshake and a first call succeed; `tools/list`
//! names every tool of the table; a tool call succeeds; after the daemon
//! drops the connection (`DROP`) the next call is answered and the daemon
//! holds one connection; the wrapper exits once its stdin closes.
//!
//! Over TCP the wrapper is given only `IAI_DAEMON_SOCKET_PATH` (and
//! `IAI_DAEMON_TRANSPORT=tcp`, the Windows build's default): it finds the
//! port and token in the files the daemon wrote beside that path, as
//! iai-mcp 3.3.0 does on Windows. A second wrapper is then given a wrong
//! token file: its call must be answered with `daemon_unreachable` naming
//! that file (no hang), and it must keep answering and exit on EOF.
//!
//! Last, `install` runs in a scratch profile laid out as a Unix or a
//! Windows user's (the hosts' files holding iai-mcp's Node entries): it
//! must name the files as that platform's users write them, switch every
//! entry to itself, and `status` must then find every entry starting it.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use clap::Args;
use devkit::process::{CapturedOutput, ChildGuard};
use devkit::tempdir::short_tempdir;
use serde::Serialize;
use serde_json::{Value, json};

use super::declaration::{Scenario, Scoring};
use super::live::{LiveSession, PROBE_TOOL, WrapperOutput, problems_text};
use super::outcome::CallOutcome;
use super::property::{Cause, Check, Checks, Judged, Prop};
use super::race::PROTOCOL_VERSION;
use super::settings;
use super::setup::Setup;
use crate::daemon::{FakeDaemon, Transport};
use crate::error::HarnessError;
use crate::wrapper::{BridgeMode, WrapperCommand, WrapperOptions, WrapperProcess};

/// How many tools the wrapper's table lists (iai-mcp 3.3.0's surface).
pub const TOOL_COUNT: usize = 15;

/// The connect wait the wrong-token wrapper is given: its call must fail
/// after it, long before the reply bound.
pub const WRONG_TOKEN_CONNECT_WAIT: Duration = Duration::from_secs(2);

/// Parameters of the smoke run: its settings (the `smoke` command's
/// flags); `Default` is the values declared here.
#[derive(Debug, Clone, Args)]
pub struct SmokeConfig {
    /// Bound on any one answer (a safety net for slow emulators, not a
    /// measurement).
    // Generous: an emulated binary starts and answers several times slower
    // than a native one.
    #[arg(long = "reply-bound-ms", default_value = "60000", value_name = "MS",
          value_parser = settings::millis())]
    pub reply_bound: Duration,
    /// The wrapper's bridge mode and the fake daemon.
    #[arg(skip)]
    pub setup: Setup,
    /// Where `install` is tried.
    #[command(flatten)]
    pub profile: ScratchProfile,
}

impl Default for SmokeConfig {
    fn default() -> Self {
        settings::defaults()
    }
}

/// The smoke run any build must pass.
#[derive(Debug, Clone, Copy)]
pub struct Smoke;

impl Scenario for Smoke {
    const NAME: &'static str = "smoke";
    const ABOUT: &'static str = "The smoke run any build must pass, on any machine or emulator: --version, the handshake, tools/list (15 tools), a tool call, a DROP and the next call on one connection, exit on stdin EOF. Put an emulator first in --wrapper-cmd to run a cross-built binary";
    type Config = SmokeConfig;
    type Args = SmokeConfig;
    type Report = SmokeReport;

    fn setup(cfg: &mut SmokeConfig) -> &mut Setup {
        &mut cfg.setup
    }

    fn run(cmd: &WrapperCommand, cfg: &SmokeConfig) -> Result<SmokeReport, HarnessError> {
        run_smoke(cmd, cfg)
    }

    /// Not scored: it checks a build, not a wrapper's behaviour under
    /// faults.
    fn scored(_: &Scoring) -> Vec<SmokeConfig> {
        Vec::new()
    }
}

/// Whose conventions a profile's host files follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum ProfileLayout {
    /// A Linux user's: Claude Desktop in `~/.config/Claude`.
    #[default]
    Unix,
    /// A Windows user's: Claude Desktop in `~\AppData\Roaming\Claude`.
    Windows,
}

impl ProfileLayout {
    /// Claude Desktop's file under the profile, as parts.
    fn claude_desktop(self) -> &'static [&'static str] {
        match self {
            ProfileLayout::Unix => &[".config", "Claude", "claude_desktop_config.json"],
            ProfileLayout::Windows => {
                &["AppData", "Roaming", "Claude", "claude_desktop_config.json"]
            }
        }
    }

    /// How the wrapper shows a file under the profile: from `~`, with the
    /// platform's separator.
    fn shown(self, parts: &[&str]) -> String {
        let separator = match self {
            ProfileLayout::Unix => "/",
            ProfileLayout::Windows => "\\",
        };
        format!("~{separator}{}", parts.join(separator))
    }

    /// The Node wrapper script iai-mcp's installer names in its entries.
    fn node_script(self) -> &'static str {
        match self {
            ProfileLayout::Unix => {
                "/home/u/.venv/lib/python3.12/site-packages/iai_mcp/_wrapper/index.js"
            }
            ProfileLayout::Windows => {
                r"C:\Users\u\.venv\Lib\site-packages\iai_mcp\_wrapper\index.js"
            }
        }
    }
}

/// The scratch profile `install` runs in.
#[derive(Debug, Clone, Default, Args)]
pub struct ScratchProfile {
    /// The profile directory `install` runs in, as this machine names it
    /// (made if missing, laid out, left for its owner to remove) [default:
    /// a fresh temporary directory]. The wrapper is told it through `HOME`
    /// and `USERPROFILE`; a runner that decides the profile itself (Wine
    /// does, from its user name) must be pointed at the same directory.
    #[arg(long = "profile-dir", value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Whose conventions its host files follow.
    #[arg(long = "profile-layout", value_enum, default_value_t = ProfileLayout::Unix)]
    pub layout: ProfileLayout,
}

/// How the wrapper ended once its stdin closed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "detail")]
pub enum EofExit {
    /// It exited by itself, with this status.
    Exited(String),
    /// It was still running at the bound and was killed.
    StillRunning,
}

/// What the smoke run found.
#[derive(Debug, Clone, Serialize)]
pub struct SmokeReport {
    /// The bridge mode the wrapper ran in (`None`: not set).
    pub mode: Option<BridgeMode>,
    /// The first line `--version` printed, or why it failed.
    pub version: Result<String, String>,
    /// How many tools `tools/list` named (`None`: no valid answer).
    pub tools_listed: Option<usize>,
    /// How a tool call before the drop ended.
    pub call: CallOutcome,
    /// How the first call after the daemon's `DROP` ended.
    pub after_drop: CallOutcome,
    /// Connections the daemon held after that call.
    pub conns_after: u32,
    /// How the wrapper ended after its stdin closed.
    pub eof_exit: EofExit,
    /// The wrapper given a wrong token (over TCP only).
    pub wrong_token: Option<WrongToken>,
    /// `install` and `status` in the scratch profile.
    pub install: InstallRun,
    /// Its stdout defects and the end of its stderr.
    #[serde(flatten)]
    pub output: WrapperOutput,
}

/// What a wrapper given a wrong token file did.
#[derive(Debug, Clone, Serialize)]
pub struct WrongToken {
    /// The token file it was given.
    pub token_file: String,
    /// How its tool call ended.
    pub call: CallOutcome,
    /// Whether it answered `tools/list` after that call.
    pub answered_after: bool,
    /// How it ended after its stdin closed.
    pub eof_exit: EofExit,
}

impl WrongToken {
    fn names_the_file(&self) -> bool {
        self.call.error_mentions(&self.token_file)
    }
}

/// What `install` and `status` did in the scratch profile.
#[derive(Debug, Clone, Serialize)]
pub struct InstallRun {
    /// The profile's layout.
    pub layout: ProfileLayout,
    /// How `install` ended, or why it could not run.
    pub install: Result<String, String>,
    /// Its output names Claude Desktop's file as the layout's users write
    /// it (`shown`).
    pub named: bool,
    /// That name.
    pub shown: String,
    /// Host files whose iai-mcp entry starts an `iai-mcp-wrapper` with no
    /// arguments afterwards, and how many were laid out.
    pub switched: usize,
    /// Host files laid out.
    pub files: usize,
    /// How `status` ended afterwards (it exits 0 only when every entry
    /// starts this binary), or why it could not run.
    pub status: Result<String, String>,
}

impl Judged for SmokeReport {
    fn checks(&self) -> Vec<Check> {
        let mut checks = Checks::default();
        self.serving_checks(&mut checks);
        if let Some(wrong) = &self.wrong_token {
            wrong.checks(&mut checks);
        }
        self.install.checks(&mut checks);
        checks.stdout_clean(&self.output.defects);
        checks.into_vec()
    }
}

impl SmokeReport {
    /// The wrapper serving: `--version`, `tools/list`, a call before and
    /// after the drop, one connection, the exit on stdin's end.
    fn serving_checks(&self, checks: &mut Checks) {
        checks.expect(
            Prop::AnsweredOnce,
            self.version.is_ok(),
            Cause::Other,
            match &self.version {
                Ok(line) => format!("--version: {line}"),
                Err(why) => format!("--version failed: {why}"),
            },
        );
        checks.expect(
            Prop::AnsweredOnce,
            self.tools_listed == Some(TOOL_COUNT),
            Cause::Other,
            match self.tools_listed {
                Some(n) => format!("tools/list named {n} tools (expected {TOOL_COUNT})"),
                None => "tools/list got no valid answer".to_owned(),
            },
        );
        checks.expect(
            Prop::AnsweredOnce,
            self.call.is_ok(),
            Cause::of_call(&self.call, true),
            format!("a tool call: {}", self.call),
        );
        checks.expect(
            Prop::ReconnectCall,
            self.after_drop.is_ok(),
            Cause::of_call(&self.after_drop, true),
            format!("the call after DROP: {}", self.after_drop),
        );
        checks.expect(
            Prop::OneConnection,
            self.conns_after == 1,
            Cause::Other,
            format!("{} daemon connection(s) after the drop", self.conns_after),
        );
        checks.expect(
            Prop::ExitsOnEof,
            matches!(self.eof_exit, EofExit::Exited(_)),
            Cause::Other,
            match &self.eof_exit {
                EofExit::Exited(status) => format!("exited on stdin EOF ({status})"),
                EofExit::StillRunning => "still running after stdin closed".to_owned(),
            },
        );
    }
}

impl WrongToken {
    /// Refused for want of the daemon, naming the file, still up after it,
    /// gone on stdin's end.
    fn checks(&self, checks: &mut Checks) {
        checks.expect(
            Prop::ConnectWait,
            self.call.is_daemon_unreachable(),
            Cause::of_call(&self.call, false),
            format!("a wrong token: {}", self.call),
        );
        checks.expect(
            Prop::NamedSocket,
            self.names_the_file(),
            Cause::Other,
            format!("the wrong token's failure names {}", self.token_file),
        );
        checks.expect(
            Prop::StaysUp,
            self.answered_after,
            Cause::Died,
            format!(
                "tools/list answered after the wrong token's failure: {}",
                self.answered_after
            ),
        );
        checks.expect(
            Prop::ExitsOnEof,
            matches!(self.eof_exit, EofExit::Exited(_)),
            Cause::Other,
            format!("the wrong-token wrapper on stdin EOF: {}", self.eof_exit),
        );
    }
}

impl InstallRun {
    /// `install` named the profile's file and switched every entry, and
    /// `status` agreed.
    fn checks(&self, checks: &mut Checks) {
        checks.expect(
            Prop::AnsweredOnce,
            self.install.is_ok() && self.named,
            Cause::Other,
            match &self.install {
                Ok(_) if self.named => {
                    format!(
                        "install in a {:?} profile named {}",
                        self.layout, self.shown
                    )
                }
                Ok(_) => format!("install's output does not name {}", self.shown),
                Err(why) => format!("install failed: {why}"),
            },
        );
        checks.expect(
            Prop::AnsweredOnce,
            self.files > 0 && self.switched == self.files,
            Cause::Other,
            format!(
                "{} of {} host entries start iai-mcp-wrapper after install",
                self.switched, self.files
            ),
        );
        checks.expect(
            Prop::AnsweredOnce,
            self.status.is_ok(),
            Cause::Other,
            match &self.status {
                Ok(_) => "status: every entry starts this binary".to_owned(),
                Err(why) => format!("status failed: {why}"),
            },
        );
    }
}

impl fmt::Display for EofExit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EofExit::Exited(status) => write!(f, "exited ({status})"),
            EofExit::StillRunning => f.write_str("still running"),
        }
    }
}

impl fmt::Display for SmokeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let version = match &self.version {
            Ok(line) => line.clone(),
            Err(_) => "FAILED".to_owned(),
        };
        let tools = self
            .tools_listed
            .map_or_else(|| "none".to_owned(), |n| n.to_string());
        let eof = match &self.eof_exit {
            EofExit::Exited(_) => "exited",
            EofExit::StillRunning => "still running",
        };
        let wrong_token = self
            .wrong_token
            .as_ref()
            .map_or("not tried", |w| w.call.label());
        let install = match (&self.install.install, &self.install.status) {
            (Ok(_), Ok(_)) => "ok",
            _ => "failed",
        };
        write!(
            f,
            "{}: --version {version:?}, {tools} tools, call {}, after DROP {}, conns {}, on EOF {eof}, wrong token {wrong_token}, install {install}; defects {}; problems: {}",
            if self.passed() { "PASS" } else { "FAIL" },
            self.call.label(),
            self.after_drop.label(),
            self.conns_after,
            self.output.defects.len(),
            problems_text(&self.problems())
        )
    }
}

/// Runs `cmd --version` (its program, its arguments, then `--version`) and
/// returns the first line it printed, or why it failed.
fn version_line(cmd: &WrapperCommand) -> Result<String, String> {
    let output = Command::new(&cmd.program)
        .args(&cmd.args)
        .arg("--version")
        .envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", cmd.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let first = stdout.lines().next().unwrap_or_default().trim().to_owned();
    if output.status.success() && !first.is_empty() {
        Ok(first)
    } else {
        Err(format!(
            "{} (stdout {first:?}, stderr {:?})",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// The options of a wrapper dialling `daemon` as the smoke run does: on a
/// Unix socket by its path; over TCP by the socket path alone, the port
/// and token read from the files beside it.
fn options_for(daemon: &FakeDaemon, mode: Option<BridgeMode>) -> WrapperOptions {
    let opts = match daemon.endpoint() {
        crate::daemon::DaemonEndpoint::Unix(_) => WrapperOptions::for_daemon(daemon),
        crate::daemon::DaemonEndpoint::Tcp { .. } => {
            WrapperOptions::new(daemon.socket_path()).env("IAI_DAEMON_TRANSPORT", "tcp")
        }
    };
    WrapperOptions { mode, ..opts }.env("IAI_MCP_LOG", "info")
}

/// Runs the smoke run once against the wrapper started by `cmd`.
pub fn run_smoke(cmd: &WrapperCommand, cfg: &SmokeConfig) -> Result<SmokeReport, HarnessError> {
    let version = version_line(cmd);
    let mode = cfg.setup.mode;
    let mut session = LiveSession::start_with(cmd, &cfg.setup, |d| options_for(d, mode))?;
    let bound = cfg.reply_bound;

    let listed = session.wrapper.request("tools/list", json!({}), bound);
    let tools_listed = listed
        .ok()
        .and_then(|r| r["result"]["tools"].as_array().map(Vec::len));
    let call = session.call(PROBE_TOOL, json!({}), bound).outcome;
    session.daemon.drop_connections()?;
    let after_drop = session.call(PROBE_TOOL, json!({}), bound).outcome;
    let conns_after = session.daemon.stats()?.conns;

    let defects = session.wrapper.defects();
    session.wrapper.close_stdin();
    let eof_exit = match session.wrapper.wait_exit(bound) {
        Ok(status) => EofExit::Exited(status.to_string()),
        Err(_) => EofExit::StillRunning,
    };
    let wrong_token = match cfg.setup.transport {
        Transport::Tcp => Some(wrong_token(cmd, &session.daemon, mode, bound)?),
        Transport::Unix => None,
    };
    let install = install(cmd, &cfg.profile, bound)?;
    let mut report = SmokeReport {
        mode: cfg.setup.mode,
        version,
        tools_listed,
        call,
        after_drop,
        conns_after,
        eof_exit,
        wrong_token,
        install,
        output: WrapperOutput {
            defects,
            wrapper_stderr_tail: None,
        },
    };
    if !report.passed() {
        report.output.wrapper_stderr_tail = Some(session.stderr_tail());
    }
    let _ = session.daemon.quit();
    Ok(report)
}

/// A wrapper dialling `daemon` with a token file of its own that holds
/// the wrong token: one call, then `tools/list`, then end of stdin.
fn wrong_token(
    cmd: &WrapperCommand,
    daemon: &FakeDaemon,
    mode: Option<BridgeMode>,
    bound: Duration,
) -> Result<WrongToken, HarnessError> {
    let dir = short_tempdir()?;
    let token_file = dir.path().join("wrong.token");
    let written = std::fs::write(&token_file, "0123456789abcdef0123456789abcdef\n");
    // Mode bits are Unix's; on Windows the file is private by its
    // directory, the user's own.
    #[cfg(unix)]
    let written = written.and_then(|()| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600))
    });
    written.map_err(|e| HarnessError::io(format!("writing {}", token_file.display()), e))?;
    let opts = options_for(daemon, mode)
        .env("IAI_DAEMON_TOKEN_PATH", &token_file)
        .env(
            "IAI_MCP_CONNECT_WAIT_MS",
            WRONG_TOKEN_CONNECT_WAIT.as_millis().to_string(),
        );
    let mut wrapper = WrapperProcess::spawn(cmd, &opts)?;
    let call = match wrapper.initialize(PROTOCOL_VERSION) {
        Ok(_) => CallOutcome::from_client(wrapper.call_tool(PROBE_TOOL, json!({}), bound)),
        Err(e) => CallOutcome::WrapperGone(devkit::bins::error_chain(&e)),
    };
    let answered_after = wrapper
        .request("tools/list", json!({}), bound)
        .is_ok_and(|r| r["result"]["tools"].is_array());
    wrapper.close_stdin();
    let eof_exit = match wrapper.wait_exit(bound) {
        Ok(status) => EofExit::Exited(status.to_string()),
        Err(_) => EofExit::StillRunning,
    };
    Ok(WrongToken {
        token_file: token_file.display().to_string(),
        call,
        answered_after,
        eof_exit,
    })
}

/// Lays out the scratch profile, runs `install`, then `status`, there.
fn install(
    cmd: &WrapperCommand,
    profile: &ScratchProfile,
    bound: Duration,
) -> Result<InstallRun, HarnessError> {
    let temporary = match &profile.dir {
        Some(_) => None,
        None => Some(short_tempdir()?),
    };
    let dir = match (&profile.dir, &temporary) {
        (Some(dir), _) => dir.clone(),
        (None, Some(temporary)) => temporary.path().to_path_buf(),
        (None, None) => unreachable!("a temporary directory is made when none is given"),
    };
    let layout = profile.layout;
    let files = lay_out(&dir, layout)?;
    let desktop = layout.claude_desktop();
    let shown = layout.shown(desktop);
    let install = run_in_profile(cmd, &dir, "install", bound);
    let named = install.as_ref().is_ok_and(|out| out.contains(&shown));
    let switched = files.iter().filter(|f| starts_the_wrapper(f)).count();
    let status = run_in_profile(cmd, &dir, "status", bound);
    Ok(InstallRun {
        layout,
        install,
        named,
        shown,
        switched,
        files: files.len(),
        status,
    })
}

/// Writes Claude Code's and Claude Desktop's files under `dir`, each with
/// the entry iai-mcp's installer writes (its Node wrapper); returns them.
fn lay_out(dir: &Path, layout: ProfileLayout) -> Result<Vec<PathBuf>, HarnessError> {
    let entry = json!({"mcpServers": {"iai-mcp": {
        "command": "node",
        "args": [layout.node_script()],
        "env": {"IAI_MCP_STORE": "~/.iai-mcp"}
    }}});
    let files = [
        dir.join(".claude.json"),
        layout
            .claude_desktop()
            .iter()
            .fold(dir.to_path_buf(), |path, part| path.join(part)),
    ];
    for file in &files {
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| HarnessError::io(format!("creating {}", parent.display()), e))?;
        }
        std::fs::write(file, format!("{entry:#}\n"))
            .map_err(|e| HarnessError::io(format!("writing {}", file.display()), e))?;
    }
    Ok(files.to_vec())
}

/// Whether the iai-mcp entry of the host file `path` starts an
/// `iai-mcp-wrapper` (any directory, `.exe` or not) with no arguments.
fn starts_the_wrapper(path: &Path) -> bool {
    let Some(entry) = std::fs::read_to_string(path)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .map(|doc| doc["mcpServers"]["iai-mcp"].clone())
    else {
        return false;
    };
    let program = entry["command"].as_str().unwrap_or_default();
    let name = program.rsplit(['/', '\\']).next().unwrap_or_default();
    let no_args = entry["args"].as_array().is_none_or(Vec::is_empty);
    (name == "iai-mcp-wrapper" || name == "iai-mcp-wrapper.exe") && no_args
}

/// Runs `cmd SUBCOMMAND` with the profile `dir` (as `HOME` and
/// `USERPROFILE`, nothing else of the hosts' variables), killed at
/// `bound`; its standard output when it exits 0, else why not.
fn run_in_profile(
    cmd: &WrapperCommand,
    dir: &Path,
    subcommand: &str,
    bound: Duration,
) -> Result<String, String> {
    let mut command = Command::new(&cmd.program);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("IAI_") {
            command.env_remove(&key);
        }
    }
    for key in ["APPDATA", "XDG_CONFIG_HOME", "CODEX_HOME"] {
        command.env_remove(key);
    }
    command
        .args(&cmd.args)
        .arg(subcommand)
        .envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .env("HOME", dir)
        .env("USERPROFILE", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = ChildGuard::spawn(&mut command)
        .map_err(|e| format!("cannot run {} {subcommand}: {e}", cmd.display()))?;
    let stdout = CapturedOutput::spawn(
        child.child_mut().stdout.take().expect("stdout is piped"),
        subcommand,
    );
    let stderr = CapturedOutput::spawn(
        child.child_mut().stderr.take().expect("stderr is piped"),
        subcommand,
    );
    let status = child
        .wait_exit(bound)
        .map_err(|e| format!("{subcommand}: {e}"))?;
    stdout.wait_eof(bound);
    stderr.wait_eof(bound);
    if status.success() {
        Ok(stdout.text())
    } else {
        Err(format!(
            "{subcommand}: {status}; stdout {:?}; stderr {:?}",
            stdout.text().trim(),
            stderr.text().trim()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::live::assert_each_breaks_once;

    fn clean_report() -> SmokeReport {
        SmokeReport {
            mode: None,
            version: Ok("iai-mcp-wrapper 1.0.0".to_owned()),
            tools_listed: Some(TOOL_COUNT),
            call: CallOutcome::Ok,
            after_drop: CallOutcome::Ok,
            conns_after: 1,
            eof_exit: EofExit::Exited("exit status: 0".to_owned()),
            wrong_token: Some(WrongToken {
                token_file: "/tmp/w/wrong.token".to_owned(),
                call: CallOutcome::ToolError(
                    "error: daemon_unreachable: no connection (last error: token refused, /tmp/w/wrong.token) (code -32002)".to_owned(),
                ),
                answered_after: true,
                eof_exit: EofExit::Exited("exit status: 0".to_owned()),
            }),
            install: InstallRun {
                layout: ProfileLayout::Windows,
                install: Ok("claude-desktop ~\\AppData\\Roaming\\Claude\\claude_desktop_config.json".to_owned()),
                named: true,
                shown: ProfileLayout::Windows.shown(ProfileLayout::Windows.claude_desktop()),
                switched: 2,
                files: 2,
                status: Ok(String::new()),
            },
            output: WrapperOutput::default(),
        }
    }

    #[test]
    fn passes_only_when_every_step_held() {
        let report = clean_report();
        assert!(report.passed(), "{report}");
        assert!(
            report
                .to_string()
                .starts_with("PASS: --version \"iai-mcp-wrapper 1.0.0\", 15 tools, call ok")
        );
        let breakages: [fn(&mut SmokeReport); 14] = [
            |r| r.version = Err("exit status: 1".to_owned()),
            |r| r.tools_listed = Some(14),
            |r| r.call = CallOutcome::NoResponse,
            |r| r.after_drop = CallOutcome::NoResponse,
            |r| r.conns_after = 0,
            |r| r.eof_exit = EofExit::StillRunning,
            |r| r.output.defects.push("x".into()),
            |r| {
                if let Some(w) = r.wrong_token.as_mut() {
                    w.call =
                        CallOutcome::ToolError("error: daemon_timeout: /tmp/w/wrong.token".into());
                }
            },
            |r| {
                if let Some(w) = r.wrong_token.as_mut() {
                    w.token_file = "/elsewhere.token".into();
                }
            },
            |r| {
                if let Some(w) = r.wrong_token.as_mut() {
                    w.answered_after = false;
                }
            },
            |r| {
                if let Some(w) = r.wrong_token.as_mut() {
                    w.eof_exit = EofExit::StillRunning;
                }
            },
            |r| r.install.named = false,
            |r| r.install.switched = 1,
            |r| r.install.status = Err("exit status: 1".into()),
        ];
        assert_each_breaks_once(clean_report, breakages);
    }

    /// Every check of `report`, one line each: property, failure, figure.
    fn check_lines(report: &SmokeReport) -> String {
        let lines = report
            .checks()
            .into_iter()
            .map(|c| format!("{:?} {:?} {}", c.prop, c.failure, c.figure));
        lines.collect::<Vec<_>>().join("\n")
    }

    #[test]
    fn checks_read_the_same_whatever_held() {
        assert_eq!(
            check_lines(&clean_report()),
            r#"AnsweredOnce None --version: iai-mcp-wrapper 1.0.0
AnsweredOnce None tools/list named 15 tools (expected 15)
AnsweredOnce None a tool call: ok
ReconnectCall None the call after DROP: ok
OneConnection None 1 daemon connection(s) after the drop
ExitsOnEof None exited on stdin EOF (exit status: 0)
ConnectWait None a wrong token: tool_error (error: daemon_unreachable: no connection (last error: token refused, /tmp/w/wrong.token) (code -32002))
NamedSocket None the wrong token's failure names /tmp/w/wrong.token
StaysUp None tools/list answered after the wrong token's failure: true
ExitsOnEof None the wrong-token wrapper on stdin EOF: exited (exit status: 0)
AnsweredOnce None install in a Windows profile named ~\AppData\Roaming\Claude\claude_desktop_config.json
AnsweredOnce None 2 of 2 host entries start iai-mcp-wrapper after install
AnsweredOnce None status: every entry starts this binary
StdoutJson None no stdout defects"#
        );
        let mut broken = clean_report();
        broken.version = Err("exit status: 1".to_owned());
        broken.tools_listed = None;
        broken.call = CallOutcome::NoResponse;
        broken.eof_exit = EofExit::StillRunning;
        if let Some(w) = broken.wrong_token.as_mut() {
            w.answered_after = false;
            w.eof_exit = EofExit::StillRunning;
        }
        broken.install.install = Err("exit status: 2".to_owned());
        broken.install.status = Err("exit status: 1".to_owned());
        assert_eq!(
            check_lines(&broken),
            r#"AnsweredOnce Some(Other) --version failed: exit status: 1
AnsweredOnce Some(Other) tools/list got no valid answer
AnsweredOnce Some(NoAnswer) a tool call: no_response
ReconnectCall None the call after DROP: ok
OneConnection None 1 daemon connection(s) after the drop
ExitsOnEof Some(Other) still running after stdin closed
ConnectWait None a wrong token: tool_error (error: daemon_unreachable: no connection (last error: token refused, /tmp/w/wrong.token) (code -32002))
NamedSocket None the wrong token's failure names /tmp/w/wrong.token
StaysUp Some(Died) tools/list answered after the wrong token's failure: false
ExitsOnEof Some(Other) the wrong-token wrapper on stdin EOF: still running
AnsweredOnce Some(Other) install failed: exit status: 2
AnsweredOnce None 2 of 2 host entries start iai-mcp-wrapper after install
AnsweredOnce Some(Other) status failed: exit status: 1
StdoutJson None no stdout defects"#
        );
        broken.install.install = Ok(String::new());
        broken.install.named = false;
        broken.wrong_token = None;
        assert_eq!(
            check_lines(&broken),
            r#"AnsweredOnce Some(Other) --version failed: exit status: 1
AnsweredOnce Some(Other) tools/list got no valid answer
AnsweredOnce Some(NoAnswer) a tool call: no_response
ReconnectCall None the call after DROP: ok
OneConnection None 1 daemon connection(s) after the drop
ExitsOnEof Some(Other) still running after stdin closed
AnsweredOnce Some(Other) install's output does not name ~\AppData\Roaming\Claude\claude_desktop_config.json
AnsweredOnce None 2 of 2 host entries start iai-mcp-wrapper after install
AnsweredOnce Some(Other) status failed: exit status: 1
StdoutJson None no stdout defects"#
        );
    }

    #[test]
    fn each_layout_shows_claude_desktop_as_its_users_write_it() {
        let shown = |layout: ProfileLayout| layout.shown(layout.claude_desktop());
        assert_eq!(
            shown(ProfileLayout::Windows),
            r"~\AppData\Roaming\Claude\claude_desktop_config.json"
        );
        assert_eq!(
            shown(ProfileLayout::Unix),
            "~/.config/Claude/claude_desktop_config.json"
        );
    }

    #[test]
    fn only_an_argument_free_wrapper_entry_counts_as_switched() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("f.json");
        let with = |command: &str, args: Value| {
            let doc = json!({"mcpServers": {"iai-mcp": {"command": command, "args": args}}});
            std::fs::write(&file, doc.to_string()).expect("write");
            starts_the_wrapper(&file)
        };
        assert!(with(r"Z:\t\run\iai-mcp-wrapper.exe", json!([])));
        assert!(with("/venv/bin/iai-mcp-wrapper", json!([])));
        assert!(!with("/venv/bin/iai-mcp-wrapper", json!(["x"])));
        assert!(!with("node", json!(["/x/index.js"])));
    }
}
