//! The hosts kit: the wrapper as the people who use it meet it, started
//! by a real MCP host. Claude Code, Codex CLI and opencode are installed
//! at pinned versions from the npm registry ([`npm`], versions in
//! [`host`]) and each is run non-interactively ([`session`]) against a
//! loopback stand-in for the model API it calls ([`standin`]), which
//! answers with scripted tool calls ([`script`]) and records what the host
//! offered and sent back. The server is the real iai-mcp daemon of the
//! end-to-end kit, through the wrapper installed from its wheel; each host
//! is configured through its own command or file, then switched to the
//! wrapper by `iai-mcp-wrapper install`. [`judge`] turns each run into
//! five checks; every process a run starts is killed on every path
//! ([`reap`]).

pub mod host;
pub mod judge;
pub mod npm;
pub mod reap;
pub mod script;
pub mod session;
pub mod standin;

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use devkit::table::{Align, table_lines};
use harness::error::HarnessError;
use harness::wrapper::WrapperCommand;
use serde::Serialize;

use crate::e2e::daemon::RealDaemon;
use crate::e2e::pyenv::{self, Contents};
use crate::e2e::{E2eConfig, Release, tested};
use host::{Host, HostPin, HostVersion};
use judge::{Checked, Verdict};
use reap::WrapperMatch;
use script::Script;
use session::{Limits, RunSetup, Subject};

/// How to run the kit.
#[derive(Debug, Clone)]
pub struct HostsConfig {
    /// Where hosts, scratch homes and the report go (`target/hosts`).
    pub work_dir: PathBuf,
    /// The end-to-end kit's settings: its environment, daemon and wrapper.
    pub e2e: E2eConfig,
    /// Versions other than the pinned ones.
    pub versions: Vec<HostPin>,
    /// Only these hosts (all when empty).
    pub only: Vec<Host>,
    /// Other wrapper commands to run the same checks with.
    pub wrapper_cmds: Vec<String>,
    /// Also run the checks with the release's own Node wrapper.
    pub release_wrapper: bool,
}

/// One row of the report.
#[derive(Debug, Clone, Serialize)]
pub struct HostRow {
    /// The host, by name.
    pub host: String,
    /// Its version (as asked for when it could not be installed).
    pub version: String,
    /// The wrapper it started.
    pub wrapper: String,
    /// Whether this wrapper is judged (this workspace's) or reported on.
    pub judged: bool,
    /// The check.
    #[serde(flatten)]
    pub checked: Checked,
}

/// What the kit found.
#[derive(Debug, Clone, Serialize)]
pub struct HostsReport {
    /// Every check of every host with every wrapper.
    pub rows: Vec<HostRow>,
    /// The wrapper binary tested, and its wheel.
    pub subject: String,
    /// Each host's install: version and time.
    pub installs: Vec<String>,
    /// The whole run's time, in seconds.
    pub seconds: f64,
}

impl HostsReport {
    /// Whether no judged check failed.
    pub fn passed(&self) -> bool {
        self.rows
            .iter()
            .all(|r| !r.judged || r.checked.verdict != Verdict::Fail)
    }
}

impl fmt::Display for HostsReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cells: Vec<[String; 5]> = self
            .rows
            .iter()
            .map(|r| {
                let verdict = match r.checked.verdict {
                    Verdict::Pass => "pass",
                    Verdict::Fail => "FAIL",
                    Verdict::Info => "info",
                };
                [
                    format!("{} {}", r.host, r.version),
                    r.wrapper.clone(),
                    r.checked.check.to_owned(),
                    verdict.to_owned(),
                    r.checked.detail.replace('\n', " / "),
                ]
            })
            .collect();
        let header = ["host", "wrapper", "check", "result", "detail"];
        for line in table_lines(&header, &cells, Align::Left) {
            writeln!(f, "{line}")?;
        }
        writeln!(f, "{}", self.subject)?;
        for install in &self.installs {
            writeln!(f, "{install}")?;
        }
        let failed = self
            .rows
            .iter()
            .filter(|r| r.judged && r.checked.verdict == Verdict::Fail)
            .count();
        write!(
            f,
            "verdict: {} ({} rows, {failed} judged failed, {:.0} s)",
            if failed == 0 { "PASS" } else { "FAIL" },
            self.rows.len(),
            self.seconds
        )
    }
}

/// Runs every host with every wrapper; an `Err` means the kit could not
/// run at all (no environment, no daemon). A host that cannot be
/// installed or run fails its own rows and the others still run.
pub fn run_hosts(cfg: &HostsConfig) -> Result<HostsReport, HarnessError> {
    let started = Instant::now();
    let release: &Release = &cfg.e2e.release;
    let root = release.e2e_venv(&cfg.e2e.work_dir);
    let py = pyenv::ensure(&root, cfg.e2e.python.as_deref(), release, Contents::Kit)?;
    let ours = tested(&cfg.e2e, &py)?;
    let node_wrapper: Vec<OsString> =
        vec![cfg.e2e.node.clone().into(), py.bundled_wrapper()?.into()];
    let mut subjects = vec![Subject {
        label: "iai-mcp-wrapper".to_owned(),
        judged: true,
        command: vec![ours.binary.clone().into()],
        matcher: WrapperMatch {
            path: ours.binary.clone(),
        },
        install_over: Some(node_wrapper.clone()),
    }];
    if cfg.release_wrapper {
        subjects.push(command_subject(
            format!("iai-mcp {release} (Node)"),
            node_wrapper,
        ));
    }
    for line in &cfg.wrapper_cmds {
        let parsed = WrapperCommand::parse_shell_words(line)?;
        let mut words = vec![parsed.program];
        words.extend(parsed.args);
        subjects.push(command_subject(line.clone(), words));
    }
    let mut daemon = RealDaemon::start(&py)?;
    let mut wrapper_env = daemon.wrapper_env(&py);
    wrapper_env.retain(|(k, _)| k != "HOME" && k != "PATH");
    let hosts: Vec<Host> = Host::ALL
        .into_iter()
        .filter(|h| cfg.only.is_empty() || cfg.only.contains(h))
        .collect();
    let mut rows = Vec::new();
    let mut installs = Vec::new();
    for host in hosts {
        let version = cfg
            .versions
            .iter()
            .rev()
            .find(|p| p.host == host)
            .map_or_else(
                || HostVersion::Exact(host.pinned().to_owned()),
                |p| p.version.clone(),
            );
        eprintln!("hosts: installing {} {version}", host.package());
        let installed = match npm::ensure(&cfg.work_dir.join("npm"), host, &version) {
            Ok(installed) => installed,
            Err(e) => {
                let why = format!(
                    "could not install {} {version}: {}",
                    host.package(),
                    devkit::bins::error_chain(&e)
                );
                installs.push(format!("{host}: {why}"));
                for subject in &subjects {
                    rows.extend(judge::all_failed(&why).into_iter().map(|checked| HostRow {
                        host: host.to_string(),
                        version: version.to_string(),
                        wrapper: subject.label.clone(),
                        judged: subject.judged,
                        checked,
                    }));
                }
                continue;
            }
        };
        installs.push(format!(
            "{host}: {} {} ({}), {}",
            host.package(),
            installed.version,
            installed.reports,
            installed
                .installed_in
                .map_or("reused".to_owned(), |d| format!(
                    "installed in {:.0} s",
                    d.as_secs_f64()
                ))
        ));
        for (n, subject) in subjects.iter().enumerate() {
            eprintln!("hosts: {host} {} with {}", installed.version, subject.label);
            let home = cfg.work_dir.join("run").join(format!("{host}-{n}"));
            let _ = std::fs::remove_dir_all(&home);
            let setup = RunSetup {
                host: &installed,
                subject,
                home,
                wrapper_env: wrapper_env.clone(),
                path_first: vec![py.bin()],
                limits: Limits::default(),
            };
            let script = Script::new(&format!("{host}-{n}-{}", unique()));
            let checked = match session::run(&setup, &script, &mut || daemon.restart()) {
                Ok(transcript) => judge::judge(host, &script, &transcript),
                Err(e) => judge::all_failed(&devkit::bins::error_chain(&e)),
            };
            rows.extend(checked.into_iter().map(|checked| HostRow {
                host: host.to_string(),
                version: installed.version.clone(),
                wrapper: subject.label.clone(),
                judged: subject.judged,
                checked,
            }));
            daemon.ensure_running()?;
        }
    }
    let report = HostsReport {
        rows,
        subject: ours.line,
        installs,
        seconds: started.elapsed().as_secs_f64(),
    };
    let json_path = cfg.work_dir.join("report.json");
    let json = serde_json::to_string_pretty(&report).expect("the report serializes");
    std::fs::write(&json_path, json)
        .map_err(|e| HarnessError::io(format!("writing {}", json_path.display()), e))?;
    Ok(report)
}

/// A wrapper started by a command line, reported on.
fn command_subject(label: String, words: Vec<OsString>) -> Subject {
    let path = PathBuf::from(words.last().cloned().unwrap_or_default());
    Subject {
        label,
        judged: false,
        command: words,
        matcher: WrapperMatch { path },
        install_over: None,
    }
}

/// A tag no earlier run used.
fn unique() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_nanos();
    format!("{:x}", nanos % (1 << 40))
}
