//! The `kits` binary's command line: the benchmarks' ([`mod@bench`]), the
//! end-to-end kit's ([`e2e`]) and the hosts kit's ([`hosts`]). The binary
//! runs what it parses; `cargo xtask` passes these tasks on to it
//! (xtask/src/flags.rs names them and a test holds the names to these).
//! The benchmarks and the hosts kit are Unix only (the crate's
//! documentation says why): on Windows the command line has `e2e` alone.

#[cfg(unix)]
pub mod bench;
pub mod e2e;
#[cfg(unix)]
pub mod hosts;

use clap::{Parser, Subcommand};

/// Runs the wrapper against the real iai-mcp daemon and real MCP hosts, or
/// measures it, and prints what it found. Exit code: 0 when this
/// workspace's wrapper passed, 1 when it failed, 2 on a usage error or when
/// a kit could not run.
#[derive(Debug, Parser)]
#[command(name = "kits", version)]
pub struct Cli {
    /// What to run.
    #[command(subcommand)]
    pub task: Task,
}

/// What the kits can do.
#[derive(Debug, Subcommand)]
pub enum Task {
    /// Latency, throughput, cold start, memory and recovery of the wrapper
    /// next to the floor of talking to the fake daemon directly; writes
    /// target/bench/. Figures, not a verdict.
    #[cfg(unix)]
    Bench(bench::BenchArgs),
    /// The wrapper against the real iai-mcp daemon, 3.3.0 or --iai-pme
    /// VERSION (needs Python 3.11+, Node.js and the package registry); exit
    /// 0 only if no check fails.
    E2e(e2e::E2eArgs),
    /// Claude Code, Codex CLI and opencode from the npm registry, driven
    /// offline against a stand-in model, start the wrapper on the real
    /// iai-mcp daemon: tools offered, capture and search, a daemon restart
    /// inside one session, every tool, an error, start-up time (needs
    /// Python 3.11+, Node.js and the registries); exit 0 only if no check
    /// of this wrapper fails.
    #[cfg(unix)]
    Hosts(hosts::HostsArgs),
}
