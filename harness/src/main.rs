//! `harness`: runs scripted scenarios against an MCP wrapper and the fake
//! iai-mcp daemon, and scores wrappers. `cargo xtask` builds the binaries
//! and runs this (and, for `e2e`, `hosts` and `bench`, the `kits` binary).

mod cli;

use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};
use harness::scenario::{DownUp, Hang, Herd, Hostile, Smoke, Soak, Storm};

use cli::scenario::ScenarioArgs;

/// Runs scripted scenarios against an MCP wrapper and the fake iai-mcp
/// daemon and prints what happened and a verdict. Exit code: 0 when this
/// workspace's wrapper passed (another wrapper is reported on, not judged),
/// 1 when it failed, 2 on a usage error or when the harness itself failed.
#[derive(Debug, Parser)]
#[command(version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// What the harness can do.
#[derive(Debug, Subcommand)]
enum Command {
    /// The V3-05 disconnect race: drop the wrapper's daemon connection, then
    /// call a tool while the wrapper waits to reconnect. Without --mode or
    /// --wrapper-cmd, both modes: prefix must fail with daemon_unreachable
    /// every time, fixed must answer every time holding one connection.
    Race(cli::race::RaceArgs),
    /// Every scenario against each wrapper: one table of properties
    /// (contract, then this wrapper's policy) by wrapper, each failure with
    /// its cause; writes score.json and a self-contained score.html.
    Score(cli::score::ScoreArgs),
    /// Drop storm: the daemon drops the connection again and again while
    /// calls (reads and writes) are kept in flight.
    Storm(ScenarioArgs<Storm>),
    /// The daemon goes down and comes back: calls fail cleanly at the
    /// connect deadline, reconnect attempts stay bounded, the next call after
    /// the daemon is back succeeds.
    DownUp(ScenarioArgs<DownUp>),
    /// The daemon hangs: a call fails with daemon_timeout at its deadline,
    /// the silent connection is replaced, and after the daemon resumes the
    /// next call succeeds.
    Hang(ScenarioArgs<Hang>),
    /// Many wrappers (50 by default) on one daemon: it drops every
    /// connection at once, then goes down and comes back; every call
    /// answered once, every wrapper back on one connection, reconnects
    /// spread out, the peak accept rate and the time to recover.
    Herd(ScenarioArgs<Herd>),
    /// Hostile client: random and malformed lines (seeded) among valid
    /// requests; every request answered once, stdout only JSON-RPC, memory
    /// flat.
    Hostile(ScenarioArgs<Hostile>),
    /// Soak: calls keep flowing while the daemon drops, hangs, delays,
    /// garbles, slices, cuts, goes down and up, strays and duplicates on a
    /// seeded schedule.
    Soak(ScenarioArgs<Soak>),
    /// Map the race window: the race for each mode (or wrapper command) at
    /// every offset of a range and without the widener; writes sweep.json
    /// and sweep.svg. Ctrl-C stops it and still writes the partial report
    /// (exit code 130).
    Sweep(cli::race::SweepArgs),
    /// The smoke run any build must pass, on any machine or emulator:
    /// --version, the handshake, tools/list (15 tools), a tool call, a
    /// DROP and the next call on one connection, exit on stdin EOF.
    /// Put an emulator first in --wrapper-cmd to run a cross-built binary.
    Smoke(ScenarioArgs<Smoke>),
}

fn main() -> ExitCode {
    match run(Cli::parse().command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("harness: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(command: Command) -> Result<ExitCode> {
    match command {
        Command::Race(args) => cli::race::race(&args),
        Command::Score(args) => cli::score::score(&args),
        Command::Storm(args) => cli::scenario::run(args),
        Command::DownUp(args) => cli::scenario::run(args),
        Command::Hang(args) => cli::scenario::run(args),
        Command::Herd(args) => cli::scenario::run(args),
        Command::Hostile(args) => cli::scenario::run(args),
        Command::Soak(args) => cli::scenario::soak(args),
        Command::Sweep(args) => cli::race::sweep(&args),
        Command::Smoke(args) => cli::scenario::run(args),
    }
}
