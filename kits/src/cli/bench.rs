//! The benchmarks' command line.

use std::path::PathBuf;

use clap::Args;

use crate::bench;

/// Measure the wrapper against the floor of talking to the fake daemon
/// directly.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Sequential calls measured per subject.
    #[arg(long, default_value_t = bench::DEFAULT_CALLS)]
    pub calls: usize,
    /// Cold starts per wrapper.
    #[arg(long, default_value_t = bench::DEFAULT_COLD_STARTS)]
    pub cold_starts: usize,
    /// Recovery measurements per wrapper.
    #[arg(long, default_value_t = bench::DEFAULT_RECOVERIES)]
    pub recoveries: usize,
    /// Outages per wrapper in the outage phase: each round one with a call
    /// sent 100 ms after the rebind, one with a call waiting through it
    /// (0 skips the phase, its away window included).
    #[arg(long, default_value_t = bench::DEFAULT_OUTAGES)]
    pub outages: usize,
    /// Seconds the daemon stays away in the outage phase's window, where
    /// each wrapper's dials, wake-ups and CPU are counted (per minute).
    #[arg(long, default_value_t = bench::DEFAULT_AWAY.as_secs_f64())]
    pub away_secs: f64,
    /// Herd sizes, comma-separated: that many wrappers of each kind on one
    /// daemon, restarted in the usual start-up order and in one that binds
    /// 50 ms before it listens, every wrapper's call waiting (`--herds`
    /// with no sizes: none).
    #[arg(long, value_delimiter = ',', num_args = 0.., default_values_t = bench::DEFAULT_HERDS)]
    pub herds: Vec<usize>,
    /// Restarts of each herd's daemon in each start-up order.
    #[arg(long, default_value_t = bench::DEFAULT_HERD_ROUNDS)]
    pub herd_rounds: usize,
    /// Seconds of each herd restart in which the wrappers' own wake-ups
    /// are counted (the daemon away, after a two-second settling pause).
    #[arg(long, default_value_t = bench::DEFAULT_HERD_AWAY.as_secs_f64())]
    pub herd_away_secs: f64,
    /// Another wrapper to measure the same way, as NAME=CMD (repeatable),
    /// e.g. --compare "node=node /path/to/mcp-wrapper/dist/index.js".
    #[arg(long, value_name = "NAME=CMD")]
    pub compare: Vec<String>,
    /// Exit non-zero when a target is missed (off by default: figures are
    /// data, not pass/fail).
    #[arg(long)]
    pub strict: bool,
    /// Session starts per wrapper against one run of the real daemon, with
    /// the release of the end-to-end kit's environment (target/e2e/venv,
    /// made by `cargo xtask e2e`) beside the wrapper and the release's own
    /// Node wrapper measured the same way; 0 skips the phase, as does a
    /// missing environment.
    #[arg(long, default_value_t = bench::session_start::DEFAULT_SESSION_STARTS)]
    pub session_starts: usize,
    /// Only the session-start phase (none of the fake daemon's).
    #[arg(long)]
    pub session_starts_only: bool,
    /// The Node.js binary that runs the release's own wrapper in the
    /// session-start phase.
    #[arg(long, default_value = "node")]
    pub node: PathBuf,
}
