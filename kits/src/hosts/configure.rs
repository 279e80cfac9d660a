//! Configuring a host in its scratch home through its own means (Claude
//! Code's `mcp add`, Codex's `config.toml`, opencode's `opencode.json`),
//! switching the entry with `iai-mcp-wrapper install` when the subject is
//! installed over the release's own wrapper, and what the host's own
//! `mcp list` says of the server. Every command runs under the subreaper,
//! with the host's cleared environment, within [`CONFIGURE_LIMIT`].

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use devkit::format::last_lines;
use devkit::reap::{Reaped, run_within};
use harness::error::HarnessError;
use serde_json::{Value, json};

use super::host::{Host, SERVER, config_file};
use super::npm::Installed;

/// How long configuring a host through its own command, or its `mcp
/// list`, may take (`claude mcp list` starts the server to see it answer).
pub const CONFIGURE_LIMIT: Duration = Duration::from_secs(60);

/// What configuring needs to know.
#[derive(Debug)]
pub struct Configure<'a> {
    /// The host, installed.
    pub host: &'a Installed,
    /// The host's scratch home.
    pub home: &'a Path,
    /// The host's environment (cleared, then this).
    pub env: &'a [(OsString, OsString)],
    /// The subreaper every command runs under.
    pub subreaper: &'a Path,
    /// The stand-in model's base URL.
    pub url: &'a str,
    /// The command the entry ends up starting.
    pub command: &'a [OsString],
    /// The command written first, when the entry is switched by
    /// `iai-mcp-wrapper install` afterwards.
    pub install_over: Option<&'a [OsString]>,
    /// The environment the server entry carries.
    pub server_env: &'a [(OsString, OsString)],
}

impl Configure<'_> {
    /// A command of `program` under the subreaper, in the host's
    /// environment and working directory.
    fn command(&self, program: impl Into<OsString>) -> Command {
        let mut command = Reaped::command(self.subreaper, program);
        command
            .env_clear()
            .envs(self.env.iter().cloned())
            .current_dir(self.home.join("work"));
        command
    }

    /// Writes the host's configuration with its own command or file, then,
    /// for a subject installed over another command, runs `install`.
    pub fn write(&self) -> Result<(), HarnessError> {
        let host = self.host.host;
        let first = strings(self.install_over.unwrap_or(self.command));
        let server_env: Vec<(String, String)> = self
            .server_env
            .iter()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.to_string_lossy().into_owned(),
                )
            })
            .collect();
        match host {
            Host::ClaudeCode => {
                let mut add = self.command(&self.host.program);
                add.args(["mcp", "add", "--scope", "user", SERVER]);
                for (k, v) in &server_env {
                    add.arg("-e").arg(format!("{k}={v}"));
                }
                add.arg("--").args(&first);
                run_within(&mut add, "claude mcp add", CONFIGURE_LIMIT)?;
            }
            Host::Codex => write_file(
                &config_file(host, self.home),
                &codex_config(self.url, &first, &server_env),
            )?,
            Host::Opencode => write_file(
                &config_file(host, self.home),
                &opencode_config(self.url, &first, &server_env),
            )?,
        }
        if self.install_over.is_some() {
            self.install()?;
        }
        Ok(())
    }

    /// `iai-mcp-wrapper install --host NAME`, and the entry checked.
    fn install(&self) -> Result<(), HarnessError> {
        let host = self.host.host;
        let mut install = self.command(&self.command[0]);
        install.args(["install", "--host", host.name()]);
        let said = run_within(&mut install, "iai-mcp-wrapper install", CONFIGURE_LIMIT)?;
        let config = std::fs::read_to_string(config_file(host, self.home)).unwrap_or_default();
        let ours = self.command[0].to_string_lossy().into_owned();
        if config.contains(&ours) {
            return Ok(());
        }
        Err(HarnessError::Scenario(format!(
            "`iai-mcp-wrapper install --host {}` left the entry as it was: {}",
            host.name(),
            said.trim()
        )))
    }

    /// What the host's own listing command says about the server: its line.
    pub fn listing(&self) -> Result<String, HarnessError> {
        let mut list = self.command(&self.host.program);
        list.args(["mcp", "list"]);
        let what = format!("{} mcp list", self.host.host);
        let out = run_within(&mut list, &what, CONFIGURE_LIMIT)?;
        Ok(server_line(&out))
    }
}

/// The server's status in `mcp list` output: what follows the last ` - `
/// on its line (Claude Code, Codex), or the whole line (opencode).
fn server_line(out: &str) -> String {
    let plain = strip_escapes(out);
    let line = plain
        .lines()
        .find(|l| l.contains(SERVER))
        .map(|l| l.rsplit(" - ").next().unwrap_or(l))
        .map(|l| {
            l.trim_matches(|c: char| c.is_whitespace() || "│●".contains(c))
                .to_owned()
        })
        .unwrap_or_else(|| format!("no {SERVER} line in: {}", last_lines(&plain, 4, " / ")));
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Words as strings, for configuration files.
fn strings(words: &[OsString]) -> Vec<String> {
    words
        .iter()
        .map(|w| w.to_string_lossy().into_owned())
        .collect()
}

/// `text` without terminal escape sequences.
fn strip_escapes(text: &str) -> String {
    let mut plain = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for e in chars.by_ref() {
                if e.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            plain.push(c);
        }
    }
    plain
}

/// Writes `text` to `path`, creating its directory.
fn write_file(path: &Path, text: &str) -> Result<(), HarnessError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| HarnessError::io(format!("creating {}", dir.display()), e))?;
    }
    std::fs::write(path, text)
        .map_err(|e| HarnessError::io(format!("writing {}", path.display()), e))
}

/// A TOML basic string: JSON's quoting is valid TOML for these values.
fn toml_string(s: &str) -> String {
    Value::from(s).to_string()
}

/// Codex's `config.toml`: the stand-in as its model provider, analytics,
/// feedback and update checks off, and the server entry.
fn codex_config(url: &str, command: &[String], env: &[(String, String)]) -> String {
    let args: Vec<String> = command[1..].iter().map(|a| toml_string(a)).collect();
    let env: Vec<String> = env
        .iter()
        .map(|(k, v)| format!("{} = {}", toml_string(k), toml_string(v)))
        .collect();
    format!(
        "model = \"stand-in\"\nmodel_provider = \"standin\"\ncheck_for_update_on_startup = false\n\
         approval_policy = \"never\"\n\n\
         [model_providers.standin]\nname = \"stand-in\"\nbase_url = {}\nwire_api = \"responses\"\n\n\
         [analytics]\nenabled = false\n\n[feedback]\nenabled = false\n\n[otel]\nexporter = \"none\"\n\n\
         [mcp_servers.{SERVER}]\ncommand = {}\nargs = [{}]\nenv = {{ {} }}\n",
        toml_string(&format!("{url}/v1")),
        toml_string(&command[0]),
        args.join(", "),
        env.join(", ")
    )
}

/// opencode's `opencode.json`: the stand-in as the Anthropic provider's
/// address, updates and sharing off, every tool allowed, the server entry.
fn opencode_config(url: &str, command: &[String], env: &[(String, String)]) -> String {
    let environment: serde_json::Map<String, Value> =
        env.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
    let config = json!({
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": false,
        "share": "disabled",
        "model": "anthropic/claude-sonnet-4-5",
        "small_model": "anthropic/claude-sonnet-4-5",
        "provider": {"anthropic": {"options": {"baseURL": format!("{url}/v1"), "apiKey": "sk-stand-in"}}},
        "permission": {"*": "allow"},
        "mcp": {SERVER: {"type": "local", "command": command, "enabled": true, "environment": environment}}
    });
    serde_json::to_string_pretty(&config).expect("a JSON value serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_config_parses_as_toml_with_quotes_in_values() {
        let text = codex_config(
            "http://127.0.0.1:1",
            &["/a b/w\"x".to_owned(), "--flag".to_owned()],
            &[("K".to_owned(), "v\\w".to_owned())],
        );
        assert!(text.contains(r#"command = "/a b/w\"x""#), "{text}");
        assert!(text.contains(r#"env = { "K" = "v\\w" }"#), "{text}");
    }

    #[test]
    fn the_server_line_is_read_from_each_listing() {
        assert_eq!(
            server_line("iai-mcp: /w - \u{1b}[32m✔ Connected\u{1b}[0m\n"),
            "✔ Connected"
        );
        assert_eq!(server_line("other - x\n"), "no iai-mcp line in: other - x");
    }

    #[test]
    fn escapes_are_stripped() {
        assert_eq!(strip_escapes("\u{1b}[90mconnected\u{1b}[0m"), "connected");
    }
}
