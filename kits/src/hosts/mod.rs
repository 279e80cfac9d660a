//! The hosts kit: the wrapper as the people who use it meet it, started
//! by a real MCP host. Claude Code, Codex CLI and opencode are installed
//! at pinned versions from the npm registry, each from a lockfile kept in
//! the repository ([`npm`], versions in [`host`]), and each is run
//! non-interactively ([`session`]) against a loopback stand-in for the
//! model API it calls ([`standin`]), which hands each turn to the kit's
//! conversation ([`converse`]): one scripted tool call a turn
//! ([`script`]), asked under its own id. The server is the real iai-mcp
//! daemon of the end-to-end kit, reached through a recording tap
//! ([`tap`]), through the wrapper installed from its wheel; each host is
//! configured through its own command or file, then switched to the
//! wrapper by `iai-mcp-wrapper install` ([`configure`]). [`judge`] turns
//! each run's [`transcript`] into five checks, on positive evidence only;
//! wrappers broken on purpose ([`broken`]) check that it is strict.
//! Every host command runs under the dev kit's subreaper, so that every
//! process a run starts is gone when it ends; [`servers`] tells which of
//! them is the server.

pub mod broken;
pub mod configure;
pub mod converse;
pub mod host;
pub mod judge;
pub mod npm;
pub mod report;
pub mod script;
pub mod servers;
pub mod session;
pub mod standin;
pub mod tap;
pub mod transcript;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use devkit::bins::{SUBREAPER, error_chain, locate};
use harness::error::HarnessError;
use harness::wrapper::WrapperCommand;

use crate::e2e::daemon::RealDaemon;
use crate::e2e::pyenv::{self, Contents, PyEnv};
use crate::e2e::release::CONSTRAINED;
use crate::e2e::{E2eConfig, Release, Tested, tested};
use broken::{BROKEN_WRAPPER, Breakage};
use converse::Limits;
use host::{Host, HostPin, HostVersion};
use npm::{Installed, Npm};
use report::{HostRow, HostsReport};
use script::Script;
use session::{Role, RunSetup, Subject, scratch_home};
use tap::Tap;
use transcript::Restarted;

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
    /// Also run the wrappers broken on purpose, each expected to fail.
    pub broken_wrappers: bool,
}

impl HostsConfig {
    /// The hosts to run, in the report's order.
    fn hosts(&self) -> Vec<Host> {
        Host::ALL
            .into_iter()
            .filter(|h| self.only.is_empty() || self.only.contains(h))
            .collect()
    }

    /// The version of `host` to install: the last `--host-version` for it,
    /// else the pinned one.
    fn version_of(&self, host: Host) -> HostVersion {
        self.versions
            .iter()
            .rev()
            .find(|p| p.host == host)
            .map_or_else(
                || HostVersion::Exact(host.pinned().to_owned()),
                |p| p.version.clone(),
            )
    }

    /// npm, installing under `work_dir/npm`.
    fn npm(&self, subreaper: PathBuf) -> Npm {
        Npm {
            root: self.work_dir.join("npm"),
            subreaper,
        }
    }
}

/// Runs every host with every wrapper; an `Err` means the kit could not
/// run at all (no environment, no daemon). A host that cannot be
/// installed or run fails its own rows and the others still run.
pub fn run_hosts(cfg: &HostsConfig) -> Result<HostsReport, HarnessError> {
    let started = Instant::now();
    let mut kit = Kit::prepare(cfg)?;
    let mut rows = Vec::new();
    let mut installs = Vec::new();
    for host in cfg.hosts() {
        let version = cfg.version_of(host);
        eprintln!("hosts: installing {} {version}", host.package());
        match kit.npm.ensure(host, &version) {
            Ok(installed) => {
                installs.push(install_line(&installed));
                for n in 0..kit.subjects.len() {
                    rows.extend(kit.run_one(cfg, &installed, n)?);
                }
            }
            Err(e) => {
                let why = format!(
                    "could not install {} {version}: {}",
                    host.package(),
                    error_chain(&e)
                );
                installs.push(format!("{host}: {why}"));
                for subject in &kit.subjects {
                    let checked = judge::all_failed(&why);
                    rows.extend(HostRow::all(host, &version.to_string(), subject, checked));
                }
            }
        }
    }
    let report = HostsReport {
        rows,
        subject: kit.ours.line.clone(),
        environment: kit.py.installed(Contents::Kit),
        installs,
        seconds: started.elapsed().as_secs_f64(),
    };
    report.write_json(&cfg.work_dir.join("report.json"))?;
    Ok(report)
}

/// Writes the pins afresh, resolved today: each host's lockfile at its
/// pinned version, and the constraints of each constrained iai-pme
/// release ([`CONSTRAINED`]). Returns what it wrote.
pub fn refresh_pins(cfg: &HostsConfig) -> Result<Vec<PathBuf>, HarnessError> {
    let npm = cfg.npm(locate(&SUBREAPER)?);
    let mut written = Vec::new();
    for host in Host::ALL {
        eprintln!("hosts: resolving {}@{}", host.package(), host.pinned());
        written.push(npm.refresh_lock(host, host.pinned())?);
    }
    for version in CONSTRAINED {
        let release: Release = version
            .parse()
            .map_err(|e: crate::e2e::release::BadRelease| HarnessError::Scenario(e.to_string()))?;
        eprintln!("hosts: resolving iai-pme {release} and its dependencies");
        written.push(pyenv::refresh_constraints(
            &cfg.e2e.work_dir,
            cfg.e2e.python.as_deref(),
            &release,
        )?);
    }
    Ok(written)
}

/// What every run shares: the environment, the wrapper, the daemon and
/// its tap, the subreaper, npm, and the wrappers to run.
struct Kit {
    // The tap first: its socket lives in the daemon's scratch directory,
    // removed when the daemon drops.
    tap: Tap,
    daemon: RealDaemon,
    py: PyEnv,
    ours: Tested,
    subreaper: PathBuf,
    npm: Npm,
    subjects: Vec<Subject>,
    wrapper_env: Vec<(OsString, OsString)>,
}

impl Kit {
    /// The environment ready, the daemon started behind its tap, the
    /// subjects listed.
    fn prepare(cfg: &HostsConfig) -> Result<Self, HarnessError> {
        let release = &cfg.e2e.release;
        let root = release.e2e_venv(&cfg.e2e.work_dir);
        let py = pyenv::ensure(&root, cfg.e2e.python.as_deref(), release, Contents::Kit)?;
        let ours = tested(&cfg.e2e, &py)?;
        let subjects = subjects(cfg, &py, &ours)?;
        let subreaper = locate(&SUBREAPER)?;
        let daemon = RealDaemon::start(&py)?;
        let tap = Tap::start(&daemon.scratch().join("tap.sock"), daemon.address().path())?;
        let mut wrapper_env = daemon.wrapper_env(&py);
        wrapper_env.retain(|(k, _)| k != "HOME" && k != "PATH" && k != "IAI_DAEMON_SOCKET_PATH");
        wrapper_env.push(("IAI_DAEMON_SOCKET_PATH".into(), tap.path().into()));
        Ok(Kit {
            npm: cfg.npm(subreaper.clone()),
            py,
            ours,
            daemon,
            tap,
            subreaper,
            subjects,
            wrapper_env,
        })
    }

    /// One run of `installed` with subject `n`, judged.
    fn run_one(
        &mut self,
        cfg: &HostsConfig,
        installed: &Installed,
        n: usize,
    ) -> Result<Vec<HostRow>, HarnessError> {
        let host = installed.host;
        let subject = &self.subjects[n];
        eprintln!("hosts: {host} {} with {}", installed.version, subject.label);
        let home = scratch_home(&cfg.work_dir, host, n);
        let _ = std::fs::remove_dir_all(&home);
        let setup = RunSetup {
            host: installed,
            subject,
            home,
            wrapper_env: self.wrapper_env.clone(),
            path_first: vec![self.py.bin()],
            subreaper: self.subreaper.clone(),
            limits: Limits::default(),
        };
        let script = Script::new(&format!("{host}-{n}-{}", unique()));
        self.tap.take();
        let (tap, daemon) = (&mut self.tap, &mut self.daemon);
        let mut restart = || -> Result<Restarted, HarnessError> {
            tap.pause();
            let first_connection = tap.connections();
            let back = daemon.restart();
            tap.resume()?;
            Ok(Restarted {
                back: back?,
                first_connection,
            })
        };
        let checked = match session::run(&setup, &script, &mut restart) {
            Ok(mut transcript) => {
                transcript.exchanges = self.tap.take();
                // Beside the run's files, for whoever reads a failure.
                let kept = setup.home.join("transcript.txt");
                let _ = std::fs::write(kept, format!("{transcript:#?}\n"));
                judge::judge(host, &script, &transcript)
            }
            Err(e) => judge::all_failed(&error_chain(&e)),
        };
        self.daemon.ensure_running()?;
        Ok(HostRow::all(host, &installed.version, subject, checked))
    }
}

/// The wrappers to run: this workspace's (judged), then those asked for.
fn subjects(cfg: &HostsConfig, py: &PyEnv, ours: &Tested) -> Result<Vec<Subject>, HarnessError> {
    let node_wrapper: Vec<OsString> =
        vec![cfg.e2e.node.clone().into(), py.bundled_wrapper()?.into()];
    let mut subjects = vec![Subject {
        label: "iai-mcp-wrapper".to_owned(),
        role: Role::Judged,
        command: vec![ours.binary.clone().into()],
        install_over: Some(node_wrapper.clone()),
    }];
    if cfg.broken_wrappers {
        let broken = locate(&BROKEN_WRAPPER)?;
        for breakage in Breakage::ALL {
            subjects.push(Subject {
                label: format!("broken: {}", breakage.name()),
                role: Role::MustFail,
                command: vec![
                    broken.clone().into(),
                    breakage.name().into(),
                    "--".into(),
                    ours.binary.clone().into(),
                ],
                install_over: None,
            });
        }
    }
    if cfg.release_wrapper {
        subjects.push(reported(
            format!("iai-mcp {} (Node)", cfg.e2e.release),
            node_wrapper,
        ));
    }
    for line in &cfg.wrapper_cmds {
        let parsed = WrapperCommand::parse_shell_words(line)?;
        let mut words = vec![parsed.program];
        words.extend(parsed.args);
        subjects.push(reported(line.clone(), words));
    }
    Ok(subjects)
}

/// A wrapper started by a command line, reported on.
fn reported(label: String, command: Vec<OsString>) -> Subject {
    Subject {
        label,
        role: Role::Reported,
        command,
        install_over: None,
    }
}

/// The report's line about one host's install.
fn install_line(installed: &Installed) -> String {
    let host = installed.host;
    let how = match installed.installed_in {
        Some(d) => format!("installed in {:.0} s", d.as_secs_f64()),
        None => "reused".to_owned(),
    };
    let tree = if installed.locked {
        format!(
            "tree from kits/pins/npm/{}-{}",
            host.name(),
            installed.version
        )
    } else {
        "no lockfile: tree resolved today".to_owned()
    };
    format!(
        "{host}: {} {} ({}), {how}; {tree}",
        host.package(),
        installed.version,
        installed.reports
    )
}

/// A tag no earlier run used.
fn unique() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_nanos();
    format!("{:x}", nanos % (1 << 40))
}
