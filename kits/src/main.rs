//! `kits`: the end-to-end kit against the real iai-mcp daemon, the hosts
//! kit and the benchmarks. `cargo xtask e2e`, `hosts` and `bench` build
//! the binaries and run this with the task's arguments.

// Every item but the fallback `main` is Unix only, as the kits are (the
// library's documentation says why).

#[cfg(unix)]
mod cli;

use std::process::ExitCode;

#[cfg(unix)]
use anyhow::Result;
#[cfg(unix)]
use clap::{Parser, Subcommand};

/// Runs the wrapper against the real iai-mcp daemon and real MCP hosts, or
/// measures it, and prints what it found. Exit code: 0 when this
/// workspace's wrapper passed, 1 when it failed, 2 on a usage error or when
/// a kit could not run.
#[cfg(unix)]
#[derive(Debug, Parser)]
#[command(version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// What the kits can do.
#[cfg(unix)]
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

#[cfg(unix)]
fn main() -> ExitCode {
    match run(Cli::parse().command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("kits: {e:#}");
            ExitCode::from(2)
        }
    }
}

#[cfg(unix)]
fn run(command: Command) -> Result<ExitCode> {
    match command {
        Command::Bench(args) => cli::tools::bench(&args),
        Command::E2e(args) => cli::tools::e2e(&args),
        Command::Hosts(args) => cli::hosts::hosts(&args),
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
