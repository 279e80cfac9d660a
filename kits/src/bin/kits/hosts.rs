//! `kits hosts`: runs the hosts kit.

use std::process::ExitCode;

use anyhow::{Context, Result};
use devkit::bins;
use devkit::rows::verdict_code;
use kits::cli::hosts::HostsArgs;
use kits::e2e::{Deps, E2eConfig, Release};
use kits::hosts::{HostsConfig, refresh_pins, run_hosts};

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
            deps: Deps::Own,
        },
        versions: args.host_version.clone(),
        only: args.host.clone(),
        wrapper_cmds: args.wrapper_cmd.clone(),
        release_wrapper: args.release_wrapper,
        broken_wrappers: args.broken_wrappers,
    };
    if args.refresh_pins {
        for file in refresh_pins(&cfg).context("refreshing the pins")? {
            println!("wrote {}", file.display());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let report = run_hosts(&cfg).context("the hosts kit could not run")?;
    println!("{report}");
    println!("report: {}", cfg.work_dir.join("report.json").display());
    Ok(verdict_code(report.passed()))
}
