//! The soak: calls keep flowing through the wrapper for minutes while the
//! fake daemon misbehaves in every way it can, one seeded fault after the
//! other.
//!
//! The wrapper runs for days in front of a daemon that restarts, hangs and
//! misbehaves; this scenario compresses that into a run of
//! [`SoakConfig::duration`], with short wrapper timings so a fault costs
//! milliseconds, and checks that nothing accumulates and nothing is lost:
//!
//! - [`SoakConfig::concurrency`] calls stay in flight, each held at the
//!   daemon for [`SoakConfig::daemon_delay_ms`] so faults catch calls in
//!   flight: reads and, about one in [`SoakConfig::write_every`], a
//!   `memory_capture` write, each tagged `soak-<n>` where one fits;
//! - one fault episode at a time ([`FaultKind`]), from a seeded schedule;
//!   half of the lasting ones also see instant faults strike meanwhile;
//! - every [`SoakConfig::herd_every`], a herd episode ([`super::herd`]):
//!   [`SoakConfig::herd_wrappers`] more wrappers join, and the daemon drops
//!   every connection, then goes down and up;
//! - after [`SoakConfig::warmup`] and at the end, a checkpoint: faults
//!   paused, calls answered, a probe call succeeds, then the wrapper's
//!   descriptors and `VmRSS` are sampled; at the end, the daemon's `LOG`
//!   shows every request it received, by tag, so a write received twice is
//!   seen.
//!
//! The run passes when no call is lost or answered twice, no reply names an
//! id never sent, no write reached the daemon twice, descriptors and memory
//! stayed flat, stdout carried only JSON-RPC, and the wrapper is alive. How
//! calls ended is reported, not judged: faults make calls fail by design.
//!
//! The seed fixes the fault sequence and the call mix, not their timing
//! relative to each other: a replay exercises the same faults, not the same
//! interleaving.

mod faults;

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant};

use clap::Args;
use devkit::bins::Profile;
use devkit::format::{format_growth, format_kib, format_ms, serialize_ms};
use serde::Serialize;
use serde_json::{Value, json};

use super::declaration::{Scenario, Scoring};
use super::herd::{HerdConfig, HerdReport, herd_on};
use super::live::{
    LiveSession, MAX_SAMPLES, Pipeline, Sent, TaggedRead, ToolCall, WrapperOutput,
    collect_unsolicited, env_ms, or_na, problems_text, tag_numbers,
};
use super::outcome::CallOutcome;
use super::property::{Cause, Check, Checks, Judged, Prop};
use super::settings;
use super::setup::Setup;
use crate::daemon::{RequestLog, Transport};
use crate::error::HarnessError;
use crate::footprint::{Footprint, growth};
use crate::random::Rng;
use crate::wrapper::{BridgeMode, WrapperCommand};

pub use faults::FaultKind;
use faults::{Schedule, ScheduleBounds};

/// The tag prefix carried by call arguments; followed by 9 digits.
const TAG_PREFIX: &str = "soak-";

/// How long the fake daemon may take to produce its `LOG` (tens of MiB at
/// the end of a long soak).
const LOG_TIMEOUT: Duration = Duration::from_secs(120);

/// Tries of the probe call at a checkpoint.
const PROBE_TRIES: u32 = 10;

/// A read the soak makes: a tool whose calls carry their tag, or one
/// called with fixed arguments.
#[derive(Debug, Clone, Copy)]
enum SoakRead {
    /// A tool with an argument for the tag.
    Tagged(TaggedRead),
    /// A tool without a string argument, and its fixed arguments.
    Untagged {
        tool: &'static str,
        arguments: fn() -> Value,
    },
}

impl SoakRead {
    fn tool(self) -> &'static str {
        match self {
            SoakRead::Tagged(read) => read.tool,
            SoakRead::Untagged { tool, .. } => tool,
        }
    }
}

/// The reads the soak draws from.
const READS: [SoakRead; 6] = [
    SoakRead::Untagged {
        tool: "topology",
        arguments: || json!({}),
    },
    SoakRead::Tagged(TaggedRead {
        tool: "schema_list",
        tag_field: "domain",
    }),
    SoakRead::Tagged(TaggedRead {
        tool: "events_query",
        tag_field: "kind",
    }),
    SoakRead::Tagged(TaggedRead {
        tool: "memory_recall",
        tag_field: "cue",
    }),
    SoakRead::Tagged(TaggedRead {
        tool: "curiosity_pending",
        tag_field: "session_id",
    }),
    SoakRead::Untagged {
        tool: "episodes_recent",
        arguments: || json!({"n": 5}),
    },
];

/// Parameters of a soak: its settings (the `soak` command's flags, with
/// the seed in [`SoakArgs`]) and its fixed timings; `Default` is every
/// value declared here.
#[derive(Debug, Clone, Args)]
pub struct SoakConfig {
    /// How long calls keep flowing, in seconds.
    // The checkpoints and the final drain come on top.
    #[arg(long = "seconds", default_value = "60", value_name = "SECONDS",
          value_parser = settings::seconds(1))]
    pub duration: Duration,
    /// Seed of the fault schedule and the call mix.
    #[arg(skip = 1_u64)]
    pub seed: u64,
    /// Calls kept in flight.
    #[arg(long, default_value_t = 8, value_parser = settings::count(1..))]
    pub concurrency: usize,
    /// About one call in `write_every` is a write (0: reads only).
    #[arg(skip = 4_u32)]
    pub write_every: u32,
    /// The daemon's answer delay between DELAY episodes, so calls are in
    /// flight when a fault strikes; 0 runs as fast as the wrapper goes.
    // With it, every call spends that long at the daemon, so drops and cuts
    // catch calls in flight, and the rate is about `concurrency / delay`: 8
    // in flight and 8 ms make about 1000 calls/s, which the daemon's 64 MiB
    // request journal holds for over 5 minutes (a faster rate makes it
    // forget the oldest requests: reported as `journal_dropped`).
    #[arg(long = "delay-ms", default_value_t = 8, value_name = "MS")]
    pub daemon_delay_ms: u64,
    /// `IAI_MCP_CALL_TIMEOUT_MS`: the wrapper's response deadline.
    #[arg(skip = Duration::from_millis(2000))]
    pub call_timeout: Duration,
    /// `IAI_MCP_CONNECT_WAIT_MS`: how long a call waits for a connection.
    #[arg(skip = Duration::from_millis(1000))]
    pub connect_wait: Duration,
    /// `IAI_MCP_BACKOFF_INITIAL_MS`.
    #[arg(skip = 10_u64)]
    pub backoff_initial_ms: u64,
    /// `IAI_MCP_BACKOFF_MAX_MS`.
    #[arg(skip = 100_u64)]
    pub backoff_max_ms: u64,
    /// Shortest pause between two fault episodes.
    #[arg(skip = Duration::from_millis(50))]
    pub fault_gap_min: Duration,
    /// Longest pause between two fault episodes.
    #[arg(skip = Duration::from_millis(500))]
    pub fault_gap_max: Duration,
    /// Longest hold of `DELAY`, `SLICE` and `DOWN`.
    #[arg(skip = Duration::from_millis(1500))]
    pub max_fault_hold: Duration,
    /// Longest `HANG`; must stay below `call_timeout` so held calls are
    /// answered on `RESUME` (a `daemon_timeout` would still count as an
    /// answer).
    #[arg(skip = Duration::from_millis(1000))]
    pub max_hang: Duration,
    /// Calls and faults before the first footprint sample, so buffers and
    /// the allocator reach their working size.
    #[arg(skip = Duration::from_secs(5))]
    pub warmup: Duration,
    /// Bound on waiting for the answers still owed at a checkpoint.
    #[arg(skip = Duration::from_secs(20))]
    pub drain_timeout: Duration,
    /// Time between herd episodes (zero: none).
    #[arg(skip = Duration::from_secs(20))]
    pub herd_every: Duration,
    /// Wrappers that join the daemon for a herd episode.
    #[arg(skip = 10_usize)]
    pub herd_wrappers: usize,
    /// How long to watch for late or duplicate answers at the end.
    #[arg(skip = Duration::from_millis(500))]
    pub settle: Duration,
    /// Growth of `VmRSS` from the first sample to the last that still counts
    /// as flat, in KiB. Generous on purpose (8 MiB by default): allocator
    /// noise must not fail a run, and a leak per call or per fault grows
    /// far beyond it over a soak.
    #[arg(skip = 8_u64 * 1024)]
    pub rss_growth_limit_kib: u64,
    /// Open descriptors the wrapper may hold at the end beyond those at the
    /// start (a connect in progress).
    #[arg(skip = 2_u64)]
    pub fd_slack: u64,
    /// The wrapper's bridge mode and the fake daemon.
    #[arg(skip)]
    pub setup: Setup,
}

impl Default for SoakConfig {
    fn default() -> Self {
        settings::defaults()
    }
}

/// The soak.
#[derive(Debug, Clone, Copy)]
pub struct Soak;

impl Scenario for Soak {
    const NAME: &'static str = "soak";
    const ABOUT: &'static str = "Soak: calls keep flowing while the daemon drops, hangs, delays, garbles, slices, cuts, goes down and up, strays and duplicates on a seeded schedule";
    type Config = SoakConfig;
    type Args = SoakArgs;
    type Report = SoakReport;

    fn setup(cfg: &mut SoakConfig) -> &mut Setup {
        &mut cfg.setup
    }

    fn run(cmd: &WrapperCommand, cfg: &SoakConfig) -> Result<SoakReport, HarnessError> {
        run_soak(cmd, cfg)
    }

    /// A soak as long as the scorecard says (none when zero), after a
    /// warm-up of one second.
    fn scored(scoring: &Scoring) -> Vec<SoakConfig> {
        if scoring.soak.is_zero() {
            return Vec::new();
        }
        vec![SoakConfig {
            duration: scoring.soak,
            warmup: Duration::from_secs(1),
            ..SoakConfig::default()
        }]
    }

    /// What it is about to run: its length, the wrapper, the transport and
    /// the seed.
    fn announce(cmd: &WrapperCommand, cfg: &SoakConfig) -> Option<String> {
        Some(format!(
            "soak: {} s against {} over {}, seed {}",
            cfg.duration.as_secs(),
            cmd.display(),
            cfg.setup.transport,
            cfg.seed
        ))
    }

    /// The command that repeats it: its length, its seed, its transport and
    /// this build's profile.
    fn replay(cfg: &SoakConfig) -> Option<String> {
        let mut replay = format!(
            "cargo xtask soak --seconds {} --seed {}",
            cfg.duration.as_secs(),
            cfg.seed
        );
        if cfg.setup.transport == Transport::Tcp {
            replay.push_str(" --transport tcp");
        }
        if Profile::of_current_exe() == Profile::Release {
            replay.push_str(" --release");
        }
        Some(replay)
    }
}

/// The `soak` command's settings: the configuration's, and a seed that the
/// command line draws from the clock when none is given (the library's
/// default stays the fixed seed 1, so scorecards repeat).
#[derive(Debug, Clone, Args)]
pub struct SoakArgs {
    /// The settings with a default of their own.
    #[command(flatten)]
    pub config: SoakConfig,
    /// Seed of the fault schedule and the call mix (default: from the
    /// clock; the report prints it so a run can be repeated).
    #[arg(long)]
    pub seed: Option<u64>,
}

impl From<SoakArgs> for SoakConfig {
    /// The configuration with the seed given, or one from the clock.
    fn from(args: SoakArgs) -> Self {
        SoakConfig {
            seed: args.seed.unwrap_or_else(seed_from_clock),
            ..args.config
        }
    }
}

/// How a call ended, as the report counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// Succeeded.
    Ok,
    /// `daemon_unreachable: ...` (socket closed, no connection in time).
    DaemonUnreachable,
    /// `daemon_timeout: ...`.
    DaemonTimeout,
    /// `parse_error: ...` (the daemon sent non-JSON lines).
    ParseError,
    /// Anything else (for example `response_too_large`, or a JSON-RPC
    /// error); samples are kept in the report.
    Other,
}

impl Class {
    /// Every class, in the report's order.
    pub const ALL: [Class; 5] = [
        Self::Ok,
        Self::DaemonUnreachable,
        Self::DaemonTimeout,
        Self::ParseError,
        Self::Other,
    ];

    fn of(outcome: &CallOutcome) -> Self {
        if outcome.is_ok() {
            Self::Ok
        } else if outcome.is_daemon_unreachable() {
            Self::DaemonUnreachable
        } else if outcome.is_daemon_timeout() {
            Self::DaemonTimeout
        } else if outcome.error_mentions("parse_error") {
            Self::ParseError
        } else {
            Self::Other
        }
    }
}

/// What a soak measured.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SoakReport {
    /// The seed (replay: the same seed gives the same faults and calls).
    pub seed: u64,
    /// The bridge mode the wrapper ran in (`None`: not set).
    pub mode: Option<BridgeMode>,
    /// How long calls were kept flowing.
    #[serde(rename = "duration_ms", serialize_with = "serialize_ms")]
    pub duration: Duration,
    /// Calls kept in flight.
    pub concurrency: usize,
    /// The wrapper's call timeout.
    #[serde(rename = "call_timeout_ms", serialize_with = "serialize_ms")]
    pub call_timeout: Duration,
    /// The wrapper's connect wait.
    #[serde(rename = "connect_wait_ms", serialize_with = "serialize_ms")]
    pub connect_wait: Duration,
    /// Calls sent (probes included).
    pub calls_sent: u64,
    /// Calls answered at least once.
    pub answered: u64,
    /// Calls with no answer by the end, after the drain (must be 0).
    pub lost: u64,
    /// Calls answered more than once (must be 0).
    pub duplicate_replies: u64,
    /// Messages on stdout that answer no call of ours (must be 0).
    pub unexpected_messages: u64,
    /// Writes sent.
    pub writes_sent: u64,
    /// Writes the daemon received more than once (must be 0).
    pub writes_seen_twice: u64,
    /// Writes that failed although the daemon received them (the answer was
    /// lost with the connection, or came after the wrapper gave up): at most
    /// once, not exactly once; reported, not judged.
    pub writes_failed_but_received: u64,
    /// Tagged reads the daemon received twice (re-sent after a drop).
    pub reads_replayed: u64,
    /// Tagged reads the daemon received more than twice: lost more than
    /// once and re-sent each time within their deadline (a figure).
    pub reads_seen_over_twice: u64,
    /// Requests the daemon's bounded journal forgot (its `dropped`); when
    /// not 0 the double-receipt checks cover only the newest requests.
    pub journal_dropped: u64,
    /// How the calls ended: a count for every class.
    pub outcomes: BTreeMap<Class, u64>,
    /// Faults injected, by kind (instant faults inside lasting episodes
    /// included).
    pub faults: BTreeMap<FaultKind, u64>,
    /// The herd episodes, in order.
    pub herds: Vec<HerdReport>,
    /// The wrapper's footprint at the first checkpoint (after the warm-up).
    pub start: Footprint,
    /// The wrapper's footprint at the end.
    pub end: Footprint,
    /// `VmRSS` growth from start to end, in KiB.
    pub rss_growth_kib: Option<i64>,
    /// The growth that still counts as flat, in KiB.
    pub rss_growth_limit_kib: u64,
    /// Descriptors allowed at the end beyond those at the start.
    pub fd_slack: u64,
    /// Answered calls per second over the run.
    pub calls_per_second: f64,
    /// Whether the wrapper was still running at the end.
    pub wrapper_alive: bool,
    /// Why the wrapper stopped talking, if it did (must be `None`).
    pub wrapper_gone: Option<String>,
    /// Lost calls, duplicate answers and unusual outcomes.
    pub samples: Vec<String>,
    /// The last fault commands, kept when the run did not pass.
    pub recent_faults: Vec<String>,
    /// Its stdout defects and the end of its stderr.
    #[serde(flatten)]
    pub output: WrapperOutput,
}

impl Judged for SoakReport {
    fn checks(&self) -> Vec<Check> {
        let mut checks = Checks::default();
        checks.zero(
            Prop::AnsweredOnce,
            self.lost,
            Cause::NoAnswer,
            "calls lost (never answered)",
        );
        checks.zero(
            Prop::AnsweredOnce,
            self.duplicate_replies,
            Cause::AnsweredTwice,
            "calls answered more than once",
        );
        checks.zero(
            Prop::AnsweredOnce,
            self.unexpected_messages,
            Cause::AnsweredTwice,
            "messages answering no call",
        );
        checks.zero(
            Prop::NoWriteTwice,
            self.writes_seen_twice,
            Cause::WrittenTwice,
            "writes received twice by the daemon",
        );
        checks.stdout_clean(&self.output.defects);
        if let (Some(start), Some(end)) = (self.start.fds, self.end.fds) {
            checks.expect(
                Prop::StaysUp,
                end <= start + self.fd_slack,
                Cause::Leak,
                format!(
                    "open descriptors {start} -> {end} (slack {})",
                    self.fd_slack
                ),
            );
        }
        checks.rss_flat(self.rss_growth_kib, self.rss_growth_limit_kib);
        checks.alive(self.wrapper_alive, self.wrapper_gone.as_deref());
        let mut checks = checks.into_vec();
        checks.extend(self.herds.iter().flat_map(Judged::checks));
        checks
    }
}

impl fmt::Display for SoakReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = if self.passed() { "PASS" } else { "FAIL" };
        writeln!(
            f,
            "soak {verdict}: seed {}, {:.1} s, {} calls in flight, call timeout {}, connect wait {}",
            self.seed,
            self.duration.as_secs_f64(),
            self.concurrency,
            format_ms(self.call_timeout),
            format_ms(self.connect_wait),
        )?;
        writeln!(
            f,
            "  calls:    sent {}, answered {}, lost {}, duplicate replies {}, unexpected messages {} ({:.0} calls/s)",
            self.calls_sent,
            self.answered,
            self.lost,
            self.duplicate_replies,
            self.unexpected_messages,
            self.calls_per_second,
        )?;
        let outcomes: Vec<String> = self
            .outcomes
            .iter()
            .map(|(class, n)| format!("{} {n}", serde_json::json!(class).as_str().unwrap_or("?")))
            .collect();
        writeln!(f, "  outcomes: {}", outcomes.join(", "))?;
        writeln!(
            f,
            "  daemon:   writes sent {}, seen twice {}, failed but received {}; reads replayed {}, seen over twice {}; journal dropped {}",
            self.writes_sent,
            self.writes_seen_twice,
            self.writes_failed_but_received,
            self.reads_replayed,
            self.reads_seen_over_twice,
            self.journal_dropped,
        )?;
        let faults: Vec<String> = self
            .faults
            .iter()
            .map(|(kind, n)| format!("{kind} {n}"))
            .collect();
        writeln!(
            f,
            "  faults:   {} ({})",
            self.faults.values().sum::<u64>(),
            faults.join(", ")
        )?;
        writeln!(
            f,
            "  wrapper:  fds start {}, end {} (flat: end <= start + {}); RSS start {}, end {}, growth {} (flat: below {}); alive {}; stdout defects {}",
            or_na(self.start.fds),
            or_na(self.end.fds),
            self.fd_slack,
            format_kib(self.start.rss_kib),
            format_kib(self.end.rss_kib),
            format_growth(self.rss_growth_kib),
            format_kib(Some(self.rss_growth_limit_kib)),
            if self.wrapper_alive { "yes" } else { "no" },
            self.output.defects.len(),
        )?;
        let herds_passed = self.herds.iter().filter(|h| h.passed()).count();
        writeln!(
            f,
            "  herds:    {} episodes of {} wrappers, {herds_passed} passed, {} herd calls",
            self.herds.len(),
            self.herds.first().map_or(0, |h| h.wrappers),
            self.herds.iter().map(|h| h.calls).sum::<u64>(),
        )?;
        for sample in &self.samples {
            writeln!(f, "  e.g. {sample}")?;
        }
        for command in &self.recent_faults {
            writeln!(f, "  fault at {command}")?;
        }
        write!(f, "  problems: {}", problems_text(&self.problems()))
    }
}

/// The unique tag of call `n`.
fn tag(n: usize) -> String {
    format!("{TAG_PREFIX}{n:09}")
}

/// The next call (`n`): about one in `write_every` a `memory_capture`
/// write, the others reads drawn from [`READS`].
fn call_for(rng: &mut Rng, n: usize, write_every: u32) -> ToolCall {
    if write_every > 0 && rng.below(u64::from(write_every)) == 0 {
        let text = format!("soak write {}: a memory that must be stored once", tag(n));
        return ToolCall::write("memory_capture", json!({ "text": text }));
    }
    match *rng.pick(&READS) {
        SoakRead::Tagged(read) => read.call(tag(n)),
        SoakRead::Untagged { tool, arguments } => ToolCall::read(tool, arguments()),
    }
}

/// Whether the calls of `tool` carry their tag: writes, and reads with an
/// argument for it.
fn tagged(tool: &str) -> bool {
    READS
        .iter()
        .find(|read| read.tool() == tool)
        .is_none_or(|read| matches!(read, SoakRead::Tagged(_)))
}

/// Counts, per call number below `calls`, how often the daemon's `LOG`
/// holds a request carrying its tag.
fn received_counts(log: &RequestLog, calls: usize) -> Vec<u32> {
    let mut received = vec![0u32; calls];
    for request in &log.requests {
        let params = request.params.to_string();
        for n in tag_numbers(&params, TAG_PREFIX, 9).filter(|&n| n < calls) {
            received[n] += 1;
        }
    }
    received
}

/// A soak under way.
struct Running<'a> {
    pipe: Pipeline<'a>,
    calls_rng: Rng,
    write_every: u32,
}

impl Running<'_> {
    fn send_next(&mut self) -> bool {
        let n = self.pipe.calls.len();
        let call = call_for(&mut self.calls_rng, n, self.write_every);
        self.pipe.send(call)
    }

    /// With nothing in flight: sends single calls until one succeeds (at most
    /// [`PROBE_TRIES`]), so the wrapper is connected and idle.
    fn probe(&mut self, timeout: Duration) {
        for _ in 0..PROBE_TRIES {
            if self.pipe.gone.is_some() || !self.send_next() {
                return;
            }
            let n = self.pipe.calls.len() - 1;
            self.pipe.drain(timeout);
            if self.pipe.calls[n].outcome == Some(CallOutcome::Ok) {
                return;
            }
        }
    }

    /// Keeps `cfg.concurrency` calls in flight for `cfg.duration` while the
    /// schedule injects faults: takes the start checkpoint after the
    /// warm-up and runs a herd episode every `cfg.herd_every`; stops early
    /// if the wrapper stops talking.
    fn keep_calls_flowing(
        &mut self,
        cmd: &WrapperCommand,
        cfg: &SoakConfig,
        env: &[(&str, String)],
        schedule: &mut Schedule,
    ) -> Result<Flowed, HarnessError> {
        let started = self.pipe.started;
        let concurrency = cfg.concurrency.max(1);
        let end_at = started + cfg.duration;
        let mut warmup_at = Some(started + cfg.warmup.min(cfg.duration));
        let mut herd_at = (!cfg.herd_every.is_zero()).then(|| started + cfg.herd_every);
        let herd = herd_config(cfg);
        let mut flowed = Flowed {
            start: None,
            herds: Vec::new(),
        };
        while self.pipe.gone.is_none() {
            let now = Instant::now();
            if now >= end_at {
                break;
            }
            if warmup_at.is_some_and(|at| now >= at) {
                warmup_at = None;
                flowed.start = Some(self.checkpoint(schedule, cfg.drain_timeout, cfg.settle)?);
                schedule.resume();
                continue;
            }
            if herd_at.is_some_and(|at| now >= at) {
                // The soak's own wrapper is one more client of the daemon.
                let daemon = &self.pipe.session.daemon;
                schedule.quiesce(daemon)?;
                flowed.herds.push(herd_on(cmd, daemon, &herd, env, 1)?);
                schedule.resume();
                herd_at = Some(Instant::now() + cfg.herd_every);
                continue;
            }
            if now >= schedule.next_at() {
                schedule.step(&self.pipe.session.daemon, now)?;
                continue;
            }
            while self.pipe.in_flight < concurrency && self.pipe.gone.is_none() {
                self.send_next();
            }
            let wake = [Some(end_at), warmup_at, herd_at, Some(schedule.next_at())]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(end_at);
            self.pipe.receive_for(wake.saturating_duration_since(now));
        }
        Ok(flowed)
    }

    /// Ends the run: its length, then the last checkpoint, then whether the
    /// wrapper is still running.
    fn finish(
        &mut self,
        schedule: &mut Schedule,
        cfg: &SoakConfig,
    ) -> Result<Finished, HarnessError> {
        let duration = self.pipe.started.elapsed();
        let end = self.checkpoint(schedule, cfg.drain_timeout, cfg.settle)?;
        let wrapper_alive = matches!(self.pipe.session.wrapper.try_wait(), Ok(None));
        Ok(Finished {
            duration,
            end,
            wrapper_alive,
        })
    }

    /// Pauses the faults, lets the calls in flight finish, makes sure the
    /// wrapper is connected, and samples its footprint.
    fn checkpoint(
        &mut self,
        schedule: &mut Schedule,
        drain_timeout: Duration,
        settle: Duration,
    ) -> Result<Footprint, HarnessError> {
        schedule.quiesce(&self.pipe.session.daemon)?;
        self.pipe.drain(drain_timeout);
        for message in collect_unsolicited(&mut self.pipe.session.wrapper, settle) {
            self.pipe.receive(&message);
        }
        self.probe(drain_timeout);
        Ok(Footprint::sample(self.pipe.session.wrapper.pid()))
    }
}

/// A seed from the clock and the process id, for runs not given one (the
/// report prints it, so the run can be repeated).
pub fn seed_from_clock() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut rng = Rng::new(nanos ^ u64::from(std::process::id()).rotate_left(32));
    // Keep it short enough to type.
    rng.next_u64() % 1_000_000_000
}

/// Runs the soak once against the wrapper started by `cmd`.
pub fn run_soak(cmd: &WrapperCommand, cfg: &SoakConfig) -> Result<SoakReport, HarnessError> {
    let env = wrapper_env(cfg);
    let mut session = LiveSession::start(cmd, &cfg.setup, &env)?;
    session.daemon.delay(cfg.daemon_delay_ms)?;
    let mut soak = Running {
        pipe: Pipeline::new(&mut session, |o| Class::of(o) == Class::Other),
        calls_rng: Rng::new(cfg.seed ^ 0x5041_4b5f_4341_4c4c),
        write_every: cfg.write_every,
    };
    let started = soak.pipe.started;
    let mut schedule = fault_schedule(cfg, started);
    let flowed = soak.keep_calls_flowing(cmd, cfg, &env, &mut schedule)?;
    let finished = soak.finish(&mut schedule, cfg)?;
    let Pipeline {
        calls,
        unmatched,
        samples,
        gone,
        ..
    } = soak.pipe;
    let journal = read_journal(&session, calls.len())?;
    let ran = Ran {
        started,
        flowed,
        finished,
        calls,
        unmatched,
        samples,
        gone,
        journal,
    };
    let report = soak_report(cfg, &schedule, ran);
    let mut report = session.conclude(report, |r| &mut r.output);
    if !report.passed() {
        report.recent_faults = schedule.recent().to_vec();
    }
    Ok(report)
}

/// The wrapper's environment: its timeouts and backoff as configured.
fn wrapper_env(cfg: &SoakConfig) -> [(&'static str, String); 4] {
    [
        env_ms("IAI_MCP_CALL_TIMEOUT_MS", cfg.call_timeout),
        env_ms("IAI_MCP_CONNECT_WAIT_MS", cfg.connect_wait),
        (
            "IAI_MCP_BACKOFF_INITIAL_MS",
            cfg.backoff_initial_ms.to_string(),
        ),
        ("IAI_MCP_BACKOFF_MAX_MS", cfg.backoff_max_ms.to_string()),
    ]
}

/// The seeded fault schedule, its bounds made sane (a maximum gap no
/// shorter than the minimum, holds and hangs of at least 50 ms).
fn fault_schedule(cfg: &SoakConfig, started: Instant) -> Schedule {
    Schedule::new(
        Rng::new(cfg.seed),
        ScheduleBounds {
            gap_min: cfg.fault_gap_min,
            gap_max: cfg.fault_gap_max.max(cfg.fault_gap_min),
            max_hold: cfg.max_fault_hold.max(Duration::from_millis(50)),
            max_hang: cfg.max_hang.max(Duration::from_millis(50)),
            base_delay_ms: cfg.daemon_delay_ms,
        },
        started,
    )
}

/// The herd episodes' settings: the soak's herd size, with bounds drawn
/// from the soak's own timeouts.
fn herd_config(cfg: &SoakConfig) -> HerdConfig {
    HerdConfig {
        wrappers: cfg.herd_wrappers,
        down_for: cfg.connect_wait / 2,
        settle: Duration::from_millis(100),
        recovery_timeout: cfg.drain_timeout,
        call_bound: cfg.connect_wait + cfg.call_timeout + cfg.drain_timeout,
        // The soak's backoff of milliseconds makes 10 ms dial windows say
        // nothing; the herd scenario judges the spread.
        max_dial_fraction: 1.0,
        setup: cfg.setup.clone(),
        ..HerdConfig::default()
    }
}

/// What the flowing phase left: the footprint after the warm-up and the
/// herd episodes.
struct Flowed {
    /// The first checkpoint's footprint (`None`: the run ended before the
    /// warm-up did).
    start: Option<Footprint>,
    herds: Vec<HerdReport>,
}

/// How the run ended: its length, the last checkpoint, the wrapper's state.
struct Finished {
    duration: Duration,
    end: Footprint,
    wrapper_alive: bool,
}

/// What the daemon's journal says about the calls.
struct Journal {
    /// Per call number, how often the daemon received it.
    received: Vec<u32>,
    /// Requests the journal forgot.
    dropped: u64,
}

/// Everything the run measured, for the report.
struct Ran {
    started: Instant,
    flowed: Flowed,
    finished: Finished,
    calls: Vec<Sent>,
    unmatched: u64,
    samples: Vec<String>,
    gone: Option<String>,
    journal: Journal,
}

/// Reads the daemon's journal and counts, for each of the `calls` calls,
/// how often it was received.
fn read_journal(session: &LiveSession, calls: usize) -> Result<Journal, HarnessError> {
    let log = session.daemon.request_journal(LOG_TIMEOUT)?;
    Ok(Journal {
        received: received_counts(&log, calls),
        dropped: log.dropped,
    })
}

/// The report of a run, every call counted (the wrapper's output is added
/// when the session concludes).
fn soak_report(cfg: &SoakConfig, schedule: &Schedule, ran: Ran) -> SoakReport {
    let Ran {
        started,
        flowed,
        finished,
        calls,
        unmatched,
        samples,
        gone,
        journal,
    } = ran;
    let start = flowed.start.unwrap_or(finished.end);
    let mut report = SoakReport {
        seed: cfg.seed,
        mode: cfg.setup.mode,
        duration: finished.duration,
        concurrency: cfg.concurrency.max(1),
        call_timeout: cfg.call_timeout,
        connect_wait: cfg.connect_wait,
        calls_sent: calls.len() as u64,
        unexpected_messages: unmatched,
        journal_dropped: journal.dropped,
        outcomes: Class::ALL.iter().map(|&c| (c, 0)).collect(),
        faults: schedule.counts.clone(),
        herds: flowed.herds,
        start,
        end: finished.end,
        rss_growth_kib: growth(start.rss_kib, finished.end.rss_kib),
        rss_growth_limit_kib: cfg.rss_growth_limit_kib,
        fd_slack: cfg.fd_slack,
        wrapper_alive: finished.wrapper_alive,
        wrapper_gone: gone,
        ..SoakReport::default()
    };
    let mut lost = report.count_calls(&calls, &journal.received, started);
    lost.extend(samples);
    lost.truncate(MAX_SAMPLES);
    report.samples = lost;
    report.calls_per_second = report.answered as f64 / finished.duration.as_secs_f64().max(1e-3);
    report
}

impl SoakReport {
    /// Counts every call's answers and outcome and, for writes and tagged
    /// reads, how often the daemon received it (`received`, by call
    /// number); returns a description of the first lost calls.
    fn count_calls(&mut self, calls: &[Sent], received: &[u32], started: Instant) -> Vec<String> {
        let mut lost = Vec::new();
        for (n, (call, &seen)) in calls.iter().zip(received).enumerate() {
            self.answered += u64::from(call.answers > 0);
            self.duplicate_replies += u64::from(call.answers > 1);
            if call.answers == 0 {
                self.lost += 1;
                if lost.len() < MAX_SAMPLES / 2 {
                    lost.push(format!(
                        "call #{n} {} (write: {}) sent at {:.3} s: never answered; the daemon received it {seen} time(s)",
                        call.tool,
                        call.write,
                        call.sent_at.duration_since(started).as_secs_f64()
                    ));
                }
            }
            let class = call.outcome.as_ref().map(Class::of);
            if let Some(class) = class {
                *self.outcomes.entry(class).or_default() += 1;
            }
            if call.write {
                self.writes_sent += 1;
                self.writes_seen_twice += u64::from(seen > 1);
                let failed = class.is_some_and(|c| c != Class::Ok);
                self.writes_failed_but_received += u64::from(failed && seen > 0);
            } else if tagged(call.tool) {
                self.reads_replayed += u64::from(seen == 2);
                self.reads_seen_over_twice += u64::from(seen > 2);
            }
        }
        lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::LoggedRequest;
    use crate::scenario::live::assert_each_breaks_once;

    #[test]
    fn tags_are_found_in_the_log_and_lookalikes_ignored() {
        let logged = |params: Value| LoggedRequest {
            method: "m".to_owned(),
            params,
            id: None,
        };
        let mut rng = Rng::new(3);
        let mut writes = 0;
        for n in 0..200 {
            let call = call_for(&mut rng, n, 4);
            if tagged(call.tool) {
                let log = RequestLog {
                    requests: vec![logged(call.arguments.clone())],
                    dropped: 0,
                };
                assert_eq!(received_counts(&log, 200)[n], 1, "{call:?}");
            }
            writes += usize::from(call.write);
            assert_eq!(call.write, call.tool == "memory_capture");
        }
        assert!((20..80).contains(&writes), "{writes}");
        let log = RequestLog {
            requests: vec![
                logged(json!({"cue": "soak-000000007"})),
                logged(json!({"text": "soak write soak-000000007"})),
                logged(json!({"x": "soak-12"})),
                logged(json!({"x": "soak-000000999"})),
            ],
            dropped: 42,
        };
        let received = received_counts(&log, 10);
        assert_eq!(received[7], 2);
        assert_eq!(received.iter().sum::<u32>(), 2);
        assert_eq!(received_counts(&RequestLog::default(), 1), [0]);
    }

    fn clean_report() -> SoakReport {
        let footprint = |rss_kib| Footprint {
            rss_kib: Some(rss_kib),
            fds: Some(16),
        };
        SoakReport {
            seed: 9,
            mode: Some(BridgeMode::Fixed),
            duration: Duration::from_secs(30),
            concurrency: 8,
            call_timeout: Duration::from_secs(2),
            connect_wait: Duration::from_secs(1),
            calls_sent: 1000,
            answered: 1000,
            writes_sent: 250,
            writes_failed_but_received: 3,
            reads_replayed: 5,
            outcomes: Class::ALL
                .iter()
                .map(|&c| (c, [990, 10, 0, 0, 0][c as usize]))
                .collect(),
            faults: FaultKind::ALL.iter().map(|&k| (k, 2)).collect(),
            start: footprint(5000),
            end: footprint(5200),
            rss_growth_kib: Some(200),
            rss_growth_limit_kib: 8192,
            fd_slack: 2,
            calls_per_second: 33.3,
            wrapper_alive: true,
            ..SoakReport::default()
        }
    }

    #[test]
    fn passes_only_when_every_must_condition_holds() {
        let breakages: [fn(&mut SoakReport); 9] = [
            |r| r.lost = 1,
            |r| r.duplicate_replies = 1,
            |r| r.unexpected_messages = 1,
            |r| r.writes_seen_twice = 1,
            |r| r.output.defects.push("x".into()),
            |r| r.end.fds = Some(19),
            |r| r.rss_growth_kib = Some(8192),
            |r| r.wrapper_alive = false,
            |r| r.wrapper_gone = Some("eof".into()),
        ];
        assert_each_breaks_once(clean_report, breakages);
        let mut report = clean_report();
        report.end.fds = Some(18);
        report.rss_growth_kib = Some(-4000);
        assert!(report.passed(), "within the slack: {report}");
        let json = serde_json::to_value(clean_report()).unwrap();
        assert_eq!(json["duration_ms"], json!(30000.0));
        assert_eq!(json["faults"]["down_up"], json!(2));
        assert_eq!(json["outcomes"]["daemon_unreachable"], json!(10));
    }
}
