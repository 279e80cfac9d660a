//! The maintainers' long-running kits beside the harness's scenarios: each
//! runs the wrapper somewhere the fake-daemon scenarios cannot, for minutes
//! rather than seconds, and installs or builds what it needs first.
//!
//! - [`e2e`]: the end-to-end kit, the wrapper against the real iai-mcp
//!   daemon (a release installed from the package registry).
//! - [`hosts`]: the hosts kit, Claude Code, Codex CLI and opencode from
//!   the npm registry, driven offline, starting the wrapper on that daemon.
//! - [`mod@bench`]: latency, throughput, cold start, memory, recovery and
//!   outage figures, side by side with the floor.
//! - [`report`]: how the bench's results read for people, and their files.
//! - [`cli`]: the `kits` binary's command line.
//!
//! They drive the wrapper and the fake daemon through the harness (its
//! processes, client and herd scenario), and return its error,
//! [`HarnessError`]; what they share with xtask is the dev kit's. `cargo
//! xtask e2e`, `hosts` and `bench` run the `kits` binary.
//!
//! Unix only: the real daemon is reached on its Unix socket and stopped
//! with signals, hosts are reaped through process groups and `/proc`, the
//! benchmarks' floor talks to a Unix socket. On Windows the crate is empty
//! and the binary says so.
#![cfg(unix)]

pub mod bench;
pub mod cli;
pub mod e2e;
pub mod hosts;
pub mod report;

pub use harness::error::HarnessError;
