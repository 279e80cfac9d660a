//! The three hosts the kit drives: which npm package each is, the pinned
//! versions (the one place to move them), how each is configured in a
//! scratch home, how it is started non-interactively against the
//! stand-in model API, and how it names the server's tools to the model.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use super::standin::{Api, ModelTool};

/// The name the server is registered under in every host.
pub const SERVER: &str = "iai-mcp";

/// An MCP host driven by the kit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Host {
    /// Claude Code (`claude -p`).
    ClaudeCode,
    /// Codex CLI (`codex exec`).
    Codex,
    /// opencode (`opencode run`).
    Opencode,
}

impl Host {
    /// Every host, in the report's order.
    pub const ALL: [Host; 3] = [Host::ClaudeCode, Host::Codex, Host::Opencode];

    /// The versions the kit installs unless told otherwise: the ones last
    /// checked by hand and by the kit. Move a host by changing its line.
    pub fn pinned(self) -> &'static str {
        match self {
            Host::ClaudeCode => "2.1.332",
            Host::Codex => "0.171.0",
            Host::Opencode => "1.18.33",
        }
    }

    /// The host's name on the command line (`--host-version NAME=...`),
    /// the same as `iai-mcp-wrapper install --host NAME` uses.
    pub fn name(self) -> &'static str {
        match self {
            Host::ClaudeCode => "claude-code",
            Host::Codex => "codex",
            Host::Opencode => "opencode",
        }
    }

    /// The package on the npm registry.
    pub fn package(self) -> &'static str {
        match self {
            Host::ClaudeCode => "@anthropic-ai/claude-code",
            Host::Codex => "@openai/codex",
            Host::Opencode => "opencode-ai",
        }
    }

    /// The program the package installs in `node_modules/.bin`.
    pub fn program(self) -> &'static str {
        match self {
            Host::ClaudeCode => "claude",
            Host::Codex => "codex",
            Host::Opencode => "opencode",
        }
    }

    /// The model API the host calls.
    pub fn api(self) -> Api {
        match self {
            Host::ClaudeCode | Host::Opencode => Api::Messages,
            Host::Codex => Api::Responses,
        }
    }

    /// How the host names the server's tool `tool` to the model.
    pub fn model_tool(self, tool: &str) -> ModelTool {
        match self {
            Host::ClaudeCode => ModelTool::flat(format!("mcp__{SERVER}__{tool}")),
            Host::Codex => ModelTool {
                namespace: Some(format!("mcp__{}", SERVER.replace('-', "_"))),
                name: tool.to_owned(),
            },
            Host::Opencode => ModelTool::flat(format!("{SERVER}_{tool}")),
        }
    }

    /// The word the host's own `mcp list` shows for a server it can use:
    /// Claude Code and opencode connect at once ("connected"); Codex only
    /// says the server is "enabled".
    pub fn listed_as_usable(self) -> &'static str {
        match self {
            Host::ClaudeCode | Host::Opencode => "connected",
            Host::Codex => "enabled",
        }
    }

    /// Whether `tool` is one of the server's tools as any host names it.
    pub fn is_server_tool(tool: &ModelTool) -> bool {
        Host::ALL.iter().any(|host| {
            let ours = host.model_tool("");
            match (&tool.namespace, &ours.namespace) {
                (Some(namespace), Some(expected)) => namespace == expected,
                (None, None) => tool.name.starts_with(&ours.name),
                _ => false,
            }
        })
    }

    /// The environment of every run of the host: its scratch home, the
    /// stand-in's address, and every documented switch that turns off
    /// telemetry, update checks and other traffic.
    pub fn env(self, home: &Path, model_url: &str) -> Vec<(OsString, OsString)> {
        let mut env: Vec<(OsString, OsString)> = vec![
            ("HOME".into(), home.into()),
            ("XDG_CONFIG_HOME".into(), home.join(".config").into()),
            ("XDG_CACHE_HOME".into(), home.join(".cache").into()),
            ("XDG_DATA_HOME".into(), home.join(".local/share").into()),
            ("XDG_STATE_HOME".into(), home.join(".local/state").into()),
            ("TMPDIR".into(), home.join("tmp").into()),
            // The host runs in a directory under target/: no repository
            // above it is its business.
            (
                "GIT_CEILING_DIRECTORIES".into(),
                home.parent().unwrap_or(home).into(),
            ),
            ("NO_COLOR".into(), "1".into()),
        ];
        let own: &[(&str, String)] = match self {
            Host::ClaudeCode => &[
                ("ANTHROPIC_BASE_URL", model_url.to_owned()),
                ("ANTHROPIC_API_KEY", "sk-stand-in".to_owned()),
                ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_owned()),
                ("DISABLE_TELEMETRY", "1".to_owned()),
                ("DISABLE_AUTOUPDATER", "1".to_owned()),
                ("DISABLE_ERROR_REPORTING", "1".to_owned()),
                ("DISABLE_BUG_COMMAND", "1".to_owned()),
                // Offer the server's tools up front instead of behind the
                // tool-search tool, so that the request shows them.
                ("ENABLE_TOOL_SEARCH", "false".to_owned()),
            ],
            Host::Codex => &[("CODEX_HOME", home.join(".codex").display().to_string())],
            Host::Opencode => &[
                ("OPENCODE_DISABLE_AUTOUPDATE", "true".to_owned()),
                ("OPENCODE_DISABLE_MODELS_FETCH", "true".to_owned()),
                ("OPENCODE_DISABLE_DEFAULT_PLUGINS", "true".to_owned()),
                ("OPENCODE_DISABLE_LSP_DOWNLOAD", "true".to_owned()),
                ("OPENCODE_DISABLE_SHARE", "true".to_owned()),
                ("OPENCODE_DISABLE_CLAUDE_CODE", "true".to_owned()),
            ],
        };
        env.extend(
            own.iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v))),
        );
        env
    }

    /// The arguments of one non-interactive run with `prompt`.
    pub fn run_args(self, prompt: &str) -> Vec<String> {
        let args: &[&str] = match self {
            Host::ClaudeCode => &[
                "-p",
                prompt,
                "--output-format",
                "stream-json",
                "--verbose",
                "--allowedTools",
                "mcp__iai-mcp",
            ],
            Host::Codex => &["exec", "--json", "--skip-git-repo-check", prompt],
            Host::Opencode => &["run", "--format", "json", prompt],
        };
        args.iter().map(|a| (*a).to_owned()).collect()
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for Host {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Host::ALL
            .into_iter()
            .find(|h| h.name() == s || h.program() == s)
            .ok_or_else(|| format!("unknown host {s:?} (claude-code, codex, opencode)"))
    }
}

/// Which version of a host to install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostVersion {
    /// This exact version.
    Exact(String),
    /// Whatever the registry calls `latest` today.
    Latest,
}

impl fmt::Display for HostVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostVersion::Exact(v) => f.pad(v),
            HostVersion::Latest => f.pad("latest"),
        }
    }
}

/// `--host-version NAME=VERSION`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPin {
    /// The host.
    pub host: Host,
    /// Its version.
    pub version: HostVersion,
}

impl FromStr for HostPin {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, version) = s
            .split_once('=')
            .ok_or_else(|| format!("{s:?} is not NAME=VERSION"))?;
        let host = name.parse()?;
        let ok = |c: char| c.is_ascii_alphanumeric() || ".-+".contains(c);
        let version = match version {
            "latest" => HostVersion::Latest,
            v if !v.is_empty() && v.chars().all(ok) => HostVersion::Exact(v.to_owned()),
            v => return Err(format!("{v:?} is not a version (e.g. 1.2.3, or latest)")),
        };
        Ok(HostPin { host, version })
    }
}

/// Where a host's configuration lives in a scratch `home`.
pub fn config_file(host: Host, home: &Path) -> PathBuf {
    match host {
        Host::ClaudeCode => home.join(".claude.json"),
        Host::Codex => home.join(".codex/config.toml"),
        Host::Opencode => home.join(".config/opencode/opencode.json"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_parse_and_bad_ones_are_named() {
        let pin: HostPin = "codex=0.170.0".parse().expect("pin");
        assert_eq!(pin.version, HostVersion::Exact("0.170.0".into()));
        let pin: HostPin = "claude-code=latest".parse().expect("pin");
        assert_eq!(
            (pin.host, pin.version),
            (Host::ClaudeCode, HostVersion::Latest)
        );
        assert!(
            "cursor=1.0"
                .parse::<HostPin>()
                .unwrap_err()
                .contains("unknown host")
        );
        assert!(
            "opencode=1.0;rm"
                .parse::<HostPin>()
                .unwrap_err()
                .contains("not a version")
        );
        assert!("opencode".parse::<HostPin>().is_err());
    }

    #[test]
    fn each_host_names_tools_its_own_way() {
        assert_eq!(
            Host::ClaudeCode.model_tool("topology").name,
            "mcp__iai-mcp__topology"
        );
        assert_eq!(
            Host::Opencode.model_tool("topology").name,
            "iai-mcp_topology"
        );
        let codex = Host::Codex.model_tool("topology");
        assert_eq!(codex.namespace.as_deref(), Some("mcp__iai_mcp"));
        for host in Host::ALL {
            assert!(Host::is_server_tool(&host.model_tool("topology")));
        }
        assert!(!Host::is_server_tool(&ModelTool::flat("bash")));
    }
}
