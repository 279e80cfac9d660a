//! The harness's integration tests, in one binary so that the harness is
//! linked once: a module per area (the MCP client, the fake daemon, the
//! scenarios, the sweep, the scorecard).

mod cli;
mod client;
mod daemon;
mod hostile;
mod scenarios;
mod score;
mod sweep;
mod wrapper_process;
