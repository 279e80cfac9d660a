//! The live fault scenarios: drop storm, daemon down and up, hung daemon,
//! herd, hostile client, soak.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use harness::Transport;
use harness::bins::Profile;
use harness::scenario::down_up::DownUpConfig;
use harness::scenario::hang::HangConfig;
use harness::scenario::herd::HerdConfig;
use harness::scenario::hostile::HostileConfig;
use harness::scenario::smoke::{ProfileLayout, ScratchProfile, SmokeConfig};
use harness::scenario::soak::{SoakConfig, seed_from_clock};
use harness::scenario::storm::StormConfig;
use harness::scenario::{DownUp, Hang, Herd, Hostile, Scenario, Smoke, Soak, Storm};
use harness::score::run_scenario;

use super::{Target, print_judged};

/// Runs `S` against the target with its defaults changed by `tweak`, and
/// prints its judged report; returns the exit code.
fn judged<S: Scenario>(target: &Target, tweak: impl FnOnce(&mut S::Config)) -> Result<ExitCode> {
    let cmd = target.command()?;
    let report = run_scenario::<S>(&cmd, &target.setup(), tweak).context(S::NAME)?;
    print_judged(S::NAME, &cmd, target, &report)
}

/// Milliseconds of a default duration, for `default_value_t`.
fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Drop storm: the daemon drops the connection again and again while
/// calls are kept in flight.
#[derive(Debug, Args)]
pub struct StormArgs {
    #[command(flatten)]
    target: Target,
    /// Number of drops.
    #[arg(long, default_value_t = StormConfig::default().drops,
          value_parser = clap::value_parser!(u32).range(1..))]
    drops: u32,
    /// Calls kept in flight.
    #[arg(long, default_value_t = StormConfig::default().concurrency as u64,
          value_parser = clap::value_parser!(u64).range(1..))]
    concurrency: u64,
    /// The daemon's answer delay (its DELAY command), so calls are in flight
    /// when a drop hits.
    #[arg(long, default_value_t = StormConfig::default().daemon_delay_ms, value_name = "MS")]
    delay_ms: u64,
    /// Time between two drops.
    #[arg(long, default_value_t = ms(StormConfig::default().drop_interval), value_name = "MS")]
    drop_interval_ms: u64,
    /// Every N-th call is a write (0: reads only).
    #[arg(long, default_value_t = StormConfig::default().write_every, value_name = "N")]
    write_every: u32,
}

/// Runs the storm and prints its report.
pub fn storm(args: &StormArgs) -> Result<ExitCode> {
    let concurrency = usize::try_from(args.concurrency).context("--concurrency")?;
    judged::<Storm>(&args.target, |c| {
        c.drops = args.drops;
        c.concurrency = concurrency;
        c.daemon_delay_ms = args.delay_ms;
        c.drop_interval = Duration::from_millis(args.drop_interval_ms);
        c.write_every = args.write_every;
    })
}

/// The daemon goes down and comes back.
#[derive(Debug, Args)]
pub struct DownUpArgs {
    #[command(flatten)]
    target: Target,
    /// How long a call waits for a connection (IAI_MCP_CONNECT_WAIT_MS).
    #[arg(long, default_value_t = ms(DownUpConfig::default().connect_wait), value_name = "MS")]
    connect_wait_ms: u64,
    /// Calls made while the daemon is down.
    #[arg(long, default_value_t = DownUpConfig::default().down_calls)]
    down_calls: u32,
    /// How long the daemon stays down after those calls, while reconnect
    /// attempts are counted.
    #[arg(long, default_value_t = ms(DownUpConfig::default().rate_window), value_name = "MS")]
    rate_window_ms: u64,
    /// IAI_MCP_BACKOFF_INITIAL_MS (unset: the wrapper's default).
    #[arg(long, value_name = "MS")]
    backoff_initial_ms: Option<u64>,
    /// IAI_MCP_BACKOFF_MAX_MS (unset: the wrapper's default).
    #[arg(long, value_name = "MS")]
    backoff_max_ms: Option<u64>,
    /// Reconnect attempts per second counted as a busy loop.
    #[arg(long, default_value_t = DownUpConfig::default().max_attempt_rate, value_name = "PER_S")]
    max_attempt_rate: f64,
}

/// Runs down-up and prints its report.
pub fn down_up(args: &DownUpArgs) -> Result<ExitCode> {
    judged::<DownUp>(&args.target, |c| {
        c.connect_wait = Duration::from_millis(args.connect_wait_ms);
        c.down_calls = args.down_calls;
        c.rate_window = Duration::from_millis(args.rate_window_ms);
        c.backoff_initial_ms = args.backoff_initial_ms;
        c.backoff_max_ms = args.backoff_max_ms;
        c.max_attempt_rate = args.max_attempt_rate;
    })
}

/// The daemon hangs, then resumes.
#[derive(Debug, Args)]
pub struct HangArgs {
    #[command(flatten)]
    target: Target,
    /// The wrapper's response deadline (IAI_MCP_CALL_TIMEOUT_MS).
    #[arg(long, default_value_t = ms(HangConfig::default().call_timeout), value_name = "MS")]
    call_timeout_ms: u64,
}

/// Runs hang and prints its report.
pub fn hang(args: &HangArgs) -> Result<ExitCode> {
    judged::<Hang>(&args.target, |c| {
        c.call_timeout = Duration::from_millis(args.call_timeout_ms);
    })
}

/// Many wrappers on one daemon: it drops every connection, then goes down
/// and comes back.
#[derive(Debug, Args)]
pub struct HerdArgs {
    #[command(flatten)]
    target: Target,
    /// Wrappers on the one daemon.
    #[arg(long, default_value_t = HerdConfig::default().wrappers as u64,
          value_parser = clap::value_parser!(u64).range(1..=1000))]
    wrappers: u64,
    /// How long the daemon stays down.
    #[arg(long, default_value_t = ms(HerdConfig::default().down_for), value_name = "MS")]
    down_ms: u64,
    /// The largest share of the wrappers that may dial within 10 ms while
    /// the daemon is down (first attempts after the loss excepted).
    #[arg(long, default_value_t = HerdConfig::default().max_dial_fraction, value_name = "SHARE")]
    max_dial_fraction: f64,
}

/// Runs the herd and prints its report.
pub fn herd(args: &HerdArgs) -> Result<ExitCode> {
    let wrappers = usize::try_from(args.wrappers).context("--wrappers")?;
    judged::<Herd>(&args.target, |c| {
        c.wrappers = wrappers;
        c.down_for = Duration::from_millis(args.down_ms);
        c.max_dial_fraction = args.max_dial_fraction;
    })
}

/// A hostile client: random and malformed lines among valid requests.
#[derive(Debug, Args)]
pub struct HostileArgs {
    #[command(flatten)]
    target: Target,
    /// Lines to send (valid requests included).
    #[arg(long, default_value_t = HostileConfig::default().lines)]
    lines: usize,
    /// Seed of the line generator (the same seed sends the same bytes).
    #[arg(long, default_value_t = HostileConfig::default().seed)]
    seed: u64,
    /// Most lines owing an answer outstanding at once.
    #[arg(long, default_value_t = HostileConfig::default().in_flight as u64,
          value_parser = clap::value_parser!(u64).range(1..))]
    in_flight: u64,
    /// The wrapper's line cap (IAI_MCP_MAX_LINE_BYTES); lines are generated
    /// below, at and above it.
    #[arg(long, default_value_t = HostileConfig::default().max_line_bytes as u64,
          value_name = "BYTES", value_parser = clap::value_parser!(u64).range(64..))]
    max_line_bytes: u64,
}

/// Runs the hostile client and prints its report.
pub fn hostile(args: &HostileArgs) -> Result<ExitCode> {
    let in_flight = usize::try_from(args.in_flight).context("--in-flight")?;
    let max_line_bytes = usize::try_from(args.max_line_bytes).context("--max-line-bytes")?;
    judged::<Hostile>(&args.target, |c| {
        c.lines = args.lines;
        c.seed = args.seed;
        c.in_flight = in_flight;
        c.max_line_bytes = max_line_bytes;
    })
}

/// Soak: calls keep flowing while the daemon misbehaves on a seeded
/// schedule.
#[derive(Debug, Args)]
pub struct SoakArgs {
    #[command(flatten)]
    target: Target,
    /// How long calls keep flowing, in seconds.
    #[arg(long, default_value_t = SoakConfig::default().duration.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    seconds: u64,
    /// Seed of the fault schedule and the call mix (default: from the
    /// clock; the report prints it so a run can be repeated).
    #[arg(long)]
    seed: Option<u64>,
    /// Calls kept in flight.
    #[arg(long, default_value_t = SoakConfig::default().concurrency as u64,
          value_parser = clap::value_parser!(u64).range(1..))]
    concurrency: u64,
    /// The daemon's answer delay between DELAY episodes, so calls are in
    /// flight when a fault strikes; 0 runs as fast as the wrapper goes.
    #[arg(long, default_value_t = SoakConfig::default().daemon_delay_ms, value_name = "MS")]
    delay_ms: u64,
}

/// Runs the soak and prints its report with the command that replays it.
pub fn soak(args: &SoakArgs) -> Result<ExitCode> {
    let cmd = args.target.command()?;
    let seed = args.seed.unwrap_or_else(seed_from_clock);
    let concurrency = usize::try_from(args.concurrency).context("--concurrency")?;
    eprintln!(
        "soak: {} s against {} over {}, seed {seed}",
        args.seconds,
        cmd.display(),
        args.target.transport
    );
    let report = run_scenario::<Soak>(&cmd, &args.target.setup(), |c| {
        c.duration = Duration::from_secs(args.seconds);
        c.seed = seed;
        c.concurrency = concurrency;
        c.daemon_delay_ms = args.delay_ms;
    })
    .context("soak")?;
    let code = print_judged("soak", &cmd, &args.target, &report)?;
    if !args.target.json {
        let mut replay = format!("cargo xtask soak --seconds {} --seed {seed}", args.seconds);
        if args.target.transport == Transport::Tcp {
            replay.push_str(" --transport tcp");
        }
        if Profile::of_current_exe() == Profile::Release {
            replay.push_str(" --release");
        }
        println!("replay: {replay}");
    }
    Ok(code)
}

/// The smoke run: what any build of a wrapper must do, on any machine or
/// emulator.
#[derive(Debug, Args)]
pub struct SmokeArgs {
    #[command(flatten)]
    target: Target,
    /// Bound on any one answer (a safety net for slow emulators, not a
    /// measurement).
    #[arg(long, default_value_t = ms(SmokeConfig::default().reply_bound), value_name = "MS")]
    reply_bound_ms: u64,
    /// The scratch profile `install` runs in, as this machine names it
    /// (made if missing, laid out, left in place) [default: a fresh
    /// temporary directory]. The wrapper gets it as HOME and USERPROFILE;
    /// a runner that sets the profile itself (Wine, from its user name)
    /// must be pointed at it.
    #[arg(long, value_name = "DIR")]
    profile_dir: Option<PathBuf>,
    /// Whose conventions the profile's host files follow.
    #[arg(long, value_enum, default_value_t = ProfileLayout::Unix)]
    profile_layout: ProfileLayout,
}

/// Runs the smoke run and prints its report.
pub fn smoke(args: &SmokeArgs) -> Result<ExitCode> {
    judged::<Smoke>(&args.target, |c| {
        c.reply_bound = Duration::from_millis(args.reply_bound_ms);
        c.profile = ScratchProfile {
            dir: args.profile_dir.clone(),
            layout: args.profile_layout,
        };
    })
}
