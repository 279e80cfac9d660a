//! The harness's integration tests, in one binary so that the harness is
//! linked once: a module per area (the MCP client, the fake daemon, the
//! scenarios, the sweep, the scorecard).

//!
//! A module that is about Unix itself is gated with `cfg` and says why.

mod cli;
// The scripted peers are sh scripts.
#[cfg(unix)]
mod client;
// Talks to the fake daemon's Unix socket and signals it.
#[cfg(unix)]
mod daemon;
mod hostile;
// Runs each scenario over a Unix socket as well as over TCP.
#[cfg(unix)]
mod scenarios;
mod score;
// A sweep stopped by SIGINT, its children followed through /proc.
#[cfg(unix)]
mod sweep;
// Liveness and signals through kill(2).
#[cfg(unix)]
mod wrapper_process;
