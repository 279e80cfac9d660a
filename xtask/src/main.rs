//! `cargo xtask`: project automation. Thin: parses arguments and calls the
//! `harness` library.

mod all;
mod bench;
mod e2e;
mod progress;
mod race;
mod soak;
mod sweep;

use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

/// Project automation for the iai-mcp wrapper workspace.
#[derive(Debug, Parser)]
#[command(bin_name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

/// The tasks.
#[derive(Debug, Subcommand)]
enum Task {
    /// Show the V3-05 disconnect race live: run it against the wrapper in
    /// prefix mode (must fail with daemon_unreachable every time) and in
    /// fixed mode (must succeed every time, holding one daemon connection).
    /// With --sweep, map the whole race window instead.
    Race(race::RaceArgs),
    /// Measure the wrapper (release build) against the floor of talking to
    /// the fake daemon directly: cold start, latency, throughput, memory,
    /// recovery. Prints a Markdown table; writes target/bench/.
    Bench(bench::BenchArgs),
    /// Soak the wrapper (fixed mode): calls keep flowing for --seconds while
    /// the fake daemon drops, hangs, delays, garbles, slices, cuts, goes
    /// down and up, strays and duplicates on a seeded schedule. Prints the
    /// report; exits 0 only if no call was lost or answered twice, no write
    /// ran twice, descriptors and memory stayed flat and the wrapper lived.
    Soak(soak::SoakArgs),
    /// Check the wrapper against the real iai-mcp 3.3.0 daemon: creates a
    /// Python venv under target/e2e with iai-pme 3.3.0 and the MCP SDK
    /// (needs Python 3.11+, Node.js and the package registry), runs the
    /// daemon offline and prints a table; exits 0 only if every check holds.
    E2e(e2e::E2eArgs),
}

fn main() -> Result<ExitCode> {
    match Cli::parse().task {
        Task::Race(args) => race::run(&args),
        Task::Bench(args) => bench::run(&args, &bench::workspace_root()),
        Task::Soak(args) => soak::run(&args),
        Task::E2e(args) => e2e::run(&args, &bench::workspace_root()),
    }
}
