//! `kits hosts`: the hosts kit's command line.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use devkit::bins;
use devkit::rows::verdict_code;
use kits::e2e::{Deps, E2eConfig, Release};
use kits::hosts::host::{Host, HostPin};
use kits::hosts::{HostsConfig, refresh_pins, run_hosts};

/// Claude Code, Codex CLI and opencode, each installed from the npm
/// registry at its pinned version and driven offline against a stand-in
/// model, start the wrapper (installed from its wheel) on the real
/// iai-mcp 3.3.0 daemon.
#[derive(Debug, Args)]
pub struct HostsArgs {
    /// Another version of a host than the pinned one, as NAME=VERSION or
    /// NAME=latest (NAME: claude-code, codex, opencode); repeatable.
    #[arg(long, value_name = "NAME=VERSION")]
    host_version: Vec<HostPin>,
    /// Only this host (repeatable; default: all three).
    #[arg(long, value_name = "NAME")]
    host: Vec<Host>,
    /// Another wrapper command to run the same checks with, reported on
    /// beside this wrapper (repeatable), e.g. "node /path/index.js".
    #[arg(long, value_name = "CMD")]
    wrapper_cmd: Vec<String>,
    /// Also run the checks with the release's own Node wrapper, from the
    /// end-to-end kit's environment.
    #[arg(long)]
    release_wrapper: bool,
    /// The Python 3.11 or 3.12 interpreter for the end-to-end environment
    /// (default: the first on PATH).
    #[arg(long)]
    python: Option<PathBuf>,
    /// The Node.js binary that runs the release's own wrapper.
    #[arg(long, default_value = "node")]
    node: PathBuf,
    /// Also run the wrappers broken on purpose (capture-offline,
    /// mute-third-call, errors-after-first) in front of this wrapper; the
    /// run fails unless each fails at least one check in every host.
    #[arg(long)]
    broken_wrappers: bool,
    /// Write the pins afresh and run nothing else: each host's npm
    /// lockfile at its pinned version (kits/pins/npm/) and the constraints
    /// of each constrained iai-pme release (kits/pins/), resolved today.
    #[arg(long)]
    refresh_pins: bool,
}

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
