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

/// The files 3.3.0's installer writes a memory-server entry into, given
/// their hosts' directories.
const HOST_FILES: [&str; 3] = [
    ".claude.json",
    ".config/Claude/claude_desktop_config.json",
    ".openclaw/openclaw.json",
];

impl Kit<'_> {
    /// The install, status, SDK and uninstall round over the real
    /// installer's output.
    pub fn host_switch(&self, real: &RealDaemon) -> Row {
        let check = "install/uninstall over `iai-mcp capture-hooks install`";
        Row::outcome(check, self.switch_hosts(real), |detail| (true, detail))
    }

    fn switch_hosts(&self, real: &RealDaemon) -> Result<String, HarnessError> {
        let home = real.scratch().join("host-home");
        for dir in [".config/Claude", ".openclaw", ".codex"] {
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
            HOST_FILES
                .iter()
                .map(|f| {
                    std::fs::read_to_string(home.join(f))
                        .map_err(|e| HarnessError::io(format!("reading ~/{f}"), e))
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
        let changed: Vec<&str> = HOST_FILES
            .iter()
            .zip(restored.iter().zip(&installed_by_iai_mcp))
            .filter(|(_, (now, then))| now != then)
            .map(|(f, _)| *f)
            .collect();
        // `install` names the binary by the path it was run as: a wheel's
        // binary in the environment's bin/, beside `iai` and `iai-mcp`.
        let names_this_binary = argv.first().map(PathBuf::from).as_deref() == Some(self.wrapper);
        if switched != HOST_FILES.len()
            || !names_this_binary
            || listed.is_empty()
            || !changed.is_empty()
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

    /// The daemon's environment with the scratch HOME, and a PATH with the
    /// iai-mcp programs and Node (OpenClaw's installer wants `node`).
    fn host_env(&self, real: &RealDaemon, home: &Path) -> Vec<(OsString, OsString)> {
        let mut path = vec![self.py.bin()];
        path.extend(self.node.parent().map(Path::to_owned));
        let inherited = std::env::var_os("PATH").unwrap_or_default();
        path.extend(std::env::split_paths(&inherited));
        let mut env: Vec<(OsString, OsString)> = real
            .env()
            .iter()
            .filter(|(k, _)| k != "HOME" && k != "PATH")
            .cloned()
            .collect();
        let path = std::env::join_paths(path).unwrap_or_default();
        env.extend([("HOME".into(), home.into()), ("PATH".into(), path)]);
        env
    }
}
