//! `kits`: the end-to-end kit against the real iai-mcp daemon, the hosts
//! kit and the benchmarks. `cargo xtask e2e`, `hosts` and `bench` build
//! the binaries and run this with the task's arguments.

mod cli;

use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

/// Runs the wrapper against the real iai-mcp daemon and real MCP hosts, or
/// measures it, and prints what it found. Exit code: 0 when this
/// workspace's wrapper passed, 1 when it failed, 2 on a usage error or when
/// a kit could not run.
#[derive(Debug, Parser)]
#[command(version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// What the kits can do.
#[derive(Debug, Subcommand)]
enum Command {
    /// Latency, throughput, cold start, memory and recovery of the wrapper
    /// next to the floor of talking to the fake daemon directly; writes
    /// target/bench/. Figures, not a verdict.
    Bench(cli::tools::BenchArgs),
    /// The wrapper against the real iai-mcp daemon, 3.3.0 or --iai-pme
    /// VERSION (needs Python 3.11+, Node.js and the package registry); exit
    /// 0 only if no check fails.
    E2e(cli::tools::E2eArgs),
    /// Claude Code, Codex CLI and opencode from the npm registry, driven
    /// offline against a stand-in model, start the wrapper on the real
    /// iai-mcp daemon: tools offered, capture and search, a daemon restart
    /// inside one session, every tool, an error, start-up time (needs
    /// Python 3.11+, Node.js and the registries); exit 0 only if no check
    /// of this wrapper fails.
    Hosts(cli::hosts::HostsArgs),
}

fn main() -> ExitCode {
    match run(Cli::parse().command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("kits: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(command: Command) -> Result<ExitCode> {
    match command {
        Command::Bench(args) => cli::tools::bench(&args),
        Command::E2e(args) => cli::tools::e2e(&args),
        Command::Hosts(args) => cli::hosts::hosts(&args),
    }
}
