//! `harness`: runs scripted scenarios against an MCP wrapper and the fake
//! iai-mcp daemon, and scores wrappers. `cargo xtask` builds the binaries
//! and runs this (and, for `e2e`, `hosts` and `bench`, the `kits` binary).
//! The command line is declared in the library (`harness::cli`); this
//! binary runs what it parses.

mod race;
mod scenario;
mod score;

use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;
use harness::cli::{Cli, Task};

fn main() -> ExitCode {
    match run(Cli::parse().task) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("harness: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(task: Task) -> Result<ExitCode> {
    match task {
        Task::Race(args) => race::race(&args),
        Task::Score(args) => score::score(&args),
        Task::Scenario(task) => scenario::run(&task),
        Task::Sweep(args) => race::sweep(&args),
    }
}
