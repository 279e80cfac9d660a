//! The bench's results: figures per subject, and the project's targets
//! checked against them; serialized as `bench.json`, shown as Markdown by
//! [`crate::report::bench`].
//!
//! All durations are integer nanoseconds in the JSON (exact, no unit
//! guessing); the Markdown picks a readable unit. Ratios are always
//! subject / floor, for latency (lower is better) and throughput (higher
//! is better) alike.

use std::time::Duration;

use devkit::format::{format_bytes, format_ns};
use harness::footprint::{CpuShare, PhaseWork, WorkPerCall};
use serde::Serialize;

use super::stats::{Summary, nanos};

/// The target: median cold start (spawn to `tools/list` answered) below
/// this.
pub const MAX_COLD_START: Duration = Duration::from_millis(10);

/// The target: peak RSS below this many bytes (10 MB, decimal).
pub const MAX_PEAK_RSS_BYTES: u64 = 10_000_000;

/// The target: median recovery (from `DROP` to the first successful call)
/// below this, with no failed attempt.
pub const MAX_RECOVERY: Duration = Duration::from_millis(5);

/// The target: a call that waited through an outage answered within this
/// of the daemon's rebind (median), none failed.
pub const MAX_OUTAGE_ANSWER: Duration = Duration::from_millis(5);

/// The target: connect attempts per minute while the daemon is away and
/// no call waits (none).
pub const MAX_AWAY_DIALS_PER_MIN: f64 = 0.0;

/// The target: a wrapper's own wake-ups per minute while the daemon is
/// away and no call waits (its endpoint watch's looks, the floor's
/// included, and its dials; the heartbeat and the doctor's heal step
/// aside), in the herd of [`TARGET_HERD`].
pub const MAX_AWAY_WAKEUPS_PER_MIN: f64 = 6.0;

/// The herd the herd targets apply to: this many wrappers on one daemon,
/// each with a call waiting through each restart.
pub const TARGET_HERD: usize = 50;

/// The target: with a daemon that binds [`HERD_LISTEN_GAP`] before it
/// listens, the last of [`TARGET_HERD`] waiting wrappers answered within
/// this of the listen (median over the restarts), none failed.
pub const MAX_HERD_ANSWERED: Duration = Duration::from_millis(100);

/// The target: with the usual start-up (bind and listen in one step), the
/// last of [`TARGET_HERD`] waiting wrappers answered within this of the
/// listen (median over the restarts), none failed.
pub const MAX_HERD_ANSWERED_AT_ONCE: Duration = Duration::from_millis(20);

/// The target: connections the daemon accepts per wrapper per restart (in
/// either start-up order): the bridge's one.
pub const MAX_ACCEPTS_PER_RECONNECT: f64 = 1.0;

/// How long the daemon of the `listen-after` herd restarts stays bound
/// before it listens.
pub const HERD_LISTEN_GAP: Duration = Duration::from_millis(50);

/// Everything one bench run measured.
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    /// When the run finished, in seconds since the Unix epoch.
    pub finished_unix_secs: u64,
    /// The machine it ran on.
    pub host: HostInfo,
    /// The parameters it ran with.
    pub settings: Settings,
    /// The floor first, then each wrapper in the order given.
    pub subjects: Vec<SubjectReport>,
    /// The project's targets, checked for every wrapper subject.
    pub targets: Vec<TargetRow>,
}

/// The machine a bench ran on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostInfo {
    /// `std::env::consts::OS`.
    pub os: String,
    /// `std::env::consts::ARCH`.
    pub arch: String,
    /// Available parallelism (CPUs the bench may use).
    pub cpus: usize,
}

impl HostInfo {
    /// This machine.
    pub fn current() -> Self {
        Self {
            os: std::env::consts::OS.to_owned(),
            arch: std::env::consts::ARCH.to_owned(),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// How much a run measures: asked for in
/// [`BenchConfig`](super::BenchConfig), recorded as run in [`Settings`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Amounts {
    /// Sequential calls measured per subject.
    pub calls: usize,
    /// Calls made before each measurement (sequential, and at each depth),
    /// so connections, allocators and caches are warm.
    pub warmup_calls: usize,
    /// Calls measured at each depth.
    pub pipelined_calls: usize,
    /// Pipelining depths (calls in flight); each must be at least 1.
    pub depths: Vec<usize>,
    /// Slices the sequential and pipelined phases are cut into; each round
    /// runs one slice of every subject in turn, so drift in the machine's
    /// load affects all subjects alike (1 measures each subject in one go).
    pub rounds: usize,
    /// Cold starts per wrapper (0 skips them).
    pub cold_starts: usize,
    /// Recovery attempts per wrapper (0 skips them).
    pub recoveries: usize,
    /// Outages per wrapper in the outage phase, each measuring a call sent
    /// after the rebind and a call that waits through it (0 skips the
    /// phase, its away window included).
    pub outages: usize,
    /// How long the daemon stays away in the outage phase's window, where
    /// dials, wake-ups and CPU are counted, in milliseconds.
    pub away_ms: u64,
    /// Herd sizes: for each, that many wrappers of each kind on one
    /// daemon, restarted in each start-up order in turn, every wrapper
    /// with a call waiting through each restart.
    pub herds: Vec<usize>,
    /// Restarts of each herd's daemon in each start-up order.
    pub herd_rounds: usize,
    /// The window of each herd restart in which the wrappers' own
    /// wake-ups are counted, in milliseconds.
    pub herd_away_ms: u64,
}

/// The parameters of a run, as recorded in the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Settings {
    /// What was measured, and how often.
    #[serde(flatten)]
    pub amounts: Amounts,
    /// The longest the bench waited for any response.
    pub response_timeout_ms: u64,
    /// The fake daemon binary.
    pub fake_daemon: String,
    /// The MCP revision of `initialize`.
    pub protocol_version: String,
    /// The tool every call invokes.
    pub tool: String,
}

/// What a subject is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SubjectKind {
    /// The client talking to the fake daemon's socket directly: the best
    /// any wrapper could do.
    Floor,
    /// An MCP wrapper process between the client and the fake daemon.
    #[default]
    Wrapper,
}

/// Everything measured for one subject. Figures a subject cannot have
/// (cold start of the floor) or that a failure prevented are `None`; the
/// failure is in `errors`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SubjectReport {
    /// Short name (`floor`, `wrapper`, or a `--compare` name).
    pub name: String,
    /// Floor or wrapper.
    pub kind: SubjectKind,
    /// The command run (or what the floor talks to).
    pub command: String,
    /// Spawn to first answers, no daemon present.
    pub cold_start: Option<ColdStartStats>,
    /// One call at a time.
    pub sequential: Option<SequentialStats>,
    /// Several calls in flight, one entry per depth measured.
    pub pipelined: Vec<ThroughputStats>,
    /// `VmHWM` after the sequential and pipelined load, in KiB.
    pub peak_rss_kib: Option<u64>,
    /// Calls right after the daemon dropped the connection.
    pub recovery: Option<RecoveryStats>,
    /// The daemon away and back: calls around its return, and what the
    /// wrapper does while it is away.
    pub outage: Option<OutageStats>,
    /// Herds of this wrapper on one daemon through its restarts, by size.
    pub herds: Vec<HerdStats>,
    /// Lines the subject wrote that were not responses, or responses to
    /// no pending call.
    pub skipped_lines: u64,
    /// What went wrong, one message per failed phase.
    pub errors: Vec<String>,
}

impl SubjectReport {
    /// An empty report for a subject.
    pub fn new(name: impl Into<String>, kind: SubjectKind, command: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            kind,
            command: command.into(),
            ..Self::default()
        }
    }

    /// The throughput measured at `depth`, if any.
    pub fn throughput_at(&self, depth: usize) -> Option<&ThroughputStats> {
        self.pipelined.iter().find(|t| t.depth == depth)
    }

    /// How busy each process was, and its work per call, in the sequential
    /// phase (`depth` `None`) or at `depth` calls in flight.
    pub(crate) fn load(&self, depth: Option<usize>) -> Option<Load<'_>> {
        match depth {
            None => self.sequential.as_ref().map(|s| Load {
                cpu: s.cpu,
                work: s.work.as_ref(),
            }),
            Some(depth) => self.throughput_at(depth).map(|t| Load {
                cpu: t.cpu,
                work: t.work.as_ref(),
            }),
        }
    }

    /// Per-call work of the process this subject stands for: the client
    /// for the floor (it is the only process between the bench and the
    /// daemon), the wrapper process otherwise.
    pub fn own_work(&self, depth: Option<usize>) -> Option<WorkPerCall> {
        let work = self.load(depth)?.work?;
        match self.kind {
            SubjectKind::Floor => work.client,
            SubjectKind::Wrapper => work.subject,
        }
    }
}

/// How busy each process was in one phase, and its work per call
/// ([`SubjectReport::load`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Load<'a> {
    /// How busy each process was.
    pub(crate) cpu: Option<CpuShare>,
    /// What each process did per call.
    pub(crate) work: Option<&'a PhaseWork>,
}

/// Cold-start figures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ColdStartStats {
    /// Starts attempted.
    pub attempts: usize,
    /// Starts that did not get both answers.
    pub failures: usize,
    /// Spawn to the `initialize` response.
    pub initialize: Option<Summary>,
    /// Spawn to the `tools/list` response.
    pub tools_list: Option<Summary>,
}

/// Sequential latency figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SequentialStats {
    /// Calls measured.
    pub calls: usize,
    /// Calls answered with an error (left out of `latency`).
    pub failures: usize,
    /// Latency of the successful calls.
    pub latency: Option<Summary>,
    /// How busy each process was meanwhile.
    pub cpu: Option<CpuShare>,
    /// What each process did per call meanwhile.
    pub work: Option<PhaseWork>,
}

/// Pipelined throughput at one depth.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThroughputStats {
    /// Calls in flight.
    pub depth: usize,
    /// Calls measured.
    pub calls: usize,
    /// Calls answered with an error.
    pub failures: usize,
    /// Responses to no call of the run (duplicates, unknown ids).
    pub stray: usize,
    /// From the first request to the last response.
    pub elapsed_ns: u64,
    /// `calls / elapsed`.
    pub calls_per_sec: f64,
    /// How busy each process was meanwhile.
    pub cpu: Option<CpuShare>,
    /// What each process did per call meanwhile.
    pub work: Option<PhaseWork>,
}

/// Recovery figures.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RecoveryStats {
    /// Attempts made.
    pub attempts: usize,
    /// Attempts whose call failed instead of waiting for the reconnect.
    pub failures: usize,
    /// `DROP` sent to successful response, over successful attempts.
    pub from_drop: Option<Summary>,
    /// `DROPPED` received to successful response.
    pub from_dropped_ack: Option<Summary>,
    /// The first few failed responses, as text.
    pub failure_examples: Vec<String>,
    /// Why the attempts stopped before the planned number, if they did.
    pub abandoned: Option<String>,
}

/// The outage phase of one wrapper: a fresh process in front of its own
/// fake daemon, with its structured log on (other wrappers ignore the
/// setting) and its heartbeat moved past the phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OutageStats {
    /// A call with the daemon up, sent after the same idle pause as the
    /// call after the rebind (one before each such outage), for comparison.
    pub normal: Option<Summary>,
    /// The daemon away with no call waiting.
    pub away: Option<AwayStats>,
    /// Outages made for the two figures below (each twice: once for each).
    pub outages: usize,
    /// A call sent 100 ms after the daemon rebound (`UP` acknowledged: it
    /// binds and listens before it says so), from its request to its
    /// answer.
    pub after_rebind: Option<Summary>,
    /// Those calls, and the normal ones, that failed.
    pub after_rebind_failures: usize,
    /// A call sent while the daemon was away that waited through the
    /// outage: from the daemon's rebind (its socket file seen, see
    /// [`FakeDaemon::up_timed`](harness::daemon::FakeDaemon::up_timed)) to
    /// the call's answer.
    pub waited: Option<Summary>,
    /// The same calls, from `UP` sent (an upper bound of the same figure).
    pub waited_from_up_sent: Option<Summary>,
    /// Waiting calls that failed instead (or were answered before the
    /// daemon was back).
    pub waited_failures: usize,
    /// The first few failed answers, as text.
    pub failure_examples: Vec<String>,
}

/// What a wrapper did while its daemon was away and no call waited, over
/// the window, scaled to one minute.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct AwayStats {
    /// The window measured, in milliseconds (it began once the wrapper
    /// had settled after the loss).
    pub window_ms: u64,
    /// Connect attempts it logged (`connect_attempt`) per minute; `None`
    /// for a wrapper that logs no events (the daemon, not bound, sees no
    /// attempt).
    pub dials_per_min: Option<f64>,
    /// Context switches of all its threads (voluntary + involuntary) per
    /// minute: its wake-ups.
    pub wakeups_per_min: Option<f64>,
    /// CPU time of all its threads per minute, in nanoseconds.
    pub cpu_ns_per_min: Option<f64>,
}

/// A herd: many wrappers of one kind on one daemon, restarted
/// [`Amounts::herd_rounds`] times in each start-up order, each wrapper with
/// a call waiting through every restart (`kits/src/bench/herd.rs`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct HerdStats {
    /// Wrappers in the herd.
    pub wrappers: usize,
    /// The away windows of every restart together, in milliseconds: the
    /// daemon away, the wrappers settled, no call waiting.
    pub away_ms: u64,
    /// A wrapper's own wake-ups per minute in the away windows: its
    /// endpoint watch's looks (`endpoint_looked`) and its dials
    /// (`connect_attempt`), averaged over the herd; `None` for wrappers
    /// that log no events.
    pub wakeups_per_min: Option<f64>,
    /// Of those, the dials.
    pub dials_per_min: Option<f64>,
    /// The restarts, one entry per start-up order.
    pub restarts: Vec<RestartStats>,
}

impl HerdStats {
    /// The restarts in the start-up order named `order` (`at-once`,
    /// `listen-after=50`).
    pub fn in_order(&self, order: &str) -> Option<&RestartStats> {
        self.restarts.iter().find(|r| r.order == order)
    }
}

/// A herd's daemon restarted, in one start-up order, with every wrapper's
/// call waiting: how long until the last was answered, what failed, and
/// what the daemon accepted.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RestartStats {
    /// The start-up order, as the fake daemon writes it (`at-once`,
    /// `listen-after=50`).
    pub order: String,
    /// Restarts made in it.
    pub restarts: usize,
    /// From the listen to the last wrapper's answer, over the restarts
    /// after which every wrapper was answered (the listen: the socket seen
    /// bound, plus the gap of `listen-after`).
    pub all_answered: Option<Summary>,
    /// Waiting calls that failed, over all the restarts.
    pub failed_calls: u64,
    /// Connections the daemon accepted from `UP` until the last answer
    /// and a settling pause, per wrapper per restart.
    pub accepts_per_wrapper: Option<f64>,
    /// Connect attempts the wrappers logged as failed from `UP` until the
    /// last answer (refused between the bind and the listen, and tried
    /// again), over all the restarts; `None` for wrappers that log no
    /// events.
    pub failed_dials: Option<u64>,
}

/// The project's targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// Median cold start.
    ColdStart,
    /// Peak RSS.
    PeakRss,
    /// Median recovery, and no failed attempt.
    Recovery,
    /// A call waiting through an outage answered soon after the rebind.
    OutageAnswer,
    /// No connect attempt while the daemon is away and no call waits.
    AwayDials,
    /// Few wake-ups of a wrapper's own while the daemon is away and no
    /// call waits, in the herd of [`TARGET_HERD`].
    AwayWakeups,
    /// The herd of [`TARGET_HERD`] waiting wrappers, the daemon binding
    /// [`HERD_LISTEN_GAP`] before it listens: all answered soon after the
    /// listen, none failed.
    HerdAnswered,
    /// The same herd, the daemon binding and listening in one step: all
    /// answered sooner still, none failed.
    HerdAnsweredAtOnce,
    /// The same herd: one connection accepted per wrapper per restart.
    AcceptsPerReconnect,
}

impl Target {
    /// Every target, in report order. Figures that are no goal are
    /// reported, never judged: latency and throughput against the floor
    /// (retired as targets; the figures table gives both as ratios),
    /// system calls per call (the counter of `/proc/PID/io` leaves out a
    /// socket's `send` and `recv`), CPU per call against the fake daemon's
    /// (neither says whether a user waits), and the context switches of
    /// the outage phase's away window (most are the runtime's threads
    /// parking, not the wrapper's own wake-ups, which the herd counts).
    const ALL: [Self; 9] = [
        Self::ColdStart,
        Self::PeakRss,
        Self::Recovery,
        Self::OutageAnswer,
        Self::AwayDials,
        Self::AwayWakeups,
        Self::HerdAnswered,
        Self::HerdAnsweredAtOnce,
        Self::AcceptsPerReconnect,
    ];

    /// What the target is about, and its limit, as text.
    fn texts(self) -> (String, String) {
        let gap = HERD_LISTEN_GAP.as_millis();
        match self {
            Self::ColdStart => (
                "cold start to tools/list answered (median)".to_owned(),
                format!("< {}", format_ns(nanos(MAX_COLD_START))),
            ),
            Self::PeakRss => (
                "peak RSS (VmHWM) after load".to_owned(),
                format!("< {}", format_bytes(MAX_PEAK_RSS_BYTES)),
            ),
            Self::Recovery => (
                "recovery from DROP (median, no failure)".to_owned(),
                format!("< {}", format_ns(nanos(MAX_RECOVERY))),
            ),
            Self::OutageAnswer => (
                "waiting call answered after the rebind (median, no failure)".to_owned(),
                format!("≤ {}", format_ns(nanos(MAX_OUTAGE_ANSWER))),
            ),
            Self::AwayDials => (
                "dials per minute while away".to_owned(),
                format!("≤ {MAX_AWAY_DIALS_PER_MIN:.0}"),
            ),
            Self::AwayWakeups => (
                format!("herd of {TARGET_HERD}: own wake-ups per wrapper per minute while away"),
                format!("≤ {MAX_AWAY_WAKEUPS_PER_MIN:.0}"),
            ),
            Self::HerdAnswered => (
                format!(
                    "herd of {TARGET_HERD}, bound {gap} ms before listening: all answered after the listen (median), none failed"
                ),
                format!("≤ {}, 0", format_ns(nanos(MAX_HERD_ANSWERED))),
            ),
            Self::HerdAnsweredAtOnce => (
                format!(
                    "herd of {TARGET_HERD}, usual start-up: all answered after the listen (median), none failed"
                ),
                format!("≤ {}, 0", format_ns(nanos(MAX_HERD_ANSWERED_AT_ONCE))),
            ),
            Self::AcceptsPerReconnect => (
                format!("herd of {TARGET_HERD}: accepts per wrapper per restart"),
                format!("≤ {MAX_ACCEPTS_PER_RECONNECT:.0}"),
            ),
        }
    }

    /// Checks `subject` against the target.
    fn check(self, subject: &SubjectReport) -> Verdict {
        let time = |ns: u64, max| (Some(ns as f64), format_ns(ns), ns < nanos(max));
        let figure = match self {
            Self::ColdStart => subject
                .cold_start
                .as_ref()
                .and_then(|c| c.tools_list)
                .map(|s| time(s.p50_ns, MAX_COLD_START)),
            Self::PeakRss => subject.peak_rss_kib.map(|kib| {
                let bytes = kib.saturating_mul(1024);
                let pass = bytes < MAX_PEAK_RSS_BYTES;
                (Some(bytes as f64), format_bytes(bytes), pass)
            }),
            Self::Recovery => match &subject.recovery {
                Some(r) if r.failures > 0 || r.abandoned.is_some() => {
                    Some((None, format!("{}/{} failed", r.failures, r.attempts), false))
                }
                r => r
                    .as_ref()
                    .and_then(|r| r.from_drop)
                    .map(|s| time(s.p50_ns, MAX_RECOVERY)),
            },
            Self::OutageAnswer => outage_answer(subject),
            Self::AwayDials => away_figure(subject, |a| a.dials_per_min, MAX_AWAY_DIALS_PER_MIN),
            Self::AwayWakeups => target_herd(subject)
                .and_then(|h| h.wakeups_per_min)
                .map(|w| (Some(w), format!("{w:.1}"), w <= MAX_AWAY_WAKEUPS_PER_MIN)),
            Self::HerdAnswered => herd_answered(subject, HERD_LISTEN_AFTER, MAX_HERD_ANSWERED),
            Self::HerdAnsweredAtOnce => {
                herd_answered(subject, HERD_AT_ONCE, MAX_HERD_ANSWERED_AT_ONCE)
            }
            Self::AcceptsPerReconnect => accepts_per_reconnect(subject),
        };
        let (value, shown, pass) = match figure {
            Some((value, shown, pass)) => (value, shown, Some(pass)),
            None => (None, "no figure".to_owned(), None),
        };
        Verdict {
            subject: subject.name.clone(),
            value,
            shown,
            pass,
        }
    }
}

/// A target's figure: the value compared, as shown, and whether it passed.
type Figure = (Option<f64>, String, bool);

/// The usual start-up order's name, as [`RestartStats::order`] holds it.
pub const HERD_AT_ONCE: &str = "at-once";

/// The name of the order that binds [`HERD_LISTEN_GAP`] before it listens,
/// as [`RestartStats::order`] holds it.
pub const HERD_LISTEN_AFTER: &str = "listen-after=50";

/// The waiting call's median from the rebind; a failure misses.
fn outage_answer(subject: &SubjectReport) -> Option<Figure> {
    let outage = subject.outage.as_ref()?;
    if outage.waited_failures > 0 {
        let failed = format!("{}/{} failed", outage.waited_failures, outage.outages);
        return Some((None, failed, false));
    }
    let p50 = outage.waited?.p50_ns;
    let pass = p50 <= nanos(MAX_OUTAGE_ANSWER);
    Some((Some(p50 as f64), format_ns(p50), pass))
}

/// A per-minute figure of the away window against `max`.
fn away_figure(
    subject: &SubjectReport,
    figure: fn(&AwayStats) -> Option<f64>,
    max: f64,
) -> Option<Figure> {
    let value = figure(subject.outage.as_ref()?.away.as_ref()?)?;
    Some((Some(value), format!("{value:.1}"), value <= max))
}

/// The subject's herd of [`TARGET_HERD`], if it ran.
fn target_herd(subject: &SubjectReport) -> Option<&HerdStats> {
    subject.herds.iter().find(|h| h.wrappers == TARGET_HERD)
}

/// The herd of [`TARGET_HERD`] restarted in `order`: the median time from
/// the listen to the last answer against `max`; a failed call misses.
fn herd_answered(subject: &SubjectReport, order: &str, max: Duration) -> Option<Figure> {
    let restarts = target_herd(subject)?.in_order(order)?;
    if restarts.failed_calls > 0 {
        let failed = format!("{} calls failed", restarts.failed_calls);
        return Some((None, failed, false));
    }
    let p50 = restarts.all_answered?.p50_ns;
    Some((Some(p50 as f64), format_ns(p50), p50 <= nanos(max)))
}

/// The most connections the daemon accepted per wrapper per restart, in
/// either order.
fn accepts_per_reconnect(subject: &SubjectReport) -> Option<Figure> {
    let most = target_herd(subject)?
        .restarts
        .iter()
        .filter_map(|r| r.accepts_per_wrapper)
        .reduce(f64::max)?;
    Some((
        Some(most),
        format!("{most:.2}"),
        most <= MAX_ACCEPTS_PER_RECONNECT,
    ))
}

/// One target checked for every wrapper subject.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetRow {
    /// Which target.
    pub target: Target,
    /// What it is about.
    pub description: String,
    /// The limit, as text.
    pub limit: String,
    /// One verdict per wrapper subject, in subject order.
    pub verdicts: Vec<Verdict>,
}

/// A subject's standing against one target.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// The subject's name.
    pub subject: String,
    /// The figure compared (a ratio, nanoseconds or bytes), when there is
    /// one.
    pub value: Option<f64>,
    /// The figure as shown in the table.
    pub shown: String,
    /// `Some(true)` pass, `Some(false)` miss, `None` not measured.
    pub pass: Option<bool>,
}

/// Subject calls/s / floor calls/s at `depth`.
pub(crate) fn throughput_ratio(
    subject: &SubjectReport,
    floor: Option<&SubjectReport>,
    depth: usize,
) -> Option<f64> {
    ratio(
        subject.throughput_at(depth)?.calls_per_sec,
        floor?.throughput_at(depth)?.calls_per_sec,
    )
}

/// The subject's CPU time per call / the fake daemon's, in the sequential
/// phase (`depth` `None`) or at `depth`.
pub(crate) fn cpu_vs_daemon(subject: &SubjectReport, depth: Option<usize>) -> Option<f64> {
    let daemon = subject.load(depth)?.work?.daemon?;
    ratio(subject.own_work(depth)?.cpu_ns, daemon.cpu_ns)
}

pub(crate) fn ratio(value: f64, floor: f64) -> Option<f64> {
    (floor > 0.0).then(|| value / floor)
}

impl BenchReport {
    /// Assembles a report and checks the targets for every wrapper subject.
    pub fn new(
        host: HostInfo,
        settings: Settings,
        subjects: Vec<SubjectReport>,
        finished_unix_secs: u64,
    ) -> Self {
        let targets = Target::ALL
            .iter()
            .map(|&target| {
                let (description, limit) = target.texts();
                TargetRow {
                    target,
                    description,
                    limit,
                    verdicts: subjects
                        .iter()
                        .filter(|s| s.kind == SubjectKind::Wrapper)
                        .map(|s| target.check(s))
                        .collect(),
                }
            })
            .collect();
        Self {
            finished_unix_secs,
            host,
            settings,
            subjects,
            targets,
        }
    }

    /// Whether every target passed for every wrapper subject named in
    /// `subjects` (all wrappers when empty).
    pub fn all_targets_pass(&self, subjects: &[&str]) -> bool {
        self.targets.iter().all(|row| {
            row.verdicts
                .iter()
                .filter(|v| subjects.is_empty() || subjects.contains(&v.subject.as_str()))
                .all(|v| v.pass == Some(true))
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn summary(p50_ns: u64, max_ns: u64) -> Summary {
        Summary {
            count: 10,
            min_ns: p50_ns / 2,
            p50_ns,
            p99_ns: max_ns,
            max_ns,
            mean_ns: p50_ns,
        }
    }

    fn throughput(depth: usize, calls_per_sec: f64) -> ThroughputStats {
        ThroughputStats {
            depth,
            calls: 1000,
            failures: 0,
            stray: 0,
            elapsed_ns: 1,
            calls_per_sec,
            cpu: None,
            work: None,
        }
    }

    fn work(io_calls: f64, cpu_ns: f64) -> WorkPerCall {
        WorkPerCall {
            read_calls: io_calls / 2.0,
            write_calls: io_calls / 2.0,
            voluntary_switches: 1.0,
            involuntary_switches: 0.25,
            cpu_ns,
            system_share: Some(0.5),
        }
    }

    pub(crate) fn sample_report() -> BenchReport {
        let mut floor = SubjectReport::new("floor", SubjectKind::Floor, "fake-daemon");
        floor.sequential = Some(SequentialStats {
            calls: 10,
            failures: 0,
            latency: Some(summary(10_000, 50_000)),
            cpu: Some(CpuShare {
                client_pct: Some(40.0),
                subject_pct: None,
                daemon_pct: Some(35.0),
            }),
            work: Some(PhaseWork {
                client: Some(work(2.0, 4_000.0)),
                subject: None,
                daemon: Some(work(2.0, 3_000.0)),
            }),
        });
        floor.pipelined = vec![throughput(1, 50_000.0), throughput(64, 200_000.0)];

        let mut wrapper = SubjectReport::new("wrapper", SubjectKind::Wrapper, "iai-mcp-wrapper");
        wrapper.cold_start = Some(ColdStartStats {
            attempts: 2,
            failures: 0,
            initialize: Some(summary(1_500_000, 2_000_000)),
            tools_list: Some(summary(2_000_000, 3_000_000)),
        });
        wrapper.sequential = Some(SequentialStats {
            calls: 10,
            failures: 0,
            latency: Some(summary(15_000, 90_000)),
            cpu: None,
            work: None,
        });
        wrapper.pipelined = vec![throughput(1, 30_000.0), throughput(64, 150_000.0)];
        wrapper.pipelined[1].work = Some(PhaseWork {
            client: Some(work(1.0, 2_000.0)),
            subject: Some(work(0.5, 5_000.0)),
            daemon: Some(work(0.1, 2_000.0)),
        });
        wrapper.peak_rss_kib = Some(4_000);
        wrapper.recovery = Some(RecoveryStats {
            attempts: 2,
            failures: 0,
            from_drop: Some(summary(300_000, 400_000)),
            from_dropped_ack: Some(summary(200_000, 300_000)),
            failure_examples: Vec::new(),
            abandoned: None,
        });
        wrapper.outage = Some(OutageStats {
            normal: Some(summary(20_000, 40_000)),
            away: Some(AwayStats {
                window_ms: 10_000,
                dials_per_min: Some(0.0),
                wakeups_per_min: Some(3.0),
                cpu_ns_per_min: Some(150_000.0),
            }),
            outages: 2,
            after_rebind: Some(summary(30_000, 50_000)),
            after_rebind_failures: 0,
            waited: Some(summary(1_200_000, 2_500_000)),
            waited_from_up_sent: Some(summary(1_400_000, 2_700_000)),
            waited_failures: 0,
            failure_examples: Vec::new(),
        });
        let restarts = |order: &str, p50_ns, max_ns, failed_dials| RestartStats {
            order: order.to_owned(),
            restarts: 3,
            all_answered: Some(Summary {
                count: 3,
                ..summary(p50_ns, max_ns)
            }),
            failed_calls: 0,
            accepts_per_wrapper: Some(1.0),
            failed_dials: Some(failed_dials),
        };
        wrapper.herds = vec![HerdStats {
            wrappers: 50,
            away_ms: 9_000,
            wakeups_per_min: Some(0.4),
            dials_per_min: Some(0.0),
            restarts: vec![
                restarts(HERD_AT_ONCE, 12_000_000, 15_000_000, 0),
                restarts(HERD_LISTEN_AFTER, 60_000_000, 80_000_000, 150),
            ],
        }];

        let mut node = SubjectReport::new("node|js", SubjectKind::Wrapper, "node index.js");
        node.cold_start = Some(ColdStartStats {
            attempts: 2,
            failures: 2,
            initialize: None,
            tools_list: None,
        });
        node.sequential = Some(SequentialStats {
            calls: 10,
            failures: 1,
            latency: Some(summary(40_000, 100_000)),
            cpu: None,
            work: None,
        });
        node.peak_rss_kib = Some(50_000);
        node.recovery = Some(RecoveryStats {
            attempts: 2,
            failures: 2,
            from_drop: None,
            from_dropped_ack: None,
            failure_examples: vec!["daemon_unreachable:\nbridge not connected".to_owned()],
            abandoned: Some("gave up after 2 of 3 attempts".to_owned()),
        });
        node.errors.push("pipelined: stream closed".to_owned());
        node.outage = Some(OutageStats {
            normal: Some(summary(200_000, 900_000)),
            away: Some(AwayStats {
                window_ms: 10_000,
                dials_per_min: None,
                wakeups_per_min: Some(120.0),
                cpu_ns_per_min: Some(5_000_000.0),
            }),
            outages: 2,
            after_rebind_failures: 2,
            waited_failures: 2,
            failure_examples: vec!["daemon_unreachable: bridge not connected".to_owned()],
            ..OutageStats::default()
        });
        node.herds = vec![HerdStats {
            wrappers: 50,
            away_ms: 9_000,
            restarts: vec![
                RestartStats {
                    order: HERD_AT_ONCE.to_owned(),
                    restarts: 3,
                    failed_calls: 38,
                    accepts_per_wrapper: Some(2.0),
                    ..RestartStats::default()
                },
                RestartStats {
                    order: HERD_LISTEN_AFTER.to_owned(),
                    restarts: 3,
                    all_answered: Some(summary(120_000_000, 300_000_000)),
                    accepts_per_wrapper: Some(1.0),
                    ..RestartStats::default()
                },
            ],
            ..HerdStats::default()
        }];

        let settings = Settings {
            amounts: Amounts {
                calls: 10,
                warmup_calls: 5,
                pipelined_calls: 1000,
                depths: vec![1, 64],
                rounds: 1,
                cold_starts: 2,
                recoveries: 2,
                outages: 2,
                away_ms: 10_000,
                herds: vec![50],
                herd_rounds: 3,
                herd_away_ms: 3_000,
            },
            response_timeout_ms: 30_000,
            fake_daemon: "fake-daemon".to_owned(),
            protocol_version: "2025-06-18".to_owned(),
            tool: "topology".to_owned(),
        };
        let host = HostInfo {
            os: "linux".to_owned(),
            arch: "x86_64".to_owned(),
            cpus: 2,
        };
        BenchReport::new(host, settings, vec![floor, wrapper, node], 0)
    }

    #[test]
    fn targets_pass_and_miss() {
        let report = sample_report();
        let verdicts = |target: Target| {
            report
                .targets
                .iter()
                .find(|r| r.target == target)
                .unwrap()
                .verdicts
                .iter()
                .map(|v| v.pass)
                .collect::<Vec<_>>()
        };
        assert_eq!(verdicts(Target::ColdStart), [Some(true), None]);
        assert_eq!(verdicts(Target::PeakRss), [Some(true), Some(false)]);
        assert_eq!(verdicts(Target::Recovery), [Some(true), Some(false)]);
        assert_eq!(verdicts(Target::OutageAnswer), [Some(true), Some(false)]);
        assert_eq!(verdicts(Target::AwayDials), [Some(true), None]);
        // The compared wrapper logs no events: its wake-ups are no figure.
        assert_eq!(verdicts(Target::AwayWakeups), [Some(true), None]);
        assert_eq!(verdicts(Target::HerdAnswered), [Some(true), Some(false)]);
        assert_eq!(
            verdicts(Target::HerdAnsweredAtOnce),
            [Some(true), Some(false)]
        );
        assert_eq!(
            verdicts(Target::AcceptsPerReconnect),
            [Some(true), Some(false)]
        );
        assert!(report.all_targets_pass(&["wrapper"]));
        assert!(!report.all_targets_pass(&["node|js"]));
        assert!(!report.all_targets_pass(&[]));
        // Latency and throughput against the floor are figures, not goals:
        // a wrapper four times the floor's latency misses no target for it.
        assert_eq!(report.targets.len(), 9);
        let descriptions: Vec<&str> = report
            .targets
            .iter()
            .map(|r| r.description.as_str())
            .collect();
        assert!(
            descriptions.iter().all(|d| !d.contains("vs floor")),
            "{descriptions:?}"
        );
    }
}
