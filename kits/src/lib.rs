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
//! The end-to-end kit runs on every system iai-mcp ships for: it reaches
//! the real daemon where the daemon listens there (a Unix socket, or
//! loopback TCP with a token on Windows) and stops it as each system does
//! ([`e2e::address`], [`e2e::stop`]). The hosts kit and the
//! benchmarks are Unix only: hosts are reaped through process groups and
//! `/proc` under the subreaper, and the benchmarks' floor talks to a Unix
//! socket and reads `/proc`.

#[cfg(unix)]
pub mod bench;
pub mod cli;
pub mod e2e;
#[cfg(unix)]
pub mod hosts;
#[cfg(unix)]
pub mod report;

pub use harness::error::HarnessError;
