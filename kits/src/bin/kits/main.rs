//! `kits`: the end-to-end kit against the real iai-mcp daemon, the hosts
//! kit and the benchmarks. `cargo xtask e2e`, `hosts` and `bench` build
//! the binaries and run this with the task's arguments. The command line
//! is declared in the library (`kits::cli`); this binary runs what it
//! parses. On Windows it runs the end-to-end kit alone (the library's
//! documentation says why).

#[cfg(unix)]
mod bench;
mod e2e;
#[cfg(unix)]
mod hosts;

use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;
use kits::cli::{Cli, Task};

fn main() -> ExitCode {
    match run(Cli::parse().task) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("kits: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(task: Task) -> Result<ExitCode> {
    match task {
        #[cfg(unix)]
        Task::Bench(args) => bench::bench(&args),
        Task::E2e(args) => e2e::e2e(&args),
        #[cfg(unix)]
        Task::Hosts(args) => hosts::hosts(&args),
    }
}
