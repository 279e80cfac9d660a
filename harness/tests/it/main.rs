//! The harness's integration tests, in one binary so that the harness is
//! linked once: a module per area (the MCP client, the fake
//! daemon, the scenarios, the sweep, the scorecard, the bench smoke run).

mod bench_smoke;
mod cli;
mod client;
mod daemon;
mod hostile;
mod hosts_kit;
mod scenarios;
mod score;
mod sweep;
mod wrapper_process;
