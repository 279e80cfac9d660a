//! Benchmarks of wrappers against the direct-to-daemon floor.
//!
//! [`run`] measures, with one client implementation for every subject:
//!
//! - **the floor**: the client talking NDJSON straight to the fake daemon's
//!   socket (`{"method":"topology"}`), sequential latency and pipelined
//!   throughput. Nothing between client and daemon can do better, so it is
//!   the reference for the ratios, and it shows the fake daemon is not the
//!   bottleneck;
//! - **each wrapper** (this workspace's, then any `--compare` command), in
//!   front of its own fresh fake daemon: cold start (spawn to `initialize`
//!   and to `tools/list` answered, no daemon present), sequential
//!   `tools/call topology` latency, pipelined throughput at each depth, peak
//!   RSS (`VmHWM`) after that load, and recovery (time from `DROP` on the
//!   daemon to the first successful call, with no reconnect delay);
//! - **each wrapper through outages** (the `outage` module), started anew:
//!   its dials, wake-ups and CPU while the daemon is away, a call sent
//!   100 ms after the daemon's rebind against a normal call, and a call
//!   that waits through the outage timed from the rebind;
//! - **herds of each wrapper** (the `herd` module): many on one daemon,
//!   restarted in the usual start-up order and in one that binds before
//!   it listens, every wrapper's call waiting: the time from the listen to
//!   the last answer, failures, the daemon's accepts per wrapper, and the
//!   wrappers' own wake-ups while it is away.
//!
//! Latency and throughput are measured in interleaved rounds (see
//! [`Amounts::rounds`]), so a ratio compares figures taken under the
//! same machine conditions. The [`BenchReport`] is written as `bench.json`
//! and `bench.md` by [`crate::report::bench`]. Targets are
//! reported as pass/miss, never asserted: a miss is a finding, not a
//! failure of the bench.

mod config;
mod herd;
mod outage;
pub(crate) mod results;
mod runner;
mod scenarios;
pub mod session_start;
mod stats;
mod subject;
mod transport;
mod watchdog;

use std::time::{SystemTime, UNIX_EPOCH};

use harness::error::HarnessError;

pub use config::{
    BenchConfig, Compared, DEFAULT_AWAY, DEFAULT_CALLS, DEFAULT_COLD_STARTS, DEFAULT_HERD_AWAY,
    DEFAULT_HERD_ROUNDS, DEFAULT_HERDS, DEFAULT_OUTAGES, DEFAULT_RECOVERIES, FLOOR_NAME, TOOL,
    WRAPPER_NAME,
};
pub use harness::footprint::CpuShare;
pub use outage::AFTER_REBIND as OUTAGE_AFTER_REBIND;
pub use results::{
    Amounts, AwayStats, BenchReport, ColdStartStats, HERD_LISTEN_GAP, HerdStats, HostInfo,
    OutageStats, RecoveryStats, RestartStats, SequentialStats, Settings, SubjectKind,
    SubjectReport, TARGET_HERD, Target, TargetRow, ThroughputStats, Verdict,
};
pub use stats::Summary;

/// Runs the whole bench.
///
/// Errors are reserved for a bench that cannot run at all (invalid
/// settings, no fake daemon, no floor); a
/// wrapper that fails a phase gets the error in its
/// [`SubjectReport::errors`], and the other subjects are still measured.
pub fn run(config: &BenchConfig) -> Result<BenchReport, HarnessError> {
    config.validate()?;
    let mut subjects = runner::run_all(config)?;
    // The outages and the herds last: each starts its subjects afresh.
    outage::measure(config, &mut subjects);
    herd::measure(config, &mut subjects);
    let finished = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Ok(BenchReport::new(
        HostInfo::current(),
        config.settings(),
        subjects,
        finished,
    ))
}
