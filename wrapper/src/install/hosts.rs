//! The MCP hosts whose configuration files iai-mcp's installer writes (or
//! that docs/hosts.md documents), where those files are, and where in them an
//! iai-mcp entry sits.

use std::path::{Path, PathBuf};

use super::doc::Format;

/// An MCP host this command knows how to edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Host {
    /// Claude Code: `~/.claude.json`, user and per-project servers.
    ClaudeCode,
    /// Claude Desktop: `claude_desktop_config.json` in its config directory.
    ClaudeDesktop,
    /// Codex CLI: `$CODEX_HOME/config.toml` (default `~/.codex`).
    Codex,
    /// Cursor: `~/.cursor/mcp.json`.
    Cursor,
    /// OpenClaw: `~/.openclaw/openclaw.json`.
    Openclaw,
    /// opencode: `~/.config/opencode/opencode.json`.
    Opencode,
}

/// The server names an iai-mcp entry goes by: `iai-mcp` everywhere, and
/// `iai-pme` where iai-mcp 3.3.0 registers it in OpenClaw.
pub const SERVER_NAMES: [&str; 2] = ["iai-mcp", "iai-pme"];

/// Where host files live on this machine, from `$HOME` and the variables
/// the hosts (and iai-mcp's installer) honour.
#[derive(Debug, Clone)]
pub struct Places {
    home: PathBuf,
    config: PathBuf,
    codex: PathBuf,
    openclaw: PathBuf,
}

impl Places {
    /// Places under `home`, with `XDG_CONFIG_HOME`, `CODEX_HOME` (or
    /// iai-mcp's `IAI_MCP_CODEX_HOME`) and `IAI_MCP_OPENCLAW_HOME` applied.
    pub fn from_env(home: &Path) -> Self {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        Places {
            home: home.to_owned(),
            config: var("XDG_CONFIG_HOME").unwrap_or_else(|| home.join(".config")),
            codex: var("IAI_MCP_CODEX_HOME")
                .or_else(|| var("CODEX_HOME"))
                .unwrap_or_else(|| home.join(".codex")),
            openclaw: var("IAI_MCP_OPENCLAW_HOME").unwrap_or_else(|| home.join(".openclaw")),
        }
    }

    /// `path` with the home directory written as `~`, for messages.
    pub fn show(&self, path: &Path) -> String {
        match path.strip_prefix(&self.home) {
            Ok(rest) => format!("~/{}", rest.display()),
            Err(_) => path.display().to_string(),
        }
    }
}

impl Host {
    /// Every host, in the order reports list them.
    pub const ALL: [Host; 6] = [
        Host::ClaudeCode,
        Host::ClaudeDesktop,
        Host::Codex,
        Host::Cursor,
        Host::Openclaw,
        Host::Opencode,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Host::ClaudeCode => "claude-code",
            Host::ClaudeDesktop => "claude-desktop",
            Host::Codex => "codex",
            Host::Cursor => "cursor",
            Host::Openclaw => "openclaw",
            Host::Opencode => "opencode",
        }
    }

    /// The host's configuration file.
    pub fn config_file(self, places: &Places) -> PathBuf {
        match self {
            Host::ClaudeCode => places.home.join(".claude.json"),
            Host::ClaudeDesktop if cfg!(target_os = "macos") => places
                .home
                .join("Library/Application Support/Claude/claude_desktop_config.json"),
            Host::ClaudeDesktop => places.config.join("Claude/claude_desktop_config.json"),
            Host::Codex => places.codex.join("config.toml"),
            Host::Cursor => places.home.join(".cursor/mcp.json"),
            Host::Openclaw => places.openclaw.join("openclaw.json"),
            Host::Opencode => places.config.join("opencode/opencode.json"),
        }
    }

    /// The file's syntax.
    pub fn format(self) -> Format {
        match self {
            Host::Codex => Format::Toml,
            Host::Opencode => Format::Jsonc,
            _ => Format::Json,
        }
    }

    /// The maps that hold MCP servers, as key paths from the top of the
    /// file (`*` stands for any key); entries are looked up in them by
    /// [`SERVER_NAMES`].
    pub fn server_maps(self) -> &'static [&'static [&'static str]] {
        match self {
            Host::ClaudeCode => &[&["mcpServers"], &["projects", "*", "mcpServers"]],
            Host::ClaudeDesktop | Host::Cursor => &[&["mcpServers"]],
            Host::Codex => &[&["mcp_servers"]],
            Host::Openclaw => &[&["mcp", "servers"]],
            // opencode's own layout, and the nested one of newer releases.
            Host::Opencode => &[&["mcp"], &["mcp", "servers"]],
        }
    }
}
