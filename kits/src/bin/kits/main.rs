//! `kits`: the end-to-end kit against the real iai-mcp daemon, the hosts
//! kit and the benchmarks. `cargo xtask e2e`, `hosts` and `bench` build
//! the binaries and run this with the task's arguments. The command line
//! is declared in the library (`kits::cli`); this binary runs what it
//! parses.

mod hosts;
mod tools;

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
        Task::Bench(args) => tools::bench(&args),
        Task::E2e(args) => tools::e2e(&args),
        Task::Hosts(args) => hosts::hosts(&args),
    }
}
