//! Switching an installation made by iai-mcp 3.3.0's own installer:
//! `iai-mcp capture-hooks install` into a scratch HOME where the hosts'
//! directories exist, then `iai-mcp-wrapper install`, the official SDK
//! starting the command Claude Code's entry now names, and `uninstall`
//! giving every file its bytes back.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use devkit::command::run_within;
use devkit::rows::Row;
use harness::error::HarnessError;
use serde_json::Value;

use super::checks::Kit;
use super::daemon::{CLI_LIMIT, RealDaemon};

/// Claude Desktop's directory under the home, where 3.3.0's installer
/// looks for it on this system (on Windows `%APPDATA%\Claude`, with
/// `APPDATA` set to the home's `AppData/Roaming` by [`Kit::host_env`]).
const CLAUDE_DESKTOP_DIR: &str = if cfg!(target_os = "macos") {
    "Library/Application Support/Claude"
} else if cfg!(windows) {
    "AppData/Roaming/Claude"
} else {
    ".config/Claude"
};

/// The directories of the hosts the installer writes to, created in the
/// scratch home so that it finds them.
const HOST_DIRS: [&str; 3] = [CLAUDE_DESKTOP_DIR, ".openclaw", ".codex"];

/// The files 3.3.0's installer writes a memory-server entry into, given
/// their hosts' directories, relative to the home.
fn host_files() -> [PathBuf; 3] {
    [
        PathBuf::from(".claude.json"),
        Path::new(CLAUDE_DESKTOP_DIR).join("claude_desktop_config.json"),
        Path::new(".openclaw").join("openclaw.json"),
    ]
}

impl Kit<'_> {
    /// The install, status, SDK and uninstall round over the real
    /// installer's output.
    pub fn host_switch(&self, real: &RealDaemon) -> Row {
        let check = "install/uninstall over `iai-mcp capture-hooks install`";
        Row::outcome(check, self.switch_hosts(real), |detail| (true, detail))
    }

    fn switch_hosts(&self, real: &RealDaemon) -> Result<String, HarnessError> {
        let home = real.scratch().join("host-home");
        for dir in HOST_DIRS {
            std::fs::create_dir_all(home.join(dir))
                .map_err(|e| HarnessError::io("creating the hosts' directories", e))?;
        }
        std::fs::write(home.join(".claude.json"), "{}\n")
            .map_err(|e| HarnessError::io("writing ~/.claude.json", e))?;
        let env = self.host_env(real, &home);
        let host_run = |program: &Path, args: &[&str]| {
            let mut command = Command::new(program);
            command.args(args).env_remove("XDG_CONFIG_HOME");
            let what = format!("`{} {}`", program.display(), args.join(" "));
            run_within(command.envs(env.iter().cloned()), &what, CLI_LIMIT)
        };
        let iai_mcp = self.py.program("iai-mcp");
        host_run(&iai_mcp, &["capture-hooks", "install", "--target", "all"])?;
        let read_all = || -> Result<Vec<String>, HarnessError> {
            host_files()
                .iter()
                .map(|f| {
                    std::fs::read_to_string(home.join(f))
                        .map_err(|e| HarnessError::io(format!("reading ~/{}", f.display()), e))
                })
                .collect()
        };
        let installed_by_iai_mcp = read_all()?;
        host_run(self.wrapper, &["install"])?;
        let status = host_run(self.wrapper, &["status"])?;
        let switched = status.matches(": this wrapper").count();
        let claude: Value = serde_json::from_str(&read_all()?[0])
            .map_err(|e| HarnessError::Scenario(format!("~/.claude.json: {e}")))?;
        let entry = &claude["mcpServers"]["iai-mcp"];
        let argv: Vec<OsString> = std::iter::once(&entry["command"])
            .chain(entry["args"].as_array().into_iter().flatten())
            .filter_map(|v| v.as_str().map(OsString::from))
            .collect();
        let mut sdk_env = env.clone();
        for (k, v) in entry["env"].as_object().into_iter().flatten() {
            if let Some(v) = v.as_str() {
                sdk_env.push((k.into(), v.into()));
            }
        }
        let (_, listed) = self.sdk_with(real, "list", &argv, sdk_env)?;
        host_run(self.wrapper, &["uninstall"])?;
        let restored = read_all()?;
        let files = host_files();
        let changed: Vec<String> = files
            .iter()
            .zip(restored.iter().zip(&installed_by_iai_mcp))
            .filter(|(_, (now, then))| now != then)
            .map(|(f, _)| f.display().to_string())
            .collect();
        // `install` names the binary by the path it was run as: a wheel's
        // binary in the environment's bin/, beside `iai` and `iai-mcp`.
        let names_this_binary = argv.first().map(PathBuf::from).as_deref() == Some(self.wrapper);
        if switched != files.len() || !names_this_binary || listed.is_empty() || !changed.is_empty()
        {
            return Err(HarnessError::Scenario(format!(
                "{switched} entries switched, ~/.claude.json starts {:?} (the binary tested is {:?}), {} tools listed, not restored: {changed:?}; status:\n{status}",
                argv.first()
                    .map(|a| a.to_string_lossy())
                    .unwrap_or_default(),
                self.wrapper,
                listed.len()
            )));
        }
        Ok(format!(
            "{switched} entries switched (Claude Code, Claude Desktop, OpenClaw); the SDK started {:?} from ~/.claude.json and listed {} tools; uninstall gave every file its bytes back",
            argv.first()
                .map(|a| a.to_string_lossy())
                .unwrap_or_default(),
            listed.len()
        ))
    }

    /// The daemon's environment with the scratch home (`HOME`, and on
    /// Windows `USERPROFILE` and `APPDATA` below it), and a PATH with the
    /// iai-mcp programs and Node (OpenClaw's installer wants `node`).
    fn host_env(&self, real: &RealDaemon, home: &Path) -> Vec<(OsString, OsString)> {
        let mut path = vec![self.py.bin()];
        path.extend(self.node.parent().map(Path::to_owned));
        let inherited = std::env::var_os("PATH").unwrap_or_default();
        path.extend(std::env::split_paths(&inherited));
        let mut homes: Vec<(OsString, OsString)> = vec![("HOME".into(), home.into())];
        if cfg!(windows) {
            homes.push(("USERPROFILE".into(), home.into()));
            homes.push(("APPDATA".into(), home.join("AppData/Roaming").into()));
        }
        let mut env: Vec<(OsString, OsString)> = real
            .env()
            .iter()
            .filter(|(k, _)| k != "PATH" && homes.iter().all(|(h, _)| h != k))
            .cloned()
            .collect();
        let path = std::env::join_paths(path).unwrap_or_default();
        env.extend(homes);
        env.push(("PATH".into(), path));
        env
    }
}
