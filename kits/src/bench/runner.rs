//! The order of the whole run, and filling each [`SubjectReport`].
//!
//! The figures compared with the floor (sequential latency and throughput)
//! are measured *interleaved*: each phase runs in [`BenchConfig::rounds`]
//! slices, and every round gives each subject its slice in turn. Machine
//! load, CPU frequency and scheduler placement drift over seconds;
//! interleaving spreads that drift over all subjects instead of letting it
//! land on one, so the ratios stay meaningful on a busy or virtual machine.
//!
//! Order: cold starts (before any load process is started); every subject
//! started, each with its own fake daemon; sequential rounds; per depth,
//! pipelined rounds; peak RSS; recovery, one wrapper after the other.

use std::time::Duration;

use devkit::bins::error_chain;
use devkit::tempdir::{short_tempdir, socket_path_in};
use harness::daemon::{FakeDaemon, Transport};
use harness::error::HarnessError;
use harness::footprint::{CpuSnapshot, CpuUsage, peak_rss_kib};
use harness::wrapper::WrapperCommand;
use tempfile::TempDir;

use super::config::{BenchConfig, FLOOR_NAME, TOOL};
use super::results::{
    ColdStartStats, SequentialStats, SubjectKind, SubjectReport, ThroughputStats,
};
use super::scenarios::{Run, cold_start, initialize, pipelined, recovery, sequential, wait_ready};
use super::stats::{Summary, nanos};
use super::subject::{Channel, Session, WrapperChild, WrapperEnv, connect_floor};
use super::transport::{RequestTemplate, initialize_template};

/// How long a subject may take to answer its first call successfully
/// (the real wrapper waits up to 10 s for its daemon connection).
pub(super) const READY_WITHIN: Duration = Duration::from_secs(15);

/// How long a wrapper gets to exit after its stdin closes before it is
/// killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// How many distinct cold-start failures are described in the errors.
const COLD_START_ERRORS: usize = 2;

/// Measures every subject; the reports come floor first, then the wrapper,
/// then the compared wrappers in order. Only a failure of the floor is an
/// error.
pub fn run_all(config: &BenchConfig) -> Result<Vec<SubjectReport>, HarnessError> {
    let mut wrappers: Vec<Pending<'_>> = config
        .wrappers()
        .into_iter()
        .map(|(name, cmd)| Pending::new(name, cmd))
        .collect();
    cold_starts(config, &mut wrappers);

    let floor = format!(
        "{} (client on its socket)",
        config.fake_daemon_bin.display()
    );
    let floor = SubjectReport::new(FLOOR_NAME, SubjectKind::Floor, floor);
    let mut subjects = vec![Subject::start(config, floor, None)?];
    for wrapper in wrappers {
        subjects.push(Subject::start(config, wrapper.report, Some(wrapper.cmd))?);
    }
    let mut bench = Bench { config, subjects };
    let name = "sequential calls";
    bench.interleaved(
        name,
        config.amounts.calls,
        sequential,
        |report, mut run, cpu| {
            report.sequential = Some(SequentialStats {
                calls: run.calls,
                failures: run.failures,
                latency: Summary::from_samples(&mut run.samples),
                cpu: cpu.share(),
                work: cpu.per_call(run.calls),
            });
        },
    )?;
    for &depth in &config.amounts.depths {
        let name = format!("pipelined calls, {depth} in flight");
        let run = |io: &mut Channel, template: &RequestTemplate, calls| {
            pipelined(io, template, calls, depth)
        };
        bench.interleaved(
            &name,
            config.amounts.pipelined_calls,
            run,
            |report, run, cpu| {
                let seconds = run.elapsed.as_secs_f64();
                report.pipelined.push(ThroughputStats {
                    depth,
                    calls: run.calls,
                    failures: run.failures,
                    stray: run.stray,
                    elapsed_ns: nanos(run.elapsed),
                    calls_per_sec: if seconds > 0.0 {
                        run.calls as f64 / seconds
                    } else {
                        0.0
                    },
                    cpu: cpu.share(),
                    work: cpu.per_call(run.calls),
                });
            },
        )?;
    }
    for subject in bench.live_wrappers() {
        subject.report.peak_rss_kib = subject.child.as_ref().and_then(|c| peak_rss_kib(c.pid()));
    }
    bench.recoveries();
    Ok(bench.finish())
}

/// Prints `what` as a progress line when the config asks for them.
pub(super) fn progress(config: &BenchConfig, what: &str) {
    if config.progress {
        eprintln!("bench: {what}");
    }
}

/// `total` split into `rounds` nearly equal slices; slice `round` of them.
fn slice(total: usize, rounds: usize, round: usize) -> usize {
    let rounds = rounds.max(1);
    total / rounds + usize::from(round < total % rounds)
}

/// A wrapper to measure, before its load process is started: its report
/// so far, and how to start it.
struct Pending<'a> {
    report: SubjectReport,
    cmd: &'a WrapperCommand,
}

impl<'a> Pending<'a> {
    /// A wrapper named `name` in the report, started by `cmd`.
    fn new(name: &str, cmd: &'a WrapperCommand) -> Self {
        Self {
            report: SubjectReport::new(name, SubjectKind::Wrapper, cmd.display()),
            cmd,
        }
    }
}

/// What one wrapper's cold starts gave, before they are summarised.
#[derive(Debug, Clone, Default)]
struct ColdStartSamples {
    /// Spawn to the `initialize` answer, in nanoseconds, per success.
    initialize: Vec<u64>,
    /// Spawn to the `tools/list` answer, in nanoseconds, per success.
    tools_list: Vec<u64>,
    /// The first few distinct failures, in words.
    messages: Vec<String>,
    /// Starts that failed.
    failures: usize,
}

/// Cold starts, round-robin over the wrappers so slow drift affects them
/// alike.
fn cold_starts(config: &BenchConfig, wrappers: &mut [Pending<'_>]) {
    let count = config.amounts.cold_starts;
    if count == 0 {
        return;
    }
    progress(
        config,
        &format!("{count} cold starts per wrapper, no daemon present"),
    );
    let mut samples = vec![ColdStartSamples::default(); wrappers.len()];
    for _ in 0..count {
        for (wrapper, samples) in wrappers.iter().zip(samples.iter_mut()) {
            match cold_start(wrapper.cmd, config.response_timeout) {
                Ok(answered) => {
                    samples.initialize.push(nanos(answered.initialized));
                    samples.tools_list.push(nanos(answered.listed));
                }
                Err(e) => {
                    samples.failures += 1;
                    let message = error_chain(&e);
                    let messages = &mut samples.messages;
                    if messages.len() < COLD_START_ERRORS && !messages.contains(&message) {
                        messages.push(message);
                    }
                }
            }
        }
    }
    for (wrapper, mut samples) in wrappers.iter_mut().zip(samples) {
        let failures = samples.failures;
        let message = |m| format!("cold start ({failures} of {count} failed): {m}");
        let report = &mut wrapper.report;
        report
            .errors
            .extend(samples.messages.into_iter().map(message));
        report.cold_start = Some(ColdStartStats {
            attempts: count,
            failures,
            initialize: Summary::from_samples(&mut samples.initialize),
            tools_list: Summary::from_samples(&mut samples.tools_list),
        });
    }
}

/// One subject while the bench runs.
pub(super) struct Subject {
    pub(super) report: SubjectReport,
    /// The client's connection: on the daemon's socket for the floor, on
    /// the wrapper's stdio otherwise; `None` once the subject failed (or
    /// never started).
    pub(super) session: Option<Session>,
    /// The wrapper process, while it runs (never for the floor).
    pub(super) child: Option<WrapperChild>,
    pub(super) template: RequestTemplate,
    // Drop order: the session and the wrapper (above) first, then the
    // daemon, then its directory.
    pub(super) daemon: Option<FakeDaemon>,
    _dir: Option<TempDir>,
}

impl Subject {
    /// A subject in front of a fresh fake daemon: the client on its socket
    /// (the floor, no `cmd`) or on the stdio of the wrapper `cmd` starts,
    /// initialised and warmed up. A wrapper's failure is recorded and
    /// leaves it without a session; the floor's is returned.
    fn start(
        config: &BenchConfig,
        report: SubjectReport,
        cmd: Option<&WrapperCommand>,
    ) -> Result<Self, HarnessError> {
        Self::start_with(config, report, cmd, &[])
    }

    /// Like [`start`](Self::start), with `env` set in a wrapper's
    /// environment on top of the bench's.
    pub(super) fn start_with(
        config: &BenchConfig,
        report: SubjectReport,
        cmd: Option<&WrapperCommand>,
        env: &[(&str, &str)],
    ) -> Result<Self, HarnessError> {
        let mut subject = Self {
            report,
            session: None,
            child: None,
            template: match cmd {
                Some(_) => RequestTemplate::tool_call(TOOL),
                None => RequestTemplate::daemon_call(TOOL),
            },
            daemon: None,
            _dir: None,
        };
        let name = &subject.report.name;
        let what = if cmd.is_some() { "starting and " } else { "" };
        progress(config, &format!("{name}: {what}warming up"));
        if let Err(e) = subject.try_start(config, cmd, env) {
            subject.fail("starting", &e)?;
            // Lines read while starting are not counted.
            subject.report.skipped_lines = 0;
        }
        Ok(subject)
    }

    fn try_start(
        &mut self,
        config: &BenchConfig,
        cmd: Option<&WrapperCommand>,
        env: &[(&str, &str)],
    ) -> Result<(), HarnessError> {
        let dir = short_tempdir()?;
        let socket = socket_path_in(dir.path());
        self._dir = Some(dir);
        let daemon = FakeDaemon::spawn_on(&config.fake_daemon_bin, &socket, Transport::Unix)?;
        self.daemon = Some(daemon);
        let (session, what) = match cmd {
            None => (
                connect_floor(&socket, config.response_timeout)?,
                "the warm-up",
            ),
            Some(cmd) => {
                let mut wrapper = WrapperEnv::new(cmd, Some(&socket))?;
                for (key, value) in env {
                    wrapper.set_env(key, value);
                }
                let (child, session) = wrapper.spawn(config.response_timeout)?;
                self.child.insert(child).capture_stderr();
                (session, "initialize and warm-up")
            }
        };
        let template = &self.template;
        self.session.insert(session).guarded(what, |io| {
            if cmd.is_some() {
                initialize(io, &initialize_template())?;
            }
            wait_ready(io, template, READY_WITHIN)?;
            sequential(io, template, config.amounts.warmup_calls).map(drop)
        })
    }

    /// Closes the connection (a wrapper gets a grace period to exit) and
    /// returns the report.
    pub(super) fn close(mut self) -> SubjectReport {
        if let Some(session) = self.session.take() {
            self.report.skipped_lines += session.skipped_lines();
            if let Some(child) = &mut self.child {
                child.close(session, EXIT_GRACE);
            }
        }
        self.report
    }

    /// Records `error` and drops the connection (the wrapper is killed).
    /// For the floor the error is returned instead: nothing can be compared
    /// without it.
    pub(super) fn fail(&mut self, phase: &str, error: &HarnessError) -> Result<(), HarnessError> {
        let stderr = self
            .child
            .as_mut()
            .map(WrapperChild::stderr_tail)
            .filter(|tail| !tail.is_empty())
            .map_or(String::new(), |tail| format!("; its stderr: {tail}"));
        if let Some(session) = self.session.take() {
            self.report.skipped_lines += session.skipped_lines();
        }
        self.child = None;
        let error = error_chain(error);
        if self.report.kind == SubjectKind::Floor {
            let daemon = self
                .daemon
                .as_ref()
                .map_or(String::new(), FakeDaemon::stderr_text);
            return Err(HarnessError::Scenario(format!(
                "the floor (client straight on the fake daemon) failed: {error}; daemon stderr: {}",
                daemon.trim()
            )));
        }
        self.report.errors.push(format!("{phase}: {error}{stderr}"));
        Ok(())
    }
}

struct Bench<'a> {
    config: &'a BenchConfig,
    subjects: Vec<Subject>,
}

impl Bench<'_> {
    fn live_wrappers(&mut self) -> impl Iterator<Item = &mut Subject> {
        self.subjects.iter_mut().filter(|s| s.child.is_some())
    }

    /// One compared phase: `total` calls made by `run` in `rounds` slices
    /// per subject, interleaved, each slice after a short unmeasured
    /// warm-up and with every process's counters read around it. `name`
    /// names the phase in progress lines, in timeouts and in errors. Only
    /// subjects that finished every round are given to `book`.
    fn interleaved(
        &mut self,
        name: &str,
        total: usize,
        run: impl Fn(&mut Channel, &RequestTemplate, usize) -> Result<Run, HarnessError>,
        book: impl Fn(&mut SubjectReport, Run, &CpuUsage),
    ) -> Result<(), HarnessError> {
        let config = self.config;
        let rounds = config.amounts.rounds.max(1);
        let warmup = config.amounts.warmup_calls / rounds;
        let mut totals = vec![(Run::default(), CpuUsage::default()); self.subjects.len()];
        for round in 0..rounds {
            let calls = slice(total, rounds, round);
            let round = round + 1;
            let line = format!("{name}, round {round}/{rounds}, {calls} calls per subject");
            progress(config, &line);
            for (subject, (sum, cpu)) in self.subjects.iter_mut().zip(&mut totals) {
                let pid = subject.child.as_ref().map(WrapperChild::pid);
                let daemon = subject.daemon.as_ref().map(FakeDaemon::pid);
                let Some(session) = &mut subject.session else {
                    continue;
                };
                let template = &subject.template;
                let result = session.guarded(name, |io| {
                    if warmup > 0 {
                        run(io, template, warmup)?;
                    }
                    let before = daemon.map(|d| CpuSnapshot::take(pid, d));
                    let measured = run(io, template, calls)?;
                    let after = daemon.map(|d| CpuSnapshot::take(pid, d));
                    Ok((measured, before.zip(after).map(|(b, a)| b.usage_until(&a))))
                });
                match result {
                    Ok((measured, usage)) => {
                        sum.add(measured);
                        if let Some(usage) = usage {
                            cpu.add(&usage);
                        }
                    }
                    Err(e) => subject.fail(name, &e)?,
                }
            }
        }
        for (subject, (run, cpu)) in self.subjects.iter_mut().zip(totals) {
            if subject.session.is_some() {
                book(&mut subject.report, run, &cpu);
            }
        }
        Ok(())
    }

    /// Recovery, one wrapper after the other (nothing to compare with the
    /// floor here).
    fn recoveries(&mut self) {
        let config = self.config;
        if config.amounts.recoveries == 0 {
            return;
        }
        for subject in self.live_wrappers() {
            let name = &subject.report.name;
            let count = config.amounts.recoveries;
            progress(config, &format!("{name}: {count} recoveries from DROP"));
            let (Some(session), Some(daemon)) = (&mut subject.session, &subject.daemon) else {
                continue;
            };
            let template = &subject.template;
            let result = session.guarded("recovery", |io| {
                recovery(io, template, daemon, count, READY_WITHIN)
            });
            match result {
                Ok(stats) => subject.report.recovery = Some(stats),
                // Wrappers only: `fail` cannot return an error here.
                Err(e) => {
                    let _ = subject.fail("recovery", &e);
                }
            }
        }
    }

    /// Closes every connection (wrappers get a grace period to exit) and
    /// returns the reports.
    fn finish(self) -> Vec<SubjectReport> {
        self.subjects.into_iter().map(Subject::close).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_add_up() {
        for (total, rounds) in [(10_000, 5), (7, 3), (2, 5), (0, 4), (5, 0)] {
            let sum: usize = (0..rounds.max(1)).map(|r| slice(total, rounds, r)).sum();
            assert_eq!(sum, total, "{total} in {rounds}");
        }
        assert_eq!(
            (0..3).map(|r| slice(7, 3, r)).collect::<Vec<_>>(),
            [3, 2, 2]
        );
    }
}
