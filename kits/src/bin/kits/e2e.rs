//! The end-to-end kit against the real iai-mcp daemon.

use std::process::ExitCode;

use anyhow::{Context, Result};
use devkit::bins;
use devkit::rows::verdict_code;
use kits::cli::e2e::E2eArgs;
use kits::e2e::{Deps, E2eConfig, run_e2e};

/// Runs every check and prints the table; exit 0 only if none failed.
pub fn e2e(args: &E2eArgs) -> Result<ExitCode> {
    let cfg = E2eConfig {
        work_dir: bins::target_dir().join("e2e"),
        release: args.iai_pme.clone(),
        wrapper: bins::try_wrapper_bin()?,
        python: args.python.clone(),
        node: args.node.clone(),
        deps: if args.on_pinned_deps {
            Deps::Pinned
        } else {
            Deps::Own
        },
    };
    eprintln!(
        "e2e: {} against iai-mcp {} (environment in {})",
        cfg.wrapper.display(),
        cfg.release,
        cfg.venv().display()
    );
    let report = run_e2e(&cfg).context("the end-to-end kit could not run")?;
    println!("{report}");
    Ok(verdict_code(report.passed()))
}
