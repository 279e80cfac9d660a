//! Test harness for the iai-mcp wrapper: starts the fake daemon and any MCP
//! wrapper as real processes, talks MCP to the wrapper, injects faults
//! through the daemon, and scripts scenarios such as the V3-05 disconnect
//! race.
//!
//! It uses only threads and `std::process` (no async runtime), so tests
//! stay easy to read and a stuck child can never stall an executor.
//!
//! What it shares with the kits and xtask (processes, the binaries under
//! test, temporary directories, figures and tables) is the `devkit` crate's.
//!
//! - [`cli`]: the `harness` binary's command line, declared here so that
//!   `cargo xtask` lists its commands from the same declaration.
//! - [`daemon`]: a handle on a running fake daemon.
//! - [`client`]: an MCP client over a child's stdio that audits framing.
//! - [`wrapper`]: starting a wrapper in an isolated environment.
//! - [`scenario`]: scripted scenarios and their reports: the race, and the
//!   live faults (drop storm, daemon down and up, hung daemon), and sweeps
//!   of the race over its timing.
//! - [`score`]: every scenario against each wrapper, gathered into one
//!   table of properties (contract and policy) by wrapper.
//! - [`report`]: how those results read for people: tables, the sweep's
//!   chart, the scorecard's page, and their files.
//!
//! The long-running kits (the real daemon, real hosts, the benchmarks) are
//! the `kits` crate's, built on this one.

pub mod cli;
pub mod client;
pub mod daemon;
pub mod error;
pub mod footprint;
pub mod random;
pub mod report;
pub mod scenario;
pub mod schema;
pub mod score;
pub mod wrapper;

pub use client::{ClientError, McpClient};
pub use daemon::{DaemonEndpoint, FakeDaemon, StatsSnapshot, Transport};
#[cfg(unix)]
pub use devkit::process::Signal;
pub use error::HarnessError;
pub use scenario::down_up::{DownUpConfig, DownUpReport, run_down_up};
pub use scenario::hang::{HangConfig, HangReport, run_hang};
pub use scenario::hostile::{HostileConfig, HostileReport, run_hostile};
pub use scenario::outcome::CallOutcome;
pub use scenario::property::{Cause, Check, Judged, Kind, Prop};
pub use scenario::race::{RaceConfig, RaceOutcome, RaceReport, RaceSummary, run_race};
pub use scenario::soak::{SoakConfig, SoakReport, run_soak};
pub use scenario::storm::{StormConfig, StormReport, run_storm};
pub use scenario::sweep::{Subject, SweepConfig, SweepError, SweepReport, run_sweep};
pub use wrapper::{BridgeMode, WrapperCommand, WrapperOptions, WrapperProcess};
