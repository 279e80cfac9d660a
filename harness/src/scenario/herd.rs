//! Many wrappers, one daemon: what a daemon restart does to every session
//! at once.
//!
//! A user runs one wrapper per assistant session, often ten or more, all on
//! one daemon. The herd starts `wrappers` of them on one fake daemon, each
//! making calls one after another; the daemon then closes every connection
//! at once (`DROP`), and later stops listening for `down_for` (`DOWN`,
//! `UP`). After each fault, once every wrapper has answered a call made
//! after it began, the herd counts the daemon's connections. It reports
//! every call answered exactly once, the time until the last wrapper
//! recovered, the daemon's peak accept rate, and how the wrappers'
//! reconnect attempts (their `connect_failed` log events) were spread
//! while the daemon was down.
//!
//! Every wrapper loses its connection at the same instant, so the first
//! attempts after the loss come at once, by design (a restart usually
//! rebinds at once). The spread is judged on the later attempts: no more
//! than `max_dial_fraction` of the wrappers may dial within any one
//! `window` (judged in herds of at least [`MIN_SPREAD_WRAPPERS`]).

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::Args;
use devkit::bins::error_chain;
use devkit::format::{format_ms, serialize_ms, serialize_opt_ms};
use devkit::sync::lock;
use serde::Serialize;
use serde_json::json;

use super::declaration::{Scenario, Scoring};
use super::live::{
    PROBE_TOOL, STDERR_TAIL_BYTES, collect_unsolicited, is_response, or_na, spawn_wrapper,
    start_daemon, write_serde_name,
};
use super::outcome::CallOutcome;
use super::property::{Cause, Check, Checks, Judged, Prop};
use super::race::PROTOCOL_VERSION;
use super::settings;
use super::setup::Setup;
use super::wrapper_log::{CONNECT_FAILED, Dial, JSON_EVENTS, dial_times, event_times, logs_events};
use crate::daemon::FakeDaemon;
use crate::error::HarnessError;
use crate::wrapper::{BridgeMode, WrapperCommand, WrapperProcess};

/// The smallest herd whose spread is judged: with fewer wrappers, one
/// wrapper's draw is a large share of any window, and chance alone often
/// puts half of them in one (6 of 10 seen with the jitter working). The
/// figures are reported either way.
pub const MIN_SPREAD_WRAPPERS: usize = 20;

/// Parameters of the herd: its settings (the `herd` command's flags) and
/// its fixed timings; `Default` is every value declared here.
#[derive(Debug, Clone, Args)]
pub struct HerdConfig {
    /// Wrappers on the one daemon.
    #[arg(long, default_value_t = 50, value_parser = settings::count(1..=1000))]
    pub wrappers: usize,
    /// Pause between one wrapper's answer and its next call.
    #[arg(skip = Duration::from_millis(20))]
    pub call_interval: Duration,
    /// How long calls flow before each fault, and how long the daemon's
    /// connections are left to settle after a recovery before they are
    /// counted.
    #[arg(skip = Duration::from_millis(300))]
    pub settle: Duration,
    /// How long the daemon stays down.
    #[arg(long = "down-ms", default_value = "1000", value_name = "MS",
          value_parser = settings::millis())]
    pub down_for: Duration,
    /// The window in which dials and accepts are counted together.
    #[arg(skip = Duration::from_millis(10))]
    pub window: Duration,
    /// The largest share of the wrappers that may dial within 10 ms while
    /// the daemon is down (first attempts after the loss excepted).
    // The help's 10 ms is `window`.
    #[arg(long, default_value_t = 0.5, value_name = "SHARE")]
    pub max_dial_fraction: f64,
    /// How long the last wrapper may take to answer again after a fault.
    #[arg(skip = Duration::from_secs(10))]
    pub recovery_timeout: Duration,
    /// The longest the harness waits for any one answer.
    #[arg(skip = Duration::from_secs(30))]
    pub call_bound: Duration,
    /// The wrappers' bridge mode and the fake daemon.
    #[arg(skip)]
    pub setup: Setup,
    /// The faults to make, in order (both by default; the bench makes
    /// only [`HerdFault::DownUp`]).
    #[arg(skip = vec![HerdFault::DropAll, HerdFault::DownUp])]
    pub faults: Vec<HerdFault>,
}

impl Default for HerdConfig {
    fn default() -> Self {
        settings::defaults()
    }
}

/// Many wrappers on one daemon.
#[derive(Debug, Clone, Copy)]
pub struct Herd;

impl Scenario for Herd {
    const NAME: &'static str = "herd";
    const ABOUT: &'static str = "Many wrappers (50 by default) on one daemon: it drops every connection at once, then goes down and comes back; every call answered once, every wrapper back on one connection, reconnects spread out, the peak accept rate and the time to recover";
    type Config = HerdConfig;
    type Args = HerdConfig;
    type Report = HerdReport;

    fn setup(cfg: &mut HerdConfig) -> &mut Setup {
        &mut cfg.setup
    }

    fn run(cmd: &WrapperCommand, cfg: &HerdConfig) -> Result<HerdReport, HarnessError> {
        run_herd(cmd, cfg)
    }

    fn scored(scoring: &Scoring) -> Vec<HerdConfig> {
        vec![HerdConfig {
            recovery_timeout: scoring.recovery_timeout,
            ..HerdConfig::default()
        }]
    }
}

/// The two faults, in the order they are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HerdFault {
    /// `DROP`: every connection closed at once; the daemon stays up.
    DropAll,
    /// `DOWN`, then `UP` after a while.
    DownUp,
}

impl fmt::Display for HerdFault {
    /// The fault's kebab-case name, as in JSON reports.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_serde_name(self, f)
    }
}

/// What one fault did to the herd.
#[derive(Debug, Clone, Serialize)]
pub struct FaultReport {
    /// The fault.
    pub fault: HerdFault,
    /// Calls sent from the fault's start until every wrapper recovered.
    pub calls: u64,
    /// Those that failed, and the first failure in words.
    pub failed: u64,
    /// The first failure (wrapper number and outcome), if any.
    pub first_failure: Option<String>,
    /// Its cause.
    pub cause: Option<Cause>,
    /// Wrappers that answered a call made after the fault began.
    pub recovered: usize,
    /// From the end of the fault (`DROPPED` acknowledged, or the socket
    /// bound again: see [`FakeDaemon::up_timed`]) to the last wrapper's
    /// first successful answer.
    #[serde(rename = "all_recovered_ms", serialize_with = "serialize_opt_ms")]
    pub all_recovered: Option<Duration>,
    /// The most connections the daemon accepted within one window after
    /// the fault.
    pub peak_accepts: usize,
    /// Connect attempts the wrappers logged as failed from the end of the
    /// fault (the daemon listening again) until every wrapper recovered:
    /// refused or turned away by a daemon that was back. `None` when the
    /// wrappers log no events (another wrapper's own log), so they cannot
    /// be counted; the daemon sees no attempt it did not accept.
    pub refused_after: Option<u64>,
    /// The daemon's connections once every wrapper recovered and the
    /// settle time passed (one per wrapper, plus the daemon's other
    /// clients).
    pub conns_after: u32,
}

/// What the herd measured.
#[derive(Debug, Clone, Default, Serialize)]
pub struct HerdReport {
    /// The bridge mode the wrappers ran in (`None`: not set).
    pub mode: Option<BridgeMode>,
    /// Wrappers in the herd.
    pub wrappers: usize,
    /// Connections the daemon may hold besides the herd's (other clients).
    pub others: u32,
    /// Calls made in all (every wrapper, the whole run).
    pub calls: u64,
    /// Calls with no answer within the harness's bound (must be 0).
    pub unanswered: u64,
    /// Answers nobody waited for: a second answer to a call (must be 0).
    pub extra_answers: u64,
    /// The faults, in order.
    pub faults: Vec<FaultReport>,
    /// Reconnect attempts the wrappers logged while the daemon was down
    /// (`None`: they log none, so the spread cannot be measured).
    pub dials_while_down: Option<u64>,
    /// The most of those attempts within one window, first attempts after
    /// the loss excepted.
    pub peak_dials: Option<usize>,
    /// The window.
    #[serde(rename = "window_ms", serialize_with = "serialize_ms")]
    pub window: Duration,
    /// The largest share of the wrappers allowed to dial in one window.
    pub max_dial_fraction: f64,
    /// Stdout framing defects, across the herd (must be none).
    pub defects: Vec<String>,
    /// Wrappers that stopped talking, and why.
    pub gone: Vec<String>,
    /// The end of the first troubled wrapper's stderr, kept when the run
    /// did not pass.
    pub wrapper_stderr_tail: Option<String>,
}

impl Judged for HerdReport {
    fn checks(&self) -> Vec<Check> {
        let mut checks = Checks::default();
        checks.zero(
            Prop::AnsweredOnce,
            self.unanswered,
            Cause::NoAnswer,
            "calls never answered",
        );
        checks.zero(
            Prop::AnsweredOnce,
            self.extra_answers,
            Cause::AnsweredTwice,
            "answers to no call (a call answered twice)",
        );
        for fault in &self.faults {
            fault.checks(self.wrappers, self.others, &mut checks);
        }
        checks.stdout_clean(&self.defects);
        if self.wrappers >= MIN_SPREAD_WRAPPERS {
            self.spread_check(&mut checks);
        }
        checks.into_vec()
    }
}

impl FaultReport {
    /// What the fault did to a herd of `n` beside `others` clients: no
    /// call failed, every wrapper answered again, each on one connection.
    fn checks(&self, n: usize, others: u32, checks: &mut Checks) {
        let prop = match self.fault {
            HerdFault::DropAll => Prop::ReconnectCall,
            HerdFault::DownUp => Prop::ConnectWait,
        };
        checks.judge(
            prop,
            self.cause,
            match &self.first_failure {
                None => format!(
                    "{}: {} calls across {n} wrappers, none failed",
                    self.fault, self.calls
                ),
                Some(first) => format!(
                    "{}: {} of {} calls failed, first: {first}",
                    self.fault, self.failed, self.calls
                ),
            },
        );
        checks.expect(
            Prop::Recovers,
            self.recovered == n,
            Cause::Died,
            match self.all_recovered {
                Some(t) => format!(
                    "{}: all {n} wrappers answered again within {}",
                    self.fault,
                    format_ms(t)
                ),
                None => format!(
                    "{}: {} of {n} wrappers answered again",
                    self.fault, self.recovered
                ),
            },
        );
        checks.expect(
            Prop::OneConnection,
            self.conns_after as usize <= n + others as usize,
            Cause::Leak,
            format!(
                "{}: {} daemon connections for {n} wrappers and {others} other clients",
                self.fault, self.conns_after
            ),
        );
    }
}

impl HerdReport {
    /// The reconnect attempts while down: no more than the allowed share
    /// of the herd within one window.
    fn spread_check(&self, checks: &mut Checks) {
        let n = self.wrappers;
        let limit = self.max_dial_fraction * n as f64;
        checks.expect(
            Prop::SpreadDials,
            self.peak_dials.is_some_and(|p| p as f64 <= limit),
            Cause::Other,
            match self.peak_dials {
                None => format!(
                    "not measurable: no `{CONNECT_FAILED}` events logged while the daemon was down"
                ),
                Some(peak) => format!(
                    "at most {peak} of {n} wrappers dialled within {} while down (limit {:.0}%)",
                    format_ms(self.window),
                    self.max_dial_fraction * 100.0
                ),
            },
        );
    }
}

impl fmt::Display for HerdReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} wrappers, {} calls",
            if self.passed() { "PASS" } else { "FAIL" },
            self.wrappers,
            self.calls
        )?;
        for fault in &self.faults {
            write!(
                f,
                "; {}: {} failed, all back {}, peak {} accepts per {}, {} conns",
                fault.fault,
                fault.failed,
                fault
                    .all_recovered
                    .map_or_else(|| "never".to_owned(), format_ms),
                fault.peak_accepts,
                format_ms(self.window),
                fault.conns_after
            )?;
        }
        write!(
            f,
            "; dials while down {}, peak {} per {}",
            or_na(self.dials_while_down),
            or_na(self.peak_dials),
            format_ms(self.window)
        )
    }
}

/// One call one wrapper made.
#[derive(Debug)]
struct Call {
    span: Span,
    outcome: CallOutcome,
}

/// What one wrapper did, once its thread is done.
#[derive(Debug, Default)]
struct Log {
    calls: Vec<Call>,
    extra_answers: u64,
    defects: Vec<String>,
    stderr: String,
    gone: Option<String>,
}

/// When a call was sent and when its answer came.
#[derive(Debug, Clone, Copy)]
struct Span {
    sent: Instant,
    answered: Instant,
}

impl Span {
    /// Whether a successful call made in this span shows its wrapper
    /// recovered from a fault that began at `began` and ended at `ended`:
    /// made after the fault began, answered after it ended.
    fn shows_recovery(self, began: Instant, ended: Instant) -> bool {
        self.sent >= began && self.answered >= ended
    }
}

/// What the member threads and the conductor share: per wrapper, its
/// latest successful call; and whether to stop.
#[derive(Debug)]
struct Progress {
    latest_ok: Mutex<Vec<Option<Span>>>,
    changed: Condvar,
    stop: AtomicBool,
}

impl Progress {
    /// Waits until every wrapper shows it recovered from a fault from
    /// `began` to `ended` (see [`Span::shows_recovery`]), at most until
    /// `deadline`.
    fn wait_all(&self, began: Instant, ended: Instant, deadline: Instant) {
        let guard = lock(&self.latest_ok);
        let left = deadline.saturating_duration_since(Instant::now());
        let _ = self
            .changed
            .wait_timeout_while(guard, left, |latest| {
                !latest
                    .iter()
                    .all(|span| span.is_some_and(|span| span.shows_recovery(began, ended)))
            })
            .unwrap_or_else(PoisonError::into_inner);
    }
}

/// Makes calls on `wrapper` until told to stop, then collects what else it
/// wrote and ends it.
fn member(
    index: usize,
    mut wrapper: WrapperProcess,
    progress: Arc<Progress>,
    cfg: HerdConfig,
) -> Log {
    let mut log = Log::default();
    while !progress.stop.load(Ordering::Relaxed) {
        let sent = Instant::now();
        let result = wrapper.call_tool(PROBE_TOOL, json!({}), cfg.call_bound);
        let outcome = CallOutcome::from_client(result);
        let span = Span {
            sent,
            answered: Instant::now(),
        };
        if outcome.is_ok() {
            let mut latest = lock(&progress.latest_ok);
            latest[index] = Some(span);
            progress.changed.notify_all();
        }
        if let CallOutcome::WrapperGone(why) = &outcome {
            log.gone = Some(why.clone());
        }
        log.calls.push(Call { span, outcome });
        if log.gone.is_some() {
            break;
        }
        // Pacing between calls, not a synchronisation.
        thread::sleep(cfg.call_interval);
    }
    let late = collect_unsolicited(&mut wrapper, cfg.settle);
    log.extra_answers = late.iter().filter(|m| is_response(m)).count() as u64;
    log.defects = wrapper.defects();
    wrapper.close_stdin();
    let _ = wrapper.wait_exit(Duration::from_secs(2));
    log.stderr = wrapper.stderr_text();
    log
}

/// A fault as the conductor made it.
#[derive(Debug, Clone, Copy)]
struct Made {
    fault: HerdFault,
    began: Instant,
    began_wall: SystemTime,
    ended: Instant,
    ended_wall: SystemTime,
    /// When every wrapper was seen recovered (or the wait gave up).
    settled: Instant,
    settled_wall: SystemTime,
    conns_after: u32,
}

/// Runs the herd once: `cfg.wrappers` wrappers started by `cmd` on one fake
/// daemon.
pub fn run_herd(cmd: &WrapperCommand, cfg: &HerdConfig) -> Result<HerdReport, HarnessError> {
    let host = start_daemon(&cfg.setup)?;
    let report = herd_on(cmd, &host.daemon, cfg, &[], 0);
    let _ = host.daemon.quit();
    report
}

/// Runs the herd's two faults against `daemon`, which `others` other
/// clients may also be connected to, with the wrappers' extra environment
/// `env`; `daemon` ends up listening again.
pub(crate) fn herd_on(
    cmd: &WrapperCommand,
    daemon: &FakeDaemon,
    cfg: &HerdConfig,
    env: &[(&str, String)],
    others: u32,
) -> Result<HerdReport, HarnessError> {
    let n = cfg.wrappers.max(1);
    let progress = Arc::new(Progress {
        latest_ok: Mutex::new(vec![None; n]),
        changed: Condvar::new(),
        stop: AtomicBool::new(false),
    });
    let mut members = start_members(cmd, daemon, cfg, env, &progress)?;
    let made = cfg
        .faults
        .iter()
        .map(|&fault| make_fault(fault, daemon, cfg, &progress))
        .collect::<Result<Vec<_>, _>>()?;
    let accepts = daemon.accept_times()?;
    let logs = members.finish();
    let herd = Crowd {
        wrappers: n,
        others,
    };
    Ok(judge(cfg, herd, &made, &accepts, &logs))
}

/// Starts the herd's wrappers one by one, each proven to answer, then
/// handed to a thread of its own that calls until told to stop; the
/// guard returned stops every thread, also on an early return.
fn start_members(
    cmd: &WrapperCommand,
    daemon: &FakeDaemon,
    cfg: &HerdConfig,
    env: &[(&str, String)],
    progress: &Arc<Progress>,
) -> Result<Members, HarnessError> {
    let mut members = Members {
        handles: Vec::new(),
        progress: Arc::clone(progress),
    };
    let mut env = env.to_vec();
    env.insert(0, (JSON_EVENTS.0, JSON_EVENTS.1.to_owned()));
    for index in 0..cfg.wrappers.max(1) {
        let mut wrapper = spawn_wrapper(cmd, cfg.setup.mode, daemon, &env)?;
        let started = wrapper
            .initialize(PROTOCOL_VERSION)
            .and_then(|_| wrapper.call_tool(PROBE_TOOL, json!({}), cfg.call_bound));
        if let Err(e) = started {
            return Err(HarnessError::Scenario(format!(
                "wrapper {index} of the herd did not answer its first call: {}; stderr (tail): {}",
                error_chain(&e),
                wrapper.stderr_tail(STDERR_TAIL_BYTES).trim_end()
            )));
        }
        let (progress, cfg) = (Arc::clone(progress), cfg.clone());
        members.handles.push(
            thread::Builder::new()
                .name(format!("herd-{index}"))
                .spawn(move || member(index, wrapper, progress, cfg))
                .map_err(|e| HarnessError::Scenario(format!("cannot start a herd thread: {e}")))?,
        );
    }
    Ok(members)
}

/// Makes `fault` once calls have flowed for a while, waits until every
/// wrapper answered again (or the recovery timeout), lets late
/// connections show, and counts the daemon's connections.
fn make_fault(
    fault: HerdFault,
    daemon: &FakeDaemon,
    cfg: &HerdConfig,
    progress: &Progress,
) -> Result<Made, HarnessError> {
    // Calls flow before the fault.
    let now = Instant::now();
    progress.wait_all(now, now, now + cfg.recovery_timeout);
    thread::sleep(cfg.settle);
    let (began, began_wall) = (Instant::now(), SystemTime::now());
    let ended = match fault {
        HerdFault::DropAll => {
            daemon.drop_connections()?;
            Instant::now()
        }
        HerdFault::DownUp => {
            daemon.down()?;
            // The outage itself, not a synchronisation.
            thread::sleep(cfg.down_for);
            daemon.up_timed()?.bound
        }
    };
    let ended_wall = SystemTime::now() - ended.elapsed();
    progress.wait_all(began, ended, ended + cfg.recovery_timeout);
    let (settled, settled_wall) = (Instant::now(), SystemTime::now());
    // Late extra connections would show up here.
    thread::sleep(cfg.settle);
    Ok(Made {
        fault,
        began,
        began_wall,
        ended,
        ended_wall,
        settled,
        settled_wall,
        conns_after: daemon.stats()?.conns,
    })
}

/// The member threads; stopped and joined when dropped.
struct Members {
    handles: Vec<JoinHandle<Log>>,
    progress: Arc<Progress>,
}

impl Members {
    /// Stops every member thread and collects what each did.
    fn finish(&mut self) -> Vec<Log> {
        self.progress.stop.store(true, Ordering::Relaxed);
        self.handles
            .drain(..)
            .map(|h| h.join().unwrap_or_default())
            .collect()
    }
}

impl Drop for Members {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Who was on the daemon: the herd, and other clients beside it.
#[derive(Debug, Clone, Copy)]
struct Crowd {
    wrappers: usize,
    others: u32,
}

/// The report of `herd`, from the faults made, the daemon's accept times
/// and what each wrapper did.
fn judge(
    cfg: &HerdConfig,
    herd: Crowd,
    made: &[Made],
    accepts: &[u64],
    logs: &[Log],
) -> HerdReport {
    let faults = made
        .iter()
        .map(|m| fault_report(m, herd.wrappers, accepts, logs, cfg.window))
        .collect();
    let spread = dial_spread(made, logs, cfg.window);
    let mut report = HerdReport {
        mode: cfg.setup.mode,
        wrappers: herd.wrappers,
        others: herd.others,
        calls: logs.iter().map(|l| l.calls.len() as u64).sum(),
        unanswered: wrapper_calls(logs)
            .filter(|c| matches!(c.call.outcome, CallOutcome::NoResponse))
            .count() as u64,
        extra_answers: logs.iter().map(|l| l.extra_answers).sum(),
        faults,
        dials_while_down: spread.dials_while_down,
        peak_dials: spread.peak_dials,
        window: cfg.window,
        max_dial_fraction: cfg.max_dial_fraction,
        defects: logs
            .iter()
            .flat_map(|l| l.defects.iter().cloned())
            .collect(),
        gone: wrappers_gone(logs),
        wrapper_stderr_tail: None,
    };
    if !report.passed() {
        report.wrapper_stderr_tail = troubled_stderr_tail(logs);
    }
    report
}

/// A call, and the wrapper that made it (its number in the herd).
#[derive(Debug, Clone, Copy)]
struct WrapperCall<'a> {
    wrapper: usize,
    call: &'a Call,
}

/// Every call of the herd, wrapper by wrapper, each in the order made.
fn wrapper_calls(logs: &[Log]) -> impl Iterator<Item = WrapperCall<'_>> {
    logs.iter().enumerate().flat_map(|(wrapper, l)| {
        l.calls
            .iter()
            .map(move |call| WrapperCall { wrapper, call })
    })
}

/// What fault `m` did to a herd of `wrappers`: the calls sent from its
/// start until every wrapper recovered and the first of them that failed,
/// when the last wrapper answered again, the daemon's busiest `window` of
/// accepts after the fault began, and the connect attempts refused once it
/// ended.
fn fault_report(
    m: &Made,
    wrappers: usize,
    accepts: &[u64],
    logs: &[Log],
    window: Duration,
) -> FaultReport {
    let during: Vec<_> = wrapper_calls(logs)
        .filter(|c| c.call.span.sent >= m.began && c.call.span.sent <= m.settled)
        .collect();
    let failed: Vec<_> = during.iter().filter(|c| !c.call.outcome.is_ok()).collect();
    let first = failed.first();
    let back = recovered_at(m, logs);
    let recovered = back.iter().flatten().count();
    FaultReport {
        fault: m.fault,
        calls: during.len() as u64,
        failed: failed.len() as u64,
        first_failure: first.map(|c| format!("wrapper {}: {}", c.wrapper, c.call.outcome)),
        cause: first.map(|c| Cause::of_call(&c.call.outcome, m.fault == HerdFault::DropAll)),
        recovered,
        all_recovered: (recovered == wrappers).then(|| {
            back.iter()
                .flatten()
                .max()
                .map_or(Duration::ZERO, |t| t.saturating_duration_since(m.ended))
        }),
        peak_accepts: peak_in_window(
            accepts
                .iter()
                .copied()
                .filter(|&t| t >= micros(m.began_wall)),
            window,
        ),
        conns_after: m.conns_after,
        refused_after: refused_after(m, logs),
    }
}

/// When each wrapper first answered a call that shows it recovered from
/// fault `m` (see [`Span::shows_recovery`]); `None` for a wrapper that
/// never did.
fn recovered_at(m: &Made, logs: &[Log]) -> Vec<Option<Instant>> {
    logs.iter()
        .map(|l| {
            l.calls
                .iter()
                .find(|c| c.outcome.is_ok() && c.span.shows_recovery(m.began, m.ended))
                .map(|c| c.span.answered)
        })
        .collect()
}

/// How the wrappers' reconnect attempts were spread while the daemon was
/// down: the report's fields of the same names.
#[derive(Debug, Clone, Copy)]
struct DialSpread {
    /// Attempts logged while down (`None`: none logged).
    dials_while_down: Option<u64>,
    /// The most of them within one window, first attempts after the loss
    /// excepted (`None`: none logged).
    peak_dials: Option<usize>,
}

/// The spread of the reconnect attempts logged while the daemon was down,
/// counted in `window`s. Every wrapper's first attempt after the loss
/// comes at once by design, so the peak leaves those out.
fn dial_spread(made: &[Made], logs: &[Log], window: Duration) -> DialSpread {
    let dials = dials_while_down(made, logs);
    DialSpread {
        dials_while_down: (!dials.is_empty()).then_some(dials.len() as u64),
        peak_dials: (!dials.is_empty()).then(|| {
            let later = dials.iter().filter(|dial| !dial.first_after_loss);
            peak_in_window(later.map(|dial| micros(dial.at)), window)
        }),
    }
}

/// The failed connect attempts the wrappers logged from the start to the
/// end of the `DOWN`/`UP` fault (none when it was not made).
fn dials_while_down(made: &[Made], logs: &[Log]) -> Vec<Dial> {
    let down = made.iter().find(|m| m.fault == HerdFault::DownUp);
    logs.iter()
        .flat_map(|l| dial_times(&l.stderr))
        .filter(|dial| {
            let at = micros(dial.at);
            down.is_some_and(|m| at >= micros(m.began_wall) && at <= micros(m.ended_wall))
        })
        .collect()
}

/// The wrappers that stopped talking, and why, as `wrapper 3: why`.
fn wrappers_gone(logs: &[Log]) -> Vec<String> {
    logs.iter()
        .enumerate()
        .filter_map(|(i, l)| l.gone.as_ref().map(|g| format!("wrapper {i}: {g}")))
        .collect()
}

/// The end of the first troubled wrapper's stderr (one that went away or
/// had a call fail), to show why a run did not pass; `None` when every
/// wrapper did well.
fn troubled_stderr_tail(logs: &[Log]) -> Option<String> {
    let troubled = logs
        .iter()
        .find(|l| l.gone.is_some() || l.calls.iter().any(|c| !c.outcome.is_ok()))?;
    Some(devkit::format::last_lines(&troubled.stderr, 20, "\n"))
}

/// The failed connect attempts the wrappers logged from the end of fault
/// `m` until every wrapper recovered; `None` when no wrapper logs events.
fn refused_after(m: &Made, logs: &[Log]) -> Option<u64> {
    if !logs.iter().any(|l| logs_events(&l.stderr)) {
        return None;
    }
    let (from, to) = (micros(m.ended_wall), micros(m.settled_wall));
    let refused = logs
        .iter()
        .flat_map(|l| event_times(&l.stderr, CONNECT_FAILED))
        .filter(|&at| (from..=to).contains(&micros(at)))
        .count();
    Some(refused as u64)
}

/// Microseconds since the Unix epoch, the unit of the daemon's `ACCEPTS`.
fn micros(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// The most events (microseconds since the epoch) within any one `window`.
fn peak_in_window(times: impl Iterator<Item = u64>, window: Duration) -> usize {
    let mut times: Vec<u64> = times.collect();
    times.sort_unstable();
    let width = u64::try_from(window.as_micros()).unwrap_or(u64::MAX);
    let mut start = 0;
    let mut peak = 0;
    for end in 0..times.len() {
        while times[end] - times[start] >= width {
            start += 1;
        }
        peak = peak.max(end - start + 1);
    }
    peak
}

#[cfg(test)]
mod tests {
    use super::super::wrapper_log::CONNECT_ATTEMPT;
    use super::*;

    #[test]
    fn the_spread_is_judged_in_herds_large_enough() {
        let spread = |wrappers: usize, peak: usize| {
            let report = HerdReport {
                wrappers,
                peak_dials: Some(peak),
                max_dial_fraction: 0.5,
                ..HerdReport::default()
            };
            report
                .checks()
                .into_iter()
                .find(|c| c.prop == Prop::SpreadDials)
                .map(|c| c.held())
        };
        assert_eq!(spread(50, 25), Some(true));
        assert_eq!(spread(50, 26), Some(false));
        assert_eq!(spread(MIN_SPREAD_WRAPPERS - 1, 19), None);
    }

    /// Every check of a herd of 20 through both faults, one line each, as
    /// they read when all went well and when all went wrong.
    #[test]
    fn checks_read_the_same_whatever_held() {
        let fault = |fault, failed: u64, recovered: Option<Duration>| FaultReport {
            fault,
            calls: 40,
            failed,
            first_failure: (failed > 0).then(|| "wrapper 3: no_response".to_owned()),
            cause: (failed > 0).then_some(Cause::NoAnswer),
            recovered: if recovered.is_some() { 20 } else { 17 },
            all_recovered: recovered,
            peak_accepts: 9,
            refused_after: Some(0),
            conns_after: if failed > 0 { 30 } else { 20 },
        };
        let report = |failing: bool| HerdReport {
            wrappers: 20,
            others: 1,
            unanswered: u64::from(failing),
            extra_answers: u64::from(failing) * 2,
            faults: vec![
                fault(HerdFault::DropAll, 0, Some(Duration::from_millis(12))),
                fault(
                    HerdFault::DownUp,
                    u64::from(failing) * 3,
                    (!failing).then(|| Duration::from_millis(7)),
                ),
            ],
            peak_dials: (!failing).then_some(4),
            window: Duration::from_millis(10),
            max_dial_fraction: 0.5,
            ..HerdReport::default()
        };
        let lines = |report: HerdReport| {
            let lines = report
                .checks()
                .into_iter()
                .map(|c| format!("{:?} {:?} {}", c.prop, c.failure, c.figure));
            lines.collect::<Vec<_>>().join("\n")
        };
        assert_eq!(
            lines(report(false)),
            r#"AnsweredOnce None 0 calls never answered
AnsweredOnce None 0 answers to no call (a call answered twice)
ReconnectCall None drop-all: 40 calls across 20 wrappers, none failed
Recovers None drop-all: all 20 wrappers answered again within 12 ms
OneConnection None drop-all: 20 daemon connections for 20 wrappers and 1 other clients
ConnectWait None down-up: 40 calls across 20 wrappers, none failed
Recovers None down-up: all 20 wrappers answered again within 7.0 ms
OneConnection None down-up: 20 daemon connections for 20 wrappers and 1 other clients
StdoutJson None no stdout defects
SpreadDials None at most 4 of 20 wrappers dialled within 10 ms while down (limit 50%)"#
        );
        assert_eq!(
            lines(report(true)),
            r#"AnsweredOnce Some(NoAnswer) 1 calls never answered
AnsweredOnce Some(AnsweredTwice) 2 answers to no call (a call answered twice)
ReconnectCall None drop-all: 40 calls across 20 wrappers, none failed
Recovers None drop-all: all 20 wrappers answered again within 12 ms
OneConnection None drop-all: 20 daemon connections for 20 wrappers and 1 other clients
ConnectWait Some(NoAnswer) down-up: 3 of 40 calls failed, first: wrapper 3: no_response
Recovers Some(Died) down-up: 17 of 20 wrappers answered again
OneConnection Some(Leak) down-up: 30 daemon connections for 20 wrappers and 1 other clients
StdoutJson None no stdout defects
SpreadDials Some(Other) not measurable: no `connect_failed` events logged while the daemon was down"#
        );
        let small = HerdReport {
            wrappers: 2,
            ..report(false)
        };
        assert_eq!(
            lines(small),
            r#"AnsweredOnce None 0 calls never answered
AnsweredOnce None 0 answers to no call (a call answered twice)
ReconnectCall None drop-all: 40 calls across 2 wrappers, none failed
Recovers Some(Died) drop-all: all 2 wrappers answered again within 12 ms
OneConnection Some(Leak) drop-all: 20 daemon connections for 2 wrappers and 1 other clients
ConnectWait None down-up: 40 calls across 2 wrappers, none failed
Recovers Some(Died) down-up: all 2 wrappers answered again within 7.0 ms
OneConnection Some(Leak) down-up: 20 daemon connections for 2 wrappers and 1 other clients
StdoutJson None no stdout defects"#
        );
    }

    /// A wrapper's log event `event`, logged `at_ms` after `wall`.
    fn event(wall: SystemTime, at_ms: u64, event: &str, failures: u64) -> String {
        let at = humantime::format_rfc3339_micros(wall + Duration::from_millis(at_ms));
        format!(r#"{{"timestamp":"{at}","event":"{event}","failures":{failures}}}"#)
    }

    /// The report of a herd of two through both faults, a failure in each,
    /// byte for byte as JSON.
    #[test]
    fn the_report_follows_the_faults_and_the_logs() {
        let (t0, wall) = (
            Instant::now(),
            UNIX_EPOCH + Duration::from_secs(1_800_000_000),
        );
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let at_wall = |ms: u64| wall + Duration::from_millis(ms);
        let made = |fault, began, ended, settled, conns_after| Made {
            fault,
            began: at(began),
            began_wall: at_wall(began),
            ended: at(ended),
            ended_wall: at_wall(ended),
            settled: at(settled),
            settled_wall: at_wall(settled),
            conns_after,
        };
        let made = [
            made(HerdFault::DropAll, 100, 101, 150, 3),
            made(HerdFault::DownUp, 200, 300, 400, 2),
        ];
        let call = |sent, answered, outcome| Call {
            span: Span {
                sent: at(sent),
                answered: at(answered),
            },
            outcome,
        };
        let unreachable = || CallOutcome::ToolError("daemon_unreachable: not connected".into());
        let first = Log {
            calls: vec![
                call(50, 51, CallOutcome::Ok),
                call(100, 102, CallOutcome::Ok),
                call(210, 211, unreachable()),
                call(250, 310, CallOutcome::Ok),
            ],
            extra_answers: 1,
            defects: Vec::new(),
            stderr: [
                event(wall, 0, CONNECT_ATTEMPT, 0),
                event(wall, 205, CONNECT_FAILED, 1),
                event(wall, 215, CONNECT_FAILED, 2),
                event(wall, 305, CONNECT_FAILED, 3),
            ]
            .join("\n"),
            gone: None,
        };
        let second = Log {
            calls: vec![
                call(60, 61, CallOutcome::Ok),
                call(105, 135, CallOutcome::NoResponse),
                call(140, 141, CallOutcome::Ok),
                call(260, 330, CallOutcome::Ok),
            ],
            extra_answers: 0,
            defects: vec!["a line that is not JSON".to_owned()],
            stderr: [
                event(wall, 206, CONNECT_FAILED, 1),
                event(wall, 216, CONNECT_FAILED, 2),
                event(wall, 250, CONNECT_FAILED, 3),
            ]
            .join("\n"),
            gone: Some("stdout closed".to_owned()),
        };
        let accepts = [101_500, 102_000, 141_000, 301_000, 302_000, 303_000]
            .map(|us| micros(wall + Duration::from_micros(us)));
        let herd = Crowd {
            wrappers: 2,
            others: 1,
        };
        let report = judge(
            &HerdConfig::default(),
            herd,
            &made,
            &accepts,
            &[first, second],
        );
        let json = serde_json::to_string_pretty(&report).unwrap();
        let expected = r##"{
  "mode": null,
  "wrappers": 2,
  "others": 1,
  "calls": 8,
  "unanswered": 1,
  "extra_answers": 1,
  "faults": [
    {
      "fault": "drop-all",
      "calls": 3,
      "failed": 1,
      "first_failure": "wrapper 1: no_response",
      "cause": "no-answer",
      "recovered": 2,
      "all_recovered_ms": 40.0,
      "peak_accepts": 3,
      "refused_after": 0,
      "conns_after": 3
    },
    {
      "fault": "down-up",
      "calls": 3,
      "failed": 1,
      "first_failure": "wrapper 0: tool_error (daemon_unreachable: not connected)",
      "cause": "connect-failure",
      "recovered": 2,
      "all_recovered_ms": 30.0,
      "peak_accepts": 3,
      "refused_after": 1,
      "conns_after": 2
    }
  ],
  "dials_while_down": 5,
  "peak_dials": 2,
  "window_ms": 10.0,
  "max_dial_fraction": 0.5,
  "defects": [
    "a line that is not JSON"
  ],
  "gone": [
    "wrapper 1: stdout closed"
  ],
  "wrapper_stderr_tail": "{\"timestamp\":\"2027-01-15T08:00:00.000000Z\",\"event\":\"connect_attempt\",\"failures\":0}\n{\"timestamp\":\"2027-01-15T08:00:00.205000Z\",\"event\":\"connect_failed\",\"failures\":1}\n{\"timestamp\":\"2027-01-15T08:00:00.215000Z\",\"event\":\"connect_failed\",\"failures\":2}\n{\"timestamp\":\"2027-01-15T08:00:00.305000Z\",\"event\":\"connect_failed\",\"failures\":3}"
}"##;
        assert_eq!(json, expected, "{json}");
    }

    #[test]
    fn the_peak_counts_events_within_one_window() {
        let ms = Duration::from_millis;
        assert_eq!(peak_in_window([].into_iter(), ms(10)), 0);
        let t = [0, 9_999, 10_000, 25_000, 25_001, 25_002, 34_999];
        assert_eq!(peak_in_window(t.into_iter(), ms(10)), 4);
        assert_eq!(peak_in_window(t.into_iter().rev(), ms(1)), 3);
    }
}
