//! The MCP hosts whose configuration files iai-mcp's installer writes (or
//! that docs/hosts.md documents), where those files are, and where in them an
//! iai-mcp entry sits.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::doc::Format;
use crate::platform::Platform;

/// An MCP host this command knows how to edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Host {
    /// Claude Code: `~/.claude.json`, user and per-project servers.
    ClaudeCode,
    /// Claude Desktop: `claude_desktop_config.json` in its directory, which
    /// depends on the platform ([`Places::resolve`]).
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

/// Where host files live, from the home directory, the platform and the
/// variables the hosts (and iai-mcp's installer) honour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Places {
    platform: Platform,
    home: PathBuf,
    /// `$XDG_CONFIG_HOME`, default `~/.config` (opencode uses it on every
    /// platform; Claude Desktop on Linux).
    config: PathBuf,
    /// Claude Desktop's directory, which depends on the platform.
    claude_desktop: PathBuf,
    codex: PathBuf,
    openclaw: PathBuf,
}

impl Places {
    /// Places under `home` for the platform this binary runs on, with this
    /// process's environment applied (see [`Places::resolve`]).
    pub fn from_env(home: &Path) -> Self {
        Places::resolve(Platform::current(), home, |name| std::env::var_os(name))
    }

    /// Places under `home` on `platform`, reading variables through `var`
    /// (an empty value counts as unset), as iai-mcp 3.3.0's installer
    /// places the files:
    ///
    /// - Claude Desktop: `~/Library/Application Support/Claude` on macOS,
    ///   `%APPDATA%\Claude` on Windows (`~\AppData\Roaming` when `APPDATA`
    ///   is unset), `$XDG_CONFIG_HOME/Claude` elsewhere (default
    ///   `~/.config`);
    /// - Codex: `IAI_MCP_CODEX_HOME`, then the host's own `CODEX_HOME`, else
    ///   `~/.codex`; OpenClaw: `IAI_MCP_OPENCLAW_HOME`, else `~/.openclaw`
    ///   (a leading `~` in iai-mcp's two variables is the home directory,
    ///   as its installer expands it);
    /// - opencode: `$XDG_CONFIG_HOME/opencode`, default `~/.config`, on
    ///   every platform (opencode reads the XDG directories on Windows and
    ///   macOS too);
    /// - Claude Code and Cursor: `~/.claude.json` and `~/.cursor`
    ///   everywhere.
    pub fn resolve(
        platform: Platform,
        home: &Path,
        var: impl Fn(&str) -> Option<OsString>,
    ) -> Self {
        let var = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let expand_home = |path: PathBuf| match path.strip_prefix("~") {
            Ok(rest) => home.join(rest),
            Err(_) => path,
        };
        let config = var("XDG_CONFIG_HOME").unwrap_or_else(|| home.join(".config"));
        let claude_desktop = match platform {
            Platform::MacOs => home
                .join("Library")
                .join("Application Support")
                .join("Claude"),
            Platform::Windows => var("APPDATA")
                .unwrap_or_else(|| home.join("AppData").join("Roaming"))
                .join("Claude"),
            Platform::Linux => config.join("Claude"),
        };
        Places {
            platform,
            home: home.to_owned(),
            claude_desktop,
            codex: var("IAI_MCP_CODEX_HOME")
                .map(expand_home)
                .or_else(|| var("CODEX_HOME"))
                .unwrap_or_else(|| home.join(".codex")),
            openclaw: var("IAI_MCP_OPENCLAW_HOME")
                .map(expand_home)
                .unwrap_or_else(|| home.join(".openclaw")),
            config,
        }
    }

    /// The platform whose conventions these places follow.
    pub fn platform(&self) -> Platform {
        self.platform
    }

    /// `path` with the home directory written as `~`, for messages, each
    /// part after it joined by the platform's separator
    /// (`~\AppData\Roaming\Claude\claude_desktop_config.json` on
    /// Windows, whichever separators the parts were joined with).
    pub fn show(&self, path: &Path) -> String {
        let Ok(rest) = path.strip_prefix(&self.home) else {
            return path.display().to_string();
        };
        let mut shown = String::from("~");
        for part in rest.components() {
            shown.push(self.platform.separator());
            shown.push_str(&part.as_os_str().to_string_lossy());
        }
        shown
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
            Host::ClaudeDesktop => places.claude_desktop.join("claude_desktop_config.json"),
            Host::Codex => places.codex.join("config.toml"),
            Host::Cursor => places.home.join(".cursor").join("mcp.json"),
            Host::Openclaw => places.openclaw.join("openclaw.json"),
            Host::Opencode => places.config.join("opencode").join("opencode.json"),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every host's file on `platform` for a user whose home is `/u`,
    /// with the variables in `vars` set.
    fn files(platform: Platform, vars: &[(&str, &str)]) -> Vec<(Host, PathBuf)> {
        let vars: Vec<(String, OsString)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
            .collect();
        let places = Places::resolve(platform, Path::new("/u"), |name| {
            vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        });
        assert_eq!(places.platform(), platform);
        Host::ALL
            .iter()
            .map(|host| (*host, host.config_file(&places)))
            .collect()
    }

    fn expected(entries: &[(Host, &str)]) -> Vec<(Host, PathBuf)> {
        entries
            .iter()
            .map(|(host, path)| (*host, PathBuf::from(path)))
            .collect()
    }

    #[test]
    fn macos_files_are_where_the_installer_writes_them() {
        assert_eq!(
            files(Platform::MacOs, &[]),
            expected(&[
                (Host::ClaudeCode, "/u/.claude.json"),
                (
                    Host::ClaudeDesktop,
                    "/u/Library/Application Support/Claude/claude_desktop_config.json"
                ),
                (Host::Codex, "/u/.codex/config.toml"),
                (Host::Cursor, "/u/.cursor/mcp.json"),
                (Host::Openclaw, "/u/.openclaw/openclaw.json"),
                (Host::Opencode, "/u/.config/opencode/opencode.json"),
            ])
        );
        // XDG_CONFIG_HOME does not move Claude Desktop on macOS.
        let moved = files(Platform::MacOs, &[("XDG_CONFIG_HOME", "/x")]);
        assert_eq!(
            moved[1].1,
            Path::new("/u/Library/Application Support/Claude/claude_desktop_config.json")
        );
        assert_eq!(moved[5].1, Path::new("/x/opencode/opencode.json"));
    }

    #[test]
    fn linux_files_are_where_the_installer_writes_them() {
        assert_eq!(
            files(Platform::Linux, &[]),
            expected(&[
                (Host::ClaudeCode, "/u/.claude.json"),
                (
                    Host::ClaudeDesktop,
                    "/u/.config/Claude/claude_desktop_config.json"
                ),
                (Host::Codex, "/u/.codex/config.toml"),
                (Host::Cursor, "/u/.cursor/mcp.json"),
                (Host::Openclaw, "/u/.openclaw/openclaw.json"),
                (Host::Opencode, "/u/.config/opencode/opencode.json"),
            ])
        );
        let moved = files(
            Platform::Linux,
            &[("XDG_CONFIG_HOME", "/x"), ("APPDATA", "/appdata")],
        );
        assert_eq!(
            moved[1].1,
            Path::new("/x/Claude/claude_desktop_config.json")
        );
        assert_eq!(moved[5].1, Path::new("/x/opencode/opencode.json"));
    }

    #[test]
    fn windows_files_are_where_the_installer_writes_them() {
        assert_eq!(
            files(Platform::Windows, &[("APPDATA", "/roaming")]),
            expected(&[
                (Host::ClaudeCode, "/u/.claude.json"),
                (
                    Host::ClaudeDesktop,
                    "/roaming/Claude/claude_desktop_config.json"
                ),
                (Host::Codex, "/u/.codex/config.toml"),
                (Host::Cursor, "/u/.cursor/mcp.json"),
                (Host::Openclaw, "/u/.openclaw/openclaw.json"),
                (Host::Opencode, "/u/.config/opencode/opencode.json"),
            ])
        );
        // Without APPDATA (or with it empty): the roaming profile under home.
        for vars in [&[][..], &[("APPDATA", "")][..]] {
            assert_eq!(
                files(Platform::Windows, vars)[1].1,
                Path::new("/u/AppData/Roaming/Claude/claude_desktop_config.json")
            );
        }
    }

    #[test]
    fn paths_are_shown_from_home_with_the_platforms_separator() {
        let places = |platform| Places::resolve(platform, Path::new("/u"), |_| None);
        let desktop = |platform| Host::ClaudeDesktop.config_file(&places(platform));
        assert_eq!(
            places(Platform::Windows).show(&desktop(Platform::Windows)),
            r"~\AppData\Roaming\Claude\claude_desktop_config.json"
        );
        assert_eq!(
            places(Platform::Windows).show(&Host::Opencode.config_file(&places(Platform::Windows))),
            r"~\.config\opencode\opencode.json"
        );
        assert_eq!(
            places(Platform::Linux).show(&desktop(Platform::Linux)),
            "~/.config/Claude/claude_desktop_config.json"
        );
        assert_eq!(
            places(Platform::MacOs).show(&desktop(Platform::MacOs)),
            "~/Library/Application Support/Claude/claude_desktop_config.json"
        );
        // Outside home: as given.
        assert_eq!(
            places(Platform::Windows).show(Path::new("/elsewhere/mcp.json")),
            "/elsewhere/mcp.json"
        );
    }

    #[test]
    fn the_installers_variables_move_codex_and_openclaw_on_every_platform() {
        for platform in [Platform::Linux, Platform::MacOs, Platform::Windows] {
            let moved = files(
                platform,
                &[
                    ("IAI_MCP_CODEX_HOME", "~/codex-home"),
                    ("CODEX_HOME", "/ignored"),
                    ("IAI_MCP_OPENCLAW_HOME", "/claw"),
                ],
            );
            assert_eq!(moved[2].1, Path::new("/u/codex-home/config.toml"));
            assert_eq!(moved[4].1, Path::new("/claw/openclaw.json"));
            let host_own = files(platform, &[("CODEX_HOME", "/c")]);
            assert_eq!(host_own[2].1, Path::new("/c/config.toml"));
        }
    }
}
