//! The outage phase: the daemon goes away and comes back under each
//! wrapper, and what that costs a user.
//!
//! Each wrapper is started anew in front of its own fake daemon, with its
//! structured log on (`connect_attempt` events give its dials; other
//! wrappers ignore the setting) and its heartbeat moved past the phase, so
//! that the wake-ups counted are those beyond the heartbeat. Then:
//!
//! 1. the away window, every wrapper at once: `DOWN`, a settling pause
//!    (the wrapper's first attempts after the loss), then the window, in
//!    which its dials, context switches and CPU time are counted, scaled to
//!    one minute; `UP`;
//! 2. [`Amounts::outages`](super::Amounts::outages) rounds, interleaved
//!    over the wrappers, of two outages each: one with no call waiting,
//!    after which a call is sent 100 ms after the rebind, beside a normal
//!    call sent just before the outage 100 ms after the previous answer
//!    (both after the same idle pause, so that the comparison shows the
//!    outage and not the idle machine waking up); one during which a call
//!    is sent and waits, timed from the rebind to its answer.
//!
//! The herds come after, in the `herd` module.
//!
//! The rebind is when the daemon's socket file appeared after `UP`
//! ([`FakeDaemon::up_timed`](harness::daemon::FakeDaemon::up_timed)): the
//! fake daemon creates it as it binds, and listens at once; the time from
//! `UP` sent is given too (an upper bound). A dial to a socket that is not
//! bound never reaches the daemon, so dials are counted from the wrapper's
//! log, and are "n/a" for a wrapper that writes no events.

use std::thread;
use std::time::{Duration, Instant, SystemTime};

use devkit::bins::error_chain;
use harness::error::HarnessError;
use harness::footprint::Counters;
use harness::scenario::wrapper_log::{CONNECT_ATTEMPT, JSON_EVENTS, event_times, logs_events};
use harness::wrapper::WrapperCommand;

use super::config::BenchConfig;
use super::results::{AwayStats, OutageStats};
use super::results::{SubjectKind, SubjectReport};
use super::runner::{READY_WITHIN, Subject, progress};
use super::scenarios::wait_ready;
use super::stats::{Summary, nanos};
use super::subject::Channel;
use super::transport::RequestTemplate;

/// From `DOWN` to the start of the away window: this workspace's wrapper
/// makes its few quick attempts after the loss (four, well within a
/// second) before it awaits the endpoint; the window counts what follows.
const AWAY_SETTLE: Duration = Duration::from_secs(2);

/// From `DOWN` to the next step of an outage round: long enough for the
/// wrapper to be awaiting the endpoint, as after any short outage.
const OUTAGE_SETTLE: Duration = Duration::from_secs(1);

/// How long after the rebind the "after the rebind" call is sent, and
/// after the previous answer the normal call.
pub const AFTER_REBIND: Duration = Duration::from_millis(100);

/// How long the waiting call waits before the daemon comes back.
const WAIT_BEFORE_UP: Duration = Duration::from_millis(500);

/// The heartbeat interval given to wrappers that read the setting: past
/// the whole phase, so no refresh falls in the away window.
const HEARTBEAT_PAST_PHASE_MS: &str = "3600000";

/// How many failed answers are kept as examples per wrapper.
const FAILURE_EXAMPLES: usize = 3;

/// Runs the outage phase for every wrapper of `reports` (found by name in
/// `config`), filling their `outage`. Failures are recorded in the
/// reports' errors.
pub(super) fn measure(config: &BenchConfig, reports: &mut [SubjectReport]) {
    let mut wrappers: Vec<(&mut SubjectReport, &WrapperCommand)> = reports
        .iter_mut()
        .filter(|r| r.kind == SubjectKind::Wrapper)
        .filter_map(|report| {
            let name = report.name.clone();
            let cmd = config.wrappers().into_iter().find(|(n, _)| *n == name)?.1;
            Some((report, cmd))
        })
        .collect();
    if config.amounts.outages > 0 {
        outages(config, &mut wrappers);
    }
}

/// Steps 1 and 2 of the module's description, for every wrapper.
fn outages(config: &BenchConfig, wrappers: &mut [(&mut SubjectReport, &WrapperCommand)]) {
    let env = [
        JSON_EVENTS,
        ("IAI_MCP_HEARTBEAT_INTERVAL_MS", HEARTBEAT_PAST_PHASE_MS),
    ];
    let mut runs: Vec<OutageRun> = Vec::new();
    for (report, cmd) in wrappers.iter_mut() {
        let fresh = SubjectReport::new(&report.name, SubjectKind::Wrapper, cmd.display());
        match Subject::start_with(config, fresh, Some(cmd), &env) {
            Ok(subject) => runs.push(OutageRun::new(subject)),
            // Wrappers only: starting one cannot be an error.
            Err(e) => report
                .errors
                .push(format!("outage phase: {}", error_chain(&e))),
        }
    }
    away_window(config, &mut runs);
    let rounds = config.amounts.outages;
    for round in 1..=rounds {
        progress(
            config,
            &format!("outage round {round}/{rounds}: a call after the rebind, a waiting call"),
        );
        for run in &mut runs {
            run.call_after_rebind();
        }
        for run in &mut runs {
            run.waiting_call();
        }
    }
    for run in runs {
        let (stats, subject) = run.finish();
        if let Some((report, _)) = wrappers.iter_mut().find(|(r, _)| r.name == subject.name) {
            let errors = subject.errors.iter();
            report
                .errors
                .extend(errors.map(|e| format!("outage phase: {e}")));
            report.outage = Some(stats);
        }
    }
}

/// Step 1: every daemon away at once, each wrapper's work counted over
/// the same window.
fn away_window(config: &BenchConfig, runs: &mut [OutageRun]) {
    let away = Duration::from_millis(config.amounts.away_ms);
    progress(
        config,
        &format!(
            "outage phase: daemons away for {} s (counted after {} s)",
            (AWAY_SETTLE + away).as_secs_f64(),
            AWAY_SETTLE.as_secs_f64()
        ),
    );
    for run in runs.iter_mut() {
        run.daemon_step("the away window", |daemon| daemon.down());
    }
    // The wrappers' first attempts after the loss, not a synchronisation.
    thread::sleep(AWAY_SETTLE);
    let (began, began_wall) = (Instant::now(), SystemTime::now());
    let before: Vec<Option<Counters>> = runs.iter().map(OutageRun::counters).collect();
    // The measuring window itself.
    thread::sleep(away);
    let after: Vec<Option<Counters>> = runs.iter().map(OutageRun::counters).collect();
    let window = Window {
        length: began.elapsed(),
        from: began_wall,
        to: SystemTime::now(),
    };
    for ((run, before), after) in runs.iter_mut().zip(before).zip(after) {
        if run.subject.session.is_none() {
            continue;
        }
        let work = before.zip(after).map(|(b, a)| a.since(&b));
        run.stats.away = Some(run.away_stats(&window, work));
        run.daemon_step("the away window", |daemon| daemon.up());
    }
}

/// The away window, by the harness's clocks.
#[derive(Debug, Clone, Copy)]
struct Window {
    length: Duration,
    from: SystemTime,
    to: SystemTime,
}

impl Window {
    /// `count` events over the window, per minute.
    fn per_minute(&self, count: f64) -> f64 {
        count * 60.0 / self.length.as_secs_f64().max(f64::EPSILON)
    }
}

/// One wrapper through the outage phase: its subject and the samples so
/// far.
struct OutageRun {
    subject: Subject,
    stats: OutageStats,
    normal: Vec<u64>,
    after_rebind: Vec<u64>,
    waited: Vec<u64>,
    waited_from_up_sent: Vec<u64>,
}

/// How a waiting call ended, timed from the rebind.
#[derive(Debug, Clone, Copy)]
struct Waited {
    success: bool,
    from_rebind: Duration,
    from_up_sent: Duration,
}

impl OutageRun {
    fn new(subject: Subject) -> Self {
        Self {
            subject,
            stats: OutageStats::default(),
            normal: Vec::new(),
            after_rebind: Vec::new(),
            waited: Vec::new(),
            waited_from_up_sent: Vec::new(),
        }
    }

    /// The wrapper process's counters now.
    fn counters(&self) -> Option<Counters> {
        let pid = self.subject.child.as_ref()?.pid();
        Counters::read(&pid.to_string())
    }

    /// Sends the daemon a command with `step`; a failure ends the run.
    fn daemon_step(
        &mut self,
        what: &str,
        step: impl FnOnce(&harness::daemon::FakeDaemon) -> Result<(), HarnessError>,
    ) {
        let result = match (&self.subject.session, &self.subject.daemon) {
            (Some(_), Some(daemon)) => step(daemon),
            _ => return,
        };
        if let Err(e) = result {
            self.fail(what, &e);
        }
    }

    /// The away window's figures: dials from the log (if the wrapper
    /// writes events), and `work` done in the window.
    fn away_stats(&mut self, window: &Window, work: Option<Counters>) -> AwayStats {
        let log = self
            .subject
            .child
            .as_mut()
            .map(|c| c.stderr_text())
            .unwrap_or_default();
        let in_window = |at: &SystemTime| (window.from..=window.to).contains(at);
        let dials =
            logs_events(&log).then(|| event_times(&log, CONNECT_ATTEMPT).filter(in_window).count());
        AwayStats {
            window_ms: u64::try_from(window.length.as_millis()).unwrap_or(u64::MAX),
            dials_per_min: dials.map(|n| window.per_minute(n as f64)),
            wakeups_per_min: work
                .map(|w| window.per_minute((w.voluntary_switches + w.involuntary_switches) as f64)),
            cpu_ns_per_min: work.map(|w| window.per_minute(w.cpu_ns as f64)),
        }
    }

    /// A normal call [`AFTER_REBIND`] after the previous answer; then one
    /// outage with no call waiting, and a call sent [`AFTER_REBIND`] after
    /// the daemon is back; each timed to its answer.
    fn call_after_rebind(&mut self) {
        let Subject {
            session: Some(session),
            daemon: Some(daemon),
            template,
            ..
        } = &mut self.subject
        else {
            return;
        };
        let result = session.guarded("a call after the rebind", |io| {
            wait_ready(io, template, READY_WITHIN)?;
            // The idle pause both calls follow.
            thread::sleep(AFTER_REBIND);
            let normal = timed_call(io, template)?;
            daemon.down()?;
            // The outage itself, then the delay the figure is about.
            thread::sleep(OUTAGE_SETTLE);
            daemon.up()?;
            thread::sleep(AFTER_REBIND);
            Ok((normal, timed_call(io, template)?))
        });
        match result {
            Ok((normal, after)) => {
                let Self {
                    stats,
                    normal: normals,
                    after_rebind,
                    ..
                } = self;
                for (call, samples) in [(normal, normals), (after, after_rebind)] {
                    match call {
                        Ok(latency) => samples.push(nanos(latency)),
                        Err(answer) => {
                            stats.after_rebind_failures += 1;
                            keep_example(stats, answer);
                        }
                    }
                }
            }
            Err(e) => self.fail("a call after the rebind", &e),
        }
    }

    /// One outage during which a call is sent and waits
    /// [`WAIT_BEFORE_UP`] before the daemon comes back; timed from the
    /// rebind to its answer.
    fn waiting_call(&mut self) {
        let Subject {
            session: Some(session),
            daemon: Some(daemon),
            template,
            ..
        } = &mut self.subject
        else {
            return;
        };
        self.stats.outages += 1;
        let result = session.guarded("a call waiting through an outage", |io| {
            wait_ready(io, template, READY_WITHIN)?;
            daemon.down()?;
            // The outage before the call comes.
            thread::sleep(OUTAGE_SETTLE);
            let id = io.take_ids(1);
            io.writer.send(template, id)?;
            // The call waits through the rest of the outage.
            thread::sleep(WAIT_BEFORE_UP);
            let rebind = daemon.up_timed()?;
            let response = io.reader.response_to(id)?;
            let answered = Instant::now();
            let waited = Waited {
                success: response.success,
                from_rebind: answered.saturating_duration_since(rebind.bound),
                from_up_sent: answered.saturating_duration_since(rebind.sent),
            };
            Ok((waited, io.last_line_excerpt()))
        });
        match result {
            Ok((waited, _)) if waited.success => {
                self.waited.push(nanos(waited.from_rebind));
                self.waited_from_up_sent.push(nanos(waited.from_up_sent));
            }
            Ok((_, answer)) => {
                self.stats.waited_failures += 1;
                keep_example(&mut self.stats, answer);
            }
            Err(e) => self.fail("a call waiting through an outage", &e),
        }
    }

    /// Records `error`; the wrapper takes no further part.
    fn fail(&mut self, what: &str, error: &HarnessError) {
        // Wrappers only: `fail` cannot return an error here.
        let _ = self.subject.fail(what, error);
    }

    /// The figures, and the report the subject kept (its errors).
    fn finish(mut self) -> (OutageStats, SubjectReport) {
        self.stats.normal = Summary::from_samples(&mut self.normal);
        self.stats.after_rebind = Summary::from_samples(&mut self.after_rebind);
        self.stats.waited = Summary::from_samples(&mut self.waited);
        self.stats.waited_from_up_sent = Summary::from_samples(&mut self.waited_from_up_sent);
        (self.stats, self.subject.close())
    }
}

/// Keeps `answer` as an example of a failed call, up to
/// [`FAILURE_EXAMPLES`].
fn keep_example(stats: &mut OutageStats, answer: String) {
    if stats.failure_examples.len() < FAILURE_EXAMPLES {
        stats.failure_examples.push(answer);
    }
}

/// One call, timed from its request to its answer; a failed call gives
/// its answer as text.
fn timed_call(
    io: &mut Channel,
    template: &RequestTemplate,
) -> Result<Result<Duration, String>, HarnessError> {
    let sent = Instant::now();
    let response = io.call(template)?;
    let latency = sent.elapsed();
    Ok(match response.success {
        true => Ok(latency),
        false => Err(io.last_line_excerpt()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_scale_to_a_minute() {
        let now = SystemTime::now();
        let window = Window {
            length: Duration::from_secs(10),
            from: now,
            to: now,
        };
        assert_eq!(window.per_minute(3.0), 18.0);
    }
}
