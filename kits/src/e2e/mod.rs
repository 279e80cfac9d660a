//! The end-to-end kit: the wrapper against the real iai-mcp daemon, 3.3.0
//! (the pinned release) unless another [`Release`] is asked for.
//!
//! [`run_e2e`] prepares a virtual environment with the release and the
//! official MCP Python SDK ([`pyenv`]), starts the daemon offline
//! ([`daemon`]), and runs the [`checks`] through the real wrapper binary:
//! what the model reads against the release's own wrapper ([`fidelity`]), `--check`, every
//! tool through the SDK with its results validated, text outside ASCII
//! read back as characters, daemon restarts and the V3-05 race, a capture
//! whose reply is lost ([`proxy`]), the degraded answers, the auto-heal,
//! and `install`/`uninstall` over what the release's own installer wrote
//! ([`hosts`]). Each check is a [`Row`] of the [`E2eReport`] table.
//!
//! The wrapper serves the surface of the release installed beside it, so
//! against any release the first row requires exactly that release's own
//! wrapper's `initialize` and `tools/list` ([`fidelity`]), and every later
//! check is judged the same way. Another release runs in an environment
//! of its own, or cheaply on the pinned release's dependencies
//! ([`Deps::Pinned`]).
//!
//! The binary under test is [`E2eConfig::wrapper`], unless [`WHEEL_ENV`]
//! names a wheel: then the kit installs that wheel into its environment,
//! beside iai-mcp's own programs, and tests the binary it put in the
//! environment's `bin/`, the path a user gets. `cargo xtask e2e` builds
//! the wheel (xtask's `packaging` module) and names it there.

pub mod checks;
pub mod daemon;
pub mod fidelity;
pub mod hosts;
pub mod listing;
pub mod proxy;
pub mod pyenv;
pub mod release;
pub mod upgrade;
mod wait;

use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use devkit::bins::WHEEL_ENV;
use devkit::command::run_within;
use devkit::pyenv::install_wheel;
use devkit::rows::{Row, Verdict, write_rows};

use pyenv::Contents;
pub use release::Release;

use harness::error::HarnessError;

/// How to run the kit.
#[derive(Debug, Clone)]
pub struct E2eConfig {
    /// Where the virtual environments live (kept between runs): the pinned
    /// release's in `venv`, another's in `<VERSION>/venv`
    /// ([`Release::e2e_venv`]).
    pub work_dir: PathBuf,
    /// The iai-pme release whose daemon, CLIs and own wrapper are used.
    pub release: Release,
    /// The wrapper binary under test, unless [`WHEEL_ENV`]
    /// names a wheel to install and test instead.
    pub wrapper: PathBuf,
    /// The Python interpreter to build the environment with (default: the
    /// first supported one on `PATH`).
    pub python: Option<PathBuf>,
    /// The Node.js binary that runs the release's own wrapper.
    pub node: PathBuf,
    /// Where the release's dependencies come from.
    pub deps: Deps,
}

/// Where a release's dependencies come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Deps {
    /// Its own environment, with everything it declares installed
    /// afresh (about 660 MB for a 3.x release).
    #[default]
    Own,
    /// The pinned release's environment: the release alone is installed
    /// in a small environment that imports the rest from the pinned one
    /// ([`pyenv::ensure_on_pinned`]); only for a release that declares
    /// the same dependencies, the cheap way CI covers other releases.
    Pinned,
}

impl E2eConfig {
    /// The environment the checks run in, made ready.
    fn environment(&self) -> Result<pyenv::PyEnv, HarnessError> {
        let python = self.python.as_deref();
        match self.deps {
            Deps::Own => pyenv::ensure(
                &self.release.e2e_venv(&self.work_dir),
                python,
                &self.release,
                Contents::Kit,
            ),
            Deps::Pinned => {
                let pinned = Release::pinned();
                let base = pyenv::ensure(
                    &pinned.e2e_venv(&self.work_dir),
                    python,
                    &pinned,
                    Contents::Kit,
                )?;
                pyenv::ensure_on_pinned(
                    &self.release.on_pinned_venv(&self.work_dir),
                    &base,
                    &self.release,
                )
            }
        }
    }

    /// Where [`environment`](Self::environment) keeps the environment.
    pub fn venv(&self) -> PathBuf {
        match self.deps {
            Deps::Own => self.release.e2e_venv(&self.work_dir),
            Deps::Pinned => self.release.on_pinned_venv(&self.work_dir),
        }
    }
}

/// What the kit found.
#[derive(Debug, Clone)]
pub struct E2eReport {
    /// The release under test.
    pub release: Release,
    /// The checks, in the order run.
    pub rows: Vec<Row>,
    /// The binary tested, and the wheel it came from.
    pub subject: String,
    /// The environment: install time and size.
    pub setup: String,
    /// The whole run's time.
    pub elapsed: Duration,
}

impl E2eReport {
    /// Whether no check failed.
    pub fn passed(&self) -> bool {
        self.rows.iter().all(|r| r.verdict != Verdict::Fail)
    }
}

impl fmt::Display for E2eReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_rows(f, &self.rows)?;
        writeln!(f, "{}", self.subject)?;
        writeln!(f, "{}", self.setup)?;
        let count = |v: Verdict| self.rows.iter().filter(|r| r.verdict == v).count();
        let failed = count(Verdict::Fail);
        write!(
            f,
            "verdict: {} ({} checks, {failed} failed, {:.0} s)",
            if failed == 0 { "PASS" } else { "FAIL" },
            self.rows.len(),
            self.elapsed.as_secs_f64()
        )
    }
}

/// Runs every check; an `Err` means the kit could not run at all (no
/// Python, no registry, a daemon that never starts).
pub fn run_e2e(cfg: &E2eConfig) -> Result<E2eReport, HarnessError> {
    let started = Instant::now();
    let py = cfg.environment()?;
    let setup = format!(
        "environment: {} ({}; {:.0} MiB on disk)",
        py.root.display(),
        match cfg.deps {
            Deps::Own => py.installed(Contents::Kit),
            Deps::Pinned => format!(
                "{} alone {}; its dependencies and the SDK from {}'s environment",
                py.release.requirement(),
                py.installed_in.map_or("reused".to_owned(), |d| format!(
                    "installed in {:.0} s",
                    d.as_secs_f64()
                )),
                release::PINNED
            ),
        },
        py.size as f64 / (1024.0 * 1024.0)
    );
    let tested = tested(cfg, &py)?;
    let mut real = daemon::RealDaemon::start(&py)?;
    let kit = checks::Kit {
        py: &py,
        wrapper: &tested.binary,
        node: &cfg.node,
        release: &cfg.release,
    };
    let mut rows = vec![
        kit.listing(&real),
        kit.check_flag(&real),
        kit.daemon_release(&real),
        kit.sdk_live(&real),
        kit.characters(&real),
        kit.host_switch(&real),
        kit.restart(&mut real),
    ];
    real.ensure_running()?;
    rows.extend(kit.race(&mut real));
    real.ensure_running()?;
    rows.extend(kit.capture_once(&mut real));
    real.ensure_running()?;
    rows.extend(kit.degraded(&mut real));
    real.ensure_running()?;
    rows.push(kit.heal(&mut real));
    drop(real);
    // An upgrade from an older release to the pinned one, in a scratch
    // environment on the pinned release's dependencies: once, with the
    // pinned release's run.
    if cfg.release.is_pinned() && cfg.deps == Deps::Own {
        rows.push(upgrade::check(cfg, &py));
    }
    Ok(E2eReport {
        release: cfg.release.clone(),
        rows,
        subject: tested.line,
        setup,
        elapsed: started.elapsed(),
    })
}

/// The binary the checks run, and the report's line about it.
#[derive(Debug, Clone)]
pub struct Tested {
    /// The binary.
    pub binary: PathBuf,
    /// `wrapper: PATH (VERSION), installed from WHEEL`, or `..., not from
    /// a wheel`.
    pub line: String,
}

/// How long the wrapper's `--version` may take.
const VERSION_LIMIT: Duration = Duration::from_secs(30);

/// The wheel [`WHEEL_ENV`] names, installed into the environment, or else
/// the configured binary. The hosts kit tests the same binary.
pub fn tested(cfg: &E2eConfig, py: &pyenv::PyEnv) -> Result<Tested, HarnessError> {
    let wheel = std::env::var_os(WHEEL_ENV)
        .filter(|w| !w.is_empty())
        .map(PathBuf::from);
    let (binary, origin) = match wheel {
        Some(wheel) => (
            install_wheel(&py.root, &wheel)?,
            format!("installed from {}", wheel.display()),
        ),
        None => (cfg.wrapper.clone(), "not from a wheel".to_owned()),
    };
    let version = run_within(
        std::process::Command::new(&binary).arg("--version"),
        &format!("`{} --version`", binary.display()),
        VERSION_LIMIT,
    )?;
    let line = format!(
        "wrapper: {} ({}), {origin}",
        binary.display(),
        version.trim()
    );
    Ok(Tested { binary, line })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(release: &str, rows: Vec<Row>) -> E2eReport {
        E2eReport {
            release: release.parse().expect("release"),
            rows,
            subject: "wrapper: x".into(),
            setup: "environment: y".into(),
            elapsed: Duration::from_secs(3),
        }
    }

    #[test]
    fn a_run_passes_when_no_check_failed_and_says_so() {
        let rows = vec![
            Row::judged("restart", true, "ok"),
            Row::info("reference", "figures"),
        ];
        let text = report("3.0.0", rows.clone()).to_string();
        assert!(report("3.0.0", rows.clone()).passed());
        assert!(
            text.ends_with("verdict: PASS (2 checks, 0 failed, 3 s)"),
            "{text}"
        );
        let mut failing = rows;
        failing.push(Row::judged("listing", false, "instructions differ"));
        let failed = report("3.0.0", failing);
        assert!(!failed.passed());
        assert!(
            failed
                .to_string()
                .ends_with("verdict: FAIL (3 checks, 1 failed, 3 s)")
        );
    }
}
