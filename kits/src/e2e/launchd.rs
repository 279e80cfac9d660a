//! The wake-up through the real launchd (macOS only).
//!
//! iai-mcp's installer loads the daemon as the LaunchAgent
//! `com.iai-mcp.daemon`; a wrapper that finds the daemon down (and its
//! process not alive) asks launchd to start it with `launchctl kickstart`.
//! The check loads a job of that label in the user's GUI domain, running
//! the kit's daemon command in the kit's environment and never started by
//! launchd on its own (no `RunAtLoad`, no `KeepAlive`), stops the kit's
//! daemon, and starts this wrapper with a call waiting: the call is
//! answered only if the wrapper's kickstart made launchd start the daemon:
//! the wrapper logs the kickstart it sent, and launchd names the pid the
//! job runs as. The job is booted out on every path. Where the runner's
//! session has no GUI domain, the row says so instead of failing; a
//! domain that refuses the job fails it.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use devkit::bins::error_chain;
use devkit::command::run_within;
use devkit::error::DevkitError;
use devkit::rows::Row;
use harness::error::HarnessError;
use harness::scenario::wrapper_log::{self, WAKE_REQUESTED};
use serde_json::json;
use thiserror::Error;

use super::checks::{Kit, ok_result};
use super::daemon::RealDaemon;

/// The job's label, as iai-mcp's installer names it (and the wrapper
/// kickstarts it).
const LABEL: &str = "com.iai-mcp.daemon";
/// How long one `launchctl` command may take.
const LAUNCHCTL_LIMIT: Duration = Duration::from_secs(30);
/// How long the waiting call may take: the wrapper's probes (about 4 s),
/// the kickstart, and the daemon's start.
const WAKE_REPLY: Duration = Duration::from_secs(120);

/// Why the job was not loaded.
#[derive(Debug, Error)]
enum LoadError {
    /// The session has no GUI domain to load a LaunchAgent into (a runner
    /// without a logged-in user): the check cannot run here.
    #[error("this session has no launchd domain {domain}")]
    NoGuiDomain {
        /// `gui/<uid>`.
        domain: String,
        /// What `launchctl print` said.
        #[source]
        source: DevkitError,
    },
    /// The job's property list could not be written.
    #[error("writing {}", path.display())]
    Write {
        /// The property list.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The domain is there and refused the job.
    #[error("launchctl bootstrap {domain} refused the job")]
    Refused {
        /// `gui/<uid>`.
        domain: String,
        /// What `launchctl bootstrap` said.
        #[source]
        source: DevkitError,
    },
}

/// A job loaded in the user's GUI domain, booted out when dropped.
struct LoadedJob {
    domain: String,
}

impl LoadedJob {
    /// Writes the job's property list beside the daemon's files and
    /// bootstraps it into the user's GUI domain, if the session has one.
    fn load(real: &RealDaemon) -> Result<Self, LoadError> {
        let uid = nix::unistd::getuid().as_raw();
        let domain = format!("gui/{uid}");
        let mut print = Command::new("/bin/launchctl");
        print.arg("print").arg(&domain);
        if let Err(source) = run_within(&mut print, "launchctl print", LAUNCHCTL_LIMIT) {
            return Err(LoadError::NoGuiDomain { domain, source });
        }
        let path = real.scratch().join("com.iai-mcp.daemon.plist");
        if let Err(source) = std::fs::write(&path, property_list(real)) {
            return Err(LoadError::Write { path, source });
        }
        let mut bootstrap = Command::new("/bin/launchctl");
        bootstrap.arg("bootstrap").arg(&domain).arg(&path);
        match run_within(&mut bootstrap, "launchctl bootstrap", LAUNCHCTL_LIMIT) {
            Ok(_) => Ok(LoadedJob { domain }),
            Err(source) => Err(LoadError::Refused { domain, source }),
        }
    }

    /// `gui/<uid>/com.iai-mcp.daemon`.
    fn target(&self) -> String {
        format!("{}/{LABEL}", self.domain)
    }

    /// The pid launchd says the job runs as, if it runs.
    fn running_pid(&self) -> Option<u32> {
        let mut print = Command::new("/bin/launchctl");
        print.arg("print").arg(self.target());
        let text = run_within(&mut print, "launchctl print", LAUNCHCTL_LIMIT).ok()?;
        text.lines()
            .filter_map(|line| line.trim().strip_prefix("pid = "))
            .find_map(|pid| pid.trim().parse().ok())
    }
}

impl Drop for LoadedJob {
    fn drop(&mut self) {
        let mut bootout = Command::new("/bin/launchctl");
        bootout.arg("bootout").arg(self.target());
        let _ = run_within(&mut bootout, "launchctl bootout", LAUNCHCTL_LIMIT);
    }
}

/// The job: the kit's daemon command and environment, its output in the
/// daemon's log, started only when asked.
fn property_list(real: &RealDaemon) -> String {
    let mut env = String::new();
    for (key, value) in real.env() {
        env.push_str(&format!(
            "      <key>{}</key><string>{}</string>\n",
            xml_text(key),
            xml_text(value)
        ));
    }
    let program = real.daemon_command();
    let arguments: String = program
        .iter()
        .map(|a| format!("      <string>{}</string>\n", xml_text(a)))
        .collect();
    let log = xml_text(real.log_path().as_os_str());
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
  <dict>
    <key>Label</key><string>{LABEL}</string>
    <key>ProgramArguments</key>
    <array>
{arguments}    </array>
    <key>EnvironmentVariables</key>
    <dict>
{env}    </dict>
    <key>StandardOutPath</key><string>{log}</string>
    <key>StandardErrorPath</key><string>{log}</string>
    <key>RunAtLoad</key><false/>
    <key>KeepAlive</key><false/>
  </dict>
</plist>
"#
    )
}

/// `text` escaped for an XML text node.
fn xml_text(text: impl AsRef<std::ffi::OsStr>) -> String {
    text.as_ref()
        .to_string_lossy()
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

impl Kit<'_> {
    /// The daemon down, its job loaded in launchd: this wrapper's session
    /// start kickstarts it, and a call waiting meanwhile is answered by
    /// the daemon launchd started.
    pub fn launchd_wake(&self, real: &mut RealDaemon) -> Row {
        let check = "daemon down: the wrapper's kickstart has launchd start it";
        real.stop();
        let job = match LoadedJob::load(real) {
            Ok(job) => job,
            Err(e @ LoadError::NoGuiDomain { .. }) => {
                return Row::info(check, format!("not run: {}", error_chain(&e)));
            }
            Err(e) => return Row::judged(check, false, error_chain(&e)),
        };
        let outcome = self.wake_through(real, &job);
        drop(job);
        real.wait_stopped();
        Row::outcome(check, outcome, |(pid, answered)| {
            let detail = format!(
                "the waiting call answered {:.1} s after the wrapper started, by the daemon launchd runs as pid {pid}",
                answered.as_secs_f64()
            );
            (true, detail)
        })
    }

    fn wake_through(
        &self,
        real: &RealDaemon,
        job: &LoadedJob,
    ) -> Result<(u32, Duration), HarnessError> {
        let started = Instant::now();
        let mut w = self.ours(real, None, |o| {
            o.env(
                "IAI_MCP_CONNECT_WAIT_MS",
                WAKE_REPLY.as_millis().to_string(),
            )
            .env(wrapper_log::JSON_EVENTS.0, wrapper_log::JSON_EVENTS.1)
        })?;
        ok_result(&w.call_tool("topology", json!({}), WAKE_REPLY)?)?;
        let answered = started.elapsed();
        let kickstarted = wrapper_log::events_named(&w.stderr_text(), WAKE_REQUESTED)
            .any(|e| e.how.as_deref() == Some("launchctl") && e.outcome.as_deref() == Some("sent"));
        if !kickstarted {
            return Err(HarnessError::Scenario(
                "the call was answered, but the wrapper logged no kickstart sent to launchctl"
                    .to_owned(),
            ));
        }
        let pid = job.running_pid().ok_or_else(|| {
            HarnessError::Scenario(format!(
                "the call was answered, but launchd runs no {LABEL}: something else started the daemon"
            ))
        })?;
        Ok((pid, answered))
    }
}
