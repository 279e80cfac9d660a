//! `kits hosts`: runs the hosts kit.

use std::process::ExitCode;

use anyhow::{Context, Result};
use devkit::bins;
use devkit::rows::verdict_code;
use kits::cli::hosts::HostsArgs;
use kits::e2e::{E2eConfig, Release};
use kits::hosts::{HostsConfig, run_hosts};

/// Runs the hosts and prints the table; exit 0 only if no check of this
/// workspace's wrapper failed.
pub fn hosts(args: &HostsArgs) -> Result<ExitCode> {
    let target = bins::target_dir();
    let cfg = HostsConfig {
        work_dir: target.join("hosts"),
        e2e: E2eConfig {
            work_dir: target.join("e2e"),
            release: Release::pinned(),
            wrapper: bins::try_wrapper_bin()?,
            python: args.python.clone(),
            node: args.node.clone(),
        },
        versions: args.host_version.clone(),
        only: args.host.clone(),
        wrapper_cmds: args.wrapper_cmd.clone(),
        release_wrapper: args.release_wrapper,
    };
    let report = run_hosts(&cfg).context("the hosts kit could not run")?;
    println!("{report}");
    println!("report: {}", cfg.work_dir.join("report.json").display());
    Ok(verdict_code(report.passed()))
}
