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
//! `install`/`uninstall` over what the release's own installer wrote
//! ([`hosts`]), and on macOS the wake-up through the real launchd
//! (`launchd`). Each check is a [`Row`] of the [`E2eReport`] table. The
//! daemon is reached and stopped as on the system the kit runs on
//! ([`address`], [`stop`]).
//!
//! The wrapper serves the surface of the release installed beside it, so
//! against any release the first row requires exactly that release's own
//! wrapper's `initialize` and `tools/list` ([`fidelity`]), and every later
//! check is judged the same way. Another release runs in an environment
//! of its own, or cheaply on the pinned release's dependencies
//! ([`Deps::Pinned`]).
//!
//! The binary under test is [`E2eConfig::wrapper`], unless [`WHEEL_ENV`](devkit::bins::WHEEL_ENV)
//! names a wheel: then the kit installs that wheel into its environment,
//! beside iai-mcp's own programs, and tests the binary it put in the
//! environment's `bin/`, the path a user gets. `cargo xtask e2e` builds
//! the wheel (xtask's `packaging` module) and names it there.

pub mod address;
pub mod checks;
mod config;
pub mod daemon;
pub mod fidelity;
pub mod hosts;
#[cfg(target_os = "macos")]
pub mod launchd;
pub mod listing;
pub mod proxy;
pub mod pyenv;
pub mod release;
pub mod stop;
mod subject;
pub mod upgrade;
mod wait;

use std::fmt;
use std::time::{Duration, Instant};

use devkit::rows::{Row, Verdict, write_rows};

pub use config::{Deps, E2eConfig};
use pyenv::Contents;
pub use release::Release;
pub use subject::{Tested, tested};

use harness::error::HarnessError;

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
    #[cfg(target_os = "macos")]
    {
        rows.push(kit.launchd_wake(&mut real));
        real.ensure_running()?;
    }
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
