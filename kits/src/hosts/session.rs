//! One host run: the host configured in a fresh scratch home to start the
//! wrapper under test ([`configure`](super::configure)), started
//! non-interactively under the subreaper against the stand-in model, and
//! the conversation it holds with the stand-in ([`converse`](super::converse)).
//! When the run ends, on every path, the host and every process it started
//! are gone, those that left its process group included.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Instant;

use devkit::cleanenv::CleanEnv;
use devkit::format::last_lines;
use devkit::process::CapturedOutput;
use devkit::reap::Reaped;
use harness::error::HarnessError;
use serde_json::Value;

use super::configure::{CONFIGURE_LIMIT, Configure};
use super::converse::{Conversation, Ended, Limits, Restart};
use super::host::Host;
use super::npm::Installed;
use super::script::Script;
use super::servers::ServerCommand;
use super::standin::StandIn;
use super::transcript::{HostCall, Transcript};

/// The wrapper a host is set up to start.
#[derive(Debug, Clone)]
pub struct Subject {
    /// How the report names it.
    pub label: String,
    /// How its checks count: judged (this workspace's wrapper), expected
    /// to fail (a deliberately broken wrapper), or only reported on.
    pub role: Role,
    /// The program and its arguments.
    pub command: Vec<OsString>,
    /// When set, the host is first configured with this command (the
    /// release's own Node wrapper, as iai-mcp's installer configures it),
    /// then `iai-mcp-wrapper install --host` switches the entry to
    /// [`command`](Self::command).
    pub install_over: Option<Vec<OsString>>,
}

/// How a subject's checks count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// This workspace's wrapper: every check must pass.
    Judged,
    /// A deliberately broken wrapper: at least one check must fail in
    /// every host, or the kit is not strict enough.
    MustFail,
    /// Another wrapper, reported on.
    Reported,
}

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
    /// The subreaper every host command runs under.
    pub subreaper: PathBuf,
    /// Its time limits.
    pub limits: Limits,
}

/// Configures the host, runs it, and holds the conversation; the
/// daemon's side ([`Transcript::exchanges`]) is the caller's to add.
pub fn run(
    setup: &RunSetup<'_>,
    script: &Script,
    restart: Restart<'_>,
) -> Result<Transcript, HarnessError> {
    prepare_home(setup)?;
    let (turns_tx, turns) = mpsc::channel();
    let standin = StandIn::start(turns_tx, Host::is_server_tool)?;
    let url = standin.url();
    let env = host_env(setup, &url);
    let configure = Configure {
        host: setup.host,
        home: &setup.home,
        env: &env,
        subreaper: &setup.subreaper,
        url: &url,
        command: &setup.subject.command,
        install_over: setup.subject.install_over.as_deref(),
        server_env: &setup.wrapper_env,
    };
    configure.write()?;
    let mut transcript = Transcript {
        listed: configure.listing()?,
        ..Transcript::default()
    };
    let mut command = Reaped::command(&setup.subreaper, &setup.host.program);
    command
        .args(setup.host.host.run_args(&script.prompt()))
        .env_clear()
        .envs(env.iter().cloned())
        .current_dir(setup.home.join("work"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut host = Reaped::spawn(&mut command)?;
    let stdout = CapturedOutput::spawn(host.child_mut().stdout.take().expect("piped"), "host-out");
    let stderr = CapturedOutput::spawn(host.child_mut().stderr.take().expect("piped"), "host-err");
    let server = ServerCommand::new(setup.subject.command.clone());
    let mut conversation = Conversation::new(script, &server, setup.limits, restart, started);
    let ended = conversation.hold(&mut host, &turns, &mut transcript);
    host.stop();
    transcript.elapsed = started.elapsed();
    let out = stdout.text();
    if setup.host.host == Host::Codex {
        transcript.host_calls = codex_calls(&out);
    }
    let said = last_lines(&format!("{out}{}", stderr.text()), 8, "\n");
    transcript.failure = failure(setup, &ended, &transcript, &said);
    Ok(transcript)
}

/// A fresh home with a repository of its own as the working directory,
/// so that no host looks at the one the kit runs in (hosts read git
/// status and list worktrees).
fn prepare_home(setup: &RunSetup<'_>) -> Result<(), HarnessError> {
    for dir in [setup.home.join("work"), setup.home.join("tmp")] {
        std::fs::create_dir_all(&dir)
            .map_err(|e| HarnessError::io(format!("creating {}", dir.display()), e))?;
    }
    // In a cleared environment too: no configuration of the user's
    // (templates, hooks) reaches the host's repository.
    let mut env = CleanEnv::with_path();
    env.set("HOME", &setup.home);
    env.set("GIT_CONFIG_NOSYSTEM", "1");
    let mut init = Command::new("git");
    init.args(["init", "--quiet"])
        .current_dir(setup.home.join("work"));
    env.apply(&mut init);
    devkit::command::run_within(&mut init, "git init", CONFIGURE_LIMIT)?;
    Ok(())
}

/// Why the run failed, if it did: said in the host's name, the call it
/// ended on named.
fn failure(
    setup: &RunSetup<'_>,
    ended: &Ended,
    transcript: &Transcript,
    said: &str,
) -> Option<String> {
    let host = setup.host.host;
    let limits = setup.limits;
    let call = |step: usize| {
        transcript.step(step).map_or_else(
            || format!("call_{step}"),
            |s| format!("{} ({})", s.call_id, s.planned.tool),
        )
    };
    Some(match ended {
        Ended::Exited(status) if status.success() => return None,
        Ended::Exited(status) => {
            format!("{host} exited with {status}; its output ends:\n{said}")
        }
        Ended::NeverCalled => format!(
            "{host} never called the stand-in model within {} s (changed its CLI or its API?); its output ends:\n{said}",
            limits.first_turn.as_secs()
        ),
        Ended::Unanswered(step) => format!(
            "{} not answered within {} s of being asked: the session was ended then",
            call(*step),
            limits.per_call.as_secs()
        ),
        Ended::Lost(step) => format!(
            "{host}'s next request carried no result for {}: the session was ended then",
            call(*step)
        ),
        Ended::Hung(step) => format!(
            "{host} still ran {} s after its start{} (ended)",
            limits.whole.as_secs(),
            step.map_or_else(String::new, |s| format!(", waiting for {}", call(s)))
        ),
    })
}

/// The host's environment: its own settings, `PATH` with the wrapper's
/// directory first, a dumb terminal; nothing else of this process's.
fn host_env(setup: &RunSetup<'_>, url: &str) -> Vec<(OsString, OsString)> {
    let mut env = setup.host.host.env(&setup.home, url);
    let mut path = std::env::join_paths(&setup.path_first).unwrap_or_default();
    let inherited = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    if !path.is_empty() {
        path.push(":");
    }
    path.push(inherited);
    env.push(("PATH".into(), path));
    env.push(("TERM".into(), "dumb".into()));
    env
}

/// The MCP tool calls in Codex's `exec --json` events, with their status.
pub fn codex_calls(events: &str) -> Vec<HostCall> {
    events
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == "mcp_tool_call")
        .map(|e| {
            let item = &e["item"];
            HostCall {
                tool: item["tool"].as_str().unwrap_or_default().to_owned(),
                arguments: item["arguments"].clone(),
                status: item["status"].as_str().unwrap_or_default().to_owned(),
            }
        })
        .collect()
}

/// The scratch home of run `n` of `host` under `work_dir`.
pub fn scratch_home(work_dir: &Path, host: Host, n: usize) -> PathBuf {
    work_dir.join("run").join(format!("{host}-{n}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn codex_calls_come_from_its_events_with_their_status() {
        let events = r#"{"type":"item.completed","item":{"type":"mcp_tool_call","tool":"topology","arguments":{},"status":"completed"}}
{"type":"item.completed","item":{"type":"mcp_tool_call","tool":"memory_contradict","arguments":{"id":"x"},"status":"failed"}}
{"type":"item.started","item":{"type":"mcp_tool_call","tool":"topology","arguments":{},"status":"in_progress"}}
not json"#;
        let calls = codex_calls(events);
        assert_eq!(calls.len(), 2);
        assert_eq!(
            (calls[0].tool.as_str(), calls[0].status.as_str()),
            ("topology", "completed")
        );
        assert_eq!(calls[1].arguments, json!({"id": "x"}));
        assert_eq!(calls[1].status, "failed");
    }
}
