//! `kits`: the end-to-end kit against the real iai-mcp daemon, the hosts
//! kit and the benchmarks. `cargo xtask e2e`, `hosts` and `bench` build
//! the binaries and run this with the task's arguments. The command line
//! is declared in the library (`kits::cli`); this binary runs what it
//! parses.

// Every item but the fallback `main` is Unix only, as the kits are (the
// library's documentation says why).
#[cfg(unix)]
mod hosts;
#[cfg(unix)]
mod tools;

use std::process::ExitCode;

#[cfg(unix)]
use anyhow::Result;
#[cfg(unix)]
use clap::Parser;
#[cfg(unix)]
use kits::cli::{Cli, Task};

#[cfg(unix)]
fn main() -> ExitCode {
    match run(Cli::parse().task) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("kits: {e:#}");
            ExitCode::from(2)
        }
    }
}

#[cfg(unix)]
fn run(task: Task) -> Result<ExitCode> {
    match task {
        Task::Bench(args) => tools::bench(&args),
        Task::E2e(args) => tools::e2e(&args),
        Task::Hosts(args) => hosts::hosts(&args),
    }
}

/// Where the kits cannot run: says so and exits 2, as for a kit that
/// could not run.
#[cfg(not(unix))]
fn main() -> ExitCode {
    eprintln!(
        "kits: the kits run on Unix only (the real daemon's Unix socket, signals, process groups, /proc)"
    );
    ExitCode::from(2)
}
