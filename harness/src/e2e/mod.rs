//! The end-to-end kit: the wrapper against the real iai-mcp 3.3.0 daemon.
//!
//! [`run_e2e`] prepares a virtual environment with the pinned release and
//! the official MCP Python SDK ([`pyenv`]), starts the daemon offline
//! ([`daemon`]), and checks, through the real wrapper binary:
//!
//! - the tool listing against 3.3.0's own bundled wrapper, property by
//!   property ([`listing`]);
//! - `--check` against the live daemon;
//! - every tool called by the SDK with valid arguments, every result
//!   validated against its `outputSchema`;
//! - a call after a daemon restart; the V3-05 race with a daemon restart
//!   as the drop, fixed and pre-fix;
//! - a capture whose reply is lost when the daemon dies after storing it,
//!   stored once by this wrapper (and, for reference, by 3.3.0's own);
//! - the degraded answers with the daemon stopped, validated too, and the
//!   capture made then stored once;
//! - the auto-heal: `iai-mcp doctor --auto` bringing the daemon back;
//! - `install` over what `iai-mcp capture-hooks install` wrote, the SDK
//!   starting the switched entry, and `uninstall` restoring the bytes
//!   ([`hosts`]).
//!
//! Each check is a [`Row`] of the [`E2eReport`] table.

pub mod checks;
pub mod daemon;
pub mod hosts;
pub mod listing;
pub mod proxy;
pub mod pyenv;

use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::error::HarnessError;
use crate::table::{Align, table_lines};

/// How to run the kit.
#[derive(Debug, Clone)]
pub struct E2eConfig {
    /// Where the virtual environment lives (kept between runs).
    pub work_dir: PathBuf,
    /// The wrapper binary under test.
    pub wrapper: PathBuf,
    /// The Python interpreter to build the environment with (default: the
    /// first supported one on `PATH`).
    pub python: Option<PathBuf>,
    /// The Node.js binary that runs 3.3.0's own wrapper.
    pub node: PathBuf,
}

/// The verdict of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The wrapper did what it must.
    Pass,
    /// It did not.
    Fail,
    /// A reference figure (3.3.0's own wrapper), judged by no one.
    Info,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "FAIL",
            Verdict::Info => "info",
        })
    }
}

/// One line of the report.
#[derive(Debug, Clone)]
pub struct Row {
    /// What was checked.
    pub check: String,
    /// How it came out.
    pub verdict: Verdict,
    /// Figures and, on failure, why.
    pub detail: String,
}

impl Row {
    /// A check that holds when `ok`.
    pub fn judged(check: impl Into<String>, ok: bool, detail: impl Into<String>) -> Self {
        Row {
            check: check.into(),
            verdict: if ok { Verdict::Pass } else { Verdict::Fail },
            detail: detail.into(),
        }
    }

    /// A reference figure.
    pub fn info(check: impl Into<String>, detail: impl Into<String>) -> Self {
        Row {
            check: check.into(),
            verdict: Verdict::Info,
            detail: detail.into(),
        }
    }
}

/// What the kit found.
#[derive(Debug, Clone)]
pub struct E2eReport {
    /// The checks, in the order run.
    pub rows: Vec<Row>,
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
        let mut rows = Vec::new();
        for row in &self.rows {
            let mut lines = row.detail.lines();
            let first = lines.next().unwrap_or("").to_owned();
            rows.push([row.check.clone(), row.verdict.to_string(), first]);
            rows.extend(lines.map(|line| [String::new(), String::new(), format!("  {line}")]));
        }
        for line in table_lines(&["check", "result", "detail"], &rows, Align::Left) {
            writeln!(f, "{line}")?;
        }
        writeln!(f, "{}", self.setup)?;
        let failed = self.rows.iter().filter(|r| r.verdict == Verdict::Fail);
        let failed = failed.count();
        write!(
            f,
            "verdict: {} ({} checks, {failed} failed, {:.0} s)",
            if failed == 0 { "PASS" } else { "FAIL" },
            self.rows.len(),
            self.elapsed.as_secs_f64()
        )
    }
}

/// Checks `done` every `every_ms` milliseconds until it holds; past
/// `timeout`, fails with what `why` says.
fn poll(
    timeout: Duration,
    every_ms: u64,
    mut done: impl FnMut() -> Result<bool, HarnessError>,
    why: impl FnOnce() -> String,
) -> Result<(), HarnessError> {
    let deadline = Instant::now() + timeout;
    while !done()? {
        if Instant::now() > deadline {
            return Err(HarnessError::Scenario(why()));
        }
        std::thread::sleep(Duration::from_millis(every_ms));
    }
    Ok(())
}

/// Runs every check; an `Err` means the kit could not run at all (no
/// Python, no registry, a daemon that never starts).
pub fn run_e2e(cfg: &E2eConfig) -> Result<E2eReport, HarnessError> {
    let started = Instant::now();
    let py = pyenv::ensure(&cfg.work_dir, cfg.python.as_deref())?;
    let setup = format!(
        "environment: {} ({}; {:.0} MiB on disk)",
        py.root.display(),
        py.installed_in.map_or_else(
            || "reused".to_owned(),
            |d| format!(
                "installed {} and {} in {:.0} s",
                pyenv::IAI_PME,
                pyenv::MCP_SDK,
                d.as_secs_f64()
            )
        ),
        py.size as f64 / (1024.0 * 1024.0)
    );
    let mut real = daemon::RealDaemon::start(&py)?;
    let kit = checks::Kit {
        py: &py,
        wrapper: &cfg.wrapper,
        node: &cfg.node,
    };
    let mut rows = Vec::new();
    rows.push(kit.listing(&real));
    rows.push(kit.check_flag(&real));
    rows.extend(kit.sdk_live(&real));
    rows.push(kit.host_switch(&real));
    rows.push(kit.restart(&mut real));
    real.ensure_running()?;
    rows.extend(kit.race(&mut real));
    real.ensure_running()?;
    rows.extend(kit.capture_once(&mut real));
    real.ensure_running()?;
    rows.extend(kit.degraded(&mut real));
    real.ensure_running()?;
    rows.push(kit.heal(&mut real));
    Ok(E2eReport {
        rows,
        setup,
        elapsed: started.elapsed(),
    })
}
