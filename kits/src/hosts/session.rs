//! One host run: the host configured in a fresh scratch home to start the
//! wrapper under test, started non-interactively against the stand-in
//! model, and the conversation it holds with the stand-in, turn by turn,
//! on this thread (which also restarts the daemon between two calls).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use devkit::format::last_lines;
use devkit::process::CapturedOutput;
use harness::error::HarnessError;
use serde_json::{Value, json};

use super::host::{Host, SERVER, config_file};
use super::npm::Installed;
use super::reap::{GroupGuard, WrapperMatch, run_bounded};
use super::script::{AFTER_RESTART, Script, record_id};
use super::standin::{ModelTool, Reply, StandIn, ToolResult, Turn};

/// How long configuring a host through its own command may take.
const CONFIGURE_TIMEOUT: Duration = Duration::from_secs(60);

/// The wrapper a host is set up to start.
#[derive(Debug, Clone)]
pub struct Subject {
    /// How the report names it.
    pub label: String,
    /// Whether its checks are judged (this workspace's wrapper) or only
    /// reported on (any other).
    pub judged: bool,
    /// The program and its arguments.
    pub command: Vec<OsString>,
    /// How to recognise its processes.
    pub matcher: WrapperMatch,
    /// When set, the host is first configured with this command (the
    /// release's own Node wrapper, as iai-mcp's installer configures it),
    /// then `iai-mcp-wrapper install --host` switches the entry to
    /// [`command`](Self::command).
    pub install_over: Option<Vec<OsString>>,
}

/// How long a host run may take before it is killed and failed.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// From the host's start to its first model request.
    pub first_turn: Duration,
    /// The whole run.
    pub whole: Duration,
}

impl Default for Limits {
    /// 90 s to the first request, 240 s in all: a host takes seconds.
    fn default() -> Self {
        Limits {
            first_turn: Duration::from_secs(90),
            whole: Duration::from_secs(240),
        }
    }
}

/// Restarts the daemon between two calls; how long until it answered.
pub type Restart<'a> = &'a mut dyn FnMut() -> Result<Duration, HarnessError>;

/// Everything one host run needs.
#[derive(Debug)]
pub struct RunSetup<'a> {
    /// The host, installed.
    pub host: &'a Installed,
    /// The wrapper.
    pub subject: &'a Subject,
    /// A fresh directory for the host's home.
    pub home: PathBuf,
    /// The environment the wrapper needs to reach the daemon.
    pub wrapper_env: Vec<(OsString, OsString)>,
    /// Directories put first on the host's `PATH`.
    pub path_first: Vec<PathBuf>,
    /// Its time limits.
    pub limits: Limits,
}

/// What one host run produced, for the checks to judge.
#[derive(Debug, Default)]
pub struct Transcript {
    /// What the host's own listing command said about the server.
    pub listed: String,
    /// The tools the first turn offered.
    pub offered: Vec<ModelTool>,
    /// Host start to the first turn that offered the server's tools.
    pub first_turn: Option<Duration>,
    /// Each call's result as the host sent it back, by step.
    pub results: Vec<Option<ToolResult>>,
    /// The wrapper processes alive under the host at each turn.
    pub wrappers: Vec<Vec<u32>>,
    /// Every wrapper process seen under the host, once each.
    pub wrapper_pids: Vec<u32>,
    /// How long the daemon took to come back, when it was restarted.
    pub restart: Option<Result<Duration, String>>,
    /// The host's own account of failed tool calls (Codex's JSON events):
    /// the `(tool, arguments)` of each call it reported as failed.
    pub host_failed: Vec<(String, Value)>,
    /// How the run ended, when it did not end well: the host hung, never
    /// called the model, or exited with an error.
    pub failure: Option<String>,
    /// The whole run's time.
    pub elapsed: Duration,
}

/// Configures the host, runs it, and holds the conversation.
pub fn run(
    setup: &RunSetup<'_>,
    script: &Script,
    restart: Restart<'_>,
) -> Result<Transcript, HarnessError> {
    std::fs::create_dir_all(setup.home.join("work"))
        .and_then(|()| std::fs::create_dir_all(setup.home.join("tmp")))
        .map_err(|e| HarnessError::io(format!("creating {}", setup.home.display()), e))?;
    // A repository of its own, so that no host looks at the one the kit
    // runs in (hosts read git status and list worktrees).
    let mut init = Command::new("git");
    init.args(["init", "--quiet"])
        .current_dir(setup.home.join("work"));
    run_bounded(&mut init, CONFIGURE_TIMEOUT, "git init")?;
    let (turns_tx, turns) = mpsc::channel();
    let standin = StandIn::start(turns_tx, Host::is_server_tool)?;
    let env = host_env(setup, &standin.url());
    configure(setup, &env, &standin.url())?;
    let listed = listing(setup, &env)?;
    let mut command = Command::new(&setup.host.program);
    command
        .args(setup.host.host.run_args(&script.prompt()))
        .env_clear()
        .envs(env.iter().cloned())
        .current_dir(setup.home.join("work"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut group = GroupGuard::spawn(&mut command)?;
    let child = group.child().child_mut();
    let stdout = CapturedOutput::spawn(child.stdout.take().expect("piped"), "host-stdout");
    let stderr = CapturedOutput::spawn(child.stderr.take().expect("piped"), "host-stderr");
    let mut transcript = Transcript {
        listed,
        results: vec![None; script.len()],
        ..Transcript::default()
    };
    let outcome = converse(
        &mut group,
        &turns,
        setup,
        script,
        restart,
        started,
        &mut transcript,
    );
    drop(group);
    setup.subject.matcher.kill_left(&transcript.wrapper_pids);
    transcript.elapsed = started.elapsed();
    let out = stdout.text();
    if setup.host.host == Host::Codex {
        transcript.host_failed = codex_failed_calls(&out);
    }
    transcript.failure = match outcome {
        Ended::Exited(status) if status.success() => None,
        Ended::Exited(status) => Some(format!(
            "{} exited with {status}; its output ends:\n{}",
            setup.host.host,
            last_lines(&format!("{out}{}", stderr.text()), 8, "\n")
        )),
        Ended::NeverCalled => Some(format!(
            "{} never called the stand-in model within {} s (changed its CLI or its API?); its output ends:\n{}",
            setup.host.host,
            setup.limits.first_turn.as_secs(),
            last_lines(&format!("{out}{}", stderr.text()), 8, "\n")
        )),
        Ended::Hung(step) => Some(format!(
            "{} hung: still running {} s after its start, after {step} tool result(s) (killed)",
            setup.host.host,
            setup.limits.whole.as_secs()
        )),
    };
    Ok(transcript)
}

/// How a host run ended.
enum Ended {
    /// The host exited.
    Exited(std::process::ExitStatus),
    /// It never sent a turn in time (killed).
    NeverCalled,
    /// It did not finish in time, after this many results (killed).
    Hung(usize),
}

/// Answers turns until the host exits or its time is up.
fn converse(
    group: &mut GroupGuard,
    turns: &mpsc::Receiver<Turn>,
    setup: &RunSetup<'_>,
    script: &Script,
    restart: Restart<'_>,
    started: Instant,
    transcript: &mut Transcript,
) -> Ended {
    let limits = setup.limits;
    let host_pid = group.pid();
    let mut steps = 0;
    loop {
        match turns.recv_timeout(Duration::from_millis(100)) {
            Ok(turn) => {
                let step = turn.results.len();
                steps = steps.max(step);
                let alive = setup.subject.matcher.under(host_pid);
                for pid in &alive {
                    if !transcript.wrapper_pids.contains(pid) {
                        transcript.wrapper_pids.push(*pid);
                    }
                }
                transcript.wrappers.push(alive);
                if transcript.first_turn.is_none() {
                    transcript.first_turn = Some(started.elapsed());
                    transcript.offered = turn.offered.clone();
                }
                for (i, result) in turn.results.iter().enumerate() {
                    if let Some(slot) = transcript.results.get_mut(i) {
                        *slot = Some(result.clone());
                    }
                }
                if step == AFTER_RESTART && transcript.restart.is_none() {
                    transcript.restart = Some(restart().map_err(|e| e.to_string()));
                }
                let captured = transcript.results[0]
                    .as_ref()
                    .and_then(|r| record_id(&r.text));
                let reply = match script.call(step, captured.as_deref()) {
                    Some(planned) => Reply::Call {
                        id: format!("call_{step}"),
                        tool: offered_as(&turn, planned.tool),
                        input: planned.args,
                    },
                    None => Reply::Text("Done.".to_owned()),
                };
                let _ = turn.reply.send(reply);
            }
            Err(mpsc::RecvTimeoutError::Timeout | mpsc::RecvTimeoutError::Disconnected) => {}
        }
        if let Ok(Some(status)) = group.child().try_wait() {
            return Ended::Exited(status);
        }
        let elapsed = started.elapsed();
        if transcript.first_turn.is_none() && elapsed > limits.first_turn {
            return Ended::NeverCalled;
        }
        if elapsed > limits.whole {
            return Ended::Hung(steps);
        }
    }
}

/// The offered tool that is the server's `tool`, as this turn's host named
/// it (found among the offered ones, so a host that renames tools gets a
/// call it can route, or, failing that, the name it used before).
fn offered_as(turn: &Turn, tool: &str) -> ModelTool {
    turn.offered
        .iter()
        .find(|t| Host::is_server_tool(t) && t.name.ends_with(tool))
        .cloned()
        .unwrap_or_else(|| ModelTool::flat(tool))
}

/// The host's environment: its own settings, the wrapper's `PATH`.
fn host_env(setup: &RunSetup<'_>, url: &str) -> Vec<(OsString, OsString)> {
    let mut env = setup.host.host.env(&setup.home, url);
    let mut path = OsString::new();
    for dir in &setup.path_first {
        path.push(dir);
        path.push(":");
    }
    path.push(std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()));
    env.push(("PATH".into(), path));
    env.push(("TERM".into(), "dumb".into()));
    env
}

/// Writes the host's configuration with its own command or file, then,
/// for a subject installed over another command, runs `install`.
fn configure(
    setup: &RunSetup<'_>,
    env: &[(OsString, OsString)],
    url: &str,
) -> Result<(), HarnessError> {
    let host = setup.host.host;
    let first = setup
        .subject
        .install_over
        .as_ref()
        .unwrap_or(&setup.subject.command);
    let strings = |words: &[OsString]| -> Vec<String> {
        words
            .iter()
            .map(|w| w.to_string_lossy().into_owned())
            .collect()
    };
    let command = strings(first);
    let server_env: Vec<(String, String)> = setup
        .wrapper_env
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
            let mut add = Command::new(&setup.host.program);
            add.args(["mcp", "add", "--scope", "user", SERVER]);
            for (k, v) in &server_env {
                add.arg("-e").arg(format!("{k}={v}"));
            }
            add.arg("--").args(&command);
            add.env_clear()
                .envs(env.iter().cloned())
                .current_dir(setup.home.join("work"));
            run_bounded(&mut add, CONFIGURE_TIMEOUT, "claude mcp add")?;
        }
        Host::Codex => write_file(
            &config_file(host, &setup.home),
            &codex_config(url, &command, &server_env),
        )?,
        Host::Opencode => write_file(
            &config_file(host, &setup.home),
            &opencode_config(url, &command, &server_env),
        )?,
    }
    if setup.subject.install_over.is_some() {
        let mut install = Command::new(&setup.subject.command[0]);
        install
            .args(["install", "--host", host.name()])
            .env_clear()
            .envs(env.iter().cloned());
        let said = run_bounded(&mut install, CONFIGURE_TIMEOUT, "iai-mcp-wrapper install")?;
        let config = std::fs::read_to_string(config_file(host, &setup.home)).unwrap_or_default();
        let ours = setup.subject.command[0].to_string_lossy().into_owned();
        if !config.contains(&ours) {
            return Err(HarnessError::Scenario(format!(
                "`iai-mcp-wrapper install --host {}` left the entry as it was: {}",
                host.name(),
                said.trim()
            )));
        }
    }
    Ok(())
}

/// What the host's own listing command says about the server: its line.
fn listing(setup: &RunSetup<'_>, env: &[(OsString, OsString)]) -> Result<String, HarnessError> {
    let mut list = Command::new(&setup.host.program);
    list.args(["mcp", "list"])
        .env_clear()
        .envs(env.iter().cloned())
        .current_dir(setup.home.join("work"));
    let out = run_bounded(
        &mut list,
        CONFIGURE_TIMEOUT,
        &format!("{} mcp list", setup.host.host),
    )?;
    let plain: String = strip_escapes(&out);
    // The status is what follows the last " - " (Claude Code, Codex), or
    // the whole line (opencode).
    let line = plain
        .lines()
        .find(|l| l.contains(SERVER))
        .map(|l| l.rsplit(" - ").next().unwrap_or(l))
        .map(|l| {
            l.trim_matches(|c: char| c.is_whitespace() || "│●".contains(c))
                .to_owned()
        })
        .unwrap_or_else(|| format!("no {SERVER} line in: {}", last_lines(&plain, 4, " / ")));
    Ok(line.split_whitespace().collect::<Vec<_>>().join(" "))
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

/// The calls Codex's `exec --json` events report as failed.
fn codex_failed_calls(events: &str) -> Vec<(String, Value)> {
    events
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == "mcp_tool_call")
        .filter(|e| e["item"]["status"] == "failed")
        .map(|e| {
            let item = &e["item"];
            (
                item["tool"].as_str().unwrap_or_default().to_owned(),
                item["arguments"].clone(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_failures_come_from_its_events() {
        let events = r#"{"type":"item.completed","item":{"type":"mcp_tool_call","tool":"topology","arguments":{},"status":"completed"}}
{"type":"item.completed","item":{"type":"mcp_tool_call","tool":"memory_contradict","arguments":{"id":"x"},"status":"failed"}}
not json"#;
        assert_eq!(
            codex_failed_calls(events),
            vec![("memory_contradict".to_owned(), json!({"id": "x"}))]
        );
    }

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
    fn escapes_are_stripped() {
        assert_eq!(strip_escapes("\u{1b}[90mconnected\u{1b}[0m"), "connected");
    }
}
