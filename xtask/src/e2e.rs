//! `cargo xtask e2e`: builds the wrapper, then runs the harness's
//! end-to-end kit against the real iai-mcp 3.3.0 daemon.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use harness::bins::{self, Profile};
use harness::e2e::{E2eConfig, run_e2e};

/// Arguments of `cargo xtask e2e`.
#[derive(Debug, Args)]
pub struct E2eArgs {
    /// The Python 3.11 or 3.12 interpreter to build the environment with
    /// (default: the first on PATH).
    #[arg(long)]
    python: Option<PathBuf>,
    /// The Node.js binary that runs 3.3.0's own wrapper for comparison.
    #[arg(long, default_value = "node")]
    node: PathBuf,
    /// Build and test the release binary.
    #[arg(long)]
    release: bool,
}

/// Builds, runs every check, prints the table; `ExitCode::SUCCESS` only if
/// no check failed.
pub fn run(args: &E2eArgs, root: &std::path::Path) -> Result<ExitCode> {
    let profile = if args.release {
        Profile::Release
    } else {
        Profile::Dev
    };
    let built = bins::cargo_build(&[bins::WRAPPER], &profile, false)?;
    let cfg = E2eConfig {
        work_dir: root.join("target").join("e2e"),
        wrapper: built[0].clone(),
        python: args.python.clone(),
        node: args.node.clone(),
    };
    eprintln!(
        "e2e: {} against iai-mcp 3.3.0 (environment in {})",
        cfg.wrapper.display(),
        cfg.work_dir.display()
    );
    let report = run_e2e(&cfg).context("the end-to-end kit could not run")?;
    println!("{report}");
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
